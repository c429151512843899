"""pi's `ask_user` (Compass's extension, pi_extension/ask_user.ts): its dialogs, answered from
the stored Ask (pure).

pi (`@mariozechner/pi-coding-agent`) has no ask tool; Compass ships one. The model calls it
with oh-my-pi's ask arguments, so the bridge renames the call to `ask` and the mapper derives
ONE Ask from it (compass_core.ask.build_ask). The extension then asks each question in order
through one of pi's dialogs, titled with the question (and " (i/N)" when there are several):

- no options: `input`, answered with the free text ("" when skipped);
- exactly the options "Yes" and "No", single-select: `confirm`, answered `confirmed`;
- options, single-select: `select` of the labels and "Other (type your own)", answered with
  the chosen label, or with "Other" and then the text in the `editor` that follows;
- options, multi-select: `select` of the labels marked "[ ] " / "[x] ", then "Done" and
  "Other (type your own)"; each pick is one select (the label as shown), then "Done", or
  "Other" and the text in the `editor`.

So every answer Compass can take reaches the model whole, once the Ask says what these
dialogs carry (`mark_pi_ask`): a confirm takes no free text, and a single-select or confirm
question has no skip (a select has no empty answer; a dismissed dialog ends the call). The
model reads the extension's summary (`User answers:` and one line per question).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

from compass_bridge.omp.dialog import DialogStep
from compass_bridge.omp.frames import (
    OTHER_OPTION,
    ConfirmRequest,
    EditorRequest,
    InputRequest,
    QuestionMatch,
    SelectRequest,
    cancelled_reply,
    confirm_reply,
    value_reply,
)
from compass_bridge.receipts import mark_native_free_text
from compass_bridge.replies import chosen_indexes
from compass_core.mapper import ASK_TOOL
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Sequence

    from compass_bridge.omp.frames import DialogRequest

__all__ = [
    "DONE_OPTION",
    "PI_ASK_TOOL",
    "PiDriver",
    "PiQuestion",
    "as_ask_call",
    "locate_pi",
    "mark_asks",
    "pi_questions",
]

PI_ASK_TOOL: Final = "ask_user"
"""The tool name of Compass's pi extension."""
DONE_OPTION: Final = "Done"
"""Ends a multi-select question's picks."""
YES_NO: Final = ("Yes", "No")
_MARKS: Final = ("[ ] ", "[x] ")
_CALL_EVENTS: Final = frozenset(
    {"tool_execution_start", "tool_execution_update", "tool_execution_end"}
)

