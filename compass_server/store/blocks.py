"""JSONB (de)serialization of message blocks and answer state, with the read invariants, and
the merge of an ask's stored state (answers, delivery receipt) into its block on read.

Stored shape (`messages.blocks`, a JSON array; answer state is NOT part of it):

    {"text": {"text": "..."}}
    {"ask": {"ask_id": "ask_...", "questions": [
        {"question_id": "db", "question": "...", "header": "", "allow_multiple": false,
         "recommended": 0,                       # key absent when unset
         "free_text": "refused",                 # accepted | refused | instead_of_picks;
                                                 # key absent when UNSPECIFIED
         "answer_required": true,                # key absent when false
         "options": [{"id": "0", "label": "...", "description": "", "preview": ""}]}]}}

Answer state (`asks.answers`, the single source of truth, merged into the ask on read):

    [{"question_id": "db", "chosen_option_ids": ["0"], "custom_text": "", "timed_out": false}]

Decoding is strict: an unknown key, a missing key, a value of the wrong type, or a block that
breaks an invariant raises `CorruptDataError` naming the message. A stale pre-reshape ask
(`{"question": ..., "options": ...}`) has no questions and fails loudly; it never becomes an
empty, unanswerable ask.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compass_core.jsonvalues import is_array, is_object
from compass_server.domain import block_violations
from compass_server.domain.errors import CorruptDataError
from compass_server.domain.limits import (
    DELIVERY_STATE_BY_NAME,
    FREE_TEXT_BY_NAME,
    FREE_TEXT_NAMES,
)
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from datetime import datetime

    from compass_server.domain.verdicts import Outcome

_ASK_KEYS = frozenset({"ask_id", "questions"})
_QUESTION_KEYS = frozenset(
    {
        "question_id",
        "question",
        "header",
        "options",
        "allow_multiple",
        "recommended",
        "free_text",
        "answer_required",
    }
)
# A question may lack `recommended`, `free_text` and `answer_required`: `free_text` did not exist
# before delivery receipts, and rows stored before it keep decoding (as UNSPECIFIED, which is
# never written as a key).
_REQUIRED_QUESTION_KEYS = _QUESTION_KEYS - {"recommended", "free_text", "answer_required"}
_OPTION_KEYS = frozenset({"id", "label", "description", "preview"})
_TEXT_KEYS = frozenset({"text"})
_ANSWER_KEYS = frozenset({"question_id", "chosen_option_ids", "custom_text", "timed_out"})


# ---------------------------------------------------------------------------------------------
# Encoding


def encode_blocks(
    blocks: Iterable[comms_pb2.MessageBlock], *, keep_ask_ids: bool = True
) -> list[object]:
    """The JSONB value for `blocks`, without any answer state.

    Args:
        blocks: blocks that passed `domain.block_violations`.
        keep_ask_ids: False blanks ask ids, for comparing block sets by content only.
    """
    encoded: list[object] = []
    for block in blocks:
        if block.WhichOneof("block") == "text":
            encoded.append({"text": {"text": block.text.text}})
        else:
            encoded.append({"ask": _encode_ask(block.ask, keep_ask_id=keep_ask_ids)})
    return encoded


def same_content(a: Iterable[comms_pb2.MessageBlock], b: Iterable[comms_pb2.MessageBlock]) -> bool:
    """Whether two block sets store the same content, ask ids and answer state aside (an
    AppendMessage repeating a client_message_id must)."""
    return encode_blocks(a, keep_ask_ids=False) == encode_blocks(b, keep_ask_ids=False)


def _encode_ask(ask: comms_pb2.Ask, *, keep_ask_id: bool) -> dict[str, object]:
    questions: list[object] = []
    for question in ask.questions:
        encoded: dict[str, object] = {
            "question_id": question.question_id,
            "question": question.question,
            "header": question.header,
            "allow_multiple": question.allow_multiple,
            "options": [
                {
                    "id": option.id,
                    "label": option.label,
                    "description": option.description,
                    "preview": option.preview,
                }
                for option in question.options
            ],
        }
        if question.HasField("recommended"):
            encoded["recommended"] = question.recommended
        if question.free_text != comms_pb2.FREE_TEXT_UNSPECIFIED:
            encoded["free_text"] = FREE_TEXT_NAMES[question.free_text]
        if question.answer_required:
            encoded["answer_required"] = True
        questions.append(encoded)
    return {"ask_id": ask.ask_id if keep_ask_id else "", "questions": questions}


def encode_answers(
    answers: Iterable[tuple[str, Sequence[str], str]], *, timed_out: bool = False
) -> list[object]:
    """The JSONB value for an ask's answer state: (question_id, chosen ids, custom_text).

    Args:
        timed_out: True for the runtime's auto-answer recorded by CloseAsk(TIMED_OUT).
    """
    return [
        {
            "question_id": question_id,
            "chosen_option_ids": list(chosen),
            "custom_text": custom_text,
            "timed_out": timed_out,
        }
        for question_id, chosen, custom_text in answers
    ]


def outcome_answers(outcome: Outcome) -> list[object] | None:
    """The stored form of an outcome's answers: None when it has none; TIMED_OUT's are the
    runtime's (each marked `timed_out`)."""
    if outcome.answers is None:
        return None
    return encode_answers(
        outcome.answers, timed_out=outcome.status == comms_pb2.ASK_STATUS_TIMED_OUT
    )


