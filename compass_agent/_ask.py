"""The typed ask derivation: native `ask` tool arguments -> one compass.v1.Ask (SPEC §2.2).

The native schema (the runtime's `ask` tool):

    {questions: QuestionItem[] (at least 1)}
    QuestionItem {id: str, question: str, header?: str, options: OptionItem[],
                  multi?: bool, recommended?: number}
    OptionItem   {label: str, description?: str, preview?: str}

Narrowing and building are one pass: every read is an `isinstance` check on what
`json.loads` produces, and each value is written into the Ask as soon as it has been
checked, so a well-formed call costs one walk. On the first problem the walk stops and
returns a reason; the caller throws the half-written Ask away, so nothing partial is ever
emitted (one bad question bounces the whole call).

Beyond the native schema, the mapper also refuses what the contract cannot carry: an empty
or repeated question id (answers are keyed by it), a `recommended` outside int32, and a
string protobuf cannot encode (a lone UTF-16 surrogate, which `json.loads` lets through).
Keys the schema does not name are ignored, as the runtime's validator ignores them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, cast

from compass_agent._json import MISSING, json_type

if TYPE_CHECKING:
    from gen.compass.v1 import comms_pb2

RESERVED_OPTION_LABELS: Final = frozenset({"Other (type your own)", "Chat about this", "Next →"})
"""Labels the runtime adds to every ask itself; an option may not use one (SPEC §2.1)."""

_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1

# Option ids are the zero-based index as a string; the common ones are made once.
_OPTION_IDS: Final = tuple(str(index) for index in range(64))


def fill_ask(ask: comms_pb2.Ask, args: object) -> str | None:
    """Narrow `args` (the decoded `args` of an ask tool_execution_start) into `ask`.

    Args:
        ask: An empty Ask to write into. On failure it may be left half-written.
        args: The event's `args`, any decoded JSON value (or anything else).

    Returns:
        None when `args` is a well-formed ask call and `ask` now holds it: one AskQuestion
        per question in order, option ids "0", "1", ..., `ask_id` and answer state empty.
        Otherwise the reason, naming the field at fault (e.g. `questions[1].id is empty`).
    """
    if not isinstance(args, dict):
        return f"args is not an object (got {json_type(args)})"
    questions = cast("dict[str, object]", args).get("questions", MISSING)
    if not isinstance(questions, list):
        if questions is MISSING:
            return "questions is missing"
        return f"questions is not an array (got {json_type(questions)})"
    items = cast("list[object]", questions)
    if not items:
        return "questions is empty"
    try:
        return _fill_questions(ask, items)
    except UnicodeEncodeError:
        # Raised by protobuf on assignment, before anything is emitted; find the field.
        return _unencodable(items)


def _fill_questions(ask: comms_pb2.Ask, items: list[object]) -> str | None:
    # One flat function on purpose: a helper call per question or option would be a large
    # share of the per-event cost (bench/mapper.py compares it with the floor).
    seen: dict[str, int] = {}
    add_question = ask.questions.add
    for i, raw in enumerate(items):
        if not isinstance(raw, dict):
            return f"questions[{i}] is not an object (got {json_type(raw)})"
        item = cast("dict[str, object]", raw)
        question = add_question()

        qid = item.get("id", MISSING)
        if not isinstance(qid, str):
            return _not_a(f"questions[{i}].id", "a string", qid)
        if not qid:
            return f"questions[{i}].id is empty"
        first = seen.setdefault(qid, i)
        if first != i:
            return f"questions[{i}].id repeats questions[{first}].id"
        question.question_id = qid

        text = item.get("question", MISSING)
        if not isinstance(text, str):
            return _not_a(f"questions[{i}].question", "a string", text)
        question.question = text

        header = item.get("header", MISSING)
        if isinstance(header, str):
            question.header = header
        elif header is not MISSING:
            return _not_a(f"questions[{i}].header", "a string", header)

        multi = item.get("multi", MISSING)
        if multi is True:
            question.allow_multiple = True
        elif multi is not MISSING and multi is not False:
            return _not_a(f"questions[{i}].multi", "a boolean", multi)

        recommended = item.get("recommended", MISSING)
        # bool before int: True is an int to Python, but not a number to the runtime.
        if isinstance(recommended, int) and not isinstance(recommended, bool):
            if not _INT32_MIN <= recommended <= _INT32_MAX:
                return f"questions[{i}].recommended is outside the int32 range"
            question.recommended = recommended
        elif isinstance(recommended, float):
            # A JSON number may arrive as 1.0; is_integer() is also False for nan and inf.
            if not recommended.is_integer():
                return f"questions[{i}].recommended is not an integer (got {recommended!r})"
            if not _INT32_MIN <= recommended <= _INT32_MAX:
                return f"questions[{i}].recommended is outside the int32 range"
            question.recommended = int(recommended)
        elif recommended is not MISSING:
            return _not_a(f"questions[{i}].recommended", "an integer", recommended)

        options = item.get("options", MISSING)
        if not isinstance(options, list):
            return _not_a(f"questions[{i}].options", "an array", options)
        add_option = question.options.add
        for j, raw_option in enumerate(cast("list[object]", options)):
            if not isinstance(raw_option, dict):
                return f"questions[{i}].options[{j}] is not an object (got {json_type(raw_option)})"
            option_item = cast("dict[str, object]", raw_option)
            option = add_option()
            option.id = _OPTION_IDS[j] if j < len(_OPTION_IDS) else str(j)

            label = option_item.get("label", MISSING)
            if not isinstance(label, str):
                return _not_a(f"questions[{i}].options[{j}].label", "a string", label)
            if label in RESERVED_OPTION_LABELS:
                return f"questions[{i}].options[{j}].label is the reserved runtime label {label!r}"
            option.label = label

            description = option_item.get("description", MISSING)
            if isinstance(description, str):
                option.description = description
            elif description is not MISSING:
                return _not_a(f"questions[{i}].options[{j}].description", "a string", description)

            preview = option_item.get("preview", MISSING)
            if isinstance(preview, str):
                option.preview = preview
            elif preview is not MISSING:
                return _not_a(f"questions[{i}].options[{j}].preview", "a string", preview)
    return None


def _not_a(path: str, expected: str, value: object) -> str:
    if value is MISSING:
        return f"{path} is missing"
    return f"{path} is not {expected} (got {json_type(value)})"


def _unencodable(items: list[object]) -> str:
    # Only reached after _fill_questions validated every field up to the failing one, so the
    # first string that UTF-8 cannot encode, in the same order, is the one protobuf refused.
    for i, raw in enumerate(items):
        item = cast("dict[str, object]", raw)
        for key in ("id", "question", "header"):
            if _bad_utf8(item.get(key)):
                return f"questions[{i}].{key} is not valid Unicode (lone surrogate)"
        for j, raw_option in enumerate(cast("list[object]", item.get("options"))):
            option_item = cast("dict[str, object]", raw_option)
            for key in ("label", "description", "preview"):
                if _bad_utf8(option_item.get(key)):
                    return (
                        f"questions[{i}].options[{j}].{key} is not valid Unicode (lone surrogate)"
                    )
    return "a string is not valid Unicode (lone surrogate)"  # pragma: no cover -- see above


def _bad_utf8(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
