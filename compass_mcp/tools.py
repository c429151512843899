"""The MCP tools `ask`, `ask_wait` and `ask_cancel`: their schemas, their arguments, their
results (pure: no I/O, shared by the HTTP front door and `compass mcp` over stdio).

An `ask` call carries the native ask schema that `compass_core.build_ask` narrows (one
mapping, one set of limits and error messages), plus what only the MCP tool has: `context`
(text shown before the ask), `channel`, `deadline_seconds`, `on_timeout` and
`wait_seconds`. Every refusal is a `MappingError` whose text names the path, as the mapper
words it (`questions[1].id is empty`); the caller returns it as a tool error.

The result is `structuredContent` (`result_content`) plus one text block for the model
(`result_text`) in the shape oh-my-pi's own `ask` tool gives its model (src/tools/ask.ts,
`formatQuestionResult`/`formatSingleQuestionResponse`), extended where omp drops part of an
answer (picks together with free text keep both), because some clients (Gemini CLI) hand the
model only the text.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Final

from compass_core import build_ask
from compass_core.ask_status import STATUS_NAMES
from compass_core.jsonvalues import (
    MISSING,
    JsonObject,
    MappingError,
    as_str,
    json_type,
    optional_str,
)
from compass_core.limits import MAX_CLOSE_REASON_LENGTH, MAX_ID_LENGTH
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

ASK: Final = "ask"
ASK_WAIT: Final = "ask_wait"
ASK_CANCEL: Final = "ask_cancel"

CHANNEL_HEADER: Final = "x-compass-channel"
"""HTTP header naming the channel when the `channel` argument does not."""
WAIT_HEADER: Final = "x-compass-wait-seconds"
"""HTTP header setting a client's default hold (`wait_seconds` when the call gives none)."""

PROGRESS_SECONDS: Final = 15.0
"""A waiting call sends a progress notification at once and then this often."""
DEFAULT_WAIT_SECONDS: Final = 50.0
"""The default hold. Below 60 s, the tool timeout of TypeScript-SDK clients that progress
does not reset (and Claude Code's first-byte timer, which the progress at once also
answers); longer holds are set per client (docs/agents/mcp.md)."""
MAX_WAIT_SECONDS: Final = 3600.0
"""The longest hold a call may ask for."""
MAX_DEADLINE_SECONDS: Final = 30 * 86400.0
"""The furthest deadline an ask may set (30 days)."""

STOPPED_WAITING: Final = "agent stopped waiting"
"""The WITHDRAWN reason when the client went away and no call reattached in time."""
CANCELLED: Final = "agent cancelled the ask"
"""The WITHDRAWN reason of an `ask_cancel` without one."""
TIMED_OUT_REASON: Final = "deadline passed: picked the recommended option"
"""The TIMED_OUT reason of `on_timeout: pick_recommended`."""

STATUS: Final[dict[int, str]] = STATUS_NAMES
"""The `status` of a result, by the ask's status: its name (compass_core.ask_status: pending,
answered, declined, withdrawn, timed_out, expired)."""

_ON_TIMEOUT: Final = {
    "fail": comms_pb2.ASK_TIMEOUT_POLICY_FAIL,
    "pick_recommended": comms_pb2.ASK_TIMEOUT_POLICY_PICK_RECOMMENDED,
}

# -- schemas ---------------------------------------------------------------------------------

_WAIT_PROPERTY: Final[JsonObject] = {
    "type": "number",
    "minimum": 0,
    "maximum": MAX_WAIT_SECONDS,
    "description": "How long this call waits before it returns status `pending` (then call "
    "ask_wait). Leave it out: the default fits your client's tool timeout.",
}

ASK_INPUT_SCHEMA: Final[JsonObject] = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "minItems": 1,
            "description": "One form: every question is answered at once.",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "Your id for the question."},
                    "question": {"type": "string"},
                    "header": {"type": "string", "description": "A short label."},
                    "options": {
                        "type": "array",
                        "description": "May be empty: the person then types the answer.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "label": {"type": "string"},
                                "description": {"type": "string"},
                                "preview": {"type": "string"},
                            },
                            "required": ["label"],
                        },
                    },
                    "multi": {"type": "boolean", "description": "Several options may be picked."},
                    "recommended": {
                        "type": "integer",
                        "description": "Zero-based index of the recommended option.",
                    },
                },
                "required": ["id", "question", "options"],
            },
        },
        "context": {
            "type": "string",
            "description": "What the person needs to know first (they do not see your "
            "conversation); shown above the questions.",
        },
        "channel": {
            "type": "string",
            "description": "The Compass channel id; leave it out when it is configured.",
        },
        "deadline_seconds": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": MAX_DEADLINE_SECONDS,
            "description": "Stop waiting for people after this long.",
        },
        "on_timeout": {
            "type": "string",
            "enum": list(_ON_TIMEOUT),
            "description": "At the deadline: fail (status expired), or pick_recommended "
            "(status timed_out with each question's recommended option).",
        },
        "wait_seconds": _WAIT_PROPERTY,
    },
    "required": ["questions"],
}

