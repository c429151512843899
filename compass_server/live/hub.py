"""Fan-out of the store's change feed to the watch streams of this process.

One `Store.listen` subscription (one LISTEN connection) per process feeds every WatchAsk and
WatchChannel stream the process serves; a write made through another process reaches them the
same way, because the notification comes from PostgreSQL. Watchers re-read the store after a
wake-up, so a wake-up only says "look again": a lost or merged notification costs latency,
never correctness, and a resync (reconnect) wakes everyone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Generator

    from compass_server.store import ChangeEvent, Store

    Prefetch = Callable[[str], "asyncio.Future[object] | None"]
    """Given a changed channel: a future done once its watchers' shared read has its rows
    (they are woken then), or None (woken at once)."""

logger = logging.getLogger(__name__)


class Signal:
    """A wake-up flag for one watcher: set by the hub (or anything else that must wake the
    watcher), awaited and cleared by the watcher. (What asyncio.Event does for one waiter,
    with less to do on each of a change's 1,000 wake-ups.)"""

    __slots__ = ("_set", "_waiter")

    def __init__(self) -> None:
        self._set = False
        self._waiter: asyncio.Future[None] | None = None

    def set(self) -> None:
        self._set = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self) -> None:
        """Wait until set, then clear it (callers bound the wait themselves)."""
        if not self._set:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        self._set = False


class ChangeHub:
    """Routes change events to the signals of watchers, by channel and by ask."""

    def __init__(self) -> None:
        self._by_channel: dict[str, set[Signal]] = {}
        self._by_ask: dict[str, set[Signal]] = {}
        # channel -> its events published so far; kept after its last watcher leaves (one int
        # per channel ever watched), so the count never goes back (see SharedReads).
        self._seen: dict[str, int] = {}
        self._resyncs = 0
        self._closed = False
        self._prefetch: Prefetch | None = None
        self._unwatched: Callable[[str], None] = lambda _channel_id: None

    def prefetch_with(self, prefetch: Prefetch, unwatched: Callable[[str], None]) -> None:
        """Read a changed channel once BEFORE waking its watchers (shared_reads.SharedReads):
        each watcher then finds its rows ready instead of waking, joining the read, and
        being woken again when it completes (two wake-ups per watcher per change).
        `unwatched` is told when the last watcher of a channel leaves."""
        self._prefetch = prefetch
        self._unwatched = unwatched

    def watched(self, channel_id: str) -> bool:
        """Whether a watcher of `channel_id` is subscribed here."""
        return channel_id in self._by_channel

    @property
    def closed(self) -> bool:
        """True once the server is shutting down: watches must end (their clients reconnect)."""
        return self._closed

    def close(self) -> None:
        """Wake every watcher one last time; they find `closed` set and end.

        Called when the server begins to shut down: uvicorn waits for every running response
        before it stops, and a watch would otherwise run until its client leaves.
        """
        self._closed = True
        self.resync()

    async def run(self, store: Store) -> None:
        """Feed the hub from `store` until cancelled."""
        await store.listen(self.publish, self.resync)

    def seen(self, channel_id: str) -> int:
        """How many changes of a watched channel the hub has published (resyncs included):
        a store read started after this count was taken sees every one of them."""
        return self._seen.get(channel_id, 0) + self._resyncs

    def publish(self, event: ChangeEvent) -> None:
        channel_id = event.channel_id
        self._seen[channel_id] = self._seen.get(channel_id, 0) + 1
        if channel_id in self._by_channel:
            ready = self._prefetch(channel_id) if self._prefetch is not None else None
            if ready is None:
                self._wake_channel(channel_id)
            else:  # whether the read succeeded or not: a woken watcher re-reads if it must
                ready.add_done_callback(lambda _done: self._wake_channel(channel_id))
        for ask_id in event.ask_ids:
            for signal in self._by_ask.get(ask_id, ()):
                signal.set()

    def _wake_channel(self, channel_id: str) -> None:
        for signal in self._by_channel.get(channel_id, ()):
            signal.set()

    def resync(self) -> None:
        self._resyncs += 1
        for signals in (*self._by_channel.values(), *self._by_ask.values()):
            for signal in signals:
                signal.set()

    @contextlib.contextmanager
    def channel(self, channel_id: str) -> Generator[Signal]:
        """A signal set on every change to `channel_id` (subscribe before the first read)."""
        try:
            with _subscribed(self._by_channel, channel_id) as signal:
                yield signal
        finally:
            if channel_id not in self._by_channel:
                self._unwatched(channel_id)

    @contextlib.contextmanager
    def ask(self, ask_id: str) -> Generator[Signal]:
        """A signal set on every change to the message holding `ask_id`."""
        with _subscribed(self._by_ask, ask_id) as signal:
            yield signal

    def watcher_count(self) -> int:
        return sum(map(len, self._by_channel.values())) + sum(map(len, self._by_ask.values()))


@contextlib.contextmanager
def _subscribed(index: dict[str, set[Signal]], key: str) -> Generator[Signal]:
    signal = Signal()
    index.setdefault(key, set()).add(signal)
    try:
        yield signal
    finally:
        members = index.get(key)
        if members is not None:
            members.discard(signal)
            if not members:
                del index[key]
