"""One agent's asks on AgentService: post one, follow it, withdraw it, report its receipt.

Every integration that asks on an agent's behalf goes through `AgentAsks`: the omp and ACP
bridges (through bridge_core.BridgeCore), `compass claude-hook` (claude/hook.py) and
`compass mcp` (mcp_stdio.py). Each call is retried here with `client.call_with_retry` and its
outcome is logged once, here; the integration keeps only what it does with the answer.

- Post (`post`): AppendMessage of a message of its own holding the ask, under a fresh
  `client_message_id`, the same on every retry of the call: a retry after a lost response
  finds the stored message instead of doubling it. (The bridges post the runtime's own
  messages through their Poster instead, which also adds asks to stored messages.)
- Follow (`states`, `until_final`): WatchAsk, yielding the ask's states until it is final
  (compass_core.ask_status). A stream that ends early or fails transiently is reopened with
  capped backoff, a new backoff after a stream that lived `_STABLE_STREAM_SECONDS`; the
  server's keepalives bound the silence of a live one (client.READ_TIMEOUT_SECONDS).
- Withdraw (`withdraw`): the agent stops waiting: CloseAsk as WITHDRAWN with a few words
  saying why, or TIMED_OUT with what the runtime's own timeout picked. An ask already final
  (answered, declined or closed meanwhile) is no failure: `Closed.ALREADY_FINAL` says so.
  `close_ask` is the bare call, retried, for callers that answer its errors themselves (the
  MCP tools' `ask_cancel`).
- Report (`report`): ReportDelivery of what the agent received of a final ask's answer or
  decline. A server that records no receipts (UNIMPLEMENTED) is said once and not asked
  again.
- For a process that asks once (`compass claude-hook`, `compass opencode ask`): `post_alone`
  and `follow` race the post and the outcome against the agent's end of waiting, and
  `withdraw_unhanded` withdraws the ask then (one final meanwhile gets the receipt saying it
  was not handed over); what keeps it from asking is a CannotAskError.
- In the background (`spawn`, `report_soon`, `settle`): closes and receipts that outlive
  what started them, let finish (within a bound) before the process exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import logging
import secrets
import time
from typing import TYPE_CHECKING, Final, TypeVar

from compass_bridge.client import (
    MAX_BOUNDED_RETRIES,
    AskNotPostedError,
    FatalServerError,
    GaveUpError,
    RpcError,
    backoff,
    bounded,
    call_with_retry,
    fatal,
)
from compass_bridge.receipts import not_delivered
from compass_core.ask_status import delivery_state_name, is_final, status_name
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Sequence

    from compass_bridge.client import AgentApi
    from compass_bridge.receipts import Receipt

__all__ = ["INITIAL_BACKOFF", "SETTLE_SECONDS", "AgentAsks", "CannotAskError", "Closed"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

INITIAL_BACKOFF: Final = 0.2
"""The first wait before a call or a WatchAsk is tried again (seconds)."""
SETTLE_SECONDS: Final = 10.0
"""How long `settle` waits by default for the closes and receipts still running."""
_STABLE_STREAM_SECONDS: Final = 10.0  # a WatchAsk that lived this long starts a new backoff
_LOG_EVERY: Final = 10  # after the first failed reconnect, log every n-th


class Closed(enum.Enum):
    """What came of withdrawing an ask."""

    CLOSED = "closed"
    """The ask is closed in Compass as asked."""
    ALREADY_FINAL = "already final"
    """It had its outcome already (answered, declined, closed or expired meanwhile)."""
    FAILED = "failed"
    """Closing it failed: it is left answerable in Compass (logged)."""


class AgentAsks:
    """The asks of one agent account, on AgentService (see the module docstring)."""

    def __init__(
        self,
        api: AgentApi,
        *,
        initial_backoff: float = INITIAL_BACKOFF,
        max_backoff: float = 5.0,
    ) -> None:
        self._api = api
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._background: set[asyncio.Task[object]] = set()
        self._receipts_unsupported = False
        self.receipts: dict[str, Receipt] = {}
        """The receipt reported (or being reported) in the background, per ask id."""

    async def _retried(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        return await call_with_retry(
            what, call, initial_backoff=self._initial_backoff, max_backoff=self._max_backoff
        )

    # -- post ------------------------------------------------------------------------------

    async def post(
        self, channel_id: str, blocks: Sequence[comms_pb2.MessageBlock], *, prefix: str
    ) -> comms_pb2.Message:
        """Append a message of `blocks` (holding the ask) to the channel; the stored message,
        with the ask's minted id. Its `client_message_id` is `prefix` and a fresh random
        part, the same on every retry, so a retry never doubles the message.

        Raises:
            GaveUpError: the server did not store it (logged).
            FatalServerError: the server refuses the agent itself (logged).
        """
        frame = comms_pb2.MessageUpdated(
            client_message_id=f"{prefix}-{secrets.token_hex(12)}", blocks=blocks
        )
        try:
            message = await self._retried(
                "AppendMessage", functools.partial(self._api.append_message, channel_id, frame)
            )
        except (GaveUpError, FatalServerError) as exc:
            logger.error("cannot post the ask in Compass: %s", exc)
            raise
        asks = [block.ask.ask_id for block in message.blocks if block.HasField("ask")]
        logger.info("asked in Compass: ask %s", ", ".join(asks))
        return message

    # -- follow ----------------------------------------------------------------------------

    async def until_final(self, ask_id: str) -> comms_pb2.Ask:
        """Follow WatchAsk until `ask_id` is final; the Ask in its first final state.

        Raises:
            FatalServerError: the server refuses the agent (bad token, not a participant).
            AskNotPostedError: the ask cannot be watched (not found, or too many INTERNALs).
        """
        async with contextlib.aclosing(self.states(ask_id)) as states:
            async for ask in states:
                if is_final(ask):
                    return ask
        raise AskNotPostedError(f"WatchAsk {ask_id} ended without its outcome")  # pragma: no cover

    async def states(self, ask_id: str) -> AsyncGenerator[comms_pb2.Ask]:
        """Follow WatchAsk: yield the ask's states (the current one at once, then each
        change; a reconnect yields the current one again), ending after the first final one.

        Raises:
            FatalServerError, AskNotPostedError: as `until_final`.
        """
        bounded_failures = 0
        while True:
            # One backoff per healthy stream: after a stream that lived
            # _STABLE_STREAM_SECONDS, the next reconnect starts a new one (at once, then
            # from the initial backoff).
            async for attempt in backoff(
                _ReconnectError, initial=self._initial_backoff, cap=self._max_backoff
            ):
                with attempt:
                    started = time.monotonic()
                    try:
                        async with contextlib.aclosing(self._api.watch_ask(ask_id)) as states:
                            async for ask in states:
                                yield ask
                                if is_final(ask):
                                    return
                        problem = "the stream ended before the outcome"
                    except RpcError as exc:
                        if fatal(exc.code):
                            raise FatalServerError(f"WatchAsk {ask_id}: {exc}") from exc
                        bounded_failures += bounded(exc.code)
                        if not exc.retryable or bounded_failures > MAX_BOUNDED_RETRIES:
                            raise AskNotPostedError(f"WatchAsk {ask_id} failed: {exc}") from exc
                        problem = str(exc)
                    if time.monotonic() - started >= _STABLE_STREAM_SECONDS:
                        logger.warning("WatchAsk %s: %s; reconnecting", ask_id, problem)
                        break
                    if attempt.num == 1 or attempt.num % _LOG_EVERY == 0:
                        logger.warning(
                            "WatchAsk %s: %s; reconnecting in %.1fs (attempt %d)",
                            ask_id,
                            problem,
                            attempt.next_wait,
                            attempt.num,
                        )
                    raise _ReconnectError(problem)

    # -- withdraw --------------------------------------------------------------------------

    async def close_ask(
        self,
        ask_id: str,
        status: comms_pb2.AskStatus,
        reason: str,
        answers: Sequence[comms_pb2.AskQuestionAnswer] = (),
    ) -> comms_pb2.Ask:
        """CloseAsk, retried; the closed Ask. Logs nothing: the caller answers its errors.

        Raises:
            GaveUpError: the server refused it (FAILED_PRECONDITION: the ask is final).
            FatalServerError: the server refuses the agent itself.
        """
        return await self._retried(
            f"CloseAsk {ask_id}",
            functools.partial(self._api.close_ask, ask_id, status, reason, answers),
        )

    async def withdraw(
        self,
        ask_id: str,
        reason: str,
        *,
        timed_out: Sequence[comms_pb2.AskQuestionAnswer] | None = None,
        within: float | None = None,
    ) -> Closed:
        """The agent stops waiting for `ask_id`: close it as WITHDRAWN with `reason`, or, with
        `timed_out` (what the runtime's own timeout picked), as TIMED_OUT. Retried (for at
        most `within` seconds) and logged; never raises."""
        if timed_out is None:
            status, answers = comms_pb2.ASK_STATUS_WITHDRAWN, ()
        else:
            status, answers = comms_pb2.ASK_STATUS_TIMED_OUT, tuple(timed_out)
        try:
            async with asyncio.timeout(within):
                await self.close_ask(ask_id, status, reason, answers)
        except GaveUpError as exc:
            if exc.error.code == "failed_precondition":
                logger.info("ask %s already has its outcome (%s); not closed", ask_id, exc.error)
                return Closed.ALREADY_FINAL
            _warn_left_open(ask_id, reason, f"CloseAsk failed: {exc.error}")
            return Closed.FAILED
        except FatalServerError as exc:
            _warn_left_open(ask_id, reason, str(exc))
            return Closed.FAILED
        except TimeoutError:
            _warn_left_open(ask_id, reason, "CloseAsk timed out")
            return Closed.FAILED
        logger.warning(
            "ask %s is closed in Compass as %s: %s", ask_id, status_name(status).upper(), reason
        )
        return Closed.CLOSED

    async def post_alone(
        self,
        channel_id: str,
        blocks: Sequence[comms_pb2.MessageBlock],
        *,
        prefix: str,
        stopped: Callable[[asyncio.Future[comms_pb2.Message]], Awaitable[str | None]],
        grace: Callable[[], float],
    ) -> tuple[str, str | None]:
        """For a process that asks once: `post` the ask's message, unless the agent stops
        waiting first (`stopped`, given the post, says why, or None once it is done); then the
        post gets `grace()` seconds more (it may be stored all the same: the caller withdraws
        it). (The ask's id, or "" when it was not posted; why the agent stopped waiting, or
        None.)

        Raises:
            CannotAskError: the server did not store the ask.
        """
        append = asyncio.ensure_future(self.post(channel_id, blocks, prefix=prefix))
        reason = await stopped(append)
        if reason is not None and not append.done():
            await asyncio.wait({append}, timeout=grace())
        if not append.done():
            append.cancel()
            with contextlib.suppress(asyncio.CancelledError, GaveUpError, FatalServerError):
                await append
            return "", reason
        try:
            message = append.result()
        except (GaveUpError, FatalServerError) as exc:
            raise CannotAskError(str(exc)) from None
        ask_id = next((b.ask.ask_id for b in message.blocks if b.HasField("ask")), "")
        if not ask_id:
            raise CannotAskError("the server stored the message without its ask")
        return ask_id, reason

    async def withdraw_unhanded(
        self, ask_id: str, reason: str, *, within: Callable[[], float | None]
    ) -> None:
        """The agent stopped waiting for `ask_id` (`reason`) before an answer was handed over:
        withdraw it; one answered or declined just then gets the receipt saying it was not
        handed over. Each call takes at most `within()` seconds (asked before each)."""
        closed = await self.withdraw(ask_id, reason, within=within())
        if closed is Closed.ALREADY_FINAL:
            # Answered or declined just as the agent stopped waiting: not handed over.
            await self.report(
                ask_id,
                not_delivered(f"{reason} before the answer was handed over"),
                within=within(),
            )

    async def follow(
        self,
        ask_id: str,
        stopped: Callable[[asyncio.Future[comms_pb2.Ask]], Awaitable[str | None]],
        *,
        within: Callable[[], float | None],
        gone_reason: str,
        log: logging.Logger,
    ) -> comms_pb2.Ask | None:
        """For a process that asks once: the Ask in its first final state; None when the
        agent stopped waiting first (`stopped`, given the wait, says why, or None once it is
        done), the ask then withdrawn with that reason (`withdraw_unhanded`).

        Raises:
            CannotAskError: the ask cannot be followed (logged in `log`); it was withdrawn
                with `gone_reason`.
        """
        watch = asyncio.ensure_future(self.until_final(ask_id))
        reason = await stopped(watch)
        if reason is not None:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError, FatalServerError, AskNotPostedError):
                await watch
            await self.withdraw_unhanded(ask_id, reason, within=within)
            return None
        try:
            return watch.result()
        except (FatalServerError, AskNotPostedError) as exc:
            log.error("cannot follow ask %s: %s", ask_id, exc)
            await self.withdraw_unhanded(ask_id, gone_reason, within=within)
            raise CannotAskError(f"lost track of ask {ask_id} ({exc})") from None

    # -- report ----------------------------------------------------------------------------

    async def report(self, ask_id: str, receipt: Receipt, *, within: float | None = None) -> bool:
        """Report what the agent received of `ask_id`'s outcome (ReportDelivery), retried for
        at most `within` seconds; whether the server recorded it. Logged; never raises."""
        # What changed was logged as a warning where it happened; not delivering is news.
        if receipt.state == comms_pb2.DELIVERY_STATE_NOT_DELIVERED:
            logger.warning("ask %s: not delivered to the runtime: %s", ask_id, receipt.detail)
        else:
            logger.info("ask %s: receipt %s", ask_id, delivery_state_name(receipt.state))
        if self._receipts_unsupported:
            return False
        try:
            async with asyncio.timeout(within):
                await self._retried(
                    f"ReportDelivery {ask_id}",
                    functools.partial(
                        self._api.report_delivery,
                        ask_id,
                        receipt.state,
                        receipt.detail,
                        receipt.payload,
                    ),
                )
        except GaveUpError as exc:
            if exc.error.code == "unimplemented":
                if not self._receipts_unsupported:
                    self._receipts_unsupported = True
                    logger.warning(
                        "the server records no delivery receipts (%s): Compass cannot show "
                        "whether the runtime received its answers",
                        exc.error,
                    )
                return False
            logger.error("ask %s: the delivery receipt was not recorded (%s)", ask_id, exc.error)
            return False
        except FatalServerError as exc:
            logger.error("ask %s: the delivery receipt was not recorded (%s)", ask_id, exc)
            return False
        except TimeoutError:
            logger.error("ask %s: the delivery receipt was not recorded (timed out)", ask_id)
            return False
        return True

    # -- in the background -----------------------------------------------------------------

    def spawn(self, work: Coroutine[object, object, object], *, name: str) -> None:
        """Run `work` (a close or a receipt) in the background; `settle` waits for it."""
        task = asyncio.create_task(work, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def report_soon(self, ask_id: str, receipt: Receipt) -> None:
        """`report` in the background, once per ask (a later receipt for it is ignored)."""
        if not ask_id or ask_id in self.receipts:
            return
        self.receipts[ask_id] = receipt
        self.spawn(self.report(ask_id, receipt), name=f"compass-receipt-{ask_id}")

    async def settle(self, limit: float | None = SETTLE_SECONDS) -> None:
        """Let the closes and receipts still running finish (at most `limit` s), then cancel
        the rest."""
        await asyncio.sleep(0)  # a receipt scheduled by the last reply starts first
        tasks = [task for task in self._background if not task.done()]
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


class CannotAskError(Exception):
    """A process that asks once cannot ask in Compass (the ask was not stored, or cannot be
    followed); the message says why."""


class _ReconnectError(Exception):
    """The stream ended or failed transiently: reopen it after the backoff's wait."""


def _warn_left_open(ask_id: str, reason: str, why: str) -> None:
    logger.warning(
        "ask %s is left answerable in Compass: %s, and closing it failed (%s), so no answer "
        "given there reaches the runtime",
        ask_id,
        reason,
        why,
    )