ASK_WAIT_INPUT_SCHEMA: Final[JsonObject] = {
    "type": "object",
    "properties": {"ask_id": {"type": "string"}, "wait_seconds": _WAIT_PROPERTY},
    "required": ["ask_id"],
}

ASK_CANCEL_INPUT_SCHEMA: Final[JsonObject] = {
    "type": "object",
    "properties": {
        "ask_id": {"type": "string"},
        "reason": {"type": "string", "description": "A few words, shown to the people."},
    },
    "required": ["ask_id"],
}

OUTPUT_SCHEMA: Final[JsonObject] = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": list(STATUS.values())},
        "ask_id": {"type": "string"},
        "answers": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "question_id": {"type": "string"},
                    "chosen_labels": {"type": "array", "items": {"type": "string"}},
                    "chosen_option_ids": {"type": "array", "items": {"type": "string"}},
                    "custom_text": {"type": "string"},
                    "skipped": {"type": "boolean"},
                    "timed_out": {"type": "boolean"},
                },
                "required": [
                    "question_id",
                    "chosen_labels",
                    "chosen_option_ids",
                    "custom_text",
                    "skipped",
                    "timed_out",
                ],
            },
        },
        "answered_by": {"type": "string"},
        "link": {"type": "string"},
        "close_reason": {"type": "string"},
    },
    "required": ["status", "ask_id", "answers"],
}

DESCRIPTIONS: Final = {
    ASK: "Ask the people working with you one or more questions at once, through Compass, "
    "and wait for their typed answer. Returns when they answer or decline (or at the "
    "deadline), or after a while with status `pending`: then call ask_wait with the ask_id. "
    "Calling ask again with identical arguments rejoins the same pending ask.",
    ASK_WAIT: "Keep waiting for the answer to an ask that returned status `pending`. Call it "
    "right away: an ask nobody waits for is withdrawn after a grace period.",
    ASK_CANCEL: "Withdraw an ask you no longer need answered.",
}

