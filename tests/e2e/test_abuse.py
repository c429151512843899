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


async def test_an_agent_follows_only_the_asks_of_its_own_channels(
    module_server: RunningServer, module_world: SeededWorld
) -> None:
    """Issue 12: any agent of a workspace could WatchAsk any ask whose id it knew."""
    from compass_server.store import AccountKind
    from compass_server.store.postgres import PostgresStore
    from tests.e2e._asks import post_ask
    from tests.e2e._connect import call, open_stream

    async with PostgresStore(module_server.dsn, pool_min=1, pool_max=1) as store:
        nosy, nosy_token = await store.create_account(AccountKind.AGENT, "Nosy Agent")
        await store.add_workspace_member(module_world.workspace_id, nosy.account_id)
        side = await store.create_channel(module_world.workspace_id, "side")
        await store.add_participant(side.channel_id, nosy.account_id)
    async with httpx.AsyncClient(base_url=module_server.url, timeout=30) as http:
        ask_id = await post_ask(http, module_world.agent.token, module_world.channel_id)
        async with open_stream(http, "WatchAsk", {"askId": ask_id}, nosy_token) as watch:
            end = await watch.end()
        assert end.error() == {"code": "not_found", "message": "ask not found"}
        async with open_stream(http, "WatchAsk", {"askId": "ask_nope"}, nosy_token) as watch:
            assert (await watch.end()).error() == end.error()  # same as a missing ask
        refused = await call(
            http, "CloseAsk", {"askId": ask_id, "status": "ASK_STATUS_WITHDRAWN"}, nosy_token
        )
        assert refused.code in ("not_found", "permission_denied"), refused
        receipt = {"askId": ask_id, "state": "DELIVERY_STATE_NOT_DELIVERED", "detail": "x"}
        hidden = await call(http, "ReportDelivery", receipt, nosy_token)
        assert (hidden.code, hidden.message) == ("not_found", "ask not found"), hidden
        # The asking agent (a participant) still follows it, and a person of the
        # workspace who does not participate may still look at it.
        async with open_stream(
            http, "WatchAsk", {"askId": ask_id}, module_world.agent.token
        ) as watch:
            first = await watch.message()
        assert isinstance(first["ask"], dict)
        seen = await call(http, "GetAsk", {"askId": ask_id}, module_world.member.token)
        assert seen.ok, seen


async def test_posting_faster_than_the_quota_is_resource_exhausted(database_url: str) -> None:
    """Issue 12: no posting quota per account."""
    from tests import _server
    from tests.e2e._asks import append_request, text_block
    from tests.e2e._connect import call

    env = {"COMPASS_POST_BURST": "3", "COMPASS_POSTS_PER_MINUTE": "6"}
    with _server.serve(database_url, env=env) as server:
        world = await _server.seed_world(database_url)
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            codes = [
                (
                    await call(
                        http,
                        "AppendMessage",
                        append_request(world.channel_id, text_block(f"m{i}")),
                        world.agent.token,
                    )
                ).code
                for i in range(4)
            ]
            assert codes == ["ok", "ok", "ok", "resource_exhausted"], codes
            listed = await call(
                http, "ListMessages", {"channelId": world.channel_id}, world.human.token
            )
            messages = listed.body["messages"]
            assert isinstance(messages, list)
            assert len(messages) == 3  # the refused post stored nothing  # pyright: ignore[reportUnknownArgumentType]
