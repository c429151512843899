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
It refuses what the server would refuse too (`compass_agent.limits`: more than 100 questions
or 100 options per question, a question id longer than 200 characters, a NUL character in
any text), since the server would otherwise refuse the whole frame and every block in it.
Keys the schema does not name are ignored, as the runtime's validator ignores them.

The walk is written for speed (bench/mapper.py holds it to 1.5x the cost of building the
same message from validated values): required keys are read by subscript, optional ones
only when present (`key in item`), and the rare KeyError or UnicodeEncodeError is turned
into a reason afterwards by walking the arguments again in the same order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from compass_agent._json import MISSING, JsonValue, Missing, json_type
from compass_agent.limits import (
    MAX_ID_LENGTH,
    MAX_OPTIONS_PER_QUESTION,
    MAX_QUESTIONS_PER_ASK,
    NUL,
)

if TYPE_CHECKING:
    from gen.compass.v1 import comms_pb2

RESERVED_OPTION_LABELS: Final = frozenset({"Other (type your own)", "Chat about this", "Next →"})
"""Labels the runtime adds to every ask itself; an option may not use one (SPEC §2.1)."""

_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1

# Option ids are the zero-based index as a string, made once for every allowed index.
_OPTION_IDS: Final = tuple(str(index) for index in range(MAX_OPTIONS_PER_QUESTION))

_QUESTION_KEYS: Final = ("id", "question", "options")  # required, in the order they are read