# -- arguments -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AskCall:
    """A well-formed `ask` call."""

    ask: comms_pb2.Ask
    """The questions (`build_ask`), free text accepted on each; no deadline yet."""
    context: str
    """Text shown before the ask; "" for none."""
    channel: str | None
    """The `channel` argument, if given."""
    deadline_seconds: float | None
    on_timeout: comms_pb2.AskTimeoutPolicy
    wait_seconds: float | None
    key: str
    """Identifies the call's arguments (all but `wait_seconds`): an identical re-issue has
    the same key and rejoins the ask."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitCall:
    ask_id: str
    wait_seconds: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelCall:
    ask_id: str
    reason: str


def parse_ask(args: JsonObject) -> AskCall:
    """Narrow an `ask` call's arguments.

    Raises:
        MappingError: the first problem, e.g. `questions[1].id is empty`.
    """
    ask = build_ask(args)
    for question in ask.questions:
        question.free_text = comms_pb2.FREE_TEXT_ACCEPTED
    context = optional_str(args.get("context", MISSING), "context") or ""
    channel = optional_str(args.get("channel", MISSING), "channel")
    if channel is not None:
        _check_id(channel, "channel")
    deadline = _seconds(
        args.get("deadline_seconds", MISSING), "deadline_seconds", MAX_DEADLINE_SECONDS
    )
    if deadline is not None and deadline <= 0:
        raise MappingError("deadline_seconds", "must be more than 0")
    on_timeout = comms_pb2.ASK_TIMEOUT_POLICY_UNSPECIFIED
    raw_policy = optional_str(args.get("on_timeout", MISSING), "on_timeout")
    if raw_policy is not None:
        if raw_policy not in _ON_TIMEOUT:
            raise MappingError("on_timeout", f"must be one of {', '.join(_ON_TIMEOUT)}")
        if deadline is None:
            raise MappingError("on_timeout", "needs deadline_seconds")
        on_timeout = _ON_TIMEOUT[raw_policy]
    elif deadline is not None:
        on_timeout = comms_pb2.ASK_TIMEOUT_POLICY_FAIL
    wait = _seconds(args.get("wait_seconds", MISSING), "wait_seconds", MAX_WAIT_SECONDS)
    return AskCall(
        ask=ask,
        context=context,
        channel=channel,
        deadline_seconds=deadline,
        on_timeout=on_timeout,
        wait_seconds=wait,
        key=call_key(args),
    )


def parse_wait(args: JsonObject) -> WaitCall:
    """Narrow an `ask_wait` call's arguments.

    Raises:
        MappingError: the first problem.
    """
    return WaitCall(
        ask_id=_ask_id(args),
        wait_seconds=_seconds(args.get("wait_seconds", MISSING), "wait_seconds", MAX_WAIT_SECONDS),
    )


def parse_cancel(args: JsonObject) -> CancelCall:
    """Narrow an `ask_cancel` call's arguments.

    Raises:
        MappingError: the first problem.
    """
    ask_id = _ask_id(args)
    reason = optional_str(args.get("reason", MISSING), "reason") or CANCELLED
    if len(reason) > MAX_CLOSE_REASON_LENGTH:
        raise MappingError("reason", f"is longer than {MAX_CLOSE_REASON_LENGTH} characters")
    return CancelCall(ask_id=ask_id, reason=reason)


def parse_wait_header(value: str | None) -> float | None:
    """The hold an `X-Compass-Wait-Seconds` header sets; None when absent.

    Raises:
        MappingError: not a number of seconds from 0 to MAX_WAIT_SECONDS.
    """
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        raise MappingError(WAIT_HEADER, "is not a number of seconds") from None
    return _seconds(seconds, WAIT_HEADER, MAX_WAIT_SECONDS)


def call_key(args: JsonObject) -> str:
    """The identity of an `ask` call's arguments, `wait_seconds` aside (a client re-issuing
    a call whose stream broke repeats them; the hold does not change what is asked)."""
    kept = {key: value for key, value in args.items() if key != "wait_seconds"}
    canonical = json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _ask_id(args: JsonObject) -> str:
    ask_id = as_str(args.get("ask_id", MISSING), "ask_id")
    _check_id(ask_id, "ask_id")
    return ask_id


def _check_id(value: str, path: str) -> None:
    if not value:
        raise MappingError(path, "is empty")
    if len(value) > MAX_ID_LENGTH or "\x00" in value:
        raise MappingError(path, "is not an id")


def _seconds(value: object, path: str, limit: float) -> float | None:
    if value is MISSING or value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MappingError(path, f"is not a number (got {json_type(value)})")
    seconds = float(value)
    if not math.isfinite(seconds) or not 0 <= seconds <= limit:
        raise MappingError(path, f"must be from 0 to {limit:g} seconds")
    return seconds


# -- the ask to post -------------------------------------------------------------------------


def blocks_for(call: AskCall, now: datetime) -> list[comms_pb2.MessageBlock]:
    """The message to post for `call` asked at `now`: its context as a text block, then the
    ask (with its deadline, when it has one)."""
    ask = comms_pb2.Ask()
    ask.CopyFrom(call.ask)
    if call.deadline_seconds is not None:
        ask.deadline.FromDatetime(now + timedelta(seconds=call.deadline_seconds))
        ask.on_timeout = call.on_timeout
    blocks: list[comms_pb2.MessageBlock] = []
    if call.context.strip():
        blocks.append(comms_pb2.MessageBlock(text=comms_pb2.TextBlock(text=call.context)))
    blocks.append(comms_pb2.MessageBlock(ask=ask))
    return blocks


def recommended_answers(ask: comms_pb2.Ask) -> list[comms_pb2.AskQuestionAnswer]:
    """What `on_timeout: pick_recommended` answers: each question's recommended option, else
    its first, else (no options) nothing (a skip)."""
    answers: list[comms_pb2.AskQuestionAnswer] = []
    for question in ask.questions:
        answer = comms_pb2.AskQuestionAnswer(question_id=question.question_id)
        if question.options:
            index = question.recommended if question.HasField("recommended") else 0
            if not 0 <= index < len(question.options):
                index = 0
            answer.chosen_option_ids.append(question.options[index].id)
        answers.append(answer)
    return answers


# -- results ---------------------------------------------------------------------------------


def status_of(ask: comms_pb2.Ask) -> str:
    """The result's `status` for the ask as it stands."""
    return STATUS.get(ask.status, "pending")


