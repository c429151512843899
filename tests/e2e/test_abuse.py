"""Hostile inputs over real HTTP (issue 12): whatever integer a client forges into a page
token, the answer is a page or INVALID_ARGUMENT, never INTERNAL."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

import httpx
from hypothesis import given, settings, strategies as st

if TYPE_CHECKING:
    from tests._server import RunningServer, SeededWorld


def test_any_forged_page_token_revision_is_a_page_or_invalid_argument(
    module_server: RunningServer, module_world: SeededWorld
) -> None:
    headers = {"authorization": f"Bearer {module_world.human.token}"}
    seen: set[str] = set()
    with httpx.Client(base_url=module_server.url, timeout=30) as client:

        @settings(max_examples=80, deadline=None, database=None)
        @given(
            revision=st.one_of(
                st.integers(),
                st.integers(min_value=2**63 - 2, max_value=2**64 + 2),
                st.sampled_from([2**63 - 1, 2**63, -(2**63) - 1, 10**100]),
            )
        )
        def one(revision: int) -> None:
            raw = f"p1:{revision}:{module_world.channel_id}".encode()
            token = base64.urlsafe_b64encode(raw).decode().rstrip("=")
            response = client.post(
                "/compass.v1.CommsService/ListMessages",
                json={"channelId": module_world.channel_id, "pageToken": token},
                headers=headers,
            )
            code = "ok" if response.status_code == 200 else response.json()["code"]
            expected = "ok" if 0 <= revision < 2**63 else "invalid_argument"
            assert code == expected, (revision, response.text)
            seen.add(code)

        one()
    assert seen == {"ok", "invalid_argument"}
