"""One store read per change per channel, shared by every local watcher of that channel.

Without this, N watchers of one channel woken by one change each re-read the store: N
queries for one change (1,000 watchers: ~1,000 queries). Watchers that want the messages
changed after the same revision of the same channel now share one read in flight
("single flight"), so one change costs one read per process however many watch.

Joining a read already running is only correct when that read started after the change the
watcher was woken for had been published: PostgreSQL delivers a NOTIFY after its
transaction committed, so a read that began after the hub saw revision R sees R. The hub
counts what it has published per channel (`ChangeHub.seen`); a read remembers that count at
its start, and a watcher joins it only if the count it was woken at is not newer.

Read before waking: a read is started when the hub publishes a change, for the
key the channel's watchers will ask next (the one after the rows the last read returned),
and the hub wakes them only once it has its rows (`ChangeHub.prefetch_with`). A woken watcher
then finds the completed read and takes its rows without waiting: one wake-up per watcher per
change instead of two (woken by the notification, then again by the shared read it joined),
which was a large part of the per-watcher cost of a change watched 1,000 times. A watcher at
another revision (catching up, or a change that raced the read) reads as before.

Why hand-written: the single-flight pattern is a dozen lines over asyncio futures here,
and it needs the hub's publish count to decide who may join; no maintained library offers
that condition.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gen.compass.v1.comms_pb2 import WatchChannelResponse

if TYPE_CHECKING:
    from collections.abc import Callable

    from compass_server.live.hub import ChangeHub
    from compass_server.store import AccountRow, AskStore, MessageRow, ReplayBatch


@dataclass(slots=True)
class _Flight:
    covers: int
    """The hub's publish count for the channel when this read started."""
    task: asyncio.Task[ReplayBatch]
    actor: AccountRow
    """Who the read runs as (any of the watchers sharing it)."""


class SharedReads:
    """`messages_after` with one read in flight per (channel, after_revision, limit)."""

    def __init__(
        self, store: AskStore, hub: ChangeHub, on_read: Callable[[], None] | None = None
    ) -> None:
        self._store = store
        self._hub = hub
        self._on_read = on_read
        self._flights: dict[tuple[str, int, int], _Flight] = {}
        # channel -> its latest completed read and the key its watchers will ask next.
        self._done: dict[str, tuple[tuple[str, int, int], _Flight]] = {}
        self._next: dict[str, tuple[tuple[str, int, int], AccountRow]] = {}
        self.reads = 0
        """Store reads started (for tests and benchmarks)."""

    async def messages_after(
        self, actor: AccountRow, channel_id: str, after_revision: int, *, limit: int
    ) -> ReplayBatch:
        """As `Store.messages_after`. Every actor sharing a read could see the channel when
        its watch began (the handler checked it); the read runs as the first of them."""
        key = (channel_id, after_revision, limit)
        wanted = self._hub.seen(channel_id)
        done = self._done.get(channel_id)
        if done is not None and done[0] == key and done[1].covers >= wanted:
            return done[1].task.result()  # read before this watcher was woken: no wait
        flight = self._flights.get(key)
        if flight is None or flight.covers < wanted:
            flight = self._start(key, actor, wanted)
        # shield: one watcher leaving must not cancel the read the others wait for.
        return await asyncio.shield(flight.task)

    def prefetch(self, channel_id: str) -> asyncio.Future[object] | None:
        """For the hub (`ChangeHub.prefetch_with`), on a change to `channel_id`: start the read
        its watchers will make next; its task, or None when there is no read to guess."""
        known = self._next.get(channel_id)
        if known is None:
            return None
        key, actor = known
        wanted = self._hub.seen(channel_id)
        flight = self._flights.get(key)
        if flight is None or flight.covers < wanted:
            flight = self._start(key, actor, wanted)
        return flight.task  # pyright: ignore[reportReturnType] - only awaited for completion

    def _start(self, key: tuple[str, int, int], actor: AccountRow, covers: int) -> _Flight:
        channel_id, after_revision, limit = key
        self.reads += 1
        if self._on_read is not None:
            self._on_read()
        task = asyncio.ensure_future(
            self._store.messages_after(actor, channel_id, after_revision, limit=limit)
        )
        flight = _Flight(covers=covers, task=task, actor=actor)
        self._flights[key] = flight

        def done(finished: asyncio.Task[ReplayBatch]) -> None:
            if self._flights.get(key) is flight:
                del self._flights[key]
            if finished.cancelled() or finished.exception() is not None:
                return  # a failure is raised to every waiter; the next read tries again
            self._completed(key, flight, finished.result())

        task.add_done_callback(done)
        return flight

    def _completed(self, key: tuple[str, int, int], flight: _Flight, rows: ReplayBatch) -> None:
        channel_id, after_revision, limit = key
        if not self._hub.watched(channel_id):
            return
        latest = self._done.get(channel_id)
        if latest is not None and latest[1].covers > flight.covers:
            return  # a newer read of this channel already finished
        # The watchers that take these rows ask next for what follows the last of them.
        after = max([after_revision, *(row.revision for row in rows)])
        self._next[channel_id] = ((channel_id, after, limit), flight.actor)
        if rows.more:  # a replay, not the live tail: its rows are not kept for anyone
            self._done.pop(channel_id, None)
        else:  # kept until the next read of the channel finishes, or nobody watches it
            self._done[channel_id] = (key, flight)

    def forget(self, channel_id: str) -> None:
        """Drop what is kept for a channel nobody here watches any more."""
        self._done.pop(channel_id, None)
        self._next.pop(channel_id, None)


