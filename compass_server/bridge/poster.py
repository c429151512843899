"""Posting the mapper's frames: append, update, ask-id reconciliation, retries (SPEC §2.3).

One worker posts everything, in the order messages first appeared, so the channel shows
messages in the order the agent wrote them even after an outage. Per message:

- The first post is an AppendMessage with `client_message_id` set. Its blocks are fixed on
  first use and every retry repeats them exactly: after a lost response, the server finds the
  message by its client_message_id and, the blocks being equal, returns it with the same
  ids instead of storing a second copy (a retry with *other* blocks would be ALREADY_EXISTS).
- Later snapshots go out as UpdateMessage with the minted ask ids written back: the i-th ask
  block of the message carries the id minted for the i-th ask. Frames are full snapshots, so
  while an update waits to be retried a newer snapshot replaces it (coalescing loses nothing);
  an update is never sent before its message's append succeeded.
- Continuation messages. UpdateMessage cannot add an ask (every ask block must carry a
  minted id, and the set of ids is fixed), yet an agent can ask again after its message was
  posted (a second ask call runs after the first one was answered). Asks that arrive after
  the message was appended go out as a new message, `<client id>#<n>`, holding only those
  asks; the first message keeps the text and the asks it was appended with. See `hold()` for
  how the bridge keeps the usual text-then-ask message in one piece.

Errors (see client.retryable): transient ones are retried forever with capped exponential
backoff; INTERNAL/UNKNOWN at most `MAX_BOUNDED_RETRIES` times; anything else drops the frame
with an error in the log (the message stays unposted, so a later snapshot tries the append
again). UNAUTHENTICATED and PERMISSION_DENIED, and NOT_FOUND on AppendMessage (an unknown
channel), can never succeed for any frame: they stop the bridge (`FatalServerError`).
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

from compass_server.bridge.client import Backoff, RpcError, bounded, fatal
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Awaitable, Callable

__all__ = ["AgentApi", "AskNotPostedError", "FatalServerError", "Poster"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

MAX_BOUNDED_RETRIES: Final = 5
"""Retries of a call failing with INTERNAL or UNKNOWN before its frame is dropped."""
MAX_CLIENT_ID: Final = 200
"""The server's limit on client_message_id (domain.MAX_ID_LENGTH)."""
_LOG_EVERY: Final = 10  # after the first failure, log every n-th retry of the same call


class AgentApi(Protocol):
    """What the bridge needs of AgentService (client.AgentClient; tests may fake it)."""

    async def append_message(
        self, channel_id: str, frame: comms_pb2.MessageUpdated
    ) -> comms_pb2.Message: ...

    async def update_message(self, frame: comms_pb2.MessageUpdated) -> comms_pb2.Message: ...

    def watch_ask(self, ask_id: str) -> AsyncGenerator[comms_pb2.Ask]: ...


class FatalServerError(Exception):
    """The server refuses the bridge itself (token, account or channel); nothing can post."""


class AskNotPostedError(Exception):
    """The message holding an ask could not be stored, so the ask has no id to wait on."""


class _DroppedError(Exception):
    pass


class _SupersededError(Exception):
    pass


@dataclass(slots=True)
class _Segment:
    """One server message holding part of a mapper message (see the module docstring)."""

    client_message_id: str
    first_ask: int
    """Ordinal (within the mapper message) of this segment's first ask."""
    ask_ids: list[str] | None = None
    """The minted ids, in order; None until appended (its length is the segment's ask count)."""
    message_id: str = ""
    posted: bytes = b""
    """The block set last stored, serialized, to skip updates that change nothing."""


@dataclass(slots=True)
class _Message:
    key: str
    base_id: str
    latest: comms_pb2.MessageUpdated | None = None
    segments: list[_Segment] = field(default_factory=list[_Segment])


