"""The rpc-ui bridge's bookkeeping (bridge.py's): ask slots waiting for the runtime's
requests, matching a request to its slot (`correlate`, `locate`, `locate_dialog`), the
deadlines the runtime's own timeout gives them, their dialogs, what a request held for its
tool call can be (held.py holds it), and the replies' sink and writer."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeAlias

from compass_bridge.omp.frames import (
    AskRequest,
    DialogQuestion,
    QuestionMatch,
    SelectRequest,
    locate_select,
)
from compass_bridge.omp.pi_ask import locate_pi
from compass_bridge.receipts import (
    DECLINE_PAYLOAD,
    Receipt,
    delivered,
    not_delivered,
    payload_of,
    result_text,
)
from compass_core.ask_status import outcome, status_name
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from compass_bridge.omp.dialog import DialogStep
    from compass_bridge.omp.frames import DialogRequest, EditorRequest
    from compass_bridge.omp.pi_ask import PiQuestion

logger = logging.getLogger("compass_bridge.omp.bridge")

Holdable: TypeAlias = AskRequest | SelectRequest


class ReplySink(Protocol):
    """Where replies to the runtime go: one JSON object per line on its stdin."""

    async def send(self, line: bytes) -> None:
        """Write one complete line.

        Raises:
            OSError: the runtime's input is closed.
        """
        ...


class Writer:
    """Replies and commands to the runtime, one JSON line each, written in order."""

    def __init__(self, sink: ReplySink) -> None:
        self._sink = sink
        self._lock = asyncio.Lock()
        self._writes: set[asyncio.Task[bool]] = set()

    def write(self, obj: Mapping[str, object], on_fail: Callable[[], object] | None = None) -> None:
        """`send` in the background (`flush` waits for it); `on_fail` runs if it fails."""
        task = asyncio.create_task(self.send(obj))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)
        if on_fail is not None:
            task.add_done_callback(lambda done: done.cancelled() or done.result() or on_fail())

    async def send(self, obj: Mapping[str, object]) -> bool:
        """Write one line; False (logged) when the runtime's input is closed."""
        line = encode_line(obj)
        async with self._lock:
            try:
                await self._sink.send(line)
            except OSError as exc:
                logger.warning(
                    "the runtime's input is closed (%s); a reply was not delivered",
                    type(exc).__name__,
                )
                return False
        return True

    async def flush(self) -> None:
        """Wait for the background writes."""
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)


class Driver(Protocol):
    """Answers one ask call's dialogs from its stored answer (dialog.DialogDriver for
    oh-my-pi's ask, pi_ask.PiDriver for pi's ask_user)."""

    problems: tuple[str, ...]
    done_label: str | None

    @property
    def expects_editor(self) -> bool: ...

    def answer(self, request: DialogRequest, match: QuestionMatch) -> DialogStep: ...

    def editor(self, request: EditorRequest) -> DialogStep | None: ...


@dataclass(slots=True, kw_only=True)
class AskSlot:
    """An Ask block derived from one ask tool call, waiting for the runtime's requests."""

    key: str
    """The mapper's client_message_id of the message holding the ask."""
    ordinal: int
    """Which ask of that message it is (0 = the first ask block)."""
    tool_call_id: str | None
    question_ids: tuple[str, ...]
    question_texts: tuple[str, ...]
    ask: comms_pb2.Ask
    """The Ask block as mapped (its questions and options, no id)."""
    questions: tuple[DialogQuestion, ...] = ()
    """The questions as the runtime presents them (for select/editor dialogs)."""
    pi: tuple[PiQuestion, ...] | None = None
    """The questions as pi's ask_user asks them, when the call is one (pi_ask.py)."""
    request_id: str | None = None
    """The `method: "ask"` request this slot answers, once correlated."""
    dialog: Dialog | None = None
    """Its select/editor dialogs, once the first one was correlated."""
    closed: bool = False
    """The tool call ended; no request can come for it any more."""
    answered: bool = False
    """The participant's answer reached the bridge and goes to the runtime."""
    reported: bool = False
    """Nothing more to do about its outcome: final in Compass (declined, expired), closed
    by the bridge, or never stored."""
    deadline_ms: float | None = None
    """When the runtime's own timeout answers it (epoch ms), when it announced one."""


@dataclass(slots=True, eq=False)
class Dialog:
    """One ask's dialogs (oh-my-pi 18.2.3's selects and editors; pi's ask_user)."""

    slot: AskSlot
    task: asyncio.Task[None] | None = None
    """Waits for the answer; done once the driver exists."""
    driver: Driver | None = None
    pending: tuple[DialogRequest, QuestionMatch] | None = None
    """The dialog the runtime waits on while the answer is not known yet."""
    ask_id: str = ""
    timeout_noted: bool = False
    refused: bool = False
    """The ask ended without an answer in Compass: every dialog of it is cancelled."""
    changes: list[str] = field(default_factory=list[str])
    """What the dialogs could not deliver as given (the driver's and each step's
    problems): the receipt's detail once the ask call ends."""
    unsent: bool = False
    """A reply of the answer could not be written (the runtime's input closed)."""


