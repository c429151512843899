"""What every live stream of this process shares, whichever front door opened it: the cap of
one account's open streams, and what wakes a stream (a change, its re-check timer, its
token's revocation, the server shutting down).

WatchChannel and WatchAsk (over Connect, gRPC or `/mcp`) all run on one `Streams`, so the
cap counts an account's streams across them.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Final

from compass_server.domain.errors import (
    ResourceExhaustedError,
    UnauthenticatedError,
    UnavailableError,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Generator

    from compass_server.live.hub import ChangeHub, Signal
    from compass_server.live.revocation import Revocations

REPLAY_BATCH: Final = 200
"""Messages read per store call while a WatchChannel catches up."""
MAX_STREAMS_PER_ACCOUNT: Final = 64
"""Default cap of one account's open WatchChannel + WatchAsk streams per server process."""
RECHECK_SECONDS: Final = 30.0
"""A watch re-reads the store at least this often even without a notification."""

SHUTTING_DOWN: Final = "the server is shutting down; reconnect"
REVOKED: Final = "your access was revoked; sign in again"


class Slot:
    """One stream of an account's cap, taken by `Streams.take`: released once, by whichever
    of its holders lets go first (`release` again does nothing)."""

    __slots__ = ("_release",)

    def __init__(self, release: Callable[[], None]) -> None:
        self._release: Callable[[], None] | None = release

    def release(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Streams:
    """The open watch streams of this process and their wake-ups."""

    def __init__(
        self,
        hub: ChangeHub,
        *,
        revocations: Revocations | None = None,
        max_per_account: int = MAX_STREAMS_PER_ACCOUNT,
        recheck_seconds: float = RECHECK_SECONDS,
    ) -> None:
        self.hub = hub
        self._revocations = revocations
        self._max = max_per_account
        self._recheck = recheck_seconds
        self._open: dict[str, int] = {}  # account id -> open watch streams here

    def take(self, account_id: str) -> Slot:
        """One of the account's open watch streams in this process, up to the cap (each
        holds a connection, a task and a replay batch), held until released.

        Raises:
            ResourceExhaustedError: the account holds the most streams allowed.
        """
        held = self._open.get(account_id, 0)
        if held >= self._max:
            raise ResourceExhaustedError(
                f"this account already has {held} open watch streams here (the most allowed); "
                "close one first"
            )
        self._open[account_id] = held + 1

        def release() -> None:
            left = self._open[account_id] - 1
            if left:
                self._open[account_id] = left
            else:
                del self._open[account_id]

        return Slot(release)

    @contextlib.contextmanager
    def slot(self, account_id: str) -> Generator[None]:
        """`take`, released at the end of the block."""
        with self.take(account_id):
            yield

    def revoked(
        self, token: str, signal: Signal
    ) -> contextlib.AbstractContextManager[asyncio.Event]:
        """An event set (and `signal` woken) when `token`, the one the stream was admitted
        with, is revoked (never, without a registry or a token)."""
        if self._revocations is None or not token:
            return contextlib.nullcontext(asyncio.Event())
        return self._revocations.watching(token, wake=signal.set)

    async def woken(self, signal: Signal, revoked: asyncio.Event) -> bool:
        """Wait for a change notification, or the re-check interval at most (then re-read
        anyway); True when the wait ran out (a re-check) rather than being woken.

        One wait on the watch's own signal, which everything that must wake it sets: the hub
        on a change and when it closes, the revocation check (`revoked`), and a timer after
        the interval. A client that disconnects needs no wake-up: its front door cancels the
        stream at this await. (Waiting on several events with `asyncio.wait` made three tasks
        per watcher per change, and `asyncio.timeout` a context object, a task lookup and a
        cancellation protocol: most of the server's time when 1,000 watchers share a channel,
        bench.fanout. A timer that sets the signal costs one heap entry.)

        Raises:
            UnavailableError: the server is shutting down (before or while waiting).
            UnauthenticatedError: the stream's token was revoked (before or while waiting).
        """
        hub = self.hub
        ran_out = False
        if not hub.closed and not revoked.is_set():

            def recheck() -> None:
                nonlocal ran_out
                ran_out = True
                signal.set()

            loop = asyncio.get_running_loop()
            timer = loop.call_at(loop.time() + self._recheck, recheck)
            try:
                await signal.wait()
            finally:
                timer.cancel()
        if hub.closed:
            raise UnavailableError(SHUTTING_DOWN)
        if revoked.is_set():
            raise UnauthenticatedError(REVOKED)
        return ran_out
