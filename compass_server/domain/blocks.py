"""Block invariants of AppendMessage and UpdateMessage (docs/spec.md §3), including the positional update rule."""

from __future__ import annotations

from typing import TYPE_CHECKING

# The block limits live with the agent side, whose mapper must refuse exactly what this
# module refuses; they are re-exported here for the server's own callers.
from compass_core.ask_status import status_name
from compass_core.limits import (
    MAX_ASKS_PER_MESSAGE,
    MAX_BLOCKS_PER_MESSAGE,
    MAX_ID_LENGTH,
    MAX_OPTIONS_PER_QUESTION,
    MAX_QUESTIONS_PER_ASK,
)
from compass_server.domain.errors import (
    FailedPreconditionError,
    FieldViolation,
    InvalidArgumentError,
)
from compass_server.domain.limits import (
    FREE_TEXT_NAMES,
    OPEN_STATUSES,
    nul,
    nuls,
    question_label,
    quote,
    too_long,
)
from compass_server.domain.outcomes import outcome_violations
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Sequence

# ---------------------------------------------------------------------------------------------
# Block invariants (write side; the store's decoder applies the minted variant on read too)


def block_violations(
    blocks: Sequence[comms_pb2.MessageBlock], *, minted: bool | None
) -> list[FieldViolation]:
    """Every way `blocks` breaks the block invariants of docs/spec.md §3.

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
            violations.extend(nul(f"{path}.text.text", block.text.text))
        else:
            asks += 1
            violations.extend(ask_violations(block.ask, f"{path}.ask", minted=minted))
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


def ask_violations(ask: comms_pb2.Ask, path: str, *, minted: bool | None) -> list[FieldViolation]:
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
        violations.extend(answer_state_violations(ask, path))
    violations.extend(nul(f"{path}.ask_id", ask.ask_id))
    if len(ask.ask_id) > MAX_ID_LENGTH:
        violations.append(too_long(f"{path}.ask_id", "ask_id", MAX_ID_LENGTH))
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
                    description=f"{question_label(qid)}: question_id is also used by questions[{seen[qid]}]",
                    question_id=qid,
                )
            )
        else:
            seen[qid] = index
        violations.extend(question_violations(question, qpath))
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

    One exception makes an update that added asks safe to retry: at a minted position, an
    ask block with an EMPTY ask_id whose content is the stored ask's (`same_ask`: compared
    without ask ids and answer state, as AppendMessage's idempotent repeat compares) IS that
    stored ask, sent again as it was when it was new; `with_minted_ask_ids` writes its id
    in. With other content an empty ask_id at a minted position is refused.

    This refines docs/spec.md §1.3/§3 (design record, resolved decision 9): the runtime settles a
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
            violation = minted_ask_violation(stored[ordinal], ask, ordinal, position, path)
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
            violations.extend(answer_state_violations(ask, path))
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
        if was.status not in OPEN_STATUSES and asked(was) != asked(now):
            # What a person answered (or saw closed) must stay what was asked.
            raise FailedPreconditionError(
                f"ask {was.ask_id} is {status_name(was.status)}"
                ": its questions and options can no longer change"
            )


def asked(ask: comms_pb2.Ask) -> list[bytes]:
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


def minted_ask_violation(
    before: comms_pb2.Ask,
    ask: comms_pb2.Ask,
    ordinal: int,
    position: dict[str, int],
    path: str,
) -> FieldViolation | None:
    expected = before.ask_id
    ask_id = ask.ask_id
    if not ask_id:
        if same_ask(before, ask):
            return None  # the stored ask, sent again as it was new (a retry)
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
    if before.answered_by_account_id and shape(before) != shape(ask):
        return FieldViolation(
            field=f"{path}.questions",
            description=f"ask {quote(ask_id)} is answered: its question ids, option ids and allow_multiple cannot change",
        )
    return None


def same_ask(stored: comms_pb2.Ask, sent: comms_pb2.Ask) -> bool:
    """Whether `sent` asks what `stored` asks: equal but for ask ids, answer state, status
    and the agent's deadline and timeout policy.

    Compares exactly what the store keeps of an ask's questions (the fields
    `store.blocks.encode_blocks` writes; tests/unit/server/test_update_rule.py pins the two
    together), so this is AppendMessage's idempotent-repeat comparison for one ask.
    """
    return _content(stored) == _content(sent)


def _content(ask: comms_pb2.Ask) -> list[object]:
    return [
        (
            question.question_id,
            question.question,
            question.header,
            question.allow_multiple,
            question.recommended if question.HasField("recommended") else None,
            question.free_text,
            question.answer_required,
            [
                (option.id, option.label, option.description, option.preview)
                for option in question.options
            ],
        )
        for question in ask.questions
    ]


def with_minted_ask_ids(
    stored: Sequence[comms_pb2.Ask], blocks: Sequence[comms_pb2.MessageBlock]
) -> list[comms_pb2.MessageBlock]:
    """Copies of an update's `blocks` in which every ask block at a minted position that
    carries an empty ask_id and the stored ask's content (see `ask_update_violations`)
    carries that ask's minted id; every other block is copied as it is.

    Args:
        stored: the message's stored asks, in block order.
        blocks: the update's full block set, accepted by `check_ask_update`.
    """
    copies: list[comms_pb2.MessageBlock] = []
    ordinal = 0
    for block in blocks:
        copy = comms_pb2.MessageBlock()
        copy.CopyFrom(block)
        if copy.WhichOneof("block") == "ask":
            if (
                ordinal < len(stored)
                and not copy.ask.ask_id
                and same_ask(stored[ordinal], copy.ask)
            ):
                copy.ask.ask_id = stored[ordinal].ask_id
            ordinal += 1
        copies.append(copy)
    return copies


def shape(ask: comms_pb2.Ask) -> list[tuple[str, list[str], bool]]:
    return [
        (question.question_id, [option.id for option in question.options], question.allow_multiple)
        for question in ask.questions
    ]


def question_violations(question: comms_pb2.AskQuestion, path: str) -> list[FieldViolation]:
    qid = question.question_id
    violations: list[FieldViolation] = []
    if len(qid) > MAX_ID_LENGTH:
        violations.append(too_long(f"{path}.question_id", "question_id", MAX_ID_LENGTH, qid))
    violations.extend(
        nuls(
            path,
            (("question_id", qid), ("question", question.question), ("header", question.header)),
            qid,
        )
    )
    violations.extend(free_text_violations(question, path))
    if len(question.options) > MAX_OPTIONS_PER_QUESTION:
        violations.append(
            FieldViolation(
                field=f"{path}.options",
                description=f"{question_label(qid)}: at most {MAX_OPTIONS_PER_QUESTION} options, got {len(question.options)}",
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
                    description=f"{question_label(qid)}: option id is empty",
                    question_id=qid,
                )
            )
        elif option.id in option_seen:
            violations.append(
                FieldViolation(
                    field=f"{opath}.id",
                    description=f"{question_label(qid)}: option id {quote(option.id)} is also used by options[{option_seen[option.id]}]",
                    question_id=qid,
                )
            )
        else:
            option_seen[option.id] = index
        if len(option.id) > MAX_ID_LENGTH:
            violations.append(too_long(f"{opath}.id", "option id", MAX_ID_LENGTH, qid))
        violations.extend(
            nuls(
                opath,
                (
                    ("id", option.id),
                    ("label", option.label),
                    ("description", option.description),
                    ("preview", option.preview),
                ),
                qid,
            )
        )
    return violations


def free_text_violations(question: comms_pb2.AskQuestion, path: str) -> list[FieldViolation]:
    """A question's `free_text`: a defined FreeText, and not REFUSED without options (no
    pick and no text would leave the question unanswerable)."""
    qid = question.question_id
    free_text = question.free_text
    if free_text != comms_pb2.FREE_TEXT_UNSPECIFIED and free_text not in FREE_TEXT_NAMES:
        return [
            FieldViolation(
                field=f"{path}.free_text",
                description=f"{question_label(qid)}: free_text {free_text} is not a FreeText",
                question_id=qid,
            )
        ]
    if free_text == comms_pb2.FREE_TEXT_REFUSED and not question.options:
        return [
            FieldViolation(
                field=f"{path}.free_text",
                description=f"{question_label(qid)}: a question without options cannot refuse free text (it could not be answered)",
                question_id=qid,
            )
        ]
    return []


def answer_state_violations(ask: comms_pb2.Ask, path: str) -> list[FieldViolation]:
    violations = outcome_violations(ask, path)
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
    if ask.HasField("delivery"):
        violations.append(
            FieldViolation(
                field=f"{path}.delivery",
                description="delivery is written by the server from ReportDelivery once the ask is answered or declined; send it empty",
            )
        )
    if ask.HasField("withdraw_at"):
        violations.append(
            FieldViolation(
                field=f"{path}.withdraw_at",
                description="withdraw_at is written by the server while no call of the agent waits for the ask; send it empty",
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
                        description=f"{question_label(qid)}: {field} is answer state; a new ask must arrive unanswered",
                        question_id=qid,
                    )
                )
    return violations
