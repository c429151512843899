"""Ending the live streams of a revoked token.

A watch is authenticated once, when it opens; without this, disabling an account (or
ending its sessions) left its open WatchChannel/WatchAsk streams running for as long as the
client kept them. Every `interval` seconds one store query checks the tokens of all live
streams of this process at once (`valid_tokens`); a stream whose token no longer
authenticates is told through its event and ends with UNAUTHENTICATED. One query per
interval per process, whatever the number of streams; a database outage skips a round
(the streams keep running, as any request would have been admitted before it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Final

from compass_server.background.periodic import STALLED_SECONDS, Health, every

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Generator, Sequence

logger = logging.getLogger(__name__)

DEFAULT_INTERVAL_SECONDS: Final = 2.0


class _Revoked(asyncio.Event):
    """The revoked-event of one stream, also waking the stream's own wait when set."""

    def __init__(self, wake: Callable[[], None] | None) -> None:
        super().__init__()
        self._wake = wake

    def set(self) -> None:
        super().set()
        if self._wake is not None:
            self._wake()


class Revocations:
    """The tokens of this process's live streams, and a revoked-event for each stream."""

    def __init__(
        self,
        valid_tokens: Callable[[Sequence[str]], Awaitable[set[str]]],
        *,
        interval: float = DEFAULT_INTERVAL_SECONDS,
    ) -> None:
        self._valid_tokens = valid_tokens
        self._interval = interval
        self._streams: dict[str, set[asyncio.Event]] = {}
        self.health = Health(stalled_after=STALLED_SECONDS + interval)
        """Whether `run` checks."""

    @contextlib.contextmanager
    def watching(
        self, token: str, *, wake: Callable[[], None] | None = None
    ) -> Generator[asyncio.Event]:
        """An event set once `token` stops authenticating (and `wake` called then), for as
        long as the block runs."""
        revoked = _Revoked(wake)
        self._streams.setdefault(token, set()).add(revoked)
        try:
            yield revoked
        finally:
            events = self._streams.get(token)
            if events is not None:
                events.discard(revoked)
                if not events:
                    del self._streams[token]

    async def check(self) -> int:
        """One round: revoke the streams whose token no longer authenticates.

        Returns:
            How many streams were told.
        """
        tokens = list(self._streams)
        if not tokens:
            return 0
        valid = await self._valid_tokens(tokens)
        told = 0
        for token in tokens:
            if token in valid:
                continue
            for event in self._streams.get(token, ()):
                event.set()
                told += 1
        return told

    async def run(self) -> None:
        """Check at once, then every `interval` seconds until cancelled; a failed check is
        logged and the next one tries again.

        Checking at once, where this loop used to sleep first, changes nothing one can see:
        `run` starts with the app, before any stream is open, and a check of no streams
        returns without a query (a stream open by then would only be checked sooner).
        """
        await every(
            self._interval,
            self.check,
            name="token re-check of live streams",
            logger=logger,
            health=self.health,
        )
