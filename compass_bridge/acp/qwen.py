"""Qwen Code's questions over ACP <-> one typed Ask (pure).

Read from `@qwen-code/qwen-code` 0.24.4 as published (the version tests/realagent/qwen pins)
and checked against it through the bridge (tests/realagent/test_acp_agents.py):

- **The request.** `ask_user_question` (1-4 questions `{question, header, options: [{label,
  description}] (2-4), multiSelect?}`; every question also offers "Other", the person's own
  words) is not an ACP form: it arrives as a `session/request_permission` whose options are
  Submit (`proceed_once`, allow_once) and Cancel (`cancel`, reject_once), titled "Ask user 2
  questions". The questions are in `toolCall._meta.qwenQuestions` (and `rawInput.questions`),
  marked by `_meta.qwenInteractionKind: "user_question"` (acpAgent's `interactionMetaFields`).
- **The answer** goes back in a top-level `answers` field of the response, beside `outcome`
  (not part of ACP: `answers: output.answers`): question index -> one string,
  `{"0": "SQLite", "1": "Email + password, OAuth"}`. As Qwen Code's own dialog builds it
  (`AskUserQuestionDialog`): a single-select question's answer is the chosen label or, instead
  of it, the person's own text; a multi-select's is the chosen labels joined with ", ", the
  own text (if any) after them; a skipped question is left out. The tool then hands its
  model `User has provided the following answers:\\n\\n**<header>**: <answer>` one line per
  answer (`No valid answers were provided.` for none), and the call's completing
  `tool_call_update` carries that text as its content (`text_read`).
- **A decline** is the Cancel option: Qwen Code ends its turn (the tool's result for the
  model's next turn: `Tool "ask_user_question" was canceled by the user.`).

Submitting with no `answers`, as a bare permission does, hands the model "No valid answers
were provided." while the person's answer is shown as given: never done. A request of this
kind that cannot be read into an Ask is refused (`read_questions` says why).

The Python ACP library's `RequestPermissionResponse` has no `answers` field (it would drop
one), so the reply is `AnsweredPermissionResponse`, which declares it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from acp.schema import AllowedOutcome, RequestPermissionResponse
from pydantic import Field

from compass_bridge.replies import build_answers
from compass_core import build_ask
from compass_core.jsonvalues import MISSING, MappingError, is_array, is_object
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from acp.schema import PermissionOption, ToolCallUpdate

    from compass_core.jsonvalues import JsonObject

__all__ = [
    "QUESTION_KIND",
    "AnsweredPermissionResponse",
    "QwenQuestions",
    "QwenReply",
    "qwen_reply",
    "read_questions",
]

KIND_KEY: Final = "qwenInteractionKind"
QUESTION_KIND: Final = "user_question"
QUESTIONS_KEY: Final = "qwenQuestions"
SUBMIT_OPTION: Final = "proceed_once"
"""Qwen Code's Submit (its `ToolConfirmationOutcome.ProceedOnce`)."""


class AnsweredPermissionResponse(RequestPermissionResponse):
    """A `session/request_permission` result with Qwen Code's `answers` beside the outcome."""

    answers: dict[str, str] | None = Field(default=None)
    """Question index ("0", "1", ...) -> the answer."""


@dataclass(frozen=True, slots=True)
class QwenQuestions:
    """One `ask_user_question` request: the Ask a person answers, and how to submit it."""

    ask: comms_pb2.Ask
    """One question per Qwen question, in order (ids `question_<index>`), options "0", ...;
    every question accepts free text (Qwen Code's "Other")."""
    submit: PermissionOption
    """The option that hands the answers over (Submit)."""
    cancel: PermissionOption | None
    """The option that declines (Cancel), when offered."""


@dataclass(frozen=True, slots=True)
class QwenReply:
    """The answered Ask in Qwen Code's terms."""

    response: AnsweredPermissionResponse
    answers: dict[str, str]
    changes: tuple[str, ...] = ()
    """What the agent gets otherwise than given (the receipt: DELIVERED_WITH_CHANGES)."""


def question_id(index: int) -> str:
    return f"question_{index}"


def read_questions(
    tool_call: ToolCallUpdate, options: list[PermissionOption]
) -> QwenQuestions | str | None:
    """Qwen Code's questions in a permission request: None when the request is not of that
    kind (`_meta.qwenInteractionKind` is not "user_question"), a string saying why when it
    is but cannot be answered from Compass."""
    meta = tool_call.field_meta or {}
    if meta.get(KIND_KEY) != QUESTION_KIND:
        return None
    items: object = meta.get(QUESTIONS_KEY)
    raw = tool_call.raw_input
    if items is None and is_object(raw):
        items = raw.get("questions")
    if not is_array(items) or not items:
        return "it carries no list of questions"
    submit = next((o for o in options if o.option_id == SUBMIT_OPTION), None)
    submit = submit or next((o for o in options if o.kind == "allow_once"), None)
    if submit is None:
        return "it offers no option that submits answers"
    native: list[JsonObject] = []
    for index, item in enumerate(items):
        if not is_object(item):
            return f"question {index} is not an object"
        entry: JsonObject = {
            "id": question_id(index),
            "question": item.get("question", MISSING),
            "options": item.get("options", []),
            "multi": item.get("multiSelect", False),
        }
        if item.get("header") is not None:
            entry["header"] = item["header"]
        native.append(entry)
    try:
        ask = build_ask({"questions": native})
    except MappingError as exc:
        return f"its questions cannot be asked: {exc}"
    for question in ask.questions:
        question.free_text = comms_pb2.FREE_TEXT_ACCEPTED
    cancel = next((o for o in options if o.kind == "reject_once"), None)
    return QwenQuestions(ask=ask, submit=submit, cancel=cancel)


def qwen_reply(request: QwenQuestions, answered: comms_pb2.Ask) -> QwenReply:
    """The answered Ask as Qwen Code's Submit with its `answers` (see the module docstring)."""
    ids = [question.question_id for question in request.ask.questions]
    runtime = build_answers(answered, order=ids)
    changes = list(runtime.problems)
    answers: dict[str, str] = {}
    for index, (question, entry) in enumerate(
        zip(request.ask.questions, runtime.answers, strict=True)
    ):
        picked = entry["selectedOptions"]
        labels = [label for label in picked if isinstance(label, str)] if is_array(picked) else []
        own = entry.get("customInput")
        text = own if isinstance(own, str) else ""
        if question.allow_multiple:
            value = ", ".join([*labels, text] if text else labels)
        elif labels:
            value = labels[0]
            if text:
                changes.append(
                    f"question {question.question_id!r}: Qwen Code takes one answer to a "
                    "single-select question; the free text was left out"
                )
        else:
            value = text
        if value:
            answers[str(index)] = value
    response = AnsweredPermissionResponse(
        outcome=AllowedOutcome(outcome="selected", option_id=request.submit.option_id),
        answers=answers,
    )
    return QwenReply(response=response, answers=answers, changes=tuple(changes))
