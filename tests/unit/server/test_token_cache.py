"""The token cache of one process (compass_server/live/tokens.py) on a scripted lookup and clock:
reuse within the max age, a lookup again after it, after `forget_account` and `clear`, none
cached while the listener is down, none of a refused token, and no entry from a lookup that a
notification overtook."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from compass_server.live.tokens import TokenCache


@dataclass(frozen=True)
class Account:
    account_id: str


class Lookup:
    def __init__(self) -> None:
        self.accounts = {"cmp_a": Account("a"), "cmp_b": Account("b")}
        self.calls = 0
        self.gate: asyncio.Event | None = None

    async def __call__(self, token: str) -> Account | None:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        return self.accounts.get(token)


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def _cache(lookup: Lookup, clock: Clock, up: list[bool]) -> TokenCache[Account]:
    return TokenCache(lookup, max_age=2.0, listening=lambda: up[0], clock=clock)


async def test_a_token_is_looked_up_once_within_the_max_age_and_again_after_it() -> None:
    lookup, clock = Lookup(), Clock()
    cache = _cache(lookup, clock, [True])
    assert await cache.authenticate("cmp_a") == Account("a")
    clock.now += 1.9
    assert await cache.authenticate("cmp_a") == Account("a")
    assert (lookup.calls, cache.hits) == (1, 1)
    clock.now += 0.2
    del lookup.accounts["cmp_a"]  # gone by hand: no notification, the max age ends it
    assert await cache.authenticate("cmp_a") is None
    assert lookup.calls == 2


async def test_forgetting_an_account_drops_its_tokens_only() -> None:
    lookup, clock = Lookup(), Clock()
    cache = _cache(lookup, clock, [True])
    await cache.authenticate("cmp_a")
    await cache.authenticate("cmp_b")
    del lookup.accounts["cmp_a"]
    cache.forget_account("a")
    assert await cache.authenticate("cmp_a") is None
    assert await cache.authenticate("cmp_b") == Account("b")
    assert (lookup.calls, cache.hits) == (3, 1)


async def test_refused_tokens_are_not_cached_and_a_down_listener_bypasses_the_cache() -> None:
    lookup, clock = Lookup(), Clock()
    up = [True]
    cache = _cache(lookup, clock, up)
    assert await cache.authenticate("cmp_nope") is None
    assert await cache.authenticate("cmp_nope") is None
    assert lookup.calls == 2
    await cache.authenticate("cmp_a")
    up[0] = False
    cache.clear()  # what the feed does when the listener is lost
    for _ in range(2):
        assert await cache.authenticate("cmp_a") == Account("a")
    assert (lookup.calls, cache.hits) == (5, 0)
    up[0] = True
    await cache.authenticate("cmp_a")
    await cache.authenticate("cmp_a")
    assert (lookup.calls, cache.hits) == (6, 1)


async def test_a_lookup_overtaken_by_a_notification_is_not_cached() -> None:
    lookup, clock = Lookup(), Clock()
    cache = _cache(lookup, clock, [True])
    lookup.gate = asyncio.Event()
    pending = asyncio.create_task(cache.authenticate("cmp_a"))
    await asyncio.sleep(0)  # the lookup is under way
    cache.forget_account("a")  # the account was disabled meanwhile
    lookup.gate.set()
    assert await pending == Account("a")  # what the store said then
    lookup.gate = None
    del lookup.accounts["cmp_a"]
    assert await cache.authenticate("cmp_a") is None  # looked up again, not served stale


async def test_max_age_zero_never_caches() -> None:
    lookup = Lookup()
    cache: TokenCache[Account] = TokenCache(lookup, max_age=0, listening=lambda: True)
    await cache.authenticate("cmp_a")
    await cache.authenticate("cmp_a")
    assert (lookup.calls, cache.hits) == (2, 0)
