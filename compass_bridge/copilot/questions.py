"""Copilot CLI's questions <-> typed Asks (pure).

Read from `@github/copilot` 1.0.102 as published (its `schemas/session-events.schema.json` and
`api.schema.json`, the SDKs' `onUserInputRequest` / `onElicitationRequest`) and checked
against it through the bridge (tests/realagent/test_copilot_native.py). The CLI offers its
model the `ask_user` tool in its SDK server mode only when the host asks to hear the
questions (`session.create` with `requestUserInput: true`); `copilot -p` and `copilot --acp`
never offer it.

- **`ask_user`, Copilot's default ("legacy") variant**: `{question, choices?}`, one question.
  It reaches the host as the session event `user_input.requested {requestId, question,
  choices?, allowFreeform?, toolCallId}` (`allowFreeform` is true whatever the model passes,
  in 1.0.102). One Ask of one question (`QUESTION_ID`): the choices as options "0", "1", ...,
  free text accepted when `allowFreeform` (or when there are no choices: nothing else could
  answer it), and an answer required (Copilot has no skip: an empty answer reads
  `User selected: `). It is answered with `session.ui.handlePendingUserInput {requestId,
  response: {answer, wasFreeform}}`: the chosen choice (`wasFreeform: false`; the model reads
  `User selected: <choice>`) or the person's words (`true`: `User responded: <text>`).
  Copilot's answer has no decline: a person's decline is handed over as words, those the
  MCP `ask` tool gives its model (`compass_mcp.tools.result_text`), so the model reads
  `User responded: <who> declined to answer (<reason>). Do not ask the same again; ...`.
- **`ask_user`, its form ("elicitation") variant** (`askUserVariant: "elicitation"`):
  `{message, requestedSchema}`, reaching the host as `elicitation.requested {requestId,
  message, mode, requestedSchema, toolCallId}`; an MCP server's form arrives the same way,
  with `elicitationSource` naming the server. A form Ask through forms.plan_form. Copilot's
  own form takes the person's own words in every choice (`enum`, `oneOf`, arrays of them) and
  yes/no field ("The user can also provide a freeform answer", its tool's schema says, and
  it hands the content to its model as given: `User responded: db=MariaDB, ...`), so those
  questions accept free text and the text is the field's value; an MCP server's form is
  answered in its schema's terms (forms.form_content). Answered with
  `session.ui.handlePendingElicitation {requestId, result: {action, content?}}`: `accept`
  with the content, `decline` for a person's decline (the model then reads `The user is not
  available to respond and will review your work later. ...`), `cancel` for any other
  outcome (`User cancelled the request.`).
- **What the model read**: `tool.execution_complete {toolCallId, success, result: {content}}`;
  `result.content` is the tool result text, which the receipt carries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from compass_bridge.forms import form_content, plan_elicitation
from compass_core import build_ask
from compass_core.jsonvalues import MISSING, MappingError, is_array, is_object
from compass_mcp.tools import result_text
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Callable

    from compass_bridge.forms import FormPlan, JsonContent
    from compass_core.jsonvalues import JsonObject

__all__ = [
    "QUESTION_ID",
    "Form",
    "Reply",
    "ToolResult",
    "UserInput",
    "form_refusal",
    "form_reply",
    "read_form",
    "read_tool_result",
    "read_user_input",
    "user_input_refusal",
    "user_input_reply",
]

QUESTION_ID: Final = "answer"
"""The question id of a `user_input.requested` Ask (its one question)."""
_OWN_WORDS_KINDS: Final = frozenset({"choice", "choices", "boolean"})
"""Form fields that take free text only in Copilot's own form (see the module docstring)."""


@dataclass(frozen=True, slots=True)
class UserInput:
    """One `user_input.requested`: the Ask a person answers, and how to answer it."""

    request_id: str
    tool_call_id: str
    """The `ask_user` call's id ("" when the event names none)."""
    choices: tuple[str, ...]
    ask: comms_pb2.Ask


@dataclass(frozen=True, slots=True)
class Form:
    """One `elicitation.requested` in form mode."""

    request_id: str
    tool_call_id: str
    source: str
    """The MCP server that sent the form; "" for Copilot's own `ask_user`."""
    plan: FormPlan