Kind = Literal["input", "confirm", "select", "multi"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PiQuestion:
    """One question of an ask_user call as the extension asks it."""

    question_id: str
    title: str
    kind: Kind
    labels: tuple[str, ...]


def as_ask_call(event: dict[str, object], pi_calls: set[str]) -> dict[str, object]:
    """`event` as the mapper reads it: an ask_user call's start and end renamed `ask` (its
    arguments are oh-my-pi's ask's: ONE Ask), its call id added to `pi_calls`."""
    kind = event.get("type")
    if event.get("toolName") != PI_ASK_TOOL or kind not in _CALL_EVENTS:
        return event
    call_id = event.get("toolCallId")
    if isinstance(call_id, str):
        pi_calls.add(call_id)
    return {**event, "toolName": ASK_TOOL}


def _kind(question: comms_pb2.AskQuestion) -> Kind:
    labels = tuple(option.label for option in question.options)
    if not labels:
        return "input"
    if question.allow_multiple:
        return "multi"
    return "confirm" if labels == YES_NO else "select"


def pi_questions(ask: comms_pb2.Ask) -> tuple[PiQuestion, ...]:
    """The Ask's questions as the extension asks them."""
    count = len(ask.questions)
    return tuple(
        PiQuestion(
            question_id=question.question_id,
            title=f"{question.question} ({index + 1}/{count})" if count > 1 else question.question,
            kind=_kind(question),
            labels=tuple(option.label for option in question.options),
        )
        for index, question in enumerate(ask.questions)
    )


def mark_asks(frame: comms_pb2.MessageUpdated, pi_ordinals: set[int]) -> None:
    """Mark each ask of a mapper frame with what its runtime can receive: the asks at
    `pi_ordinals` (ask_user calls) by `_mark_pi_ask`, the rest as oh-my-pi's own
    (receipts.mark_native_free_text). Idempotent, so every snapshot carries the same marks."""
    asks = [block.ask for block in frame.blocks if block.HasField("ask")]
    for ordinal, ask in enumerate(asks):
        if ordinal in pi_ordinals:
            _mark_pi_ask(ask)
        else:
            mark_native_free_text(ask)


def _mark_pi_ask(ask: comms_pb2.Ask) -> None:
    """What the extension's dialogs carry, per question: free text except on a confirm; an
    answer required on a single-select or confirm (neither dialog has an empty answer)."""
    for question in ask.questions:
        kind = _kind(question)
        question.free_text = (
            comms_pb2.FREE_TEXT_REFUSED if kind == "confirm" else comms_pb2.FREE_TEXT_ACCEPTED
        )
        question.answer_required = kind in {"confirm", "select"}


def locate_pi(request: DialogRequest, questions: Sequence[PiQuestion]) -> QuestionMatch | None:
    """Which question of an ask_user call `request` is a dialog of, or None."""
    for index, question in enumerate(questions):
        if request.title == question.title and _fits(request, question):
            return QuestionMatch(index=index, selected=0, exact=True)
    return None


def _fits(request: DialogRequest, question: PiQuestion) -> bool:
    if isinstance(request, InputRequest):
        return question.kind == "input"
    if isinstance(request, ConfirmRequest):
        return question.kind == "confirm"
    if isinstance(request, EditorRequest):
        return question.kind in {"select", "multi"}
    options = request.options
    if question.kind == "select":
        return options == (*question.labels, OTHER_OPTION)
    if question.kind != "multi" or options[-2:] != (DONE_OPTION, OTHER_OPTION):
        return False
    shown = options[:-2]
    return len(shown) == len(question.labels) and all(
        text[:4] in _MARKS and text[4:] == label
        for text, label in zip(shown, question.labels, strict=True)
    )


@dataclass(slots=True)
class _Plan:
    picks: list[int]
    text: str
    sent: int = 0
    """Picks sent (multi-select)."""
    other: bool = False
    """"Other" was sent: the editor that follows gets the text."""


@dataclass(slots=True)
class PiDriver:
    """Answers one ask_user call's dialogs from its stored answer."""

    questions: Sequence[PiQuestion]
    ask: comms_pb2.Ask
    problems: tuple[str, ...] = ()
    """What reading the answer had to leave out (bad chosen ids)."""
    done_label: str | None = None
    """(oh-my-pi's driver learns one; the extension's "Done" is fixed.)"""
    expects_editor: bool = False
    """(The extension's editor is located by its title, not by the step before it.)"""
    _plans: list[_Plan] = field(default_factory=list[_Plan])

    def editor(self, request: EditorRequest) -> DialogStep | None:
        """(The extension's editor is located by its title: `answer`.)"""
        del request

    def __post_init__(self) -> None:
        by_id = {question.question_id: question for question in self.ask.questions}
        problems: list[str] = []
        for question in self.questions:
            answered = by_id.get(question.question_id)
            if answered is None:
                problems.append(f"question {question.question_id!r} is not in the answered ask")
                self._plans.append(_Plan(picks=[], text=""))
                continue
            picks = [i for i in chosen_indexes(answered, problems) if i < len(question.labels)]
            self._plans.append(_Plan(picks=picks, text=answered.custom_text))
        self.problems = tuple(problems)

    def answer(self, request: DialogRequest, match: QuestionMatch) -> DialogStep:
        """The reply to `request`, a dialog of question `match.index`."""
        question = self.questions[match.index]
        plan = self._plans[match.index]
        rid = request.request_id
        if isinstance(request, EditorRequest):
            if not plan.other:
                return _abort(rid, f"question {question.question_id!r}: an editor came unasked")
            plan.other = False
            return DialogStep(reply=value_reply(rid, plan.text))
        if isinstance(request, InputRequest):
            return DialogStep(reply=value_reply(rid, plan.text))
        if isinstance(request, ConfirmRequest):
            return self._confirm(rid, question, plan)
        if question.kind == "multi":
            return self._multi(request, plan)
        return self._single(rid, question, plan)

    def _confirm(self, rid: str, question: PiQuestion, plan: _Plan) -> DialogStep:
        qid = question.question_id
        if not plan.picks:
            return _abort(rid, f"question {qid!r} has no Yes or No, which pi's confirm cannot say")
        problems = ()
        if plan.text:
            problems = (f"question {qid!r}: a confirm takes no free text; the text is not sent",)
        return DialogStep(reply=confirm_reply(rid, plan.picks[0] == 0), problems=problems)

    def _single(self, rid: str, question: PiQuestion, plan: _Plan) -> DialogStep:
        qid = question.question_id
        if plan.picks:
            problems: list[str] = []
            if len(plan.picks) > 1:
                problems.append(f"question {qid!r}: only the first of several picks is sent")
            if plan.text:
                problems.append(f"question {qid!r}: a pick and free text; the text is not sent")
            label = question.labels[plan.picks[0]]
            return DialogStep(reply=value_reply(rid, label), problems=tuple(problems))
        if plan.text:
            plan.other = True
            return DialogStep(reply=value_reply(rid, OTHER_OPTION))
        return _abort(rid, f"question {qid!r} has no answer, which pi's select cannot say")

    def _multi(self, request: SelectRequest, plan: _Plan) -> DialogStep:
        rid = request.request_id
        if plan.sent < len(plan.picks):
            shown = request.options[plan.picks[plan.sent]]  # "[ ] label": toggles it on
            plan.sent += 1
            return DialogStep(reply=value_reply(rid, shown))
        if plan.text:
            plan.other = True
            return DialogStep(reply=value_reply(rid, OTHER_OPTION))
        return DialogStep(reply=value_reply(rid, DONE_OPTION))


def _abort(request_id: str, problem: str) -> DialogStep:
    """The dialog cannot say the answer: the run is ended rather than answered wrongly."""
    return DialogStep(
        reply=cancelled_reply(request_id),
        problems=(f"{problem}: the agent's run was ended instead",),
        abort=True,
    )