class Poster:
    """Posts the frames of one runtime to one channel; `run()` is its worker."""

    def __init__(
        self,
        api: AgentApi,
        channel_id: str,
        *,
        run_id: str,
        max_backoff: float = 5.0,
        initial_backoff: float = 0.2,
    ) -> None:
        """`run_id` namespaces client_message_ids: the runtime's message ids are unique only
        within one runtime process, and the server keys idempotency on them per channel."""
        self._api = api
        self._channel = channel_id
        self._run_id = run_id
        self._max_backoff = max_backoff
        self._initial_backoff = initial_backoff
        self._messages: dict[str, _Message] = {}
        self._queue: collections.deque[str] = collections.deque()
        self._queued: set[str] = set()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._released = asyncio.Event()
        self._released.set()
        self._futures: dict[tuple[str, int], asyncio.Future[str]] = {}
        self.dropped = 0
        """Frames given up on (each logged as an error)."""

    # -- the runner's side -----------------------------------------------------------------

    def submit(self, frame: comms_pb2.MessageUpdated) -> None:
        """Queue a full snapshot of a message (keyed by its client_message_id)."""
        key = frame.client_message_id
        message = self._messages.get(key)
        if message is None:
            message = self._messages[key] = _Message(key=key, base_id=self._base_id(key))
        message.latest = frame
        if key not in self._queued:
            self._queued.add(key)
            self._queue.append(key)
        self._idle.clear()
        self._wake.set()

    def hold(self) -> None:
        """Keep new snapshots back until `release()`.

        The runner holds while it knows that asks of the message just ended are about to
        start (the assistant message announced its ask tool calls), so that the text and
        those asks are appended together as one message instead of text, then a
        continuation message for the ask.
        """
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    @property
    def pending(self) -> int:
        """Messages with snapshots not yet posted."""
        return len(self._queue)

    def ask_id(self, key: str, ordinal: int) -> asyncio.Future[str]:
        """The id minted for the `ordinal`-th ask of mapper message `key`.

        The future fails with AskNotPostedError if the message holding the ask could not
        be stored. Awaiting it waits for the (possibly retried) append.
        """
        future = self._futures.get((key, ordinal))
        if future is None or future.cancelled() or (future.done() and future.exception()):
            future = asyncio.get_running_loop().create_future()
            self._futures[(key, ordinal)] = future
            message = self._messages.get(key)
            for segment in message.segments if message is not None else ():
                ids = segment.ask_ids
                if ids is not None and segment.first_ask <= ordinal < segment.first_ask + len(ids):
                    future.set_result(ids[ordinal - segment.first_ask])
        return future

    async def drain(self) -> None:
        """Wait until every submitted snapshot is posted (or dropped). Releases any hold."""
        self.release()
        await self._idle.wait()

    def fail_waiting(self, reason: str) -> None:
        """Fail every ask-id future still waiting (the bridge is stopping)."""
        for future in self._futures.values():
            if not future.done():
                _fail(future, reason)

    # -- the worker ------------------------------------------------------------------------

    async def run(self) -> None:
        """Post queued snapshots until cancelled.

        Raises:
            FatalServerError: the server refuses the bridge; nothing more can be posted.
        """
        while True:
            if not self._queue:
                self._idle.set()
                self._wake.clear()
                await self._wake.wait()
                continue
            key = self._queue[0]
            await self._process(self._messages[key])
            # No await between the last look at `latest` in _process and here, so a
            # snapshot submitted meanwhile cannot be missed.
            self._queue.popleft()
            self._queued.discard(key)

    async def _process(self, message: _Message) -> None:
        while message.latest is not None:
            await self._released.wait()
            snapshot = message.latest
            message.latest = None
            try:
                await self._post(message, snapshot)
            except _SupersededError:
                continue  # a newer snapshot replaces the one being retried

    async def _post(self, message: _Message, snapshot: comms_pb2.MessageUpdated) -> None:
        asks = sum(1 for block in snapshot.blocks if block.HasField("ask"))
        segments = message.segments
        if not segments:
            segments.append(_Segment(client_message_id=message.base_id, first_ask=0))
        last = segments[-1]
        if last.ask_ids is not None and asks > last.first_ask + len(last.ask_ids):
            segments.append(
                _Segment(
                    client_message_id=_continuation_id(message.base_id, len(segments)),
                    first_ask=last.first_ask + len(last.ask_ids),
                )
            )
        stored_asks = sum(len(s.ask_ids) for s in segments if s.ask_ids is not None)
        if asks < stored_asks:
            logger.error(
                "message %s: a snapshot has %d asks but %d were posted; its updates will be refused",
                message.key,
                asks,
                stored_asks,
            )
        for index, segment in enumerate(segments):
            blocks = _segment_blocks(snapshot, segment, first=index == 0)
            if segment.ask_ids is None:
                if not blocks:
                    continue  # nothing to show yet (an assistant message without text)
                if not await self._append(message, segment, blocks):
                    return
            else:
                await self._update(message, segment, blocks)

    async def _append(
        self, message: _Message, segment: _Segment, blocks: list[comms_pb2.MessageBlock]
    ) -> bool:
        frame = comms_pb2.MessageUpdated(client_message_id=segment.client_message_id, blocks=blocks)
        what = f"AppendMessage {segment.client_message_id}"
        try:
            stored = await self._call(
                what,
                lambda: self._api.append_message(self._channel, frame),
                not_found_is_fatal=True,
            )
        except _DroppedError:
            self._fail_asks(message, segment, "the server refused the message holding the ask")
            return False
        minted = [block.ask.ask_id for block in stored.blocks if block.HasField("ask")]
        expected = sum(1 for block in blocks if block.HasField("ask"))
        if len(minted) != expected or not all(minted) or not stored.message_id:
            logger.error(
                "%s: the server returned %d ask ids for %d asks; dropping the message",
                what,
                len(minted),
                expected,
            )
            self.dropped += 1
            self._fail_asks(message, segment, "the server returned no ask id")
            return False
        segment.ask_ids = minted
        segment.message_id = stored.message_id
        segment.posted = _serialized(_with_ids(blocks, minted))
        logger.info("posted message %s as %s", segment.client_message_id, stored.message_id)
        for offset, ask_id in enumerate(minted):
            future = self._futures.get((message.key, segment.first_ask + offset))
            if future is not None and not future.done():
                future.set_result(ask_id)
        return True

    async def _update(
        self, message: _Message, segment: _Segment, blocks: list[comms_pb2.MessageBlock]
    ) -> None:
        assert segment.ask_ids is not None  # noqa: S101 - only called for appended segments
        reconciled = _with_ids(blocks, segment.ask_ids)
        serialized = _serialized(reconciled)
        if serialized == segment.posted:
            return
        frame = comms_pb2.MessageUpdated(
            message_id=segment.message_id,
            client_message_id=segment.client_message_id,
            blocks=reconciled,
        )
        try:
            await self._call(
                f"UpdateMessage {segment.client_message_id}",
                lambda: self._api.update_message(frame),
                superseded=lambda: message.latest is not None,
            )
        except _DroppedError:
            return
        segment.posted = serialized

    async def _call(
        self,
        what: str,
        call: Callable[[], Awaitable[T]],
        *,
        not_found_is_fatal: bool = False,
        superseded: Callable[[], bool] | None = None,
    ) -> T:
        backoff = Backoff(initial=self._initial_backoff, cap=self._max_backoff)
        bounded_failures = 0
        while True:
            if superseded is not None and superseded():
                raise _SupersededError
            try:
                result = await call()
            except RpcError as exc:
                if fatal(exc.code) or (not_found_is_fatal and exc.code == "not_found"):
                    raise FatalServerError(f"{what}: the server refused it ({exc})") from exc
                if bounded(exc.code):
                    bounded_failures += 1
                if not exc.retryable or bounded_failures > MAX_BOUNDED_RETRIES:
                    self.dropped += 1
                    logger.error("%s failed for good, dropping the frame: %s", what, exc)
                    raise _DroppedError from exc
                delay = backoff.next_delay()
                if backoff.attempts == 1 or backoff.attempts % _LOG_EVERY == 0:
                    logger.warning(
                        "%s failed (%s); retrying in %.1fs (attempt %d)",
                        what,
                        exc,
                        delay,
                        backoff.attempts,
                    )
                await asyncio.sleep(delay)
                continue
            if backoff.attempts:
                logger.info("%s succeeded after %d retries", what, backoff.attempts)
            return result

    def _fail_asks(self, message: _Message, segment: _Segment, reason: str) -> None:
        for (key, ordinal), future in self._futures.items():
            if key == message.key and ordinal >= segment.first_ask and not future.done():
                _fail(future, reason)

    def _base_id(self, key: str) -> str:
        prefix = f"{self._run_id}-"
        # The mapper numbers messages without a runtime id as `<session>-<n>`, and the
        # bridge passes run_id as the session: those are already namespaced.
        candidate = key if key.startswith(prefix) else f"{self._run_id}:{key}"
        if len(candidate) + 8 > MAX_CLIENT_ID:  # room for a continuation suffix
            digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:40]
            candidate = f"{self._run_id}:h{digest}"
        return candidate


