"""A dialog that belongs to no ask call, asked in Compass as a one-question Ask of its own.

Any extension of pi or oh-my-pi can open a dialog (`ctx.ui.select`, `confirm`, `input`,
`editor`): a permission gate's "Allow `rm -rf`?", a command's "Commit message". One that no
ask call claims (pi_ask.locate_pi, slots.locate) becomes an Ask (`lone_ask`), posted as a
message of the bridge's own, and its answer is the dialog's reply (`lone_reply`). (A select
ending with omp's "Other (type your own)" is a step of omp's ask, held for its call and
answered cancelled if none claims it: bridge.py.)

- select: its options (labels as given), single-select; no free text (the dialog returns
  one of its options), an answer required (it has no empty answer). Reply: the label.
- confirm: the title (and message) with the options Yes and No; no free text; an answer
  required. Reply: `confirmed`.
- input: free text alone; a skip is the empty text. Reply: the text.
- editor: free text alone, or with a prefill the option "Keep the text as it is" (the
  prefill as its preview) beside free text; an answer required then. Reply: the text, or
  the prefill kept.

A dialog with a `timeout` gives the Ask its deadline (`on_timeout` FAIL: the runtime reads
its default then, and the server closes the Ask EXPIRED). A participant's decline is the
runtime's cancel (`cancelled`: the extension reads undefined, or false for a confirm, as
from Escape at pi's own terminal). When the runtime stops waiting first (its `cancel` frame,
the end of the run, or the runtime gone), the Ask is closed WITHDRAWN with why.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from typing import TYPE_CHECKING, Final

from compass_bridge.bridge_core import Reason
from compass_bridge.client import AskNotPostedError, FatalServerError
from compass_bridge.omp.frames import (
    ConfirmRequest,
    EditorRequest,
    InputRequest,
    SelectRequest,
    cancelled_reply,
    confirm_reply,
    value_reply,
)
from compass_bridge.omp.slots import Writer, decline_receipt, log_unanswered
from compass_bridge.receipts import delivered, not_delivered, payload_of
from compass_bridge.replies import chosen_indexes
from compass_core.ask import build_ask
from compass_core.ask_status import outcome
from compass_core.jsonvalues import MappingError
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Callable

    from compass_bridge.bridge_core import BridgeCore
    from compass_bridge.omp.frames import DialogRequest

__all__ = ["KEEP_PREFILL", "LoneDialogs", "lone_ask", "lone_reply"]

logger = logging.getLogger("compass_bridge.omp.bridge")

KEEP_PREFILL: Final = "Keep the text as it is"
"""The option of an editor's prefilled text."""
_CANCELLED_CONFIRM: Final = "a cancelled confirm reads as No to the extension"


def lone_ask(request: DialogRequest) -> comms_pb2.Ask:
    """The one-question Ask of a dialog (see the module docstring).

    Raises:
        MappingError: the dialog's texts cannot be stored (as the mapper refuses them).
    """
    question: dict[str, object] = {"id": _method(request), "question": request.title}
    if isinstance(request, SelectRequest):
        question["options"] = [{"label": label} for label in request.options]
    elif isinstance(request, ConfirmRequest):
        if request.message:
            question["question"] = f"{request.title}\n\n{request.message}"
        question["options"] = [{"label": "Yes"}, {"label": "No"}]
    elif isinstance(request, EditorRequest) and request.prefill:
        question["options"] = [{"label": KEEP_PREFILL, "preview": request.prefill}]
    else:
        question["options"] = []
    ask = build_ask({"questions": [question]})
    (built,) = ask.questions
    choice_only = isinstance(request, SelectRequest | ConfirmRequest)
    built.free_text = comms_pb2.FREE_TEXT_REFUSED if choice_only else comms_pb2.FREE_TEXT_ACCEPTED
    built.answer_required = bool(built.options)
    timeout = None if isinstance(request, EditorRequest) else request.timeout_ms
    if timeout is not None:
        ask.deadline.FromMilliseconds(int(time.time() * 1000 + timeout))
        ask.on_timeout = comms_pb2.ASK_TIMEOUT_POLICY_FAIL
    return ask


def lone_reply(
    request: DialogRequest, answered: comms_pb2.Ask
) -> tuple[dict[str, object], list[str]]:
    """The dialog's reply from its answered Ask, and what it could not carry (in words)."""
    rid = request.request_id
    problems: list[str] = []
    question = answered.questions[0] if answered.questions else comms_pb2.AskQuestion()
    picks = chosen_indexes(question, problems)
    text = question.custom_text
    if isinstance(request, SelectRequest | ConfirmRequest):
        if text:
            problems.append("the dialog takes one of its options, not free text")
        if not picks:
            problems.append("no option was chosen: the extension got a cancel")
            if isinstance(request, ConfirmRequest):
                problems.append(_CANCELLED_CONFIRM)
            return cancelled_reply(rid), problems
        if isinstance(request, ConfirmRequest):
            return confirm_reply(rid, picks[0] == 0), problems
        return value_reply(rid, request.options[picks[0]]), problems
    if isinstance(request, EditorRequest) and picks and not text:
        return value_reply(rid, request.prefill or ""), problems
    return value_reply(rid, text), problems


