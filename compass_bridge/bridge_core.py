"""What both transports share: the mapper, the poster and its worker, the outcome wait, and
closing the asks nobody waits for any more.

`runner.Bridge` (omp's RPC mode) and `acp.AcpBridge` (an ACP client) differ in how they
hear the runtime and how they hand it an answer; both map its events with one EventMapper,
post frames through one Poster, wait on WatchAsk until an ask is final (answered or declined
by a participant, closed by someone else), and stop when the server refuses the bridge
itself (`failure`).

Every ask the bridge posted ends with a typed outcome (design record, resolved decision 11).
When the runtime stops waiting for one before an answer was delivered, the bridge closes it
(`close_ask`): TIMED_OUT with what the runtime's own `ask.timeout` handed the model, else
WITHDRAWN with a few words saying why (see `Reason`). The close waits for the ask's minted id
(the poster may still be retrying the write that adds it) and is retried like a post;
`settle_closes` lets the closes still running finish before the bridge exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from typing import TYPE_CHECKING, Final

from compass_bridge.client import (
    AskNotPostedError,
    FatalServerError,
    GaveUpError,
    call_with_retry,
)
from compass_bridge.poster import Poster
from compass_bridge.receipts import mark_native_free_text
from compass_bridge.watch import until_final
from compass_core import EventMapper
from compass_core.ask_status import delivery_state_name, status_name
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Sequence

    from compass_bridge.client import AgentApi
    from compass_bridge.receipts import Receipt

__all__ = ["BridgeCore", "Reason"]

logger = logging.getLogger(__name__)

SETTLE_CLOSES_SECONDS: Final = 10.0
"""How long the bridge waits, when it exits, for closes still being retried."""


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
        self._api = api
        self._max_backoff = max_backoff
        self._initial_backoff = initial_backoff
        self.mapper = EventMapper(session=run_id)
        self.poster = Poster(
            api,
            channel_id,
            run_id=run_id,
            max_backoff=max_backoff,
            initial_backoff=initial_backoff,
        )
        self.failure: asyncio.Future[FatalServerError] = asyncio.get_running_loop().create_future()
        """Resolved when the server refuses the bridge itself; the session then stops."""
        self.delivered: int = 0
        """Answers delivered to the runtime (a whole ask each)."""
        self.closed: int = 0
        """Asks the bridge closed (WITHDRAWN or TIMED_OUT)."""
        self.shutdown_reason: str | None = None
        """Set when the bridge shuts down on a signal: the reason of every later close."""
        self._closing: dict[tuple[str, int], asyncio.Task[None]] = {}
        self._reports: dict[str, asyncio.Task[None]] = {}
        self._receipts_unsupported = False
        self.receipts: dict[str, Receipt] = {}
        """The receipt reported (or being reported) per ask id."""

    async def _until_final(self, ask_id: str) -> comms_pb2.Ask:
        return await until_final(
            self._api,
            ask_id,
            initial_backoff=self._initial_backoff,
            max_backoff=self._max_backoff,
        )

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
        if timeout is None:
            status = comms_pb2.ASK_STATUS_WITHDRAWN
            reason = self.shutdown_reason or reason
            answers: tuple[comms_pb2.AskQuestionAnswer, ...] = ()
        else:
            status = comms_pb2.ASK_STATUS_TIMED_OUT
            answers = tuple(timeout)
        task = asyncio.create_task(
            self._close(key, ordinal, status, reason, answers),
            name=f"compass-close-{key}-{ordinal}",
        )
        self._closing[key, ordinal] = task

    async def _close(
        self,
        key: str,
        ordinal: int,
        status: comms_pb2.AskStatus,
        reason: str,
        answers: tuple[comms_pb2.AskQuestionAnswer, ...],
    ) -> None:
        name = status_name(status).upper()
        ask_id = await self._minted_id(key, ordinal)
        if ask_id is None:
            logger.warning(
                "ask %d of message %s was not stored in Compass (%s)", ordinal, key, reason
            )
            return
        logger.info(
            "ask %s: the runtime stopped waiting (%s); closing it as %s", ask_id, reason, name
        )
        try:
            await call_with_retry(
                f"CloseAsk {ask_id}",
                functools.partial(self._api.close_ask, ask_id, status, reason, answers),
                initial_backoff=self._initial_backoff,
                max_backoff=self._max_backoff,
            )
        except GaveUpError as exc:
            if exc.error.code == "failed_precondition":
                logger.info("ask %s already has its outcome (%s); not closed", ask_id, exc.error)
                return
            _warn_left_open(ask_id, reason, f"CloseAsk failed: {exc.error}")
            return
        except FatalServerError as exc:
            _warn_left_open(ask_id, reason, str(exc))
            return
        self.closed += 1
        logger.warning("ask %s is closed in Compass as %s: %s", ask_id, name, reason)

    # -- delivery receipts -----------------------------------------------------------------

    def report_delivery(self, ask_id: str, receipt: Receipt) -> None:
        """Report in the background, once per ask, what the runtime received of `ask_id`'s
        outcome (AgentService.ReportDelivery, retried like a post)."""
        if not ask_id or ask_id in self._reports:
            return
        self.receipts[ask_id] = receipt
        self._reports[ask_id] = asyncio.create_task(
            self._report(ask_id, receipt), name=f"compass-receipt-{ask_id}"
        )

    async def _report(self, ask_id: str, receipt: Receipt) -> None:
        # What changed was logged as a warning where it happened; not delivering is news.
        if receipt.state == comms_pb2.DELIVERY_STATE_NOT_DELIVERED:
            logger.warning("ask %s: not delivered to the runtime: %s", ask_id, receipt.detail)
        else:
            logger.info("ask %s: receipt %s", ask_id, delivery_state_name(receipt.state))
        if self._receipts_unsupported:
            return
        try:
            await call_with_retry(
                f"ReportDelivery {ask_id}",
                functools.partial(
                    self._api.report_delivery,
                    ask_id,
                    receipt.state,
                    receipt.detail,
                    receipt.payload,
                ),
                initial_backoff=self._initial_backoff,
                max_backoff=self._max_backoff,
            )
        except GaveUpError as exc:
            if exc.error.code == "unimplemented":
                self._receipts_unsupported = True
                logger.warning(
                    "the server records no delivery receipts (%s): Compass cannot show "
                    "whether the runtime received its answers",
                    exc.error,
                )
                return
            logger.error("ask %s: the delivery receipt was not recorded (%s)", ask_id, exc.error)
        except FatalServerError as exc:
            logger.error("ask %s: the delivery receipt was not recorded (%s)", ask_id, exc)

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

    async def settle_closes(self, limit: float | None = SETTLE_CLOSES_SECONDS) -> None:
        """Let the closes and delivery receipts still running finish (at most `limit` s),
        then cancel the rest."""
        await asyncio.sleep(0)  # a receipt scheduled by the last reply starts first
        running = [*self._closing.values(), *self._reports.values()]
        tasks = [task for task in running if not task.done()]
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=limit)
        for task in pending:
            task.cancel()
        for task in pending:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if pending:
            logger.error(
                "gave up closing or reporting on %d ask(s): closes not made leave asks "
                "answerable in Compass, receipts not made leave answers unconfirmed there",
                len(pending),
            )

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


def _warn_left_open(ask_id: str, reason: str, why: str) -> None:
    logger.warning(
        "ask %s is left answerable in Compass: %s, and closing it failed (%s), so no answer "
        "given there reaches the runtime",
        ask_id,
        reason,
        why,
    )
