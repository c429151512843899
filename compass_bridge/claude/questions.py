"""Claude Code's own questions as typed Asks, and the hook's replies (pure).

`compass claude-hook` (hook.py) is the command of two of Claude Code's hooks. Read
from the binary as published (Claude Code 2.1.318, in `@anthropic-ai/claude-agent-sdk-linux-x64`,
the version tests/realagent/claude pins) and checked against it headless:

- **PreToolUse, matcher `AskUserQuestion`.** Stdin: `{session_id, transcript_path, cwd,
  permission_mode, hook_event_name: "PreToolUse", tool_name: "AskUserQuestion", tool_use_id,
  tool_input: {questions: [{question, header, options: [{label, description, preview?}],
  multiSelect}]}}` (questions have no ids; their texts are unique, Claude Code's schema
  says so). The reply allows the call with the answers filled in:
  `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
  "updatedInput": {<tool_input as received>, "answers": {"<question text>": "<answer>"}}}}`.
  An answer is the chosen label, the person's own text, or, on a multi-select, the labels
  joined with ", " where a label holding ", " or '"' is written as a JSON string (Claude
  Code's `aVt`; its tool splits the string back the same way to tell picks from own words);
  a skipped question is left out. Picks *and* own text on one question: the picks are the
  answer and the text goes in `annotations: {"<question text>": {"notes": text}}`, which the
  tool shows the model as `notes: ...` (the field its terminal form uses for a note beside a
  pick). The model then reads `Your questions have been answered: "Q"="SQLite", ... You can
  now continue with these answers in mind.` when every answer is an offered label, else
  `The user answered: "Q"="own words" ... Read the answers carefully ...`; with no answer at
  all `The user did not answer the questions.` A decline is `"permissionDecision": "deny"`
  with the reason, which the model reads as an error result `PreToolUse:AskUserQuestion hook
  error: <reason>`.
- **Elicitation** (an MCP server's form, `elicitation/create`): stdin adds `mcp_server_name`,
  `message`, `mode: "form"` and `requested_schema`; the reply is `{"hookSpecificOutput":
  {"hookEventName": "Elicitation", "action": "accept" | "decline" | "cancel", "content"?}}`.
  The form is mapped by the ACP bridge's mapper (forms.py: `plan_form`, `form_content`), and
  because Claude Code hands `content` to the server unchecked, the content is validated
  against the requested schema (jsonschema) before it is accepted.

A hook that prints nothing leaves Claude Code to go on as if it had no hook (its own prompt
in the terminal; in `-p` mode the SDK host's permission prompt, or a cancelled form).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from compass_bridge.replies import build_answers
from compass_core import build_ask
from compass_core.jsonvalues import (
    MISSING,
    JsonObject,
    MappingError,
    as_array,
    as_object,
    as_str,
    is_array,
)
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from compass_bridge.forms import FormPlan, JsonContent

__all__ = [
    "ELICITATION_EVENT",
    "PRE_TOOL_USE_EVENT",
    "QUESTION_TOOL",
    "FormCall",
    "HookReply",
    "QuestionCall",
    "decline_reason",
    "form_reply",
    "join_labels",
    "question_id",
    "question_reply",
    "read_form",
    "read_questions",
    "refusal_reply",
    "schema_violations",
]

PRE_TOOL_USE_EVENT: Final = "PreToolUse"
ELICITATION_EVENT: Final = "Elicitation"
QUESTION_TOOL: Final = "AskUserQuestion"

_SLUG_WORDS: Final = re.compile(r"[a-z0-9]+")
_SLUG_MAX: Final = 40
_HASH_HEX: Final = 12


def question_id(text: str) -> str:
    """A stable question id for a question text: a readable slug of it and the first 12 hex
    digits of its SHA-256 (`which-database-should-we-use-3f2a9c1b0d4e`). The same text gets
    the same id in every ask; different texts differ by their hash."""
    slug = "-".join(_SLUG_WORDS.findall(text.lower()))[:_SLUG_MAX].strip("-")
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_HEX]
    return f"{slug}-{digest}" if slug else f"q-{digest}"


def join_labels(labels: Sequence[str]) -> str:
    """Several picks as one AskUserQuestion answer, as Claude Code joins them (`aVt` in its
    bundled tool): ", " between labels, a label that contains ", " or '"' written as a JSON
    string. (Python's `json.dumps(ensure_ascii=False)` escapes exactly what JavaScript's
    `JSON.stringify` does: the quote, the backslash and control characters.)"""
    return ", ".join(
        json.dumps(label, ensure_ascii=False) if ", " in label or '"' in label else label
        for label in labels
    )


# -- AskUserQuestion ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuestionCall:
    """One AskUserQuestion call: its input as Claude Code sent it and the Ask it becomes."""

    tool_input: JsonObject
    ask: comms_pb2.Ask
    """One question per input question, in order; ids from `question_id`."""
    texts: dict[str, str]
    """Question id -> the question's text (the key of its answer)."""