def _labels(question: comms_pb2.AskQuestion) -> list[str]:
    by_id = {option.id: option.label for option in question.options}
    return [by_id.get(option_id, option_id) for option_id in question.chosen_option_ids]


def result_content(ask: comms_pb2.Ask, *, link: str = "") -> JsonObject:
    """The result's `structuredContent`."""
    status = status_of(ask)
    answers: list[object] = []
    if status in {"answered", "timed_out"}:
        answers = [
            {
                "question_id": question.question_id,
                "chosen_labels": _labels(question),
                "chosen_option_ids": list(question.chosen_option_ids),
                "custom_text": question.custom_text,
                "skipped": not question.chosen_option_ids and not question.custom_text,
                "timed_out": question.timed_out,
            }
            for question in ask.questions
        ]
    content: JsonObject = {"status": status, "ask_id": ask.ask_id, "answers": answers}
    if status == "answered" and ask.answered_by_name:
        content["answered_by"] = ask.answered_by_name
    elif status == "declined" and ask.closed_by_name:
        content["answered_by"] = ask.closed_by_name
    if link:
        content["link"] = link
    if ask.close_reason:
        content["close_reason"] = ask.close_reason
    return content


def result_text(ask: comms_pb2.Ask, *, link: str = "") -> str:
    """The text block the model reads: the whole answer, or what happened instead."""
    status = status_of(ask)
    reason = f" ({ask.close_reason})" if ask.close_reason else ""
    if status in {"answered", "timed_out"}:
        text = _answers_text(ask.questions, single=len(ask.questions) == 1)
        if status == "answered" and ask.answered_by_name:
            text += f"\n(answered by {ask.answered_by_name} in Compass)"
        return text
    if status == "declined":
        who = ask.closed_by_name or "The user"
        return f"{who} declined to answer{reason}. Do not ask the same again; carry on without it."
    if status == "withdrawn":
        return f"The ask was withdrawn{reason}; nobody will answer it."
    if status == "expired":
        return "Nobody answered before the deadline; the ask expired."
    where = f" People answer it at {link}." if link else ""
    return (
        f"No answer yet (ask_id {ask.ask_id}).{where} To keep waiting, call ask_wait with "
        f'{{"ask_id": "{ask.ask_id}"}} now (an ask nobody waits for is withdrawn after a '
        "grace period); to give up, call ask_cancel."
    )


def _answers_text(questions: Sequence[comms_pb2.AskQuestion], *, single: bool) -> str:
    if single:
        return _single_text(questions[0])
    return "User answers:\n" + "\n".join(_question_line(question) for question in questions)


def _suffix(question: comms_pb2.AskQuestion) -> str:
    return " (auto-selected after timeout)" if question.timed_out else ""


def _question_line(question: comms_pb2.AskQuestion) -> str:
    """omp's `formatQuestionResult`, keeping picks that come with free text."""
    labels = _labels(question)
    text = question.custom_text
    if labels and text:
        return f'{question.question_id}: [{", ".join(labels)}] + "{text}"{_suffix(question)}'
    if text:
        return f'{question.question_id}: "{text}"'
    if labels:
        picked = f"[{', '.join(labels)}]" if question.allow_multiple else labels[0]
        return f"{question.question_id}: {picked}{_suffix(question)}"
    return f"{question.question_id}: {'[]' if question.allow_multiple else '(skipped)'}"


def _single_text(question: comms_pb2.AskQuestion) -> str:
    """omp's `formatSingleQuestionResponse`."""
    parts: list[str] = []
    labels = _labels(question)
    if labels:
        picked = ", ".join(labels) if question.allow_multiple else labels[0]
        parts.append(f"User selected: {picked}{_suffix(question)}")
    text = question.custom_text
    if text:
        if "\n" in text:
            indented = "\n".join(f"  {line}" for line in text.split("\n"))
            parts.append(f"User provided custom input:\n{indented}")
        else:
            parts.append(f"User provided custom input: {text}")
    if parts:
        return "\n".join(parts)
    if question.allow_multiple:
        return "User did not select any options"
    return "User skipped the question"
