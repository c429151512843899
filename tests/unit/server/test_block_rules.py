"""Block write invariants (docs/spec.md §3): every rejection, with a field path naming the culprit."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from compass_server.domain import (
    MAX_ASKS_PER_MESSAGE,
    block_violations,
    check_blocks,
    check_text,
)
from compass_server.domain.errors import InvalidArgumentError
from gen.compass.v1 import comms_pb2
from tests.integration.store._seed import with_answer_state
from tests.unit.server._strategies import block_sets


def q(qid: str, *option_ids: str) -> comms_pb2.AskQuestion:
    return comms_pb2.AskQuestion(
        question_id=qid, options=[comms_pb2.AskOption(id=o, label=o) for o in option_ids]
    )


def ask_block(*questions: comms_pb2.AskQuestion, ask_id: str = "") -> comms_pb2.MessageBlock:
    return comms_pb2.MessageBlock(ask=comms_pb2.Ask(ask_id=ask_id, questions=questions))


TEXT = comms_pb2.MessageBlock(text=comms_pb2.TextBlock(text="hello"))


def with_free_text(question: comms_pb2.AskQuestion, free_text: int) -> comms_pb2.AskQuestion:
    question.free_text = free_text  # pyright: ignore[reportAttributeAccessIssue] - any int: proto3 enums are open, a client can send an undefined value
    return question


def delivered_ask() -> comms_pb2.MessageBlock:
    block = ask_block(q("db", "0"))
    block.ask.delivery.state = comms_pb2.DELIVERY_STATE_DELIVERED
    return block


def withdrawn_at_ask() -> comms_pb2.MessageBlock:
    block = ask_block(q("db", "0"))
    block.ask.withdraw_at.FromSeconds(1_900_000_000)
    return block


# (blocks, field, question_id) for the append path (minted=False).
APPEND_REJECTIONS = [
    pytest.param([TEXT, comms_pb2.MessageBlock()], "blocks[1]", "", id="no-kind"),
    pytest.param([ask_block()], "blocks[0].ask.questions", "", id="zero-questions"),
    pytest.param(
        [ask_block(q("", "0"))],
        "blocks[0].ask.questions[0].question_id",
        "",
        id="empty-question-id",
    ),
    pytest.param(
        [ask_block(q("db", "0"), q("db", "1"))],
        "blocks[0].ask.questions[1].question_id",
        "db",
        id="duplicate-question-id",
    ),
    pytest.param(
        [ask_block(q("db", "0", ""))],
        "blocks[0].ask.questions[0].options[1].id",
        "db",
        id="empty-option-id",
    ),
    pytest.param(
        [ask_block(q("db", "0", "0"))],
        "blocks[0].ask.questions[0].options[1].id",
        "db",
        id="duplicate-option-id",
    ),
    pytest.param(
        [ask_block(q("db", "0"), ask_id="ask_forged")],
        "blocks[0].ask.ask_id",
        "",
        id="agent-ask-id",
    ),
    pytest.param(
        [with_answer_state(chosen=1)],
        "blocks[0].ask.questions[0].chosen_option_ids",
        "db",
        id="chosen",
    ),
    pytest.param(
        [with_answer_state(custom_text=1)],
        "blocks[0].ask.questions[0].custom_text",
        "db",
        id="custom-text",
    ),
    pytest.param(
        [with_answer_state(timed_out=1)],
        "blocks[0].ask.questions[0].timed_out",
        "db",
        id="timed-out",
    ),
    pytest.param(
        [with_answer_state(by=1)], "blocks[0].ask.answered_by_account_id", "", id="answered-by"
    ),
    pytest.param([with_answer_state(at=1)], "blocks[0].ask.answered_at", "", id="answered-at"),
    pytest.param(
        [with_answer_state(name=1)], "blocks[0].ask.answered_by_name", "", id="answered-by-name"
    ),
    pytest.param(
        [comms_pb2.MessageBlock(text=comms_pb2.TextBlock(text="a\x00b"))],
        "blocks[0].text.text",
        "",
        id="nul-text",
    ),
    pytest.param(
        [ask_block(comms_pb2.AskQuestion(question_id="db", question="a\x00"))],
        "blocks[0].ask.questions[0].question",
        "db",
        id="nul-question",
    ),
    pytest.param(
        [ask_block(q("db", "0")) for _ in range(MAX_ASKS_PER_MESSAGE + 1)],
        "blocks",
        "",
        id="too-many-asks",
    ),
    pytest.param(
        [ask_block(with_free_text(q("db", "0"), 7))],
        "blocks[0].ask.questions[0].free_text",
        "db",
        id="undefined-free-text",
    ),
    pytest.param(
        [ask_block(with_free_text(q("why"), comms_pb2.FREE_TEXT_REFUSED))],
        "blocks[0].ask.questions[0].free_text",
        "why",
        id="free-text-refused-without-options",
    ),
    pytest.param(
        [delivered_ask()], "blocks[0].ask.delivery", "", id="delivery-receipt-on-a-new-ask"
    ),
    pytest.param(
        [withdrawn_at_ask()], "blocks[0].ask.withdraw_at", "", id="withdraw-at-on-a-new-ask"
    ),
]


@pytest.mark.parametrize(("blocks", "field", "question_id"), APPEND_REJECTIONS)
def test_append_rejections(
    blocks: list[comms_pb2.MessageBlock], field: str, question_id: str
) -> None:
    violations = block_violations(blocks, minted=False)
    assert [(v.field, v.question_id) for v in violations] == [(field, question_id)]
    if question_id:
        assert f'question "{question_id}"' in violations[0].description
    with pytest.raises(InvalidArgumentError):
        check_blocks(blocks, minted=False)


def test_stored_rows_require_a_non_empty_unique_ask_id() -> None:
    blocks = [
        ask_block(q("a", "0"), ask_id="ask_1"),
        ask_block(q("b", "0")),
        ask_block(q("c", "0"), ask_id="ask_1"),
    ]
    assert [v.field for v in block_violations(blocks, minted=True)] == [
        "blocks[1].ask.ask_id",
        "blocks[2].ask.ask_id",
    ]


def test_before_the_stored_asks_are_known_an_ask_id_may_be_empty_but_not_repeated() -> None:
    # minted=None: the update path's first pass; the ids are judged by position later.
    blocks = [
        ask_block(q("a", "0"), ask_id="ask_1"),
        ask_block(q("b", "0")),
        ask_block(q("c", "0"), ask_id="ask_1"),
        ask_block(q("d", "0"), ask_id="x" * 201),
        ask_block(q("e", "0"), ask_id="ask_\x00"),
    ]
    assert [v.field for v in block_violations(blocks, minted=None)] == [
        "blocks[2].ask.ask_id",
        "blocks[3].ask.ask_id",
        "blocks[4].ask.ask_id",
    ]


@pytest.mark.parametrize("minted", [True, None])
def test_minted_asks_may_carry_answer_state(minted: bool | None) -> None:
    # Stored answer state always wins; what an update sends for a minted ask is dropped,
    # not refused (a NEW ask's answer state is refused by ask_update_violations).
    block = with_answer_state(chosen=1, custom_text=1, timed_out=1, by=1, at=1, name=1)
    block.ask.ask_id = "ask_1"
    assert block_violations([block], minted=minted) == []


@pytest.mark.parametrize(
    "free_text",
    [
        comms_pb2.FREE_TEXT_UNSPECIFIED,
        comms_pb2.FREE_TEXT_ACCEPTED,
        comms_pb2.FREE_TEXT_REFUSED,
        comms_pb2.FREE_TEXT_INSTEAD_OF_PICKS,
    ],
)
def test_every_free_text_value_is_fine_on_a_question_with_options(free_text: int) -> None:
    blocks = [ask_block(with_free_text(q("db", "0", "1"), free_text))]
    assert block_violations(blocks, minted=False) == []


@pytest.mark.parametrize(
    "free_text",
    [
        comms_pb2.FREE_TEXT_UNSPECIFIED,
        comms_pb2.FREE_TEXT_ACCEPTED,
        comms_pb2.FREE_TEXT_INSTEAD_OF_PICKS,
    ],
)
def test_a_question_without_options_may_take_free_text(free_text: int) -> None:
    assert block_violations([ask_block(with_free_text(q("why"), free_text))], minted=False) == []


def test_a_refused_free_text_without_options_is_refused_on_every_path() -> None:
    # Unanswerable: no option to pick and no text allowed. Stored rows are held to it too.
    block = ask_block(with_free_text(q("why"), comms_pb2.FREE_TEXT_REFUSED), ask_id="ask_1")
    for minted in (True, None):
        (violation,) = block_violations([block], minted=minted)
        assert violation.field == "blocks[0].ask.questions[0].free_text"
        assert "without options" in violation.description


@pytest.mark.parametrize("minted", [True, None])
def test_a_minted_ask_may_carry_its_delivery_receipt(minted: bool | None) -> None:
    # As answer state: what an update sends for a minted ask is dropped, the stored wins.
    block = delivered_ask()
    block.ask.ask_id = "ask_1"
    assert block_violations([block], minted=minted) == []


def test_zero_option_question_and_empty_text_are_fine() -> None:
    blocks = [comms_pb2.MessageBlock(text=comms_pb2.TextBlock()), ask_block(q("free"))]
    assert block_violations(blocks, minted=False) == []


def test_all_problems_are_reported_together() -> None:
    blocks = [comms_pb2.MessageBlock(), ask_block(q("", "0", "0"), q("x"), q("x"))]
    assert [v.field for v in block_violations(blocks, minted=False)] == [
        "blocks[0]",
        "blocks[1].ask.questions[0].question_id",
        "blocks[1].ask.questions[0].options[1].id",
        "blocks[1].ask.questions[2].question_id",
    ]


@settings(max_examples=100, deadline=None)
@given(block_sets(minted=False))
def test_generated_new_blocks_are_valid(blocks: list[comms_pb2.MessageBlock]) -> None:
    assert block_violations(blocks, minted=False) == []
    if any(block.HasField("ask") for block in blocks):
        assert block_violations(blocks, minted=True) != []  # unminted asks cannot be stored
    assert block_violations(blocks, minted=None) == []  # an update may add them


@pytest.mark.parametrize(
    ("value", "required", "ok"),
    [
        ("general", True, True),
        ("", True, False),
        ("", False, True),
        ("a\x00", True, False),
        ("x" * 201, True, False),
    ],
)
def test_check_text(value: str, required: bool, ok: bool) -> None:
    if ok:
        check_text("name", value, max_length=200, required=required)
    else:
        with pytest.raises(InvalidArgumentError):
            check_text("name", value, max_length=200, required=required)
