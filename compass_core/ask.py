"""The typed ask derivation: native `ask` tool arguments -> one compass.v1.Ask (docs/spec.md §2.2).

The native schema (the runtime's `ask` tool):

    {questions: QuestionItem[] (at least 1)}
    QuestionItem {id: str, question: str, header?: str, options: OptionItem[],
                  multi?: bool, recommended?: number}
    OptionItem   {label: str, description?: str, preview?: str}

Every read narrows with the helpers of `_json`, in the order the fields are listed above
(per question: id, question, header, multi, recommended, options; per option: label,
description, preview), and the first problem raises a MappingError naming its path. The
Ask is returned only when every field passed, so nothing partial is ever emitted: one bad
question bounces the whole call.

Beyond the native schema, the mapper also refuses what the contract cannot carry: an empty
or repeated question id (answers are keyed by it), a `recommended` outside int32, and a
string protobuf cannot encode (a lone UTF-16 surrogate, which `json.loads` lets through).
It refuses what the server would refuse too (`compass_core.limits`: more than 100 questions
or 100 options per question, a question id longer than 200 characters, a NUL character in
any text), since the server would otherwise refuse the whole frame and every block in it.
Keys the schema does not name are ignored, as the runtime's validator ignores them.
"""

from __future__ import annotations

from typing import Final

from compass_core.jsonvalues import (
    MISSING,
    JsonObject,
    MappingError,
    as_array,
    as_object,
    as_str,
    json_type,
    optional_bool,
    optional_str,
)
from compass_core.limits import (
    MAX_ID_LENGTH,
    MAX_OPTIONS_PER_QUESTION,
    MAX_QUESTIONS_PER_ASK,
    NUL,
)
from gen.compass.v1 import comms_pb2

RESERVED_OPTION_LABELS: Final = frozenset({"Other (type your own)", "Chat about this", "Next →"})
"""Labels the runtime adds to every ask itself; an option may not use one (docs/spec.md §2.1)."""

_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1


def build_ask(args: object) -> comms_pb2.Ask:
    """Narrow the decoded `args` of an ask tool_execution_start into one Ask.

    Args:
        args: The event's `args` (MISSING when it has none).

    Returns:
        One AskQuestion per question, in order; option ids "0", "1", ...; `ask_id` and the
        answer state empty.

    Raises:
        MappingError: `args` is not a well-formed ask call; the first fault in reading order,
            e.g. `questions[1].id is empty`.
    """
    if args is MISSING:
        # `args` is the whole argument object, not a key inside it: an absent one is
        # reported by its type, like any other non-object.
        raise MappingError("args", "is not an object (got missing)")
    items = as_array(as_object(args, "args").get("questions", MISSING), "questions")
    if not items:
        raise MappingError("questions", "is empty")
    if len(items) > MAX_QUESTIONS_PER_ASK:
        raise MappingError(
            "questions", f"has more than {MAX_QUESTIONS_PER_ASK} items (got {len(items)})"
        )
    seen: dict[str, str] = {}  # question id -> the path where it first appeared
    return comms_pb2.Ask(
        questions=[_question(item, f"questions[{i}]", seen) for i, item in enumerate(items)]
    )


def _question(value: object, path: str, seen: dict[str, str]) -> comms_pb2.AskQuestion:
    item = as_object(value, path)
    question_id = _question_id(item, path, seen)
    text = _text(item.get("question", MISSING), f"{path}.question")
    header = _optional_text(item.get("header", MISSING), f"{path}.header")
    multi = optional_bool(item.get("multi", MISSING), f"{path}.multi")
    recommended = _recommended(item.get("recommended", MISSING), f"{path}.recommended")
    options = _options(item.get("options", MISSING), f"{path}.options")
    return comms_pb2.AskQuestion(
        question_id=question_id,
        question=text,
        header=header,
        options=options,
        allow_multiple=multi,
        recommended=recommended,  # None leaves it unset
    )


def _question_id(item: JsonObject, path: str, seen: dict[str, str]) -> str:
    path = f"{path}.id"
    question_id = as_str(item.get("id", MISSING), path)
    if not question_id:
        raise MappingError(path, "is empty")
    if len(question_id) > MAX_ID_LENGTH:
        raise MappingError(path, f"is longer than {MAX_ID_LENGTH} characters")
    _check_storable(question_id, path)
    if question_id in seen:
        raise MappingError(path, f"repeats {seen[question_id]}")
    seen[question_id] = path
    return question_id


def _recommended(value: object, path: str) -> int | None:
    if value is MISSING:
        return None
    # bool first: True is an int to Python, but not a number to the runtime.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MappingError(path, f"is not an integer (got {json_type(value)})")
    if isinstance(value, float):
        if not value.is_integer():  # also refuses nan and inf
            raise MappingError(path, f"is not an integer (got {value!r})")
        value = int(value)  # a JSON number may arrive as 1.0
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise MappingError(path, "is outside the int32 range")
    return value


def _options(value: object, path: str) -> list[comms_pb2.AskOption]:
    entries = as_array(value, path)
    if len(entries) > MAX_OPTIONS_PER_QUESTION:
        raise MappingError(
            path, f"has more than {MAX_OPTIONS_PER_QUESTION} items (got {len(entries)})"
        )
    return [_option(entry, f"{path}[{j}]", str(j)) for j, entry in enumerate(entries)]


def _option(value: object, path: str, option_id: str) -> comms_pb2.AskOption:
    entry = as_object(value, path)
    label_path = f"{path}.label"
    label = as_str(entry.get("label", MISSING), label_path)
    if label in RESERVED_OPTION_LABELS:
        raise MappingError(label_path, f"is the reserved runtime label {label!r}")
    _check_storable(label, label_path)
    return comms_pb2.AskOption(
        id=option_id,
        label=label,
        description=_optional_text(entry.get("description", MISSING), f"{path}.description"),
        preview=_optional_text(entry.get("preview", MISSING), f"{path}.preview"),
    )


def _text(value: object, path: str) -> str:
    text = as_str(value, path)
    _check_storable(text, path)
    return text


def _optional_text(value: object, path: str) -> str | None:
    text = optional_str(value, path)
    if text is not None:
        _check_storable(text, path)
    return text


def _check_storable(text: str, path: str) -> None:
    """Refuse a string the server could not store or protobuf could not encode."""
    if NUL in text:  # PostgreSQL cannot store it; the server would refuse the whole frame
        raise MappingError(path, "contains a NUL character")
    # Protobuf refuses lone surrogates, which json.loads lets through from "\ud800" escapes.
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise MappingError(path, "is not valid Unicode (lone surrogate)") from None
