"""Requests the runtime sends before the ask tool call they belong to, held until it arrives.

Both transports meet them: over ACP, omp's elicitation arrives a few ms BEFORE the `tool_call`
update that carries the ask's arguments (acp.py); over rpc-ui, 18.2.3's first `select` BEFORE
`tool_execution_start` (omp/bridge.py). Such a request is `hold`-ed for `seconds` (2 s by
default): each time an ask call arrives, the bridge offers every held request to it
(`retry`); one still held when its time is up goes to the `expire` callback.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["HOLD_SECONDS", "Held", "HeldRequests"]

HOLD_SECONDS: Final = 2.0
"""How long a request that matches no ask call yet waits for its call."""

R = TypeVar("R")


@dataclass(slots=True, eq=False)
class Held(Generic[R]):
    key: str
    request: R
    at_ms: float
    """When it arrived (epoch ms): the runtime's dialog timeout runs from then."""
    timer: asyncio.TimerHandle


class HeldRequests(Generic[R]):
    """The requests held for their ask call, by key, in the order they arrived.

    Every method is synchronous and runs on the event loop's thread (timers need a running
    loop).
    """

    def __init__(self, seconds: float, expire: Callable[[str, R], object]) -> None:
        """`expire(key, request)` is called for a request still held after `seconds` (it is
        no longer held by then)."""
        self.seconds: Final = seconds
        self._expire = expire
        self._held: dict[str, Held[R]] = {}

    def hold(self, key: str, request: R) -> None:
        timer = asyncio.get_running_loop().call_later(self.seconds, self._expired, key)
        self._held[key] = Held(key=key, request=request, at_ms=time.time() * 1000, timer=timer)

    def __contains__(self, key: object) -> bool:
        return key in self._held

    def __iter__(self) -> Iterator[Held[R]]:
        """The held requests, oldest first (a snapshot: popping while iterating is fine)."""
        return iter(list(self._held.values()))

    def pop(self, key: str) -> Held[R] | None:
        """Stop holding `key`'s request (None if it was not held)."""
        held = self._held.pop(key, None)
        if held is not None:
            held.timer.cancel()
        return held

    def retry(self, resume: Callable[[R], Callable[[], object] | None]) -> None:
        """Offer each held request, oldest first, to `resume`: when it returns an action, the
        request is no longer held and the action runs before the next request is offered
        (so that one sees what the action took)."""
        for held in self:
            if self._held.get(held.key) is not held:
                continue  # an earlier action stopped holding it
            action = resume(held.request)
            if action is not None:
                self.pop(held.key)
                action()

    def clear(self) -> None:
        """Stop holding anything (nothing expires)."""
        for held in self._held.values():
            held.timer.cancel()
        self._held.clear()

    def _expired(self, key: str) -> None:
        held = self._held.pop(key, None)
        if held is not None:
            self._expire(key, held.request)