# ---------------------------------------------------------------------------------------------
# Decoding


class _DecodeError(Exception):
    """A decoding failure at `path`; turned into CorruptDataError naming the message."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def decode_blocks(raw: object, *, message_id: str) -> list[comms_pb2.MessageBlock]:
    """The blocks of stored message `message_id`, checked against every block invariant.

    Raises:
        CorruptDataError: the stored value is not a block array of the current shape, or a
            block breaks an invariant (an ask without questions, an empty or duplicate
            question or option id, a missing ask_id, ...). Never returns a partial list.
    """
    try:
        blocks = _blocks(raw)
    except _DecodeError as exc:
        raise CorruptDataError(f"stored message {message_id} is corrupt: {exc}") from None
    violations = block_violations(blocks, minted=True)
    if violations:
        detail = "; ".join(f"{v.field}: {v.description}" for v in violations)
        raise CorruptDataError(f"stored message {message_id} is corrupt: {detail}")
    return blocks


def apply_answer_state(
    ask: comms_pb2.Ask,
    raw_answers: object,
    *,
    answered_by_account_id: str,
    answered_at: datetime,
    answered_by_name: str,
    message_id: str,
) -> None:
    """Merge stored answer state into `ask` (in place): per-question state and who/when.

    Raises:
        CorruptDataError: the stored answers are malformed, name a question the ask does not
            have, or leave one of its questions without an entry.
    """
    try:
        entries = _answers(raw_answers)
    except _DecodeError as exc:
        raise CorruptDataError(
            f"stored answer of ask {ask.ask_id} (message {message_id}) is corrupt: {exc}"
        ) from None
    questions = {question.question_id: question for question in ask.questions}
    if set(entries) != set(questions):
        raise CorruptDataError(
            f"stored answer of ask {ask.ask_id} (message {message_id}) covers questions "
            f"{sorted(entries)}, but the ask has {sorted(questions)}"
        )
    for question_id, (chosen, custom_text, timed_out) in entries.items():
        question = questions[question_id]
        question.chosen_option_ids[:] = chosen
        question.custom_text = custom_text
        question.timed_out = timed_out
    ask.answered_by_account_id = answered_by_account_id
    ask.answered_at.FromDatetime(answered_at)
    ask.answered_by_name = answered_by_name


def apply_delivery(
    ask: comms_pb2.Ask,
    *,
    state: str,
    detail: str,
    payload: str,
    reported_by_account_id: str,
    reported_by_name: str,
    reported_at: datetime,
    message_id: str,
) -> None:
    """Merge a stored delivery receipt (the `asks.delivery_*` columns) into `ask` (in place).

    Raises:
        CorruptDataError: `state` is not a delivery state the store writes.
    """
    known = DELIVERY_STATE_BY_NAME.get(state)
    if known is None:  # pragma: no cover - the column's CHECK constraint
        raise CorruptDataError(
            f"stored delivery of ask {ask.ask_id} (message {message_id}) has state {state!r}"
        )
    ask.delivery.state = known
    ask.delivery.detail = detail
    ask.delivery.payload = payload
    ask.delivery.reported_by_account_id = reported_by_account_id
    ask.delivery.reported_by_name = reported_by_name
    ask.delivery.reported_at.FromDatetime(reported_at)


def _blocks(raw: object) -> list[comms_pb2.MessageBlock]:
    items = _list(raw, "blocks")
    blocks: list[comms_pb2.MessageBlock] = []
    for index, item in enumerate(items):
        path = f"blocks[{index}]"
        obj = _object(item, path)
        if len(obj) != 1 or not obj.keys() <= {"text", "ask"}:
            hint = "; a stale pre-reshape ask?" if "question" in obj else ""
            raise _DecodeError(
                path,
                f'a block must have exactly one kind ("text" or "ask"), got keys {sorted(obj)}{hint}',
            )
        ((kind, value),) = obj.items()
        if kind == "text":
            text = _object(value, f"{path}.text")
            _keys(text, _TEXT_KEYS, f"{path}.text")
            blocks.append(
                comms_pb2.MessageBlock(
                    text=comms_pb2.TextBlock(text=_str(text, "text", f"{path}.text"))
                )
            )
        else:
            blocks.append(comms_pb2.MessageBlock(ask=_ask(value, f"{path}.ask")))
    return blocks


def _ask(raw: object, path: str) -> comms_pb2.Ask:
    obj = _object(raw, path)
    questions = obj.get("questions")
    if questions is None or questions == []:
        # Checked before the key set: this is how a stale pre-reshape ask looks, and the
        # error should say so rather than only list unexpected keys.
        raise _DecodeError(
            path,
            f"ask has no questions (keys {sorted(obj)}); a stale pre-reshape ask cannot be shown or answered",
        )
    _keys(obj, _ASK_KEYS, path)
    return comms_pb2.Ask(
        ask_id=_str(obj, "ask_id", path),
        questions=[
            _ask_question(item, f"{path}.questions[{index}]")
            for index, item in enumerate(_list(questions, f"{path}.questions"))
        ],
    )


def _ask_question(raw: object, path: str) -> comms_pb2.AskQuestion:
    obj = _object(raw, path)
    _keys(obj, _QUESTION_KEYS, path, required=_REQUIRED_QUESTION_KEYS)
    question = comms_pb2.AskQuestion(
        question_id=_str(obj, "question_id", path),
        question=_str(obj, "question", path),
        header=_str(obj, "header", path),
        allow_multiple=_bool(obj, "allow_multiple", path),
        options=[
            _option(item, f"{path}.options[{index}]")
            for index, item in enumerate(_list(obj["options"], f"{path}.options"))
        ],
    )
    if "recommended" in obj:
        recommended = obj["recommended"]
        if (
            not isinstance(recommended, int)
            or isinstance(recommended, bool)
            or not -(2**31) <= recommended < 2**31
        ):
            raise _DecodeError(f"{path}.recommended", "expected an int32")
        question.recommended = recommended
    if "free_text" in obj:
        name = obj["free_text"]
        free_text = FREE_TEXT_BY_NAME.get(name) if isinstance(name, str) else None
        if free_text is None:
            raise _DecodeError(f"{path}.free_text", f"expected one of {sorted(FREE_TEXT_BY_NAME)}")
        question.free_text = free_text
    if "answer_required" in obj:
        required = obj["answer_required"]
        if not isinstance(required, bool):
            raise _DecodeError(f"{path}.answer_required", "expected a boolean")
        question.answer_required = required
    return question


def _option(raw: object, path: str) -> comms_pb2.AskOption:
    obj = _object(raw, path)
    _keys(obj, _OPTION_KEYS, path)
    return comms_pb2.AskOption(
        id=_str(obj, "id", path),
        label=_str(obj, "label", path),
        description=_str(obj, "description", path),
        preview=_str(obj, "preview", path),
    )


def _answers(raw: object) -> dict[str, tuple[list[str], str, bool]]:
    entries: dict[str, tuple[list[str], str, bool]] = {}
    for index, item in enumerate(_list(raw, "answers")):
        path = f"answers[{index}]"
        obj = _object(item, path)
        _keys(obj, _ANSWER_KEYS, path)
        question_id = _str(obj, "question_id", path)
        if question_id in entries:
            raise _DecodeError(f"{path}.question_id", f"question {question_id!r} appears twice")
        chosen: list[str] = []
        for pick_index, pick in enumerate(
            _list(obj["chosen_option_ids"], f"{path}.chosen_option_ids")
        ):
            if not isinstance(pick, str):
                raise _DecodeError(f"{path}.chosen_option_ids[{pick_index}]", "expected a string")
            chosen.append(pick)
        entries[question_id] = (
            chosen,
            _str(obj, "custom_text", path),
            _bool(obj, "timed_out", path),
        )
    return entries


def _object(value: object, path: str) -> dict[str, object]:
    if not is_object(value):
        raise _DecodeError(path, f"expected an object, got {type(value).__name__}")
    return value


def _list(value: object, path: str) -> list[object]:
    if not is_array(value):
        raise _DecodeError(path, f"expected an array, got {type(value).__name__}")
    return value


def _keys(
    obj: dict[str, object],
    expected: frozenset[str],
    path: str,
    *,
    required: frozenset[str] | None = None,
) -> None:
    """`obj` has only `expected` keys and every `required` one (None: every expected one)."""
    keys = obj.keys()
    needed = expected if required is None else required
    if needed <= keys <= expected:
        return  # the common case, without building sets (every read decodes every block)
    unknown = set(obj) - expected
    missing = needed - set(obj)
    raise _DecodeError(path, f"unexpected keys {sorted(unknown)}, missing keys {sorted(missing)}")


def _str(obj: dict[str, object], key: str, path: str) -> str:
    value = obj[key]
    if not isinstance(value, str):
        raise _DecodeError(f"{path}.{key}", f"expected a string, got {type(value).__name__}")
    return value


def _bool(obj: dict[str, object], key: str, path: str) -> bool:
    value = obj[key]
    if not isinstance(value, bool):
        raise _DecodeError(f"{path}.{key}", f"expected a boolean, got {type(value).__name__}")
    return value
