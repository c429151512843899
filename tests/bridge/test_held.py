"""held.py: requests held for the ask call they belong to, retried as calls arrive."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from compass_bridge.held import HeldRequests

if TYPE_CHECKING:
    from collections.abc import Callable


async def test_retry_resumes_what_matches_oldest_first_and_keeps_the_rest() -> None:
    expired: list[str] = []
    held = HeldRequests[str](60, lambda key, _request: expired.append(key))
    for key in ("a", "b", "c"):
        held.hold(key, f"request {key}")
    done: list[str] = []
    taken = {"request a", "request c"}

    def resume(request: str) -> Callable[[], object] | None:
        if request not in taken:
            return None
        return lambda: done.append(request)

    held.retry(resume)
    assert done == ["request a", "request c"]
    assert [h.key for h in held] == ["b"]
    assert "b" in held
    assert "a" not in held
    held.clear()
    assert list(held) == []
    assert expired == []


async def test_an_action_that_stops_holding_another_request_skips_it() -> None:
    held = HeldRequests[str](60, lambda _key, _request: None)
    held.hold("a", "a")
    held.hold("b", "b")
    offered: list[str] = []

    def resume(request: str) -> Callable[[], object] | None:
        offered.append(request)
        return lambda: held.pop("b")

    held.retry(resume)
    assert offered == ["a"]
    assert list(held) == []


async def test_a_request_still_held_when_its_time_is_up_expires() -> None:
    expired = asyncio.Event()
    seen: list[tuple[str, str]] = []

    def expire(key: str, request: str) -> None:
        seen.append((key, request))
        expired.set()

    held = HeldRequests[str](0.01, expire)
    held.hold("kept", "x")
    held.hold("popped", "y")
    assert held.pop("popped") is not None
    await asyncio.wait_for(expired.wait(), 5)
    assert seen == [("kept", "x")]
    assert "kept" not in held
    assert held.pop("kept") is None
    await asyncio.sleep(0.05)  # the popped request's timer was cancelled: it never expires
    assert seen == [("kept", "x")]