class SharedResponses:
    """One WatchChannelResponse per changed message per process, and its bytes encoded once.

    SharedReads hands every watcher of a channel the same rows; building and encoding a
    response from a row is most of what each watcher costs per change (protobuf JSON encoding
    is pure Python). So the response for a row object is built once and kept with its
    encodings (one per codec), and the codecs (`wire.app_options(shared=...)`) use them:
    one change to a channel watched 1,000 times is built and encoded once.

    By identity, not equality: an entry keeps its row and its response alive, so their ids
    cannot be reused while cached. Responses are never mutated after they are built. The
    cache holds the last `size` rows whose response is at most `max_bytes` (encoded as
    protobuf): the watchers woken by one change send the same row one after the other, and
    a big message is not kept here at all.
    """

    def __init__(self, size: int = 4, max_bytes: int = 256 * 1024) -> None:
        self._size = size
        self._max_bytes = max_bytes
        self._by_row: OrderedDict[int, tuple[MessageRow, WatchChannelResponse]] = OrderedDict()
        self._encoded: dict[int, tuple[WatchChannelResponse, dict[str, bytes]]] = {}
        self.built = 0
        """Responses built (for tests and benchmarks)."""

    def response(self, row: MessageRow) -> WatchChannelResponse:
        """The response carrying `row`: the one already built for this row object, if any."""
        entry = self._by_row.get(id(row))
        if entry is not None and entry[0] is row:
            self._by_row.move_to_end(id(row))
            return entry[1]
        built = WatchChannelResponse(message=row.to_proto())
        self.built += 1
        if built.ByteSize() > self._max_bytes:
            # A big message is not kept: memory per slow stream matters more there, and its encoding costs little next to writing it to many clients.
            return built
        self._by_row[id(row)] = (row, built)
        self._encoded[id(built)] = (built, {})
        while len(self._by_row) > self._size:
            _, (_, dropped) = self._by_row.popitem(last=False)
            del self._encoded[id(dropped)]
        return built

    def encoded(self, message: object, codec: str, encode: Callable[[], bytes]) -> bytes:
        """`encode()` of `message` with `codec`, memoized when `message` is a cached response."""
        entry = self._encoded.get(id(message))
        if entry is None or entry[0] is not message:
            return encode()
        encodings = entry[1]
        data = encodings.get(codec)
        if data is None:
            data = encodings[codec] = encode()
        return data