def encode_line(obj: Mapping[str, object]) -> bytes:
    """One JSON line for the runtime: ASCII only, so no byte can be mistaken for a line end."""
    return (json.dumps(obj, ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")


def log_ask_dialog(*, success: bool, reason: str) -> None:
    """The runtime's answer to `set_ask_dialog`, said once."""
    if success:
        logger.info("the runtime sends its asks to the bridge (set_ask_dialog accepted)")
    elif reason.startswith("Unknown command"):
        logger.info(
            "the runtime does not know set_ask_dialog (%s); the bridge answers its ask "
            "select/editor dialogs instead (and pi's ask_user's dialogs)",
            reason,
        )
    else:
        logger.warning(
            "the runtime refused set_ask_dialog (%s); the bridge answers its ask "
            "select/editor dialogs instead",
            reason,
        )


def log_unanswered(ask: comms_pb2.Ask, what: str) -> None:
    """The ask ended in Compass without an answer; `what` gets the runtime's cancel."""
    name = status_name(outcome(ask)).upper()
    why = f" ({ask.close_reason})" if ask.close_reason else ""
    if outcome(ask) == comms_pb2.ASK_STATUS_DECLINED:
        logger.warning(
            "ask %s was declined in Compass%s: %s answered cancelled, so the runtime aborts",
            ask.ask_id,
            why,
            what,
        )
    else:
        logger.warning(
            "ask %s ended in Compass as %s%s: %s answered cancelled", ask.ask_id, name, why, what
        )


def decline_receipt(ask: comms_pb2.Ask, *, sent: bool, notes: Sequence[str] = ()) -> Receipt | None:
    """The receipt of a participant's decline, the runtime's cancel (`sent`: it was written);
    None for any other outcome."""
    if outcome(ask) != comms_pb2.ASK_STATUS_DECLINED:
        return None
    if sent:
        return delivered(notes, DECLINE_PAYLOAD)
    return not_delivered("the runtime's input is closed", DECLINE_PAYLOAD)


def dialog_receipt(dialog: Dialog, *, failed: bool, result: object) -> Receipt:
    """The receipt of an answer delivered through `dialog`, once its ask call ended: the
    call's result is what the model read."""
    text = result_text(result)
    payload = text if text is not None else payload_of(result)
    if failed:
        return not_delivered("the ask call failed while the answer was being delivered", payload)
    if dialog.unsent:
        return not_delivered("the runtime's input closed during the answer", payload)
    return delivered(dialog.changes, payload)


# -- matching the runtime's requests to slots ------------------------------------------------


def correlate(slots: Sequence[AskSlot], request: AskRequest) -> AskSlot | None:
    """The slot a `method: "ask"` request answers: by `toolCallId` when it carries one, else
    by equal question ids, preferring equal question texts too, oldest first; None when no
    slot not yet matched fits."""
    open_slots = [s for s in slots if s.request_id is None and s.dialog is None and not s.closed]
    if request.tool_call_id is not None:
        for slot in open_slots:
            if slot.tool_call_id == request.tool_call_id:
                return slot
        open_slots = [s for s in open_slots if s.tool_call_id is None]
    same_ids = [s for s in open_slots if s.question_ids == request.question_ids]
    for slot in same_ids:
        if slot.question_texts == request.question_texts:
            return slot
    return same_ids[0] if same_ids else None


def locate(
    slots: Sequence[AskSlot], request: SelectRequest
) -> tuple[AskSlot, QuestionMatch] | None:
    """The slot and question a select is a step of: an exact match before a loose one, an ask
    whose dialogs are under way before one not started, older before newer."""
    usable = [s for s in slots if s.request_id is None and not s.closed and s.pi is None]
    ordered = [s for s in usable if s.dialog is not None]
    ordered += [s for s in usable if s.dialog is None]
    loose: tuple[AskSlot, QuestionMatch] | None = None
    for slot in ordered:
        for match in locate_select(request, slot.questions):
            if match.exact:
                return slot, match
            loose = loose or (slot, match)
    if loose is not None:
        logger.warning(
            "select %s matches question %d of ask %d of message %s by its title only "
            "(its options differ from what the bridge expected)",
            request.request_id,
            loose[1].index,
            loose[0].ordinal,
            loose[0].key,
        )
    return loose


def locate_dialog(
    slots: Sequence[AskSlot], request: DialogRequest
) -> tuple[AskSlot, QuestionMatch] | None:
    """The pi ask_user call (its slot) and question `request` is a dialog of, oldest first."""
    for slot in slots:
        if slot.pi is not None and not slot.closed:
            match = locate_pi(request, slot.pi)
            if match is not None:
                return slot, match
    return None


def with_deadlines(
    frame: comms_pb2.MessageUpdated, slots: Sequence[AskSlot]
) -> comms_pb2.MessageUpdated:
    """`frame` with the deadline of each of its asks whose slot has one (every snapshot of the
    message carries it, so the poster's snapshots stay alike)."""
    by_ordinal = {
        s.ordinal: s
        for s in slots
        if s.key == frame.client_message_id and s.deadline_ms is not None
    }
    if not by_ordinal:
        return frame
    copy = comms_pb2.MessageUpdated()
    copy.CopyFrom(frame)
    asks = [block.ask for block in copy.blocks if block.HasField("ask")]
    for ordinal, slot in by_ordinal.items():
        if ordinal < len(asks) and slot.deadline_ms is not None:
            asks[ordinal].deadline.FromMilliseconds(int(slot.deadline_ms))
            asks[ordinal].on_timeout = comms_pb2.ASK_TIMEOUT_POLICY_PICK_RECOMMENDED
    return copy
