"""The bridge's core: runtime lines in; frames posted, asks correlated, answers written back.

`Bridge.feed(line)` takes one line of the runtime's JSON-lines output. It never raises and
never awaits: it maps the event (EventMapper), queues frames on the Poster, and starts or
stops the tasks that wait for answers. The caller (process.py) owns the I/O.

Correlation (docs/spec.md §2.3). An ask tool call arrives as `tool_execution_start`, which the mapper
turns into an Ask block (its ConversationUpdated carries `tool_call_id` and `block_index`);
the bridge records an `AskSlot` for it: the mapper message, the ask's ordinal in it (the i-th
ask block), and its questions. The runtime then asks the host in one of two ways
(frames.py):

- `method: "ask"` (a runtime that accepted `set_ask_dialog`): one request per call, matched
  to a slot not yet matched by `toolCallId` when it carries one, else by equal question ids,
  preferring equal question texts too, oldest slot first. Answered at once (`ask_reply`).
- `method: "select"` / `"editor"` (oh-my-pi 18.2.3): a select is matched to a slot by its
  title and options (`locate_select`: the question's text with its `(i/N)` and `(k
  selected) ` decorations, the labels as the runtime shows them), the slot whose dialogs are
  under way first. Each select and editor is answered by the slot's `DialogDriver`.
- pi's `ask_user` (Compass's extension, pi_ask.py): the call is renamed `ask` for the
  mapper, and each of its `select`, `confirm`, `input` and `editor` dialogs is matched to
  its question by title and shape (`locate_dialog`), answered by the slot's `PiDriver`.

A request that arrives before its call's `tool_execution_start` (18.2.3 sends the first
select a few ms early; a select ending with "Other (type your own)" is omp's) is held for
`hold_seconds` (2 s), until a slot matches it. Any other dialog no ask call claims is an Ask
of its own (lone.py). A matched
request starts a task: wait for the ask's minted id (the append, or the update that adds the
ask to its already stored message, may still be retrying), follow WatchAsk until the ask is
answered (reconnecting with backoff), then write the reply (or the dialog step). Each ask has
its own task, so two asks of one turn wait concurrently and each answer goes to its own
requests. A request that matches nothing (the mapper refused the ask's arguments, say), or
whose ask the server did not store, is answered `cancelled`, so the runtime never hangs on an
ask nobody can see.

Outcomes (design record, resolved decision 11). The wait ends when the ask is final in
Compass: ANSWERED is delivered; DECLINED (a participant declined) gets the runtime's cancel,
`{"cancelled": true}` for the pending request or dialog (omp then aborts the run; pi's
ask_user gets `abort` first, as its confirm reads a cancel as "No"), and so does any other
outcome written elsewhere (EXPIRED). When the runtime stops waiting first,
the bridge closes the ask (bridge_core.BridgeCore.close_ask): the runtime cancelled the request or
dialog (omp sends that when its run is aborted), the ask tool call ended or failed, the
runtime's output ended, the bridge got a signal: WITHDRAWN with that reason; the call's result
says omp's own `ask.timeout` picked the answer (`details.timedOut`): TIMED_OUT with those
picks. omp announces that timeout as the select's `timeout` (ms, per dialog); a select held
before its call starts carries it into the posted ask as `deadline` (now + timeout per
question: nobody answering, each question's dialog times out in turn) and `on_timeout =
PICK_RECOMMENDED`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import json
import logging
from typing import TYPE_CHECKING

from compass_bridge.bridge_core import BridgeCore, Reason
from compass_bridge.client import AskNotPostedError, FatalServerError
from compass_bridge.held import HOLD_SECONDS, HeldRequests
from compass_bridge.omp.dialog import DialogDriver, DialogStep, dialog_questions
from compass_bridge.omp.frames import (
    ABORT_COMMAND,
    ASK_DIALOG_COMMAND_ID,
    DIALOG_METHODS,
    DONE_SELECTING_LABELS,
    OTHER_OPTION,
    PROMPT_COMMAND_ID,
    AskRequest,
    CancelRequest,
    EditorRequest,
    NoticeRequest,
    QuestionMatch,
    SelectRequest,
    UnreadableRequest,
    as_object,
    ask_reply,
    cancelled_reply,
    locate_select,
    parse_ui_request,
)
from compass_bridge.omp.lone import LoneDialogs
from compass_bridge.omp.pi_ask import PiDriver, as_ask_call, mark_asks, pi_questions
from compass_bridge.omp.slots import (
    AskSlot,
    Dialog,
    Holdable,
    ReplySink,
    Writer,
    correlate,
    decline_receipt,
    dialog_receipt,
    locate,
    locate_dialog,
    log_ask_dialog,
    log_unanswered,
    with_deadlines,
)
from compass_bridge.receipts import delivered, not_delivered, payload_of
from compass_bridge.replies import build_answers, runtime_timeout
from compass_core import ConversationUpdated
from compass_core.ask_status import outcome
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from compass_bridge.client import AgentApi
    from compass_bridge.omp.frames import DialogRequest

__all__ = ["AskSlot", "Bridge", "ReplySink"]  # AskSlot and ReplySink live in slots.py

logger = logging.getLogger(__name__)


class Bridge(BridgeCore):
    """One runtime's event stream, bridged to one Compass channel."""

    def __init__(
        self,
        *,
        api: AgentApi,
        channel_id: str,
        sink: ReplySink,
        run_id: str,
        max_backoff: float = 5.0,
        initial_backoff: float = 0.2,
        hold_seconds: float = HOLD_SECONDS,
    ) -> None:
        super().__init__(
            api=api,
            channel_id=channel_id,
            run_id=run_id,
            max_backoff=max_backoff,
            initial_backoff=initial_backoff,
        )
        self._writer = Writer(sink)
        self._slots: list[AskSlot] = []
        self._waits: dict[str, asyncio.Task[None]] = {}
        self._dialogs: set[asyncio.Task[None]] = set()
        self._held = HeldRequests[Holdable](
            hold_seconds,
            lambda rid, request: self._refuse(
                rid, request, f"no ask tool call matching it started within {hold_seconds:g}s"
            ),
        )
        self._lone = LoneDialogs(self, run_id=run_id, writer=self._writer, fail=self._fail)
        self._pi_calls: set[str] = set()
        self._pi_asks: dict[str, set[int]] = {}
        """The ask_user asks of each mapper message (their ordinals), for their marks."""
        self._unmapped: collections.Counter[str] = collections.Counter()
        self._done_label: str | None = None
        self._ask_dialog_answered = False
        self.ready = asyncio.Event()
        """Set when the runtime said it reads commands (omp's `ready` line; pi's, or omp's,
        answer to a command)."""
        self.idle = asyncio.Event()
        """Set when a run of the agent ended for good (`agent_end` not marked `isTerminal:
        false`, which the runtime sends when a retry or queued message continues it), or
        the runtime refused the prompt."""

    # -- input -----------------------------------------------------------------------------

    def feed(self, line: bytes) -> None:
        """Handle one line of the runtime's output. Never raises."""
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            self._count("line", "not valid UTF-8")
            return
        if not text.strip():
            return
        try:
            event: object = json.loads(text)
        except ValueError:
            self._count("line", "not JSON")
            return
        except RecursionError:  # nesting deeper than the parser's recursion limit
            self._count("line", "JSON nested too deeply")
            return
        obj = as_object(event)
        if obj is None:
            self._count("line", "not a JSON object")
            return
        try:
            self._handle(obj)
        except Exception:  # runtime output must never stop the bridge; logged, counted
            logger.exception("agent-bridge: handling a runtime event failed")
            self._count(str(obj.get("type", "event"))[:64], "internal error in the bridge")

    def count_unreadable(self, reason: str) -> None:
        """Count a line the reader had to skip (e.g. longer than its limit)."""
        self._count("line", reason)

    def _handle(self, event: dict[str, object]) -> None:
        kind = event.get("type")
        if kind in {"extension_ui_request", "extension_ui_cancel"}:
            self._on_ui_request(event)
            return
        if kind == "response":
            self.ready.set()  # it answers commands, so it reads them
            self._on_response(event)
            return
        if kind == "ready":
            self.ready.set()
        elif kind == "agent_end" and event.get("isTerminal") is not False:
            self.idle.set()
            self._lone.run_ended()
        event = as_ask_call(event, self._pi_calls)
        for output in self.mapper.map(event):
            if isinstance(output, ConversationUpdated):
                self._on_frame(output)
            else:
                logger.warning("unmapped runtime event %s: %s", output.event_type, output.reason)
        if event.get("toolName") == "ask":
            if kind == "tool_execution_start":
                # The call a held request waited for has started; what it did not match,
                # nothing will.
                self._release_held("no ask block matches it")
            elif kind == "tool_execution_end":
                self._on_ask_end(event)

    def _on_frame(self, output: ConversationUpdated) -> None:
        frame = output.value
        blocks = frame.blocks
        index = output.block_index
        ordinal = 0 if index is None else sum(1 for b in blocks[:index] if b.HasField("ask"))
        pi = index is not None and output.tool_call_id in self._pi_calls
        if pi:
            self._pi_asks.setdefault(frame.client_message_id, set()).add(ordinal)
        mark_asks(frame, self._pi_asks.get(frame.client_message_id, set()))
        if index is not None:
            ask = comms_pb2.Ask()
            ask.CopyFrom(blocks[index].ask)
            slot = AskSlot(
                key=frame.client_message_id,
                ordinal=ordinal,
                tool_call_id=output.tool_call_id,
                question_ids=tuple(q.question_id for q in ask.questions),
                question_texts=tuple(q.question for q in ask.questions),
                ask=ask,
                questions=dialog_questions(ask),
                pi=pi_questions(ask) if pi else None,
            )
            self._slots.append(slot)
            self._note_deadline(slot)
        self.poster.submit(with_deadlines(frame, self._slots))
        if output.block_index is not None:
            self._held.retry(self._resume)

    def _note_deadline(self, slot: AskSlot) -> None:
        """A held select of `slot` announcing the runtime's timeout gives the ask its deadline
        (each question's dialog gets the whole timeout: the worst case is one per question)."""
        for held in self._held:
            request = held.request
            if not isinstance(request, SelectRequest) or request.timeout_ms is None:
                continue
            if locate_select(request, slot.questions):
                slot.deadline_ms = held.at_ms + request.timeout_ms * max(1, len(slot.questions))
                return

    def _on_response(self, event: dict[str, object]) -> None:
        command = event.get("command")
        rid = event.get("id")
        success = event.get("success") is True
        error = event.get("error")
        reason = error if isinstance(error, str) and error else "no reason given"
        # oh-my-pi 18.2.3 answers a command it does not know without the command's id.
        if command == "set_ask_dialog" or rid == ASK_DIALOG_COMMAND_ID:
            if self._ask_dialog_answered:
                return
            self._ask_dialog_answered = True
            log_ask_dialog(success=success, reason=reason)
        elif command == "prompt" or rid == PROMPT_COMMAND_ID:
            if success:
                logger.info("the runtime took the prompt")
            else:
                logger.warning("the runtime refused the prompt: %s", reason)
                self.idle.set()  # no run will end
        else:
            logger.debug("runtime response to %r ignored", command)

    # -- runtime UI requests ---------------------------------------------------------------

    def _on_ui_request(self, event: dict[str, object]) -> None:
        request = parse_ui_request(event)
        if isinstance(request, AskRequest):
            self._on_ask_request(request)
        elif isinstance(request, CancelRequest):
            self._on_cancel(request.target_id)
        elif isinstance(request, UnreadableRequest):
            self._count(f"extension_ui_request:{request.method}", request.reason)
            blocking = request.method == "ask" or request.method in DIALOG_METHODS
            if request.request_id is not None and blocking:
                self._writer.write(cancelled_reply(request.request_id))
        elif isinstance(request, NoticeRequest):
            logger.debug("runtime notice %s ignored", request.method)
        else:
            self._on_dialog(request)

    def _on_dialog(self, request: DialogRequest) -> None:
        """pi's ask_user's dialogs, omp's ask's selects and editors; else a lone dialog."""
        found = locate_dialog(self._slots, request)
        if found is not None:
            self._dialog_step(*found, request)
        elif isinstance(request, SelectRequest):
            self._on_select(request)
        elif not (isinstance(request, EditorRequest) and self._omp_editor(request)):
            self._ask_alone(request)

    def _ask_alone(self, request: DialogRequest) -> None:
        problem = self._lone.start(request)
        if problem is not None:
            method = type(request).__name__.removesuffix("Request").lower()
            self._count(f"extension_ui_request:{method}", f"{problem}; answered cancelled")
            self._writer.write(cancelled_reply(request.request_id))

    def _on_cancel(self, target: str) -> None:
        if self._lone.stopped(target, Reason.RUNTIME_CANCELLED):
            logger.info("the runtime cancelled dialog %s; stop waiting", target)
        task = self._waits.get(target)
        if task is not None:
            logger.info("the runtime cancelled request %s; stop waiting", target)
            for slot in self._slots:
                if slot.request_id == target:
                    self._stopped(slot, Reason.RUNTIME_CANCELLED)
            task.cancel()
        self._held.pop(target)
        for slot in self._slots:
            dialog = slot.dialog
            if dialog is None or dialog.pending is None:
                continue
            if dialog.pending[0].request_id != target:
                continue
            dialog.pending = None
            if dialog.task is not None and not dialog.task.done():
                logger.info("the runtime cancelled dialog %s; stop waiting", target)
                self._stopped(slot, Reason.RUNTIME_CANCELLED)
                dialog.task.cancel()

    def _on_ask_request(self, request: AskRequest) -> None:
        if request.request_id in self._waits or request.request_id in self._held:
            logger.warning("request %s is already being answered; ignored", request.request_id)
            return
        slot = correlate(self._slots, request)
        if slot is None:
            self._hold(request)
            return
        self._start_ask(request, slot)

    def _start_ask(self, request: AskRequest, slot: AskSlot) -> None:
        slot.request_id = request.request_id
        task = asyncio.create_task(
            self._answer(request, slot), name=f"compass-ask-{request.request_id}"
        )
        self._waits[request.request_id] = task
        logger.info(
            "request %s waits for ask %d of message %s",
            request.request_id,
            slot.ordinal,
            slot.key,
        )

    def _on_select(self, request: SelectRequest) -> None:
        if request.request_id in self._held:
            logger.warning("request %s is already being answered; ignored", request.request_id)
            return
        found = locate(self._slots, request)
        if found is not None:
            self._dialog_step(*found, request)
        elif request.options[-1:] == (OTHER_OPTION,):  # omp's ask's, before its call starts
            self._hold(request)
        else:
            self._ask_alone(request)

    def _dialog_step(self, slot: AskSlot, match: QuestionMatch, request: DialogRequest) -> None:
        dialog = slot.dialog
        if dialog is None:
            dialog = slot.dialog = Dialog(slot=slot)
            dialog.task = asyncio.create_task(
                self._follow_dialog(dialog), name=f"compass-dialog-{request.request_id}"
            )
            self._dialogs.add(dialog.task)
            dialog.task.add_done_callback(self._dialogs.discard)
            logger.info(
                "dialog %s waits for ask %d of message %s",
                request.request_id,
                slot.ordinal,
                slot.key,
            )
        timeout = request.timeout_ms if isinstance(request, SelectRequest) else None
        if timeout is not None and slot.pi is None and not dialog.timeout_noted:
            dialog.timeout_noted = True
            logger.warning(
                "the runtime gives its ask dialogs %.0f s (its ask.timeout setting): "
                "unanswered by then, it picks an option itself (the bridge then closes the "
                "ask as TIMED_OUT)",
                timeout / 1000,
            )
        if dialog.refused:
            logger.info(
                "dialog %s of an ask ended in Compass: answered cancelled", request.request_id
            )
            self._writer.write(cancelled_reply(request.request_id))
            return
        driver = dialog.driver
        if driver is None:
            if dialog.pending is not None:
                logger.warning(
                    "the runtime no longer waits for dialog %s (its timeout?)",
                    dialog.pending[0].request_id,
                )
            dialog.pending = (request, match)
            return
        self._write_step(dialog, driver.answer(request, match))

    def _omp_editor(self, request: EditorRequest) -> bool:
        """Answer the editor omp opens after "Other"; False when no ask expects one."""
        for slot in self._slots:
            dialog = slot.dialog
            if dialog is None or dialog.driver is None or not dialog.driver.expects_editor:
                continue
            step = dialog.driver.editor(request)
            if step is not None:
                self._write_step(dialog, step)
                return True
        return False

    # -- held requests ---------------------------------------------------------------------

    def _hold(self, request: Holdable) -> None:
        self._held.hold(request.request_id, request)
        logger.debug("request %s matches no ask yet; held", request.request_id)

    def _resume(self, request: Holdable) -> Callable[[], None] | None:
        """What to do with a held request now that another ask call arrived: None while it
        still matches none."""
        if isinstance(request, AskRequest):
            slot = correlate(self._slots, request)
            return None if slot is None else functools.partial(self._start_ask, request, slot)
        found = locate(self._slots, request)
        return None if found is None else functools.partial(self._dialog_step, *found, request)

    def _release_held(self, why: str) -> None:
        for held in self._held:
            self._release(held.key, why)

    def _release(self, rid: str, why: str) -> None:
        held = self._held.pop(rid)
        if held is not None:
            self._refuse(rid, held.request, why)

    def _refuse(self, rid: str, request: Holdable, why: str) -> None:
        method = "ask" if isinstance(request, AskRequest) else "select"
        self._count(
            f"extension_ui_request:{method}",
            f"request {rid} matches no ask block ({why}); answered cancelled",
        )
        self._writer.write(cancelled_reply(rid))

    # -- ends ------------------------------------------------------------------------------

    def _on_ask_end(self, event: dict[str, object]) -> None:
        call_id = event.get("toolCallId")
        if not isinstance(call_id, str):
            return
        for slot in self._slots:
            if slot.tool_call_id != call_id or slot.closed:
                continue
            slot.closed = True
            tasks = [self._waits.get(slot.request_id) if slot.request_id else None]
            tasks.append(slot.dialog.task if slot.dialog else None)
            for task in tasks:
                if task is not None and not task.done():
                    logger.info("ask call %s ended; stop waiting for its answer", call_id)
                    task.cancel()
            failed = event.get("isError") is True
            reason = Reason.TOOL_CALL_ABORTED if failed else Reason.TOOL_CALL_ENDED
            self._stopped(slot, reason, None if failed else event.get("result"))
            self._confirm_dialogs(slot, failed=failed, result=event.get("result"))
        self._slots = [s for s in self._slots if not s.closed]

    def _confirm_dialogs(self, slot: AskSlot, *, failed: bool, result: object) -> None:
        """The receipt of an answer delivered through `slot`'s dialogs, once its call ended:
        the call's result is what the model read."""
        dialog = slot.dialog
        if dialog is not None and dialog.driver is not None and slot.answered:
            self.asks.report_soon(
                dialog.ask_id, dialog_receipt(dialog, failed=failed, result=result)
            )

    def _stopped(self, slot: AskSlot, reason: str, result: object = None) -> None:
        """The runtime no longer waits for `slot`'s ask: close it in Compass, unless its
        answer was delivered or it has an outcome already. With the ask call's `result`
        showing the runtime's own timeout answered it: TIMED_OUT with those picks."""
        if slot.answered or slot.reported:
            return
        slot.reported = True
        timeout = runtime_timeout(slot.ask, result) if result is not None else None
        if timeout is None:
            self.close_ask(slot.key, slot.ordinal, reason)
            return
        for problem in timeout.problems:
            logger.warning("ask %d of message %s: %s", slot.ordinal, slot.key, problem)
        self.close_ask(slot.key, slot.ordinal, Reason.RUNTIME_TIMEOUT, timeout.answers)

    # -- answering -------------------------------------------------------------------------

    async def _answer(self, request: AskRequest, slot: AskSlot) -> None:
        rid = request.request_id
        try:
            # Shielded: cancelling this wait must not cancel the future other waits share.
            ask_id = await asyncio.shield(self.poster.ask_id(slot.key, slot.ordinal))
            ask = await self.asks.until_final(ask_id)
            if outcome(ask) != comms_pb2.ASK_STATUS_ANSWERED:
                slot.reported = True
                log_unanswered(ask, f"request {rid}")
                sent = await self._writer.send(cancelled_reply(rid))
                self._report_decline(ask, sent=sent)
                return
            slot.answered = True
            answers = build_answers(ask, order=request.question_ids)
            for problem in answers.problems:
                logger.warning("ask %s: %s", ask_id, problem)
            reply = ask_reply(rid, answers)
            if not await self._writer.send(reply):
                self.asks.report_soon(
                    ask_id, not_delivered("the runtime's input is closed", payload_of(reply))
                )
                return
            self.delivered += 1
            self.asks.report_soon(ask_id, delivered(answers.problems, payload_of(reply)))
            logger.info("delivered the answer of ask %s to request %s", ask_id, rid)
        except AskNotPostedError as exc:
            slot.reported = True
            logger.error("request %s cannot be answered: %s; answered cancelled", rid, exc)
            await self._writer.send(cancelled_reply(rid))
        except FatalServerError as exc:
            self._fail(exc)
        except Exception:  # a bug must not leave the runtime hanging
            logger.exception("answering request %s failed; answered cancelled", rid)
            self._stopped(slot, Reason.BRIDGE_ERROR)
            await self._writer.send(cancelled_reply(rid))
        finally:
            self._waits.pop(rid, None)
            slot.closed = True
            self._slots = [s for s in self._slots if not s.closed]

    async def _follow_dialog(self, dialog: Dialog) -> None:
        slot = dialog.slot
        try:
            ask_id = await asyncio.shield(self.poster.ask_id(slot.key, slot.ordinal))
            dialog.ask_id = ask_id
            ask = await self.asks.until_final(ask_id)
            if outcome(ask) != comms_pb2.ASK_STATUS_ANSWERED:
                slot.reported = True
                dialog.refused = True
                log_unanswered(ask, "its dialogs")
                # pi's ask_user reads a cancelled confirm as "No": its run is ended first.
                sent = slot.pi is None or await self._writer.send(ABORT_COMMAND)
                if dialog.pending is not None:
                    rid = dialog.pending[0].request_id
                    dialog.pending = None
                    sent = await self._writer.send(cancelled_reply(rid)) and sent
                self._report_decline(ask, sent=sent)
                return
            driver = (
                DialogDriver(slot.questions, ask, done_labels=self._done_guesses())
                if slot.pi is None
                else PiDriver(slot.pi, ask)
            )
            for problem in driver.problems:
                logger.warning("ask %s: %s", ask_id, problem)
            dialog.changes.extend(driver.problems)
            slot.answered = True
            dialog.driver = driver
            self.delivered += 1
            logger.info("delivering the answer of ask %s through the runtime's dialogs", ask_id)
            if dialog.pending is not None:
                request, match = dialog.pending
                dialog.pending = None
                await self._send_step(dialog, driver.answer(request, match))
        except AskNotPostedError as exc:
            slot.reported = True
            logger.error("ask %d of message %s cannot be answered: %s", slot.ordinal, slot.key, exc)
            await self._cancel_pending(dialog)
        except FatalServerError as exc:
            self._fail(exc)
        except Exception:  # a bug must not leave the runtime hanging
            logger.exception("answering the dialogs of ask %s failed", dialog.ask_id or "?")
            self._stopped(slot, Reason.BRIDGE_ERROR)
            await self._cancel_pending(dialog)

    async def _cancel_pending(self, dialog: Dialog) -> None:
        if dialog.pending is not None:
            rid = dialog.pending[0].request_id
            dialog.pending = None
            logger.error("dialog %s answered cancelled", rid)
            await self._writer.send(cancelled_reply(rid))

    def _done_guesses(self) -> tuple[str, ...]:
        learned = (self._done_label,) if self._done_label else ()
        return tuple(dict.fromkeys((*learned, *DONE_SELECTING_LABELS)))

    def _write_step(self, dialog: Dialog, step: DialogStep) -> None:
        self._note_step(dialog, step)
        if step.abort:
            self._writer.write(ABORT_COMMAND)
        self._writer.write(step.reply, on_fail=functools.partial(setattr, dialog, "unsent", True))

    async def _send_step(self, dialog: Dialog, step: DialogStep) -> None:
        self._note_step(dialog, step)
        await self._send_step_reply(dialog, step)

    async def _send_step_reply(self, dialog: Dialog, step: DialogStep) -> None:
        if step.abort:
            await self._writer.send(ABORT_COMMAND)
        if not await self._writer.send(step.reply):
            dialog.unsent = True

    def _report_decline(self, ask: comms_pb2.Ask, *, sent: bool) -> None:
        """A participant's decline reached the runtime as its cancel (or could not)."""
        receipt = decline_receipt(ask, sent=sent)
        if receipt is not None:
            self.asks.report_soon(ask.ask_id, receipt)

    def _note_step(self, dialog: Dialog, step: DialogStep) -> None:
        dialog.changes.extend(step.problems)
        for problem in step.problems:
            logger.warning("ask %s: %s", dialog.ask_id, problem)
        driver = dialog.driver
        if driver is not None and driver.done_label:
            self._done_label = driver.done_label

    async def send_command(self, obj: Mapping[str, object]) -> None:
        """Write a command line to the runtime (e.g. runtime.ASK_DIALOG_COMMAND)."""
        await self._writer.send(obj)

    # -- lifecycle -------------------------------------------------------------------------

    async def stop_waiting(self) -> None:
        """The runtime is gone: cancel every wait for an answer and flush pending replies."""
        self._held.clear()
        slots = list(self._slots)  # a wait ending below drops its slot from the list
        tasks = [*self._waits.values(), *self._dialogs]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for slot in slots:
            self._stopped(slot, Reason.RUNTIME_EXITED)
            dialog = slot.dialog
            if slot.answered and dialog is not None and dialog.driver is not None:
                self.asks.report_soon(
                    dialog.ask_id,
                    not_delivered(
                        "the runtime stopped before the ask call ended: the answer may have "
                        "reached it only in part"
                    ),
                )
        await self._lone.stop()
        self.poster.fail_waiting("the bridge is stopping")
        await self._writer.flush()

    @property
    def waiting(self) -> int:
        """Asks whose answers are still awaited."""
        dialogs = sum(1 for task in self._dialogs if not task.done())
        return len(self._waits) + dialogs + self._lone.waiting

    def unmapped_counts(self) -> dict[str, int]:
        """Unmapped events so far: the mapper's and the bridge's own, per event type."""
        counts = collections.Counter(self.mapper.unmapped_counts)
        counts.update(self._unmapped)
        return dict(counts)

    def _count(self, event_type: str, reason: str) -> None:
        self._unmapped[event_type] += 1
        logger.warning("unmapped runtime event %s: %s", event_type, reason)
