"""Pure domain rules: block invariants, request limits and answer validation (SPEC §3, §4).

Nothing here does I/O. Every check that can find several problems returns (or raises with)
ALL of them as `FieldViolation`s, so a client can fix a request in one round trip. Field paths
are relative to the message being checked: `blocks[0].ask.questions[1].question_id` for a
block set, `answers[2].chosen_option_ids[0]` for a RespondToAskRequest; the service may prefix
them (e.g. `frame.`) when the blocks sit deeper in its request.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final

# The block limits live with the agent side, whose mapper must refuse exactly what this
# module refuses; they are re-exported here for the server's own callers.
from compass_agent.limits import (
    MAX_ASKS_PER_MESSAGE,
    MAX_BLOCKS_PER_MESSAGE,
    MAX_ID_LENGTH,
    MAX_OPTIONS_PER_QUESTION,
    MAX_QUESTIONS_PER_ASK,
    NUL,
)
from compass_server.domain.errors import (
    FailedPreconditionError,
    FieldViolation,
    InvalidArgumentError,
)
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

MAX_NAME_LENGTH: Final = 200
"""Longest workspace, channel or account name."""
MAX_ANSWERS: Final = MAX_QUESTIONS_PER_ASK
"""A RespondToAsk with more entries than any ask can have questions is oversize."""
MAX_CHOSEN_PER_ANSWER: Final = MAX_OPTIONS_PER_QUESTION
MAX_CUSTOM_TEXT_LENGTH: Final = 10_000
MAX_CLOSE_REASON_LENGTH: Final = 500
"""Longest DeclineAsk / CloseAsk reason (the `asks.close_reason` column's CHECK)."""

#: AskStatus <-> the `asks.status` column.
STATUS_NAMES: Final[dict[int, str]] = {
    comms_pb2.ASK_STATUS_PENDING: "pending",
    comms_pb2.ASK_STATUS_ANSWERED: "answered",
    comms_pb2.ASK_STATUS_DECLINED: "declined",
    comms_pb2.ASK_STATUS_WITHDRAWN: "withdrawn",
    comms_pb2.ASK_STATUS_TIMED_OUT: "timed_out",
    comms_pb2.ASK_STATUS_EXPIRED: "expired",
}
STATUS_BY_NAME: Final[dict[str, comms_pb2.AskStatus]] = {
    "pending": comms_pb2.ASK_STATUS_PENDING,
    "answered": comms_pb2.ASK_STATUS_ANSWERED,
    "declined": comms_pb2.ASK_STATUS_DECLINED,
    "withdrawn": comms_pb2.ASK_STATUS_WITHDRAWN,
    "timed_out": comms_pb2.ASK_STATUS_TIMED_OUT,
    "expired": comms_pb2.ASK_STATUS_EXPIRED,
}
#: AskTimeoutPolicy <-> the `asks.on_timeout` column.
TIMEOUT_POLICY_NAMES: Final[dict[int, str]] = {
    comms_pb2.ASK_TIMEOUT_POLICY_UNSPECIFIED: "unspecified",
    comms_pb2.ASK_TIMEOUT_POLICY_PICK_RECOMMENDED: "pick_recommended",
    comms_pb2.ASK_TIMEOUT_POLICY_FAIL: "fail",
}
TIMEOUT_POLICY_BY_NAME: Final[dict[str, comms_pb2.AskTimeoutPolicy]] = {
    "unspecified": comms_pb2.ASK_TIMEOUT_POLICY_UNSPECIFIED,
    "pick_recommended": comms_pb2.ASK_TIMEOUT_POLICY_PICK_RECOMMENDED,
    "fail": comms_pb2.ASK_TIMEOUT_POLICY_FAIL,
}
#: What CloseAsk may write.
CLOSE_STATUSES: Final = frozenset({comms_pb2.ASK_STATUS_WITHDRAWN, comms_pb2.ASK_STATUS_TIMED_OUT})
#: Timestamp.seconds of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z (protobuf's range).
_MIN_TIMESTAMP_SECONDS: Final = -62_135_596_800
_MAX_TIMESTAMP_SECONDS: Final = 253_402_300_799


def quote(value: str) -> str:
    """`value` in double quotes with JSON escapes, as violations name questions and options."""
    return json.dumps(value, ensure_ascii=False)


def _question(question_id: str) -> str:
    return f"question {quote(question_id)}"


# ---------------------------------------------------------------------------------------------
# Block invariants (write side; the store's decoder applies the minted variant on read too)


def block_violations(
    blocks: Sequence[comms_pb2.MessageBlock], *, minted: bool | None
) -> list[FieldViolation]:
    """Every way `blocks` breaks the block invariants of SPEC §3.

    Checks: exactly one kind per block; an ask has 1..MAX questions; question ids non-empty
    and unique within the ask; option ids non-empty and unique within a question; sizes and
    NUL-free text. With `minted` False (AppendMessage) every ask must carry an empty ask_id
    and no answer state; with `minted` True (stored rows) every ask must carry a non-empty
    ask_id; with `minted` None (UpdateMessage, before the stored asks are known) an ask_id
    may be either, and `ask_update_violations` then decides by position. Non-empty ask ids
    must be unique within the message. Answer state is not checked unless `minted` is False:
    on an update, stored state wins over what a minted ask sends, and a new ask's answer
    state is checked by `ask_update_violations`.

    Args:
        blocks: the full block set of one message.
        minted: whether ask ids must be present (True), absent (False) or either (None).

    Returns:
        One violation per problem, in block order; empty when the blocks are acceptable.
    """
    violations: list[FieldViolation] = []
    if len(blocks) > MAX_BLOCKS_PER_MESSAGE:
        violations.append(
            FieldViolation(
                field="blocks",
                description=f"a message holds at most {MAX_BLOCKS_PER_MESSAGE} blocks, got {len(blocks)}",
            )
        )
    asks = 0
    ask_ids: dict[str, int] = {}
    for index, block in enumerate(blocks):
        path = f"blocks[{index}]"
        kind = block.WhichOneof("block")
        if kind is None:
            violations.append(
                FieldViolation(field=path, description="a block must have exactly one kind set")
            )
        elif kind == "text":
            violations.extend(_nul(f"{path}.text.text", block.text.text))
        else:
            asks += 1
            violations.extend(_ask_violations(block.ask, f"{path}.ask", minted=minted))
            ask_id = block.ask.ask_id
            if minted is not False and ask_id:
                if ask_id in ask_ids:
                    violations.append(
                        FieldViolation(
                            field=f"{path}.ask.ask_id",
                            description=f"ask_id {quote(ask_id)} is also used by blocks[{ask_ids[ask_id]}]",
                        )
                    )
                else:
                    ask_ids[ask_id] = index
    if asks > MAX_ASKS_PER_MESSAGE:
        violations.append(
            FieldViolation(
                field="blocks",
                description=f"a message holds at most {MAX_ASKS_PER_MESSAGE} asks, got {asks}",
            )
        )
    return violations


def check_blocks(blocks: Sequence[comms_pb2.MessageBlock], *, minted: bool | None) -> None:
    """Raise when `blocks` break an invariant (see `block_violations`).

    Raises:
        InvalidArgumentError: with every violation found.
    """
    violations = block_violations(blocks, minted=minted)
    if violations:
        raise InvalidArgumentError("invalid message blocks", violations)


def _ask_violations(ask: comms_pb2.Ask, path: str, *, minted: bool | None) -> list[FieldViolation]:
    violations: list[FieldViolation] = []
    if minted is True:
        if not ask.ask_id:
            violations.append(
                FieldViolation(
                    field=f"{path}.ask_id",
                    description="ask_id is empty: every ask must carry the ask_id minted for it",
                )
            )
    elif minted is False:
        if ask.ask_id:
            violations.append(
                FieldViolation(
                    field=f"{path}.ask_id",
                    description="ask_id must be empty: the server mints it",
                )
            )
        violations.extend(_answer_state_violations(ask, path))
    violations.extend(_nul(f"{path}.ask_id", ask.ask_id))
    if len(ask.ask_id) > MAX_ID_LENGTH:
        violations.append(_too_long(f"{path}.ask_id", "ask_id", MAX_ID_LENGTH))
    if not ask.questions:
        violations.append(
            FieldViolation(
                field=f"{path}.questions", description="an ask must have at least one question"
            )
        )
    elif len(ask.questions) > MAX_QUESTIONS_PER_ASK:
        violations.append(
            FieldViolation(
                field=f"{path}.questions",
                description=f"an ask holds at most {MAX_QUESTIONS_PER_ASK} questions, got {len(ask.questions)}",
            )
        )
    seen: dict[str, int] = {}
    for index, question in enumerate(ask.questions):
        qpath = f"{path}.questions[{index}]"
        qid = question.question_id
        if not qid:
            violations.append(
                FieldViolation(field=f"{qpath}.question_id", description="question_id is empty")
            )
        elif qid in seen:
            violations.append(
                FieldViolation(
                    field=f"{qpath}.question_id",
                    description=f"{_question(qid)}: question_id is also used by questions[{seen[qid]}]",
                    question_id=qid,
                )
            )
        else:
            seen[qid] = index
        violations.extend(_question_violations(question, qpath))
    return violations


def ask_update_violations(
    stored: Sequence[comms_pb2.Ask], blocks: Sequence[comms_pb2.MessageBlock]
) -> list[FieldViolation]:
    """Every way an UpdateMessage's `blocks` break the rule for the message's asks.

    Ask blocks are matched to the stored asks BY POSITION: the i-th ask block of the update
    (counting ask blocks only, in block order) is the i-th stored ask. For i < len(stored)
    the block must carry exactly that ask's minted ask_id (asks are never dropped,
    reordered or replaced), and if that ask is answered its question ids, option ids and
    allow_multiple must stay as they are (texts may change). Ask blocks after the stored
    ones are NEW asks: they must arrive like an appended ask, with an empty ask_id (the
    server mints it; the agent never does) and no answer state. Answer state on a minted
    ask is not checked here: the stored state always wins.

    This refines SPEC §1.3/§3 (design record, resolved decision 9): the runtime settles a
    message's text before its first ask starts and runs asks one after another, so asks
    must be able to join a message that is already stored.

    Args:
        stored: the message's stored asks, in block order, with their answer state.
        blocks: the update's full block set (already checked by `block_violations` with
            `minted=None`).

    Returns:
        One violation per problem, in block order, then one naming the missing ask ids if
        the update holds fewer asks than the message; empty when the update is acceptable.
    """
    violations: list[FieldViolation] = []
    position = {ask.ask_id: ordinal for ordinal, ask in enumerate(stored)}
    ordinal = 0
    for index, block in enumerate(blocks):
        if block.WhichOneof("block") != "ask":
            continue
        ask = block.ask
        path = f"blocks[{index}].ask"
        if ordinal < len(stored):
            violation = _minted_ask_violation(stored[ordinal], ask, ordinal, position, path)
            if violation is not None:
                violations.append(violation)
        else:
            if ask.ask_id:
                violations.append(
                    FieldViolation(
                        field=f"{path}.ask_id",
                        description=f"ask_id {quote(ask.ask_id)} was not minted for a new ask: an ask after the message's {len(stored)} stored asks is new and must arrive with an empty ask_id, which the server mints (the agent never mints ask ids)",
                    )
                )
            violations.extend(_answer_state_violations(ask, path))
        ordinal += 1
    if ordinal < len(stored):
        sent = {block.ask.ask_id for block in blocks if block.WhichOneof("block") == "ask"}
        missing = ", ".join(quote(ask.ask_id) for ask in stored if ask.ask_id not in sent)
        violations.append(
            FieldViolation(
                field="blocks",
                description=f"the message has {len(stored)} asks but the update holds {ordinal}: missing {missing}; an update may add asks after the stored ones but never drop one",
            )
        )
    return violations


def check_ask_update(
    stored: Sequence[comms_pb2.Ask], blocks: Sequence[comms_pb2.MessageBlock]
) -> None:
    """Raise when an update's `blocks` break the rule for the message's asks (see
    `ask_update_violations`).

    Raises:
        InvalidArgumentError: with every violation found.
    """
    violations = ask_update_violations(stored, blocks)
    if violations:
        raise InvalidArgumentError("the update changes the message's asks", violations)
    sent = [block.ask for block in blocks if block.HasField("ask")]
    for was, now in zip(stored, sent, strict=False):
        if was.status not in _OPEN_STATUSES and _asked(was) != _asked(now):
            # What a person answered (or saw closed) must stay what was asked.
            raise FailedPreconditionError(
                f"ask {was.ask_id} is {comms_pb2.AskStatus.Name(was.status).removeprefix('ASK_STATUS_').lower()}"
                ": its questions and options can no longer change"
            )


_OPEN_STATUSES: Final = frozenset({comms_pb2.ASK_STATUS_PENDING, comms_pb2.ASK_STATUS_UNSPECIFIED})


def _asked(ask: comms_pb2.Ask) -> list[bytes]:
    """What an ask asks: its questions without answer state, comparable across copies."""
    asked: list[bytes] = []
    for question in ask.questions:
        bare = comms_pb2.AskQuestion()
        bare.CopyFrom(question)
        bare.ClearField("chosen_option_ids")
        bare.ClearField("custom_text")
        bare.ClearField("timed_out")
        asked.append(bare.SerializeToString(deterministic=True))
    return asked


def _minted_ask_violation(
    before: comms_pb2.Ask,
    ask: comms_pb2.Ask,
    ordinal: int,
    position: dict[str, int],
    path: str,
) -> FieldViolation | None:
    expected = before.ask_id
    ask_id = ask.ask_id
    if not ask_id:
        return FieldViolation(
            field=f"{path}.ask_id",
            description=f"ask_id is empty: this ask block must carry the ask_id minted for it, {quote(expected)}",
        )
    if ask_id != expected:
        elsewhere = position.get(ask_id)
        if elsewhere is not None:
            reason = f"ask_id {quote(ask_id)} was minted for ask block {elsewhere}; asks cannot be reordered"
        else:
            reason = (
                f"ask_id {quote(ask_id)} was not minted for this message; asks cannot be replaced"
            )
        return FieldViolation(
            field=f"{path}.ask_id",
            description=f"{reason}: ask block {ordinal} must carry {quote(expected)}",
        )
    if before.answered_by_account_id and _shape(before) != _shape(ask):
        return FieldViolation(
            field=f"{path}.questions",
            description=f"ask {quote(ask_id)} is answered: its question ids, option ids and allow_multiple cannot change",
        )
    return None


def _shape(ask: comms_pb2.Ask) -> list[tuple[str, list[str], bool]]:
    return [
        (question.question_id, [option.id for option in question.options], question.allow_multiple)
        for question in ask.questions
    ]


def _question_violations(question: comms_pb2.AskQuestion, path: str) -> list[FieldViolation]:
    qid = question.question_id
    violations: list[FieldViolation] = []
    if len(qid) > MAX_ID_LENGTH:
        violations.append(_too_long(f"{path}.question_id", "question_id", MAX_ID_LENGTH, qid))
    for field, value in (
        ("question_id", qid),
        ("question", question.question),
        ("header", question.header),
    ):
        violations.extend(_nul(f"{path}.{field}", value, qid))
    if len(question.options) > MAX_OPTIONS_PER_QUESTION:
        violations.append(
            FieldViolation(
                field=f"{path}.options",
                description=f"{_question(qid)}: at most {MAX_OPTIONS_PER_QUESTION} options, got {len(question.options)}",
                question_id=qid,
            )
        )
    option_seen: dict[str, int] = {}
    for index, option in enumerate(question.options):
        opath = f"{path}.options[{index}]"
        if not option.id:
            violations.append(
                FieldViolation(
                    field=f"{opath}.id",
                    description=f"{_question(qid)}: option id is empty",
                    question_id=qid,
                )
            )
        elif option.id in option_seen:
            violations.append(
                FieldViolation(
                    field=f"{opath}.id",
                    description=f"{_question(qid)}: option id {quote(option.id)} is also used by options[{option_seen[option.id]}]",
                    question_id=qid,
                )
            )
        else:
            option_seen[option.id] = index
        if len(option.id) > MAX_ID_LENGTH:
            violations.append(_too_long(f"{opath}.id", "option id", MAX_ID_LENGTH, qid))
        for field, value in (
            ("id", option.id),
            ("label", option.label),
            ("description", option.description),
            ("preview", option.preview),
        ):
            violations.extend(_nul(f"{opath}.{field}", value, qid))
    return violations


def _answer_state_violations(ask: comms_pb2.Ask, path: str) -> list[FieldViolation]:
    violations = _outcome_violations(ask, path)
    server_written = "is written by the server when the ask is answered; send it empty"
    if ask.answered_by_account_id:
        violations.append(
            FieldViolation(
                field=f"{path}.answered_by_account_id",
                description=f"answered_by_account_id {server_written}",
            )
        )
    if ask.HasField("answered_at"):
        violations.append(
            FieldViolation(field=f"{path}.answered_at", description=f"answered_at {server_written}")
        )
    if ask.answered_by_name:
        violations.append(
            FieldViolation(
                field=f"{path}.answered_by_name", description=f"answered_by_name {server_written}"
            )
        )
    for index, question in enumerate(ask.questions):
        qid = question.question_id
        qpath = f"{path}.questions[{index}]"
        for field, present in (
            ("chosen_option_ids", bool(question.chosen_option_ids)),
            ("custom_text", bool(question.custom_text)),
            ("timed_out", question.timed_out),
        ):
            if present:
                violations.append(
                    FieldViolation(
                        field=f"{qpath}.{field}",
                        description=f"{_question(qid)}: {field} is answer state; a new ask must arrive unanswered",
                        question_id=qid,
                    )
                )
    return violations


def _nul(field: str, value: str, question_id: str = "") -> list[FieldViolation]:
    # PostgreSQL text and jsonb cannot hold U+0000; refuse it here with a clear error rather
    # than let the database fail the write.
    if NUL not in value:
        return []
    prefix = f"{_question(question_id)}: " if question_id else ""
    return [
        FieldViolation(
            field=field,
            description=f"{prefix}contains a NUL character, which cannot be stored",
            question_id=question_id,
        )
    ]


def _too_long(field: str, what: str, limit: int, question_id: str = "") -> FieldViolation:
    prefix = f"{_question(question_id)}: " if question_id else ""
    return FieldViolation(
        field=field,
        description=f"{prefix}{what} is longer than {limit} characters",
        question_id=question_id,
    )


def check_text(field: str, value: str, *, max_length: int, required: bool = True) -> None:
    """Check one free-standing text argument (a name, a client_message_id).

    Raises:
        InvalidArgumentError: `value` is empty (when `required`), too long, holds NUL, or is
            not valid Unicode.
    """
    violations = _nul(field, value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        # A str can hold unpaired surrogates (e.g. argv decoded with surrogateescape);
        # protobuf strings cannot, so only free-standing text needs this check.
        violations.append(FieldViolation(field=field, description=f"{field} is not valid Unicode"))
    if required and not value:
        violations.append(FieldViolation(field=field, description=f"{field} is empty"))
    if len(value) > max_length:
        violations.append(_too_long(field, field, max_length))
    if violations:
        raise InvalidArgumentError(f"invalid {field}", violations)


# ---------------------------------------------------------------------------------------------
# RespondToAsk


def check_answer_request(ask_id: str, answers: Sequence[comms_pb2.AskQuestionAnswer]) -> None:
    """SPEC §4 step 2: reject a malformed or oversize RespondToAsk before any lookup.

    Only the request's own shape is checked here (it needs no ask); `validate_answers` checks
    it against the ask (step 6).

    Raises:
        InvalidArgumentError: empty or oversize ask_id, too many answers, too many chosen ids
            in one answer, an oversize id or custom_text, or text holding NUL; with every
            violation found.
    """
    violations: list[FieldViolation] = []
    if not ask_id:
        violations.append(FieldViolation(field="ask_id", description="ask_id is empty"))
    elif len(ask_id) > MAX_ID_LENGTH:
        violations.append(_too_long("ask_id", "ask_id", MAX_ID_LENGTH))
    violations.extend(_nul("ask_id", ask_id))
    if len(answers) > MAX_ANSWERS:
        violations.append(
            FieldViolation(
                field="answers",
                description=f"at most {MAX_ANSWERS} answers per request, got {len(answers)}",
            )
        )
    for index, answer in enumerate(answers[: MAX_ANSWERS + 1]):
        path = f"answers[{index}]"
        qid = answer.question_id
        if len(qid) > MAX_ID_LENGTH:
            violations.append(_too_long(f"{path}.question_id", "question_id", MAX_ID_LENGTH))
            qid = ""  # do not echo an oversize id into every other message
        violations.extend(_nul(f"{path}.question_id", answer.question_id))
        if len(answer.chosen_option_ids) > MAX_CHOSEN_PER_ANSWER:
            violations.append(
                FieldViolation(
                    field=f"{path}.chosen_option_ids",
                    description=f"at most {MAX_CHOSEN_PER_ANSWER} chosen ids per answer, got {len(answer.chosen_option_ids)}",
                    question_id=qid,
                )
            )
        for pick_index, option_id in enumerate(
            answer.chosen_option_ids[: MAX_CHOSEN_PER_ANSWER + 1]
        ):
            pick_path = f"{path}.chosen_option_ids[{pick_index}]"
            if len(option_id) > MAX_ID_LENGTH:
                violations.append(_too_long(pick_path, "option id", MAX_ID_LENGTH, qid))
            violations.extend(_nul(pick_path, option_id, qid))
        if len(answer.custom_text) > MAX_CUSTOM_TEXT_LENGTH:
            violations.append(
                _too_long(f"{path}.custom_text", "custom_text", MAX_CUSTOM_TEXT_LENGTH, qid)
            )
        violations.extend(_nul(f"{path}.custom_text", answer.custom_text, qid))
    if violations:
        raise InvalidArgumentError("malformed RespondToAsk request", violations)


def validate_answers(
    ask: comms_pb2.Ask, answers: Sequence[comms_pb2.AskQuestionAnswer]
) -> list[FieldViolation]:
    """SPEC §4 step 6: every way `answers` fails to answer `ask`.

    Rules: the answers' question ids are exactly the ask's (none missing, repeated or
    unknown); chosen ids are offered options of their question, without repeats; at most one
    chosen id unless the question allows multiple; on a single-select question a chosen id
    and custom_text exclude each other. An entry with no chosen id and empty custom_text is an
    accepted skip; a question without options is answered by custom_text alone.

    Args:
        ask: the ask being answered (its questions; answer state is ignored).
        answers: the request's entries, in request order.

    Returns:
        One violation per problem, each naming its question (`question "db": ...` in the
        description and `question_id` set); `field` is the request path. Empty means valid.
    """
    questions = {question.question_id: question for question in ask.questions}
    violations: list[FieldViolation] = []
    first_entry: dict[str, int] = {}
    for index, answer in enumerate(answers):
        path = f"answers[{index}]"
        qid = answer.question_id
        question = questions.get(qid)
        if not qid:
            violations.append(
                FieldViolation(
                    field=f"{path}.question_id",
                    description=f"{path}: question_id is empty; name the question this answers",
                )
            )
            continue
        if question is None:
            violations.append(
                FieldViolation(
                    field=f"{path}.question_id",
                    description=f"{_question(qid)}: not a question of this ask",
                    question_id=qid,
                )
            )
            continue
        if qid in first_entry:
            violations.append(
                FieldViolation(
                    field=f"{path}.question_id",
                    description=f"{_question(qid)}: answered more than once (also answers[{first_entry[qid]}])",
                    question_id=qid,
                )
            )
        else:
            first_entry[qid] = index
        violations.extend(_answer_violations(question, answer, path))
    violations.extend(
        FieldViolation(
            field="answers",
            description=f"{_question(qid)}: no answer given (send an empty entry to skip it)",
            question_id=qid,
        )
        for qid in questions
        if qid not in first_entry
    )
    return violations


def _answer_violations(
    question: comms_pb2.AskQuestion, answer: comms_pb2.AskQuestionAnswer, path: str
) -> list[FieldViolation]:
    qid = question.question_id
    offered = {option.id for option in question.options}
    violations: list[FieldViolation] = []
    picked: set[str] = set()
    for index, option_id in enumerate(answer.chosen_option_ids):
        field = f"{path}.chosen_option_ids[{index}]"
        if option_id not in offered:
            violations.append(
                FieldViolation(
                    field=field,
                    description=f"{_question(qid)}: {quote(option_id)} is not an option of this question",
                    question_id=qid,
                )
            )
        elif option_id in picked:
            violations.append(
                FieldViolation(
                    field=field,
                    description=f"{_question(qid)}: option {quote(option_id)} is chosen more than once",
                    question_id=qid,
                )
            )
        picked.add(option_id)
    if not question.allow_multiple:
        if len(answer.chosen_option_ids) > 1:
            violations.append(
                FieldViolation(
                    field=f"{path}.chosen_option_ids",
                    description=f"{_question(qid)}: only one option may be chosen, got {len(answer.chosen_option_ids)}",
                    question_id=qid,
                )
            )
        if answer.chosen_option_ids and answer.custom_text:
            violations.append(
                FieldViolation(
                    field=f"{path}.custom_text",
                    description=f"{_question(qid)}: on a single-select question free text replaces a pick; send a chosen option or custom_text, not both",
                    question_id=qid,
                )
            )
    return violations


def is_identical_answer(
    ask: comms_pb2.Ask, account_id: str, answers: Sequence[comms_pb2.AskQuestionAnswer]
) -> bool:
    """Whether `answers` from `account_id` repeat the answer already stored in `ask` exactly.

    Identical means: the same account answered, and the request has one entry per stored
    question with the same chosen ids (compared as sets, no repeats) and the same custom_text.
    Such a repeat is a safe retry (SPEC §4 step 5) and succeeds without a write.
    """
    if not ask.answered_by_account_id or ask.answered_by_account_id != account_id:
        return False
    stored = {
        question.question_id: (sorted(question.chosen_option_ids), question.custom_text)
        for question in ask.questions
    }
    sent = {
        answer.question_id: (sorted(answer.chosen_option_ids), answer.custom_text)
        for answer in answers
    }
    # Equal dicts from a list with a repeated question_id would hide the repeat; compare sizes.
    return len(answers) == len(stored) and sent == stored


def answered_questions(
    ask: comms_pb2.Ask, answers: Iterable[comms_pb2.AskQuestionAnswer]
) -> list[tuple[str, list[str], str]]:
    """The answer state to store for a validated `answers`: (question_id, chosen, custom_text).

    One entry per question of `ask`, in question order; chosen ids keep the request's order.
    Call only after `validate_answers` returned no violation.
    """
    by_question = {answer.question_id: answer for answer in answers}
    result: list[tuple[str, list[str], str]] = []
    for question in ask.questions:
        answer = by_question[question.question_id]
        result.append((question.question_id, list(answer.chosen_option_ids), answer.custom_text))
    return result


# ---------------------------------------------------------------------------------------------
# Outcomes: status, deadline, DeclineAsk, CloseAsk (design record, resolved decision 11)


def _outcome_violations(ask: comms_pb2.Ask, path: str) -> list[FieldViolation]:
    """The lifecycle fields of a NEW ask: the agent may send `deadline` and `on_timeout`;
    status must be UNSPECIFIED or PENDING and the closed_* fields empty (server-written)."""
    violations: list[FieldViolation] = []
    if ask.status not in (comms_pb2.ASK_STATUS_UNSPECIFIED, comms_pb2.ASK_STATUS_PENDING):
        violations.append(
            FieldViolation(
                field=f"{path}.status",
                description="status is written by the server; a new ask must be sent UNSPECIFIED or PENDING",
            )
        )
    closed = "is written by the server when the ask is closed; send it empty"
    for field, present in (
        ("closed_by_account_id", bool(ask.closed_by_account_id)),
        ("closed_at", ask.HasField("closed_at")),
        ("closed_by_name", bool(ask.closed_by_name)),
        ("close_reason", bool(ask.close_reason)),
    ):
        if present:
            violations.append(
                FieldViolation(field=f"{path}.{field}", description=f"{field} {closed}")
            )
    if ask.on_timeout not in TIMEOUT_POLICY_NAMES:
        violations.append(
            FieldViolation(
                field=f"{path}.on_timeout",
                description=f"on_timeout {ask.on_timeout} is not an AskTimeoutPolicy",
            )
        )
    if ask.HasField("deadline") and not (
        _MIN_TIMESTAMP_SECONDS <= ask.deadline.seconds <= _MAX_TIMESTAMP_SECONDS
        and 0 <= ask.deadline.nanos <= 999_999_999
    ):
        violations.append(
            FieldViolation(
                field=f"{path}.deadline", description="deadline is not a valid timestamp"
            )
        )
    return violations


def is_final(ask: comms_pb2.Ask) -> bool:
    """Whether `ask` (as read from the store) has its outcome: any status but PENDING."""
    return ask.status not in (comms_pb2.ASK_STATUS_PENDING, comms_pb2.ASK_STATUS_UNSPECIFIED)


def outcome_message(ask: comms_pb2.Ask) -> str:
    """The FAILED_PRECONDITION message for acting on the final `ask`, naming its outcome."""
    status = ask.status
    if status == comms_pb2.ASK_STATUS_DECLINED:
        return f"the ask was declined by {ask.closed_by_name}"
    if status == comms_pb2.ASK_STATUS_WITHDRAWN:
        return "the ask was withdrawn by the agent"
    if status == comms_pb2.ASK_STATUS_TIMED_OUT:
        return "the ask timed out"
    if status == comms_pb2.ASK_STATUS_EXPIRED:
        return "the ask expired"
    return "the ask is already answered"


def _reason_violations(reason: str) -> list[FieldViolation]:
    violations = _nul("reason", reason)
    if len(reason) > MAX_CLOSE_REASON_LENGTH:
        violations.append(_too_long("reason", "reason", MAX_CLOSE_REASON_LENGTH))
    return violations


def _ask_id_violations(ask_id: str) -> list[FieldViolation]:
    violations: list[FieldViolation] = []
    if not ask_id:
        violations.append(FieldViolation(field="ask_id", description="ask_id is empty"))
    elif len(ask_id) > MAX_ID_LENGTH:
        violations.append(_too_long("ask_id", "ask_id", MAX_ID_LENGTH))
    violations.extend(_nul("ask_id", ask_id))
    return violations


def check_decline_request(ask_id: str, reason: str) -> None:
    """DeclineAsk step 2: reject a malformed request before any lookup.

    Raises:
        InvalidArgumentError: empty or oversize ask_id, a reason longer than
            MAX_CLOSE_REASON_LENGTH, or text holding NUL; with every violation found.
    """
    violations = _ask_id_violations(ask_id) + _reason_violations(reason)
    if violations:
        raise InvalidArgumentError("malformed DeclineAsk request", violations)


def check_close_request(
    ask_id: str, status: int, reason: str, answers: Sequence[comms_pb2.AskQuestionAnswer]
) -> None:
    """CloseAsk step 2: reject a malformed request before any lookup.

    Raises:
        InvalidArgumentError: empty or oversize ask_id; status other than WITHDRAWN or
            TIMED_OUT; answers with WITHDRAWN; an oversize or NUL-holding reason; answers
            malformed like RespondToAsk's (see `check_answer_request`).
    """
    violations = _ask_id_violations(ask_id) + _reason_violations(reason)
    if status not in CLOSE_STATUSES:
        violations.append(
            FieldViolation(
                field="status",
                description="CloseAsk closes an ask as ASK_STATUS_WITHDRAWN or ASK_STATUS_TIMED_OUT",
            )
        )
    if status == comms_pb2.ASK_STATUS_WITHDRAWN and answers:
        violations.append(
            FieldViolation(field="answers", description="a WITHDRAWN ask has no answers; send none")
        )
    try:
        check_answer_request(ask_id or "-", answers)
    except InvalidArgumentError as exc:
        violations.extend(v for v in exc.violations if v.field != "ask_id")
    if violations:
        raise InvalidArgumentError("malformed CloseAsk request", violations)


def is_identical_decline(ask: comms_pb2.Ask, account_id: str, reason: str) -> bool:
    """Whether a DeclineAsk by `account_id` with `reason` repeats the stored outcome."""
    return (
        ask.status == comms_pb2.ASK_STATUS_DECLINED
        and ask.closed_by_account_id == account_id
        and ask.close_reason == reason
    )


def is_identical_close(
    ask: comms_pb2.Ask,
    account_id: str,
    status: int,
    reason: str,
    answers: Sequence[comms_pb2.AskQuestionAnswer],
) -> bool:
    """Whether a CloseAsk by `account_id` repeats the stored outcome exactly (same status,
    reason and, for TIMED_OUT, answers)."""
    if ask.status != status or ask.closed_by_account_id != account_id or ask.close_reason != reason:
        return False
    if status == comms_pb2.ASK_STATUS_TIMED_OUT:
        return is_identical_answer(ask, account_id, answers)
    return not answers
