"""Answering omp's select/editor dialogs from a stored answer (pure; oh-my-pi 18.2.3 rpc-ui).

oh-my-pi 18.2.3 (no `set_ask_dialog`) walks the questions in order through select and editor
dialogs, and `DialogDriver` answers each of them with `{"type": "extension_ui_response", "id":
<request id>, "value": <label or text>}`:

- single-select: the chosen option's label as the dialog shows it (`options[index]` of the
  request: " (Recommended)" and any " (2)" disambiguation included); free text: "Other (type
  your own)", then the editor gets the text.
- multi-select: one select per pick (the runtime toggles it and asks again, its title now
  prefixed "(k selected) "), then free text as above, or else the done label. The runtime
  shows its done label only in a one-question ask with something selected, but accepts it
  whenever it is sent; where it is not shown the bridge sends the label it last saw, else
  the default symbol preset's, and if the runtime took that as an option instead (it asks the
  same question again), sends it again to unselect it and tries the next preset's.

Where the dialogs cannot say what the participant answered, the driver does the closest thing
and reports the loss in `DialogStep.problems`:

- a skipped single-select (no pick, no text): the runtime has no skip (a cancelled select
  aborts the whole run); answered "Other" with empty text, so the model reads an empty answer.
- a one-question multi-select ask with nothing picked and no text: the runtime treats an empty
  selection there as a cancel (aborting the run); answered the same way.
- a pick together with free text on a single-select: cannot come from Compass (RespondToAsk
  refuses it); the pick is sent, the text dropped.
- picks and free text on a multi-select inside a multi-question ask: delivered both, but the
  runtime's summary for the model then shows only the text (its result details keep both).
- no done label accepted (a theme with its own symbols): the question is ended as the dialog's
  timeout (`cancelled` + `timedOut`), so the runtime keeps the picks but marks them
  "auto-selected after timeout"; with nothing picked, answered "Other" with empty text.

Nothing here raises on odd input: a chosen id that is not an index of the question's options,
or that repeats a label already chosen, is left out and reported in `problems`
(replies.chosen_indexes), because the runtime rejects the whole reply for an unknown or
repeated label.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from compass_bridge.omp.frames import (
    DONE_SELECTING_LABELS,
    OTHER_OPTION,
    DialogQuestion,
    SelectRequest,
    sanitize,
    timed_out_reply,
    value_reply,
)
from compass_bridge.replies import chosen_indexes

if TYPE_CHECKING:
    from collections.abc import Sequence

    from compass_bridge.omp.frames import DialogRequest, EditorRequest, QuestionMatch
    from gen.compass.v1 import comms_pb2

__all__ = ["DialogDriver", "DialogStep", "dialog_questions"]


def dialog_questions(ask: comms_pb2.Ask) -> tuple[DialogQuestion, ...]:
    """An Ask's questions as the runtime presents them (raw labels, in order)."""
    return tuple(
        DialogQuestion(
            question_id=question.question_id,
            text=question.question,
            labels=tuple(option.label for option in question.options),
            multi=question.allow_multiple,
            recommended=question.recommended if question.HasField("recommended") else None,
        )
        for question in ask.questions
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class DialogStep:
    """The reply to one dialog request, and what it could not say."""

    reply: dict[str, object]
    problems: tuple[str, ...] = ()
    abort: bool = False
    """End the runtime's run before the reply (pi_ask.PiDriver: a dialog that cannot say the
    answer)."""


@dataclass(frozen=True, slots=True)
class _Plan:
    picks: tuple[int, ...]
    """Chosen option indexes, in the participant's order."""
    text: str
    """Free text; "" for none."""


@dataclass(slots=True)
class _Progress:
    sent: int = 0
    """Picks sent (each toggles one option on)."""
    guesses: int = 0
    """Done-label guesses the runtime took as options (and that were unselected again)."""
    guess_out: str | None = None
    """A done-label guess sent and not yet confirmed."""


@dataclass(slots=True)
class DialogDriver:
    """Answers one ask call's select/editor dialogs from its stored answer.

    `select` is given each select request of the ask with the question it belongs to
    (runtime.locate_select); after it answered "Other (type your own)", `editor` answers the
    editor request that follows.
    """

    questions: Sequence[DialogQuestion]
    ask: comms_pb2.Ask
    done_labels: Sequence[str] = DONE_SELECTING_LABELS
    """Done-label guesses, best first (for multi-selects where the runtime does not show it)."""
    problems: tuple[str, ...] = ()
    """What reading the answer had to leave out (bad chosen ids)."""
    done_label: str | None = None
    """The done label the runtime showed, once seen."""
    _plans: list[_Plan] = field(default_factory=list[_Plan])
    _progress: list[_Progress] = field(default_factory=list[_Progress])
    _editor_text: str | None = None

    def __post_init__(self) -> None:
        by_id = {question.question_id: question for question in self.ask.questions}
        problems: list[str] = []
        for question in self.questions:
            answered = by_id.get(question.question_id)
            if answered is None:
                problems.append(
                    f"question {question.question_id!r} is not in the answered ask; "
                    "answered as skipped"
                )
                self._plans.append(_Plan(picks=(), text=""))
            else:
                picks = tuple(chosen_indexes(answered, problems))
                self._plans.append(_Plan(picks=picks, text=answered.custom_text))
            self._progress.append(_Progress())
        self.problems = tuple(problems)

    @property
    def expects_editor(self) -> bool:
        """Whether the last reply chose "Other", so an editor request comes next."""
        return self._editor_text is not None

    def answer(self, request: DialogRequest, match: QuestionMatch) -> DialogStep:
        """The reply to a select located as a step of question `match.index` (the only
        dialog located so: the editor after "Other" comes through `editor`)."""
        assert isinstance(request, SelectRequest)  # noqa: S101 - slots.locate locates selects
        return self.select(request, match)

    def select(self, request: SelectRequest, match: QuestionMatch) -> DialogStep:
        """The reply to a select request that is a step of question `match.index`."""
        self._editor_text = None
        question = self.questions[match.index]
        plan = self._plans[match.index]
        shown = len(question.labels)
        if any(index >= shown for index in plan.picks):  # the stored ask has more options
            plan = _Plan(picks=tuple(i for i in plan.picks if i < shown), text=plan.text)
        if question.multi:
            return self._multi(request, match, question, plan)
        return self._single(request, question, plan)

    def editor(self, request: EditorRequest) -> DialogStep | None:
        """The reply to the editor after "Other"; None when no editor was expected."""
        text = self._editor_text
        if text is None:
            return None
        self._editor_text = None
        return DialogStep(reply=value_reply(request.request_id, text))

    def _single(self, request: SelectRequest, question: DialogQuestion, plan: _Plan) -> DialogStep:
        qid = question.question_id
        if plan.picks:
            label = request.options[plan.picks[0]]
            problems: list[str] = []
            if len(plan.picks) > 1:
                problems.append(
                    f"question {qid!r}: {len(plan.picks)} picks on a single-select; "
                    "only the first is delivered"
                )
            if plan.text:
                problems.append(
                    f"question {qid!r}: a single-select takes a pick or free text, not both; "
                    "the free text is not delivered"
                )
            return DialogStep(
                reply=value_reply(request.request_id, label), problems=tuple(problems)
            )
        if plan.text:
            return self._other(request, plan.text)
        return self._other(
            request,
            "",
            f"question {qid!r} was skipped, which the runtime's select dialog cannot say "
            "(a cancel aborts the whole run): answered with empty free text",
        )

    def _multi(
        self, request: SelectRequest, match: QuestionMatch, question: DialogQuestion, plan: _Plan
    ) -> DialogStep:
        qid = question.question_id
        rid = request.request_id
        progress = self._progress[match.index]
        guess = progress.guess_out
        if guess is not None:
            # The runtime asks the same question again: it took the guess as an option.
            progress.guess_out = None
            progress.guesses += 1
            return DialogStep(
                reply=value_reply(rid, guess),
                problems=(
                    f"question {qid!r}: the runtime took {guess!r} as an option, not as its "
                    "done label; sent it again to unselect it",
                ),
            )
        problems: list[str] = []
        if match.selected != progress.sent:
            problems.append(
                f"question {qid!r}: the runtime shows {match.selected} selected where the "
                f"bridge selected {progress.sent}"
            )
        if progress.sent < len(plan.picks):
            label = request.options[plan.picks[progress.sent]]
            progress.sent += 1
            return DialogStep(reply=value_reply(rid, label), problems=tuple(problems))
        single_question = len(self.questions) == 1
        if plan.text:
            if plan.picks and not single_question:
                problems.append(
                    f"question {qid!r}: picks and free text delivered, but in a "
                    "multi-question ask the runtime's summary for the model shows only the "
                    "text (its result details keep both)"
                )
            return self._other(request, plan.text, *problems)
        if single_question and not plan.picks:
            return self._other(
                request,
                "",
                *problems,
                f"question {qid!r}: nothing chosen, which the runtime takes as a cancel in a "
                "one-question ask (aborting the run): answered with empty free text",
            )
        shown = len(question.labels)
        if len(request.options) == shown + 2:  # the runtime shows its done label
            self.done_label = request.options[shown]
            return DialogStep(reply=value_reply(rid, self.done_label), problems=tuple(problems))
        taken = {sanitize(label) for label in question.labels} | {OTHER_OPTION}
        guesses = [label for label in dict.fromkeys(self.done_labels) if label not in taken]
        if progress.guesses < len(guesses):
            progress.guess_out = guesses[progress.guesses]
            return DialogStep(reply=value_reply(rid, progress.guess_out), problems=tuple(problems))
        if plan.picks:
            problems.append(
                f"question {qid!r}: the runtime accepted no done label; ended the question as "
                "its dialog timeout, so it reports the picks as auto-selected after timeout"
            )
            return DialogStep(reply=timed_out_reply(rid), problems=tuple(problems))
        return self._other(
            request,
            "",
            *problems,
            f"question {qid!r}: the runtime accepted no done label and nothing was chosen: "
            "answered with empty free text",
        )

    def _other(self, request: SelectRequest, text: str, *problems: str) -> DialogStep:
        self._editor_text = text
        return DialogStep(reply=value_reply(request.request_id, OTHER_OPTION), problems=problems)