def _method(request: DialogRequest) -> str:
    if isinstance(request, SelectRequest):
        return "select"
    if isinstance(request, ConfirmRequest):
        return "confirm"
    return "input" if isinstance(request, InputRequest) else "editor"


class LoneDialogs:
    """The lone dialogs of one runtime, each waiting on its own Ask."""

    def __init__(
        self,
        core: BridgeCore,
        *,
        run_id: str,
        writer: Writer,
        fail: Callable[[FatalServerError], None],
    ) -> None:
        self._core = core
        self._run_id = run_id
        self._send = writer.send
        self._fail = fail
        self._numbers = itertools.count(1)
        self._waits: dict[str, tuple[str, asyncio.Task[None]]] = {}
        """Request id -> (the Ask's mapper key, the task answering it)."""

    @property
    def waiting(self) -> int:
        return len(self._waits)

    def start(self, request: DialogRequest) -> str | None:
        """Ask `request` in Compass and reply once the Ask is final; or why it cannot be
        asked (its texts cannot be stored), when the caller must answer it cancelled."""
        rid = request.request_id
        if rid in self._waits:
            logger.warning("dialog %s is already being answered; ignored", rid)
            return None
        try:
            ask = lone_ask(request)
        except MappingError as exc:
            return f"dialog {rid} cannot be asked in Compass ({exc})"
        key = f"{self._run_id}-dialog-{next(self._numbers)}"
        frame = comms_pb2.MessageUpdated(client_message_id=key)
        frame.blocks.add().ask.CopyFrom(ask)
        self._core.poster.submit(frame)
        task = asyncio.create_task(self._answer(request, key), name=f"compass-dialog-{rid}")
        self._waits[rid] = (key, task)
        task.add_done_callback(lambda _: self._waits.pop(rid, None))
        logger.info(
            "dialog %s (%s) belongs to no ask call: asked in Compass", rid, _method(request)
        )
        return None

    def stopped(self, rid: str, reason: str) -> bool:
        """The runtime no longer waits for dialog `rid`: close its Ask; whether it was one."""
        entry = self._waits.pop(rid, None)
        if entry is None:
            return False
        key, task = entry
        task.cancel()
        self._core.close_ask(key, 0, reason)
        return True

    def run_ended(self) -> None:
        """The runtime's run ended: a dialog of it still waiting was dismissed with it."""
        for rid in list(self._waits):
            self.stopped(rid, Reason.TURN_ENDED)

    async def stop(self) -> None:
        """The runtime is gone: stop every wait and close what nobody waits for any more."""
        entries = list(self._waits.values())
        for rid in list(self._waits):
            self.stopped(rid, Reason.RUNTIME_EXITED)
        for _, task in entries:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _answer(self, request: DialogRequest, key: str) -> None:
        rid = request.request_id
        core = self._core
        try:
            ask_id = await asyncio.shield(core.poster.ask_id(key, 0))
            answered = await core.asks.until_final(ask_id)
            if outcome(answered) != comms_pb2.ASK_STATUS_ANSWERED:
                log_unanswered(answered, f"dialog {rid}")
                sent = await self._send(cancelled_reply(rid))
                notes = [_CANCELLED_CONFIRM] if isinstance(request, ConfirmRequest) else []
                receipt = decline_receipt(answered, sent=sent, notes=notes)
                if receipt is not None:
                    core.asks.report_soon(ask_id, receipt)
                return
            reply, problems = lone_reply(request, answered)
            for problem in problems:
                logger.warning("ask %s: %s", ask_id, problem)
            if not await self._send(reply):
                why = "the runtime's input is closed"
                core.asks.report_soon(ask_id, not_delivered(why, payload_of(reply)))
                return
            core.delivered += 1
            core.asks.report_soon(ask_id, delivered(problems, payload_of(reply)))
            logger.info("delivered the answer of ask %s to dialog %s", ask_id, rid)
        except AskNotPostedError as exc:
            logger.error("dialog %s cannot be answered: %s; answered cancelled", rid, exc)
            await self._send(cancelled_reply(rid))
        except FatalServerError as exc:
            self._fail(exc)
        except Exception:  # a bug must not leave the runtime hanging
            logger.exception("answering dialog %s failed; answered cancelled", rid)
            core.close_ask(key, 0, Reason.BRIDGE_ERROR)
            await self._send(cancelled_reply(rid))