def fill_ask(ask: comms_pb2.Ask, args: JsonValue | Missing) -> str | None:
    """Narrow `args` (the decoded `args` of an ask tool_execution_start) into `ask`.

    Args:
        ask: An empty Ask to write into. On failure it may be left half-written.
        args: The event's `args` (MISSING when it has none).

    Returns:
        None when `args` is a well-formed ask call and `ask` now holds it: one AskQuestion
        per question in order, option ids "0", "1", ..., `ask_id` and answer state empty.
        Otherwise the reason, naming the field at fault (e.g. `questions[1].id is empty`).
    """
    if not isinstance(args, dict):
        return f"args is not an object (got {json_type(args)})"
    questions = args.get("questions", MISSING)
    if not isinstance(questions, list):
        if questions is MISSING:
            return "questions is missing"
        return f"questions is not an array (got {json_type(questions)})"
    if not questions:
        return "questions is empty"
    if len(questions) > MAX_QUESTIONS_PER_ASK:
        return f"questions has more than {MAX_QUESTIONS_PER_ASK} items (got {len(questions)})"
    # One flat loop on purpose: a helper call per ask, question or option would be a large
    # share of the per-event cost.
    seen: dict[str, int] = {}
    add_question = ask.questions.add
    try:
        for i, item in enumerate(questions):
            if not isinstance(item, dict):
                return f"questions[{i}] is not an object (got {json_type(item)})"
            question = add_question()

            qid = item["id"]
            if not isinstance(qid, str):
                return f"questions[{i}].id is not a string (got {json_type(qid)})"
            if not qid:
                return f"questions[{i}].id is empty"
            if len(qid) > MAX_ID_LENGTH:
                return f"questions[{i}].id is longer than {MAX_ID_LENGTH} characters"
            if NUL in qid:
                return f"questions[{i}].id contains a NUL character"
            if qid in seen:
                return f"questions[{i}].id repeats questions[{seen[qid]}].id"
            seen[qid] = i
            question.question_id = qid

            text = item["question"]
            if not isinstance(text, str):
                return f"questions[{i}].question is not a string (got {json_type(text)})"
            if NUL in text:
                return f"questions[{i}].question contains a NUL character"
            question.question = text

            if "header" in item:
                header = item["header"]
                if not isinstance(header, str):
                    return f"questions[{i}].header is not a string (got {json_type(header)})"
                if NUL in header:
                    return f"questions[{i}].header contains a NUL character"
                question.header = header

            if "multi" in item:
                multi = item["multi"]
                if multi is True:
                    question.allow_multiple = True
                elif multi is not False:
                    return f"questions[{i}].multi is not a boolean (got {json_type(multi)})"

            if "recommended" in item:
                recommended = item["recommended"]
                if type(recommended) is not int:  # json.loads makes plain ints: the usual case
                    # bool first: True is an int to Python, but not a number to the runtime.
                    if isinstance(recommended, bool) or not isinstance(recommended, int | float):
                        return f"questions[{i}].recommended is not an integer (got {json_type(recommended)})"
                    if isinstance(recommended, float):
                        if not recommended.is_integer():  # also refuses nan and inf
                            return f"questions[{i}].recommended is not an integer (got {recommended!r})"
                        recommended = int(recommended)  # a JSON number may arrive as 1.0
                if not _INT32_MIN <= recommended <= _INT32_MAX:
                    return f"questions[{i}].recommended is outside the int32 range"
                question.recommended = recommended

            options = item["options"]
            if not isinstance(options, list):
                return f"questions[{i}].options is not an array (got {json_type(options)})"
            if len(options) > MAX_OPTIONS_PER_QUESTION:
                return f"questions[{i}].options has more than {MAX_OPTIONS_PER_QUESTION} items (got {len(options)})"
            add_option = question.options.add
            for j, entry in enumerate(options):
                option_id = _OPTION_IDS[j]  # j < MAX_OPTIONS_PER_QUESTION: checked just above
                if not isinstance(entry, dict):
                    return f"questions[{i}].options[{option_id}] is not an object (got {json_type(entry)})"
                label = entry["label"]
                if not isinstance(label, str):
                    return f"questions[{i}].options[{option_id}].label is not a string (got {json_type(label)})"
                if label in RESERVED_OPTION_LABELS:
                    return f"questions[{i}].options[{option_id}].label is the reserved runtime label {label!r}"
                if NUL in label:
                    return f"questions[{i}].options[{option_id}].label contains a NUL character"
                option = add_option()
                option.id = option_id
                option.label = label
                if "description" in entry:
                    description = entry["description"]
                    if not isinstance(description, str):
                        return f"questions[{i}].options[{option_id}].description is not a string (got {json_type(description)})"
                    if NUL in description:
                        return f"questions[{i}].options[{option_id}].description contains a NUL character"
                    option.description = description
                if "preview" in entry:
                    preview = entry["preview"]
                    if not isinstance(preview, str):
                        return f"questions[{i}].options[{option_id}].preview is not a string (got {json_type(preview)})"
                    if NUL in preview:
                        return (
                            f"questions[{i}].options[{option_id}].preview contains a NUL character"
                        )
                    option.preview = preview
    except KeyError:
        return _first_missing_key(questions)
    except UnicodeEncodeError:
        # Raised by protobuf on assignment, before anything is emitted.
        return _first_unencodable(questions)
    return None


def _first_missing_key(items: list[JsonValue]) -> str:
    # _fill_questions reads the required keys in this order and stops at the first failed
    # check, so every required key before the one that raised is present: the first
    # missing one found in the same order is the one that raised.
    for i, question in enumerate(items):
        if not isinstance(question, dict):
            break
        for key in _QUESTION_KEYS:
            if key not in question:
                return f"questions[{i}].{key} is missing"
        options = question["options"]
        for j, option in enumerate(options if isinstance(options, list) else []):
            if isinstance(option, dict) and "label" not in option:
                return f"questions[{i}].options[{j}].label is missing"
    return "a required key is missing"  # pragma: no cover -- see above


def _first_unencodable(items: list[JsonValue]) -> str:
    # Only reached after _fill_questions validated every field up to the failing one, so the
    # first string UTF-8 cannot encode, in the same order, is the one protobuf refused.
    for i, question in enumerate(items):
        if not isinstance(question, dict):
            break
        for key in ("id", "question", "header"):
            if _bad_utf8(question.get(key)):
                return f"questions[{i}].{key} is not valid Unicode (lone surrogate)"
        options = question.get("options")
        for j, option in enumerate(options if isinstance(options, list) else []):
            if not isinstance(option, dict):
                break
            for key in ("label", "description", "preview"):
                if _bad_utf8(option.get(key)):
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