def _fail(future: asyncio.Future[str], reason: str) -> None:
    future.set_exception(AskNotPostedError(reason))
    # Marks the exception as retrieved: a future whose waiter was cancelled meanwhile must
    # not be logged as "exception never retrieved"; a waiter still gets the exception.
    future.exception()


def _continuation_id(base_id: str, index: int) -> str:
    return f"{base_id}#{index}"


def _segment_blocks(
    snapshot: comms_pb2.MessageUpdated, segment: _Segment, *, first: bool
) -> list[comms_pb2.MessageBlock]:
    """The blocks of `snapshot` that `segment` holds: for the first segment every non-ask
    block, and for each segment its asks (an unposted last segment: every later ask)."""
    end = None if segment.ask_ids is None else segment.first_ask + len(segment.ask_ids)
    out: list[comms_pb2.MessageBlock] = []
    ordinal = 0
    for block in snapshot.blocks:
        if block.HasField("ask"):
            if ordinal >= segment.first_ask and (end is None or ordinal < end):
                out.append(_copy(block))
            ordinal += 1
        elif first:
            out.append(_copy(block))
    return out


def _with_ids(
    blocks: list[comms_pb2.MessageBlock], ask_ids: list[str]
) -> list[comms_pb2.MessageBlock]:
    """Copies of `blocks` whose i-th ask block carries `ask_ids[i]` (the reconciliation)."""
    out: list[comms_pb2.MessageBlock] = []
    ordinal = 0
    for block in blocks:
        copy = _copy(block)
        if copy.HasField("ask"):
            if ordinal < len(ask_ids):
                copy.ask.ask_id = ask_ids[ordinal]
            ordinal += 1
        out.append(copy)
    return out


def _copy(block: comms_pb2.MessageBlock) -> comms_pb2.MessageBlock:
    copy = comms_pb2.MessageBlock()
    copy.CopyFrom(block)
    return copy


def _serialized(blocks: list[comms_pb2.MessageBlock]) -> bytes:
    return comms_pb2.MessageUpdated(blocks=blocks).SerializeToString(deterministic=True)
