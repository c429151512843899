"""OpenCode's `question` tool as one typed Ask, and the person's answer as OpenCode's reply
(pure).

Read from OpenCode 1.18.33 as published (the `opencode-linux-x64` binary embeds its sources;
tests/realagent/opencode pins it) and checked against it (tests/realagent/test_opencode.py):

- **The tool.** `question {questions: [{question, header, options: [{label, description}],
  multiple?}]}`; its description tells the model that a "Type your own answer" choice is
  added by itself and to put "(Recommended)" at the end of a recommended label. It is
  offered when `OPENCODE_CLIENT` is app, cli (the default) or desktop, or with
  `OPENCODE_ENABLE_QUESTION_TOOL`, and the session's permissions allow `question` (the TUI's
  and `opencode serve`'s sessions do; `opencode run` creates its own with `question: deny`).
- **The event.** `question.asked {id: "que_...", sessionID, questions, tool?: {messageID,
  callID}}`, each question as the tool received it plus `custom?` (default true: free text
  is taken; the tool's schema has no `custom`, so a model's question always takes it; only
  OpenCode's own questions, e.g. plan_exit's, say `custom: false`).
- **The reply.** `POST /question/{id}/reply {answers: string[][]}`: per question, in order,
  the labels picked and the person's own text as an entry of its own. OpenCode checks no
  entry against the options, so the labels go back exactly as OpenCode listed them. The model
  then reads `User has answered your questions: "Q1"="a, b", "Q2"="Unanswered". You can now
  continue with the user's answers in mind.` (`answered_text`).
- **The refusal.** `POST /question/{id}/reject`, without a body (no reason): the tool call
  fails with `The user dismissed this question` (REJECTED_TEXT), and the turn ends there
  unless the config sets `experimental.continue_loop_on_deny`; the model reads the error as
  the call's result in its next request.

The Ask: one question per OpenCode question, ids `q1`, `q2`, ...; header, options with their
descriptions, `multiple` as allow_multiple, `custom` as free text accepted or refused. A label
ending in "(Recommended)" is the question's recommended option, shown without the suffix (the
person sees Compass's own mark instead); the reply carries the label as OpenCode listed it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from compass_bridge.replies import chosen_indexes
from compass_core import build_ask
from compass_core.jsonvalues import (
    MISSING,
    JsonObject,
    MappingError,
    as_array,
    as_object,
    as_str,
    is_object,
    optional_bool,
)
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "ASKED_EVENT",
    "REJECTED_TEXT",
    "Prompt",
    "QuestionRequest",
    "Reply",
    "answered_text",
    "decline_changes",
    "read_request",
    "reply_for",
]

ASKED_EVENT: Final = "question.asked"
REJECTED_TEXT: Final = "The user dismissed this question"
"""What OpenCode's question tool fails with when the question is rejected (its
QuestionRejectedError's message): the model's next request carries it as the result."""

_RECOMMENDED: Final = re.compile(r"\s*\(recommended\)\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Prompt:
    """One OpenCode question as OpenCode sent it: what the reply and the model's text need."""

    question: str
    labels: tuple[str, ...]
    """The option labels exactly as listed (a reply carries these)."""
    custom: bool
    """Whether it takes the person's own text."""


@dataclass(frozen=True, slots=True)
class QuestionRequest:
    """One `question.asked` event and the Ask it becomes."""

    request_id: str
    session_id: str
    call_id: str
    """The tool call asking (`tool.callID`); empty when OpenCode asked by itself."""
    message_id: str
    prompts: tuple[Prompt, ...]
    ask: comms_pb2.Ask


def read_request(properties: object) -> QuestionRequest:
    """A `question.asked` event's properties as a QuestionRequest.

    Raises:
        MappingError: it is not a question request the native ask mapper accepts (the path
            says where).
    """
    event = as_object(properties, "properties")
    request_id = as_str(event.get("id", MISSING), "properties.id")
    if not request_id:
        raise MappingError("properties.id", "is empty")
    session_id = as_str(event.get("sessionID", MISSING), "properties.sessionID")
    tool = event.get("tool")
    call_id = message_id = ""
    if is_object(tool):
        call_id = _text_or_empty(tool.get("callID"))
        message_id = _text_or_empty(tool.get("messageID"))
    items = as_array(event.get("questions", MISSING), "properties.questions")
    prompts: list[Prompt] = []
    native: list[JsonObject] = []
    for index, value in enumerate(items):
        path = f"properties.questions[{index}]"
        prompt, entry = _question(value, path, index)
        prompts.append(prompt)
        native.append(entry)
    ask = build_ask({"questions": native})
    for prompt, question in zip(prompts, ask.questions, strict=True):
        question.free_text = (
            comms_pb2.FREE_TEXT_ACCEPTED if prompt.custom else comms_pb2.FREE_TEXT_REFUSED
        )
    return QuestionRequest(
        request_id=request_id,
        session_id=session_id,
        call_id=call_id,
        message_id=message_id,
        prompts=tuple(prompts),
        ask=ask,
    )