@dataclass(frozen=True, slots=True)
class Reply:
    """What the bridge hands Copilot, and what it gets otherwise than the person gave."""

    payload: JsonObject
    changes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A `tool.execution_complete`: the call, whether it succeeded, the text the model reads."""

    tool_call_id: str
    success: bool
    text: str


def _string(data: JsonObject, key: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) else ""


def read_user_input(data: object) -> UserInput | str:
    """A `user_input.requested` event's data as a UserInput; a string says why it cannot be
    asked in Compass."""
    if not is_object(data):
        return "the request is not an object"
    request_id = _string(data, "requestId")
    if not request_id:
        return "the request has no requestId"
    raw_choices: object = data.get("choices")
    if raw_choices is None:
        raw_choices = []
    if not is_array(raw_choices) or not all(isinstance(c, str) for c in raw_choices):
        return "its choices are not a list of strings"
    choices = tuple(c for c in raw_choices if isinstance(c, str))
    native: JsonObject = {
        "id": QUESTION_ID,
        "question": data.get("question", MISSING),
        "options": [{"label": choice} for choice in choices],
    }
    try:
        ask = build_ask({"questions": [native]})
    except MappingError as exc:
        return f"it cannot be asked: {exc}"
    (question,) = ask.questions
    allow_freeform = data.get("allowFreeform") is not False
    question.free_text = (
        comms_pb2.FREE_TEXT_ACCEPTED
        if allow_freeform or not choices
        else comms_pb2.FREE_TEXT_REFUSED
    )
    question.answer_required = True
    return UserInput(
        request_id=request_id,
        tool_call_id=_string(data, "toolCallId"),
        choices=choices,
        ask=ask,
    )


def user_input_reply(request: UserInput, answered: comms_pb2.Ask) -> Reply:
    """The answered Ask as `handlePendingUserInput`'s `response`: the chosen choice, or the
    person's words."""
    question = next((q for q in answered.questions if q.question_id == QUESTION_ID), None)
    if question is None:
        return Reply({"answer": "", "wasFreeform": True}, ("the answer has no question",))
    if question.custom_text:
        return Reply({"answer": question.custom_text, "wasFreeform": True})
    changes: list[str] = []
    picked: list[str] = []
    for option_id in question.chosen_option_ids:
        index = int(option_id) if option_id.isdecimal() and option_id.isascii() else -1
        if 0 <= index < len(request.choices):
            picked.append(request.choices[index])
        else:
            changes.append(f"chosen id {option_id!r} is not one of the choices")
    if len(picked) > 1:
        changes.append("Copilot takes one choice; only the first was handed over")
    if not picked:
        changes.append("nothing was chosen; Copilot got an empty answer")
        return Reply({"answer": "", "wasFreeform": False}, tuple(changes))
    return Reply({"answer": picked[0], "wasFreeform": False}, tuple(changes))


def user_input_refusal(ask: comms_pb2.Ask) -> Reply:
    """An ask that ended without an answer (declined, expired, ...), in words: Copilot's
    answer has no decline."""
    return Reply({"answer": result_text(ask), "wasFreeform": True})


def read_form(data: object) -> Form | str:
    """An `elicitation.requested` event's data as a Form; a string says why it cannot be
    presented (a URL elicitation, a schema the bridge does not take)."""
    if not is_object(data):
        return "the request is not an object"
    request_id = _string(data, "requestId")
    if not request_id:
        return "the request has no requestId"
    planned = plan_elicitation(data, "requestedSchema")
    if isinstance(planned, str):
        return planned
    plan, _schema = planned
    source = _string(data, "elicitationSource")
    if not source:
        for question, spec in zip(plan.ask.questions, plan.fields, strict=True):
            if spec.kind in _OWN_WORDS_KINDS:
                question.free_text = comms_pb2.FREE_TEXT_ACCEPTED
    return Form(
        request_id=request_id,
        tool_call_id=_string(data, "toolCallId"),
        source=source,
        plan=plan,
    )


def form_reply(form: Form, answered: comms_pb2.Ask) -> Reply:
    """The answered Ask as `handlePendingElicitation`'s `result`: `accept` with the content
    (see the module docstring for the person's own words)."""
    if form.source:
        result = form_content(form.plan, answered)
        return Reply(_accept(result.content), _changes(result.problems, result.missing))
    # Copilot's own form: a choice or yes/no field answered in words takes the words. The
    # rest is read as any form's (the words set aside, so that forms.py does not refuse them).
    words: dict[str, str] = {}
    plain = comms_pb2.Ask()
    plain.CopyFrom(answered)
    kinds = {spec.key: spec.kind for spec in form.plan.fields}
    for question in plain.questions:
        if kinds.get(question.question_id) in _OWN_WORDS_KINDS and question.custom_text:
            words[question.question_id] = question.custom_text
            question.custom_text = ""
    result = form_content(form.plan, plain)
    content = dict(result.content)
    for key, text in words.items():
        if kinds[key] == "choices":
            picked = content.get(key)
            content[key] = [*(picked if isinstance(picked, list) else []), text]
        else:
            content[key] = text
    missing = tuple(key for key in result.missing if key not in content)
    # In the schema's order: Copilot hands its model the fields in the content's order.
    order = [spec.key for spec in form.plan.fields]
    ordered = {key: content[key] for key in sorted(content, key=_position(order))}
    return Reply(_accept(ordered), _changes(result.problems, missing))


def _position(order: list[str]) -> Callable[[str], int]:
    def position(key: str) -> int:
        return order.index(key) if key in order else len(order)

    return position


def _accept(content: dict[str, JsonContent]) -> JsonObject:
    values: JsonObject = {
        key: list(value) if isinstance(value, list) else value for key, value in content.items()
    }
    return {"action": "accept", "content": values}


def _changes(problems: tuple[str, ...], missing: tuple[str, ...]) -> tuple[str, ...]:
    if not missing:
        return problems
    return (
        *problems,
        f"the form requires {', '.join(missing)}, left without an answer; sent without it",
    )


FormAction = Literal["decline", "cancel"]


def form_refusal(ask: comms_pb2.Ask) -> Reply:
    """An ask that ended without an answer: `decline` for a person's decline, `cancel` for
    any other outcome."""
    from compass_core.ask_status import outcome

    action: FormAction = "decline" if outcome(ask) == comms_pb2.ASK_STATUS_DECLINED else "cancel"
    return Reply({"action": action})


def read_tool_result(data: object) -> ToolResult | None:
    """A `tool.execution_complete` event's data; None without a toolCallId. The text is
    `result.content` of a call that succeeded, else its `error.message`."""
    if not is_object(data):
        return None
    tool_call_id = _string(data, "toolCallId")
    if not tool_call_id:
        return None
    success = data.get("success") is True
    text = ""
    result = data.get("result")
    error = data.get("error")
    if success and is_object(result):
        text = _string(result, "content")
    elif is_object(error):
        text = _string(error, "message")
    return ToolResult(tool_call_id=tool_call_id, success=success, text=text)
