"""The Poster: the mapper's frames posted in order, appended, updated, ask ids reconciled
(docs/spec.md §2.3).

One worker posts everything, in the order messages first appeared, so the channel shows
messages in the order the agent wrote them even after an outage. Per message:

- The first frame with any block goes out as AppendMessage with `client_message_id` set.
  Its blocks are fixed on first use and every retry repeats them exactly: after a lost
  response, the server finds the message by its client_message_id and, the blocks being
  equal, returns it with the same ids instead of storing a second copy (a retry with *other*
  blocks would be ALREADY_EXISTS).
- Every later frame goes out as UpdateMessage. The ask blocks are matched BY POSITION
  (design record, resolved decision 9): the first n ask blocks carry the n ids minted so
  far, in order; ask blocks after them are new asks and go out with an EMPTY ask_id, and
  the server mints their ids and returns them in the response. That is how every ask of a
  turn joins the assistant message that requested it, although the runtime settles the
  text before the first ask starts and starts a second ask only after the first one was
  answered. Frames are full snapshots, so while an update waits to be retried a newer
  snapshot replaces it (coalescing loses nothing); an update is never sent before its
  message's append succeeded.

Lost responses are repaired by retrying, like any retryable failure. A retried append is
idempotent (above), and so is a retried update, also one that ADDS asks: once it landed, the
positions it added are minted, and the server takes the retry's ask blocks there (still
with an empty ask_id, and the same content) for those stored asks, returning the stored
message with every minted id (design record, resolved decision 9). A newer snapshot that
replaced the update being retried repeats those asks unminted too and is accepted the same
way. One case is left: an append given up on after a retryable failure (INTERNAL or
UNKNOWN, bounded) may have landed, and the next snapshot's append, with other blocks,
would then be ALREADY_EXISTS. So the next append of that message repeats the given-up
blocks (finding the message, or storing them), and the newer snapshot follows as an update.

Errors (client.py: the error tree, `retryable`, `call_with_retry`): transient ones are
retried forever with capped exponential backoff; INTERNAL/UNKNOWN at most
`MAX_BOUNDED_RETRIES` times; anything else drops the frame with an error in the log (a later snapshot of the message tries again; the runtime's
requests for asks that have no id are answered cancelled). UNAUTHENTICATED and
PERMISSION_DENIED, and NOT_FOUND on AppendMessage (an unknown channel), can never succeed for
any frame: they stop the bridge (`FatalServerError`).
"""

from __future__ import annotations

import asyncio
import collections
import functools
import hashlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from compass_bridge.client import (
    AskNotPostedError,
    GaveUpError,
    SupersededError,
    call_with_retry,
)
from compass_core.limits import MAX_ID_LENGTH
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from compass_bridge.client import AgentApi