def read_questions(tool_input: object) -> QuestionCall:
    """AskUserQuestion's input as an Ask, through the native ask mapper (`build_ask`, with
    the server's limits). Every question takes free text (Claude Code's own "Other").

    Raises:
        MappingError: the input is not a list of questions the mapper accepts.
    """
    call_input = as_object(tool_input, "tool_input")
    items = as_array(call_input.get("questions", MISSING), "tool_input.questions")
    native: list[JsonObject] = []
    texts: dict[str, str] = {}
    for index, value in enumerate(items):
        item = as_object(value, f"tool_input.questions[{index}]")
        text = as_str(item.get("question", MISSING), f"tool_input.questions[{index}].question")
        key = question_id(text)
        if key in texts:
            raise MappingError(f"tool_input.questions[{index}].question", "repeats a question")
        texts[key] = text
        shown = text
        helper = item.get("description")  # a helper line under the question (newer forms)
        if isinstance(helper, str) and helper:
            shown = f"{text}\n\n{helper}"
        entry: JsonObject = {
            "id": key,
            "question": shown,
            # A "text" or "number" question of newer Claude Codes has no options.
            "options": item.get("options", []),
            "multi": item.get("multiSelect", False),
        }
        if "header" in item:
            entry["header"] = item["header"]
        native.append(entry)
    ask = build_ask({"questions": native})
    for question in ask.questions:
        question.free_text = comms_pb2.FREE_TEXT_ACCEPTED
    return QuestionCall(tool_input=call_input, ask=ask, texts=texts)


@dataclass(frozen=True, slots=True)
class HookReply:
    """What the hook prints, and what that does to the answer."""

    output: JsonObject
    changes: tuple[str, ...] = ()
    """What the agent gets otherwise than given (the receipt: DELIVERED_WITH_CHANGES)."""
    refused: str = ""
    """Why the answer could not be handed over (the receipt: NOT_DELIVERED)."""


def question_reply(call: QuestionCall, answered: comms_pb2.Ask) -> HookReply:
    """The answered Ask as the PreToolUse reply that fills in AskUserQuestion's answers."""
    ids = [question.question_id for question in call.ask.questions]
    runtime = build_answers(answered, order=ids)
    answers: dict[str, str] = {}
    annotations: dict[str, dict[str, str]] = {}
    by_id = {question.question_id: question for question in answered.questions}
    for question_key, entry in zip(ids, runtime.answers, strict=True):
        text = call.texts[question_key]
        picked = entry["selectedOptions"]
        labels = [label for label in picked if isinstance(label, str)] if is_array(picked) else []
        own = entry.get("customInput")
        own_text = own if isinstance(own, str) else ""
        question = by_id.get(question_key)
        if labels:
            several = question is not None and question.allow_multiple
            answers[text] = join_labels(labels) if several else labels[0]
            if own_text:
                annotations[text] = {"notes": own_text}
        elif own_text:
            answers[text] = own_text
    updated: JsonObject = {**call.tool_input, "answers": answers}
    if annotations:
        updated["annotations"] = annotations
    output: JsonObject = {
        "hookSpecificOutput": {
            "hookEventName": PRE_TOOL_USE_EVENT,
            "permissionDecision": "allow",
            "updatedInput": updated,
        }
    }
    return HookReply(output=output, changes=runtime.problems)