def _text_or_empty(value: object) -> str:
    return value if isinstance(value, str) else ""


def _question(value: object, path: str, index: int) -> tuple[Prompt, JsonObject]:
    """One question: what the reply needs, and its entry in the native ask schema."""
    item = as_object(value, path)
    text = as_str(item.get("question", MISSING), f"{path}.question")
    raw_options = as_array(item.get("options", MISSING), f"{path}.options")
    labels: list[str] = []
    options: list[JsonObject] = []
    for j, raw in enumerate(raw_options):
        option = as_object(raw, f"{path}.options[{j}]")
        label = as_str(option.get("label", MISSING), f"{path}.options[{j}].label")
        labels.append(label)
        entry: JsonObject = {"label": label}
        description = option.get("description")
        if isinstance(description, str) and description:
            entry["description"] = description
        options.append(entry)
    multiple = optional_bool(item.get("multiple", MISSING), f"{path}.multiple")
    custom = optional_bool(item.get("custom", MISSING), f"{path}.custom")
    takes_text = custom is not False
    if not labels and not takes_text:
        raise MappingError(f"{path}.options", "is empty and the question takes no typed answer")
    native: JsonObject = {
        "id": f"q{index + 1}",
        "question": text,
        "options": options,
        "multi": multiple is True,
    }
    header = item.get("header")
    if isinstance(header, str) and header:
        native["header"] = header
    recommended = _recommended(labels)
    if recommended is not None:
        shown, at = recommended
        options[at] = {**options[at], "label": shown}
        native["recommended"] = at
    return Prompt(question=text, labels=tuple(labels), custom=takes_text), native


def _recommended(labels: list[str]) -> tuple[str, int] | None:
    """The first label marked "(Recommended)": its label without the mark, and its index.
    None when none is marked, or when the label without it would be empty or the same as
    another option's (then the label is shown as it is)."""
    for index, label in enumerate(labels):
        found = _RECOMMENDED.search(label)
        if found is None:
            continue
        shown = label[: found.start()].rstrip()
        if not shown or shown in labels:
            return None
        return shown, index
    return None


@dataclass(frozen=True, slots=True)
class Reply:
    """What OpenCode is sent for an answered Ask, and what its model then reads."""

    answers: tuple[tuple[str, ...], ...]
    """`answers` of `POST /question/{id}/reply`: one entry per question, in order."""
    text: str
    """The question tool's result, as OpenCode writes it (`answered_text`)."""
    changes: tuple[str, ...] = ()
    """What had to be left out (the receipt: DELIVERED_WITH_CHANGES)."""


def reply_for(request: QuestionRequest, answered: comms_pb2.Ask) -> Reply:
    """The answered Ask as OpenCode's reply: per question the labels picked (as OpenCode
    listed them) and then the person's own text; a skipped question answers nothing."""
    by_id = {question.question_id: question for question in answered.questions}
    answers: list[tuple[str, ...]] = []
    changes: list[str] = []
    for prompt, posted in zip(request.prompts, request.ask.questions, strict=True):
        question = by_id.get(posted.question_id)
        if question is None:
            changes.append(f"question {posted.question_id!r} is not in the answer; left empty")
            answers.append(())
            continue
        entry = [prompt.labels[index] for index in chosen_indexes(question, changes)]
        if question.custom_text:
            if prompt.custom:
                entry.append(question.custom_text)
            else:
                changes.append(
                    f"question {posted.question_id!r}: OpenCode takes no typed answer here; "
                    "the text was left out"
                )
        answers.append(tuple(entry))
    return Reply(
        answers=tuple(answers),
        text=answered_text(request.prompts, answers),
        changes=tuple(changes),
    )


def answered_text(prompts: Sequence[Prompt], answers: Sequence[Sequence[str]]) -> str:
    """The question tool's result for `answers`, as OpenCode 1.18.33 writes it:
    `"<question>"="<entries joined by ', '>"` per question (`Unanswered` for none or a
    missing entry), joined by ', ', inside its two sentences."""
    pairs = ", ".join(
        f'"{prompt.question}"="{", ".join(answers[i]) if i < len(answers) and answers[i] else "Unanswered"}"'
        for i, prompt in enumerate(prompts)
    )
    return (
        f"User has answered your questions: {pairs}. "
        "You can now continue with the user's answers in mind."
    )


def decline_changes(ask: comms_pb2.Ask) -> tuple[str, ...]:
    """What a decline loses on its way to OpenCode: its reason (a rejection takes none)."""
    if not ask.close_reason:
        return ()
    return (
        f"OpenCode's rejection carries no reason: the model reads {REJECTED_TEXT!r} without "
        f"{ask.close_reason!r}",
    )