__all__ = ["Poster"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(slots=True)
class _Message:
    """One mapper message and what the server holds of it."""

    key: str
    """The mapper's client_message_id."""
    client_message_id: str
    """The id it is posted under (namespaced by the run, see Poster._client_id)."""
    latest: comms_pb2.MessageUpdated | None = None
    """The newest snapshot not yet taken up by the worker."""
    message_id: str = ""
    """The server's id; empty until the append succeeded."""
    ask_ids: list[str] = field(default_factory=list[str])
    """The ids minted for the message's asks, in block order."""
    posted: bytes = b""
    """The block set last stored (ids written in), serialized: updates equal to it are
    skipped."""
    given_up_append: list[comms_pb2.MessageBlock] | None = None
    """The blocks of an append given up on after a retryable failure (it may have landed):
    the message's next append repeats them (see the module docstring)."""
    failure: str | None = None
    """Why the last post of the message was dropped; None while none was, or a post runs."""


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
        self._futures: dict[tuple[str, int], asyncio.Future[str]] = {}
        self.dropped = 0
        """Frames given up on (each logged as an error)."""

    # -- the bridge's side -----------------------------------------------------------------

    def submit(self, frame: comms_pb2.MessageUpdated) -> None:
        """Queue a full snapshot of a message (keyed by its client_message_id)."""
        key = frame.client_message_id
        message = self._messages.get(key)
        if message is None:
            message = self._messages[key] = _Message(
                key=key, client_message_id=self._client_id(key)
            )
        message.latest = frame
        if key not in self._queued:
            self._queued.add(key)
            self._queue.append(key)
        self._idle.clear()
        self._wake.set()

    @property
    def pending(self) -> int:
        """Messages with snapshots not yet posted."""
        return len(self._queue)

    def ask_id(self, key: str, ordinal: int) -> asyncio.Future[str]:
        """The id minted for the `ordinal`-th ask of mapper message `key`.

        Awaiting it waits for the (possibly retried) append or update that adds the ask. It
        fails with AskNotPostedError if the last post of the message was dropped and no
        newer snapshot is queued (a later snapshot that gets posted resolves a new one).
        """
        future = self._futures.get((key, ordinal))
        if future is None or future.cancelled() or (future.done() and future.exception()):
            future = asyncio.get_running_loop().create_future()
            self._futures[(key, ordinal)] = future
            message = self._messages.get(key)
            if message is not None:
                if ordinal < len(message.ask_ids):
                    future.set_result(message.ask_ids[ordinal])
                elif message.failure is not None and message.latest is None:
                    _fail(future, message.failure)
        return future

    async def drain(self) -> None:
        """Wait until every submitted snapshot is posted (or dropped)."""
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
            snapshot = message.latest
            message.latest = None
            message.failure = None
            try:
                await self._post(message, snapshot)
            except SupersededError:
                continue  # a newer snapshot replaces the one being retried

    async def _post(self, message: _Message, snapshot: comms_pb2.MessageUpdated) -> None:
        blocks = [_copy(block) for block in snapshot.blocks]
        if message.message_id:
            await self._update(message, blocks)
        elif blocks:
            await self._append(message, blocks)
        # else: nothing to show yet (an assistant message without text); a later snapshot
        # with blocks is the message's first frame.

    async def _append(self, message: _Message, snapshot: list[comms_pb2.MessageBlock]) -> None:
        # An earlier append given up on may have landed: repeat it (module docstring).
        blocks = message.given_up_append or snapshot
        frame = comms_pb2.MessageUpdated(client_message_id=message.client_message_id, blocks=blocks)
        what = f"AppendMessage {message.client_message_id}"
        try:
            stored = await self._call(
                what,
                functools.partial(self._api.append_message, self._channel, frame),
                not_found_is_fatal=True,
            )
        except GaveUpError as exc:
            if exc.error.retryable:
                message.given_up_append = blocks
            self._drop(message, what, str(exc.error))
            return
        message.given_up_append = None
        ids = _ask_ids(stored)
        if len(ids) != _count_asks(blocks) or not all(ids) or not stored.message_id:
            self._drop(
                message,
                what,
                f"the server returned {len(ids)} ask ids for {_count_asks(blocks)} asks",
            )
            return
        message.message_id = stored.message_id
        self._stored(message, blocks, ids)
        logger.info("posted message %s as %s", message.client_message_id, stored.message_id)
        if blocks is not snapshot and message.latest is None:
            # The snapshot that found the given-up append goes out now, as an update.
            message.latest = comms_pb2.MessageUpdated(
                client_message_id=message.key, blocks=snapshot
            )

    async def _update(self, message: _Message, blocks: list[comms_pb2.MessageBlock]) -> None:
        known = list(message.ask_ids)
        asks = _count_asks(blocks)
        reconciled = _with_ids(blocks, known)
        if _serialized(reconciled) == message.posted:
            return
        if asks < len(known):
            logger.error(
                "message %s: a snapshot has %d asks but %d were posted; the server will refuse it",
                message.key,
                asks,
                len(known),
            )
        frame = comms_pb2.MessageUpdated(
            message_id=message.message_id,
            client_message_id=message.client_message_id,
            blocks=reconciled,
        )
        what = f"UpdateMessage {message.client_message_id}"
        try:
            stored = await self._call(
                what,
                functools.partial(self._api.update_message, frame),
                superseded=lambda: message.latest is not None,
            )
        except GaveUpError as exc:
            self._drop(message, what, str(exc.error))
            return
        ids = _ask_ids(stored)
        if len(ids) != asks or ids[: len(known)] != known or not all(ids):
            self._drop(
                message,
                what,
                f"the server returned ask ids {ids} for {asks} asks, {len(known)} of them {known}",
            )
            return
        self._stored(message, blocks, ids)
        if asks > len(known):
            logger.info(
                "message %s: %d new ask(s) posted", message.client_message_id, asks - len(known)
            )

    def _stored(
        self, message: _Message, blocks: Sequence[comms_pb2.MessageBlock], ids: list[str]
    ) -> None:
        """The server holds `blocks` (as mapped) with `ids` minted for their asks."""
        message.ask_ids = ids
        message.posted = _serialized(_with_ids(blocks, ids))
        for ordinal, ask_id in enumerate(ids):
            future = self._futures.get((message.key, ordinal))
            if future is not None and not future.done():
                future.set_result(ask_id)

    def _drop(self, message: _Message, what: str, reason: str) -> None:
        self.dropped += 1
        logger.error("%s failed for good, dropping the frame: %s", what, reason)
        message.failure = f"the server did not store the message holding the ask ({reason})"
        for (key, ordinal), future in self._futures.items():
            if key == message.key and ordinal >= len(message.ask_ids) and not future.done():
                _fail(future, message.failure)

    async def _call(
        self,
        what: str,
        call: Callable[[], Awaitable[T]],
        *,
        not_found_is_fatal: bool = False,
        superseded: Callable[[], bool] | None = None,
    ) -> T:
        return await call_with_retry(
            what,
            call,
            initial_backoff=self._initial_backoff,
            max_backoff=self._max_backoff,
            not_found_is_fatal=not_found_is_fatal,
            superseded=superseded,
        )

    def _client_id(self, key: str) -> str:
        prefix = f"{self._run_id}-"
        # The mapper numbers messages without a runtime id as `<session>-<n>`, and the
        # bridge passes run_id as the session: those are already namespaced.
        candidate = key if key.startswith(prefix) else f"{self._run_id}:{key}"
        if len(candidate) > MAX_ID_LENGTH:  # the server's limit on client_message_id
            digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:40]
            candidate = f"{self._run_id}:h{digest}"
        return candidate