def decline_reason(ask: comms_pb2.Ask) -> str:
    """The reason the model reads for a person's decline (`DeclineAsk`)."""
    who = ask.closed_by_name or "The person"
    if ask.close_reason:
        return f"{who} declined to answer in Compass: {ask.close_reason}"
    return f"{who} declined to answer in Compass."


def refusal_reply(event: str, ask: comms_pb2.Ask) -> HookReply:
    """A person's decline: AskUserQuestion denied with the reason, a form declined."""
    if event == ELICITATION_EVENT:
        return HookReply(output=_form_output("decline"))
    return HookReply(
        output={
            "hookSpecificOutput": {
                "hookEventName": PRE_TOOL_USE_EVENT,
                "permissionDecision": "deny",
                "permissionDecisionReason": decline_reason(ask),
            }
        }
    )


# -- Elicitation -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FormCall:
    """One MCP form: the ACP bridge's plan of it, and the schema it must satisfy."""

    plan: FormPlan
    schema: JsonObject
    server_name: str = ""


def read_form(event: JsonObject) -> FormCall | str:
    """An Elicitation hook's form as the bridge's FormPlan; a string says why it cannot be
    presented (a URL elicitation, a schema the mapper does not take)."""
    # Imported here: only a form needs the ACP library's schema types (pydantic).
    from compass_bridge.forms import plan_elicitation

    planned = plan_elicitation(event, "requested_schema")
    if isinstance(planned, str):
        return planned
    plan, schema = planned
    server = event.get("mcp_server_name")
    return FormCall(plan=plan, schema=schema, server_name=server if isinstance(server, str) else "")


FormAction = Literal["accept", "decline", "cancel"]


def _form_output(action: FormAction, content: JsonObject | None = None) -> JsonObject:
    specific: JsonObject = {"hookEventName": ELICITATION_EVENT, "action": action}
    if content is not None:
        specific["content"] = content
    return {"hookSpecificOutput": specific}


def form_reply(call: FormCall, answered: comms_pb2.Ask) -> HookReply:
    """The answered Ask as the form's content, validated: `accept` with it, or `cancel`
    (NOT_DELIVERED) when it would not satisfy the schema, e.g. a required property the
    person skipped. What the schema cannot take is left out and named in `changes`."""
    from compass_bridge.forms import form_content

    result = form_content(call.plan, answered)
    if result.missing:
        return HookReply(
            output=_form_output("cancel"),
            refused=f"the form requires {', '.join(result.missing)}, left without a valid "
            "answer; the MCP server was told the form was cancelled",
        )
    violations = schema_violations(call.schema, result.content)
    if violations:
        return HookReply(
            output=_form_output("cancel"),
            refused="the answer does not satisfy the form's schema ("
            + "; ".join(violations)
            + "); the MCP server was told the form was cancelled",
        )
    return HookReply(output=_form_output("accept", dict(result.content)), changes=result.problems)


def schema_violations(schema: JsonObject, content: Mapping[str, JsonContent]) -> list[str]:
    """Where `content` breaks `schema` (JSON Schema, its formats checked where jsonschema
    can), at most five, each `<path>: <problem>`; empty when it holds."""
    from jsonschema import Draft202012Validator, SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_class = validator_for(schema, default=Draft202012Validator)
        validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
        errors = sorted(validator.iter_errors(content), key=lambda error: str(error.json_path))
    except (SchemaError, re.error):
        # A schema jsonschema cannot apply (e.g. a pattern Python cannot compile): the
        # mapper's own checks (forms.form_content) are all that can be held to it.
        return []
    return [f"{error.json_path}: {error.message}"[:200] for error in errors[:5]]
