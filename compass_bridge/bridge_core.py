"""What the bridges share: the mapper, the poster and its worker, their asks
(asks.AgentAsks: the outcome wait, closes, receipts), and closing the asks nobody waits for
any more; and, for a bridge of one prompt turn (`OneTurnBridge`: ACP, Copilot), the asks it
posts in messages of its own and the waits for them that stop with the turn.

`omp.bridge.Bridge` (omp's RPC mode) and `acp.bridge.AcpBridge` (an ACP client) differ in
how they hear the runtime and how they hand it an answer; both map its events with one
EventMapper, post frames through one Poster, wait on WatchAsk until an ask is final (answered
or declined by a participant, closed by someone else: `asks.until_final`), report what the
runtime received (`asks.report_soon`), and stop when the server refuses the bridge itself
(`failure`).

Every ask the bridge posted ends with a typed outcome (design record, resolved decision 11).
When the runtime stops waiting for one before an answer was delivered, the bridge closes it
(`close_ask`): TIMED_OUT with what the runtime's own `ask.timeout` handed the model, else
WITHDRAWN with a few words saying why (see `Reason`). The close waits for the ask's minted id
(the poster may still be retrying the write that adds it) and is retried like a post
(`asks.withdraw`); `asks.settle` lets the closes and receipts still running finish before the
bridge exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
from typing import TYPE_CHECKING, ClassVar, Final, TypeVar

from compass_bridge.asks import AgentAsks, Closed
from compass_bridge.client import AskNotPostedError, FatalServerError
from compass_bridge.poster import Poster
from compass_bridge.receipts import mark_native_free_text
from compass_core import EventMapper
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator, Sequence

    from compass_bridge.client import AgentApi

__all__ = ["BridgeCore", "OneTurnBridge", "Reason", "StoppedError", "until_stopped"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Reason:
    """The `reason` strings of CloseAsk(WITHDRAWN) (and of TIMED_OUT), a few words each."""

    TOOL_CALL_ENDED: Final = "tool call ended"
    """The ask tool call ended without an answer (and not by the runtime's timeout)."""
    TOOL_CALL_ABORTED: Final = "tool call aborted"
    """The ask tool call failed: the runtime aborted it."""
    RUNTIME_CANCELLED: Final = "runtime cancelled the request"
    """The runtime cancelled its dialog or request for the ask (omp's RPC mode: an abort)."""
    TURN_ENDED: Final = "turn ended"
    """The prompt turn ended (ACP) before an answer was delivered."""
    RUNTIME_EXITED: Final = "runtime exited"
    """The runtime's output ended (it exited, or its connection closed)."""
    BRIDGE_ERROR: Final = "bridge error"
    """Answering failed inside the bridge (logged); the runtime got a cancel."""
    RUNTIME_TIMEOUT: Final = "runtime timeout picked the answer"
    """TIMED_OUT: the runtime's own `ask.timeout` answered."""

    @staticmethod
    def shutdown(signal_name: str) -> str:
        """The bridge got a signal (Ctrl-C: SIGINT) and shuts down."""
        return f"bridge shut down ({signal_name})"


class BridgeCore:
    """One runtime bridged to one Compass channel: the transport-independent part."""

    def __init__(
        self,
        *,
        api: AgentApi,
        channel_id: str,
        run_id: str,
        max_backoff: float,
        initial_backoff: float,
    ) -> None:
        self.run_id = run_id
        """The run's id: the mapper's session, and the start of the keys of what it posts."""
        self.mapper = EventMapper(session=run_id)
        self.poster = Poster(
            api,
            channel_id,
            run_id=run_id,
            max_backoff=max_backoff,
            initial_backoff=initial_backoff,
        )
        self.asks = AgentAsks(api, initial_backoff=initial_backoff, max_backoff=max_backoff)
        """Following, closing and reporting on the asks the poster posted."""
        self.failure: asyncio.Future[FatalServerError] = asyncio.get_running_loop().create_future()
        """Resolved when the server refuses the bridge itself; the session then stops."""
        self.delivered: int = 0
        """Answers delivered to the runtime (a whole ask each)."""
        self.closed: int = 0
        """Asks the bridge closed (WITHDRAWN or TIMED_OUT)."""
        self.shutdown_reason: str | None = None
        """Set when the bridge shuts down on a signal: the reason of every later close."""
        self._closing: set[tuple[str, int]] = set()

    # -- closing ---------------------------------------------------------------------------

    def shutting_down(self, signal_name: str) -> None:
        """The bridge got a signal: asks it stops waiting for from now on say so."""
        if self.shutdown_reason is None:
            self.shutdown_reason = Reason.shutdown(signal_name)

    def close_ask(
        self,
        key: str,
        ordinal: int,
        reason: str,
        timeout: Sequence[comms_pb2.AskQuestionAnswer] | None = None,
    ) -> None:
        """Close the `ordinal`-th ask of mapper message `key` in the background, once.

        With `timeout` (the runtime's auto-answers) as TIMED_OUT, else as WITHDRAWN with
        `reason` (replaced by `shutdown_reason` once the bridge shuts down).
        """
        if (key, ordinal) in self._closing:
            return
        self._closing.add((key, ordinal))
        if timeout is None:
            reason = self.shutdown_reason or reason
        self.asks.spawn(
            self._close(key, ordinal, reason, None if timeout is None else tuple(timeout)),
            name=f"compass-close-{key}-{ordinal}",
        )

    async def _close(
        self,
        key: str,
        ordinal: int,
        reason: str,
        timed_out: tuple[comms_pb2.AskQuestionAnswer, ...] | None,
    ) -> None:
        ask_id = await self._minted_id(key, ordinal)
        if ask_id is None:
            logger.warning(
                "ask %d of message %s was not stored in Compass (%s)", ordinal, key, reason
            )
            return
        name = "WITHDRAWN" if timed_out is None else "TIMED_OUT"
        logger.info(
            "ask %s: the runtime stopped waiting (%s); closing it as %s", ask_id, reason, name
        )
        if await self.asks.withdraw(ask_id, reason, timed_out=timed_out) is Closed.CLOSED:
            self.closed += 1

    # -- frames ----------------------------------------------------------------------------

    @staticmethod
    def mark_native_asks(frame: comms_pb2.MessageUpdated) -> None:
        """Mark the asks of a mapper frame (oh-my-pi's native ask tool) with the free text
        the runtime can receive (delivery.mark_native_free_text). Every snapshot of a
        message carries the same marks, so the poster's snapshots stay alike."""
        for block in frame.blocks:
            if block.HasField("ask"):
                mark_native_free_text(block.ask)

    async def _minted_id(self, key: str, ordinal: int) -> str | None:
        """The ask's id once minted; None when its message was not stored. A wait the bridge
        failed because it stops is tried once more after the queued frames were posted."""
        for attempt in range(2):
            try:
                # Shielded: cancelling this wait must not cancel the future others share.
                return await asyncio.shield(self.poster.ask_id(key, ordinal))
            except AskNotPostedError:
                if attempt:
                    return None
                await self.poster.drain()
        return None  # pragma: no cover - the loop returns

    # -- the poster ------------------------------------------------------------------------

    async def run_poster(self) -> None:
        """The Poster's worker; a fatal refusal resolves `failure` instead of raising."""
        try:
            await self.poster.run()
        except FatalServerError as exc:
            self._fail(exc)
        except Exception as exc:
            logger.exception("agent-bridge: the poster failed")
            self._fail(FatalServerError(f"internal error ({type(exc).__name__})"))

    def _fail(self, exc: FatalServerError) -> None:
        if not self.failure.done():
            self.failure.set_result(exc)


class StoppedError(Exception):
    """The wait was stopped: the runtime stopped waiting, or the turn is over."""


async def until_stopped(
    work: Awaitable[T], stopping: asyncio.Event, ended: asyncio.Event | None
) -> T:
    """`work`'s result, unless `stopping` or `ended` is set first (then StoppedError)."""
    task = asyncio.ensure_future(work)
    stops = [asyncio.ensure_future(stopping.wait())]
    if ended is not None:
        stops.append(asyncio.ensure_future(ended.wait()))
    try:
        await asyncio.wait([task, *stops], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for stop in stops:
            stop.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    raise StoppedError


class OneTurnBridge(BridgeCore):
    """A bridge of one prompt turn (acp.bridge.AcpBridge, copilot.bridge.CopilotBridge): asks
    it posts in messages of its own, waits for their outcome that stop when the turn ends (or
    the server refuses the bridge), and the reason the asks still waited for are closed with.
    """

    _OWN_KIND: ClassVar[str] = "ask"
    """The middle of an own message's key: `<run id>-<kind>-<n>`."""
    _NOT_POSTED: ClassVar[str] = "an ask cannot be answered: %s"
    """What is logged (in `_log`) when an own ask's message was not stored."""
    _log: ClassVar[logging.Logger] = logger

    _stop_reason: str = Reason.TURN_ENDED
    """Why the turn is over: the reason of the closes it makes (the first one given)."""

    @functools.cached_property
    def _stopping(self) -> asyncio.Event:
        """Set when the turn is over (or the server refused the bridge): every wait stops."""
        return asyncio.Event()

    @functools.cached_property
    def _own_messages(self) -> Iterator[int]:
        return itertools.count(1)

    def end_turn(self, reason: str = Reason.TURN_ENDED) -> None:
        """The turn ended (or the runtime is gone): every wait stops; what the runtime still
        waited for is closed in Compass with `reason` (the first one given)."""
        if not self._stopping.is_set():
            self._stop_reason = reason
        self._stopping.set()

    def _post_own(self, texts: Sequence[str], ask: comms_pb2.Ask) -> str:
        """Post a message of the bridge's own, `texts` then `ask`; its key."""
        key = f"{self.run_id}-{self._OWN_KIND}-{next(self._own_messages)}"
        frame = comms_pb2.MessageUpdated(client_message_id=key)
        for text in texts:
            frame.blocks.add().text.text = text
        frame.blocks.add().ask.CopyFrom(ask)
        self.poster.submit(frame)
        return key

    async def _wait_answer(
        self,
        ask_id: Callable[[], asyncio.Future[str]],
        ended: asyncio.Event | None,
    ) -> comms_pb2.Ask | None:
        """The Ask in its first final state, or None when it cannot be had (logged).

        Raises:
            StoppedError: `ended` is set (the runtime stopped waiting) or the turn is over
                first.
        """

        async def wait() -> comms_pb2.Ask:
            # Shielded: cancelling this wait must not cancel the future other waits share.
            minted = await asyncio.shield(ask_id())
            return await self.asks.until_final(minted)

        try:
            return await until_stopped(wait(), self._stopping, ended)
        except AskNotPostedError as exc:
            self._log.error(self._NOT_POSTED, exc)
            return None
        except FatalServerError as exc:
            self._fail(exc)
            return None

    def _fail(self, exc: FatalServerError) -> None:
        super()._fail(exc)
        self._stopping.set()