def _fail(future: asyncio.Future[str], reason: str) -> None:
    future.set_exception(AskNotPostedError(reason))
    # Marks the exception as retrieved: a future whose waiter was cancelled meanwhile must
    # not be logged as "exception never retrieved"; a waiter still gets the exception.
    future.exception()


def _count_asks(blocks: Sequence[comms_pb2.MessageBlock]) -> int:
    return sum(1 for block in blocks if block.HasField("ask"))


def _ask_ids(message: comms_pb2.Message) -> list[str]:
    return [block.ask.ask_id for block in message.blocks if block.HasField("ask")]


def _with_ids(
    blocks: Sequence[comms_pb2.MessageBlock], ask_ids: list[str]
) -> list[comms_pb2.MessageBlock]:
    """Copies of `blocks` whose i-th ask block carries `ask_ids[i]` and whose later ask
    blocks carry an empty id (new asks: the server mints theirs)."""
    out: list[comms_pb2.MessageBlock] = []
    ordinal = 0
    for block in blocks:
        copy = _copy(block)
        if copy.HasField("ask"):
            copy.ask.ask_id = ask_ids[ordinal] if ordinal < len(ask_ids) else ""
            ordinal += 1
        out.append(copy)
    return out


def _copy(block: comms_pb2.MessageBlock) -> comms_pb2.MessageBlock:
    copy = comms_pb2.MessageBlock()
    copy.CopyFrom(block)
    return copy


def _serialized(blocks: Sequence[comms_pb2.MessageBlock]) -> bytes:
    return comms_pb2.MessageUpdated(blocks=blocks).SerializeToString(deterministic=True)
