"""The update rule for a message's asks: positional matching against the stored asks.

The i-th ask block of an update is the i-th stored ask and must carry its minted id; ask
blocks after the stored ones are new (empty id, no answer state). See
`compass_server.domain.ask_update_violations` and the design record, resolved decision 9.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from compass_server.domain import ask_update_violations, block_violations, check_ask_update
from compass_server.domain.errors import InvalidArgumentError
from gen.compass.v1 import comms_pb2
from tests.unit.server._strategies import asks


def q(qid: str, *option_ids: str, multi: bool = False) -> comms_pb2.AskQuestion:
    return comms_pb2.AskQuestion(
        question_id=qid,
        options=[comms_pb2.AskOption(id=o, label=o) for o in option_ids],
        allow_multiple=multi,
    )


def ask(*questions: comms_pb2.AskQuestion, ask_id: str = "") -> comms_pb2.Ask:
    return comms_pb2.Ask(ask_id=ask_id, questions=questions)


def blocks_of(*items: comms_pb2.Ask | str) -> list[comms_pb2.MessageBlock]:
    """Blocks from asks and texts (a str is a text block)."""
    return [
        comms_pb2.MessageBlock(text=comms_pb2.TextBlock(text=item))
        if isinstance(item, str)
        else comms_pb2.MessageBlock(ask=item)
        for item in items
    ]


def answered(stored: comms_pb2.Ask) -> comms_pb2.Ask:
    copy = comms_pb2.Ask()
    copy.CopyFrom(stored)
    copy.answered_by_account_id = "acct_1"
    copy.answered_by_name = "Ada"
    copy.answered_at.GetCurrentTime()
    return copy


STORED = [ask(q("db", "0", "1"), ask_id="ask_a"), ask(q("auth", "0"), ask_id="ask_b")]


def fields(stored: list[comms_pb2.Ask], blocks: list[comms_pb2.MessageBlock]) -> list[str]:
    return [v.field for v in ask_update_violations(stored, blocks)]


def test_the_minted_asks_in_place_are_accepted() -> None:
    assert fields(STORED, blocks_of("text", *STORED, "more text")) == []


def test_new_asks_after_the_minted_ones_are_accepted() -> None:
    update = blocks_of("t", *STORED, ask(q("x")), "t", ask(q("y", "0")))
    assert fields(STORED, update) == []
    assert fields([], blocks_of("t", ask(q("first")))) == []  # the first post had no ask


def test_an_empty_id_on_a_minted_ask_names_the_id_to_carry() -> None:
    update = blocks_of("t", STORED[0], ask(q("auth", "0")))
    (violation,) = ask_update_violations(STORED, update)
    assert violation.field == "blocks[2].ask.ask_id"
    assert violation.description == (
        'ask_id is empty: this ask block must carry the ask_id minted for it, "ask_b"'
    )


@pytest.mark.parametrize(
    ("update", "expected"),
    [
        pytest.param(
            blocks_of(STORED[1], STORED[0]),
            [
                ("blocks[0].ask.ask_id", 'ask_id "ask_b" was minted for ask block 1; asks cannot be reordered: ask block 0 must carry "ask_a"'),
                ("blocks[1].ask.ask_id", 'ask_id "ask_a" was minted for ask block 0; asks cannot be reordered: ask block 1 must carry "ask_b"'),
            ],
            id="reordered",
        ),
        pytest.param(
            blocks_of(STORED[0], ask(q("auth", "0"), ask_id="ask_other")),
            [("blocks[1].ask.ask_id", 'ask_id "ask_other" was not minted for this message; asks cannot be replaced: ask block 1 must carry "ask_b"')],
            id="replaced",
        ),
        pytest.param(
            blocks_of("t", STORED[0]),
            [("blocks", 'the message has 2 asks but the update holds 1: missing "ask_b"; an update may add asks after the stored ones but never drop one')],
            id="dropped",
        ),
        pytest.param(
            blocks_of("t"),
            [("blocks", 'the message has 2 asks but the update holds 0: missing "ask_a", "ask_b"; an update may add asks after the stored ones but never drop one')],
            id="all-dropped",
        ),
        pytest.param(
            blocks_of(*STORED, ask(q("x"), ask_id="ask_mine")),
            [("blocks[2].ask.ask_id", 'ask_id "ask_mine" was not minted for a new ask: an ask after the message\'s 2 stored asks is new and must arrive with an empty ask_id, which the server mints (the agent never mints ask ids)')],
            id="agent-minted",
        ),
    ],
)  # fmt: skip
def test_rejections_say_what_to_send(
    update: list[comms_pb2.MessageBlock], expected: list[tuple[str, str]]
) -> None:
    assert [(v.field, v.description) for v in ask_update_violations(STORED, update)] == expected
    with pytest.raises(InvalidArgumentError, match="changes the message's asks"):
        check_ask_update(STORED, update)


@pytest.mark.parametrize(
    ("field", "path"),
    [
        ("chosen_option_ids", "blocks[2].ask.questions[0].chosen_option_ids"),
        ("custom_text", "blocks[2].ask.questions[0].custom_text"),
        ("timed_out", "blocks[2].ask.questions[0].timed_out"),
        ("answered_by_account_id", "blocks[2].ask.answered_by_account_id"),
        ("answered_at", "blocks[2].ask.answered_at"),
        ("answered_by_name", "blocks[2].ask.answered_by_name"),
    ],
)
def test_a_new_ask_must_arrive_unanswered(field: str, path: str) -> None:
    new = ask(q("x", "0"))
    if field == "chosen_option_ids":
        new.questions[0].chosen_option_ids.append("0")
    elif field == "custom_text":
        new.questions[0].custom_text = "typed"
    elif field == "timed_out":
        new.questions[0].timed_out = True
    elif field == "answered_by_account_id":
        new.answered_by_account_id = "acct_1"
    elif field == "answered_at":
        new.answered_at.GetCurrentTime()
    else:
        new.answered_by_name = "Ada"
    assert fields(STORED, blocks_of(*STORED, new)) == [path]


def test_answer_state_on_a_minted_ask_is_not_refused() -> None:
    # The stored state wins over it (the store merges), so it is ignored, not an error.
    assert fields(STORED, blocks_of(answered(STORED[0]), STORED[1])) == []


@pytest.mark.parametrize(
    "reshape", ["question_id", "drop-option", "add-option", "option-id", "multi", "add-question"]
)
def test_an_answered_ask_keeps_its_shape(reshape: str) -> None:
    stored = [answered(STORED[0]), STORED[1]]
    sent = ask(q("db", "0", "1"), ask_id="ask_a")
    sent.questions[0].question = "reworded"  # texts may change
    sent.questions[0].options[0].label = "relabelled"
    assert fields(stored, blocks_of(sent, STORED[1])) == []
    target = sent.questions[0]
    if reshape == "question_id":
        target.question_id = "database"
    elif reshape == "drop-option":
        del target.options[1]
    elif reshape == "add-option":
        target.options.add(id="2", label="2")
    elif reshape == "option-id":
        target.options[1].id = "9"
    elif reshape == "multi":
        target.allow_multiple = True
    else:
        sent.questions.add(question_id="more")
    assert fields(stored, blocks_of(sent, STORED[1])) == ["blocks[0].ask.questions"]
    # A pending ask may be reshaped freely.
    assert fields(STORED, blocks_of(sent, STORED[1])) == []


# -- properties --------------------------------------------------------------------------------


@st.composite
def stored_and_update(
    draw: st.DrawFn,
) -> tuple[list[comms_pb2.Ask], list[comms_pb2.MessageBlock]]:
    """Stored asks with distinct minted ids, and a valid update: the stored asks in order
    (each possibly reworded), texts anywhere, and 0-3 new unminted asks after them."""
    count = draw(st.integers(min_value=0, max_value=4))
    stored = [draw(asks(ask_id=f"ask_{n}")) for n in range(count)]
    items: list[comms_pb2.Ask | str] = []
    for minted in [*stored, *(draw(asks()) for _ in range(draw(st.integers(0, 3))))]:
        if draw(st.booleans()):
            items.append("text")
        items.append(minted)
    if draw(st.booleans()):
        items.append("text")
    return stored, blocks_of(*items)


@settings(max_examples=150, deadline=None)
@given(stored_and_update())
def test_valid_updates_are_accepted(
    case: tuple[list[comms_pb2.Ask], list[comms_pb2.MessageBlock]],
) -> None:
    stored, update = case
    assert block_violations(update, minted=None) == []
    assert ask_update_violations(stored, update) == []


@settings(max_examples=150, deadline=None)
@given(stored_and_update(), st.data())
def test_any_tampering_with_minted_ids_is_rejected(
    case: tuple[list[comms_pb2.Ask], list[comms_pb2.MessageBlock]], data: st.DataObject
) -> None:
    stored, update = case
    ask_blocks = [block for block in update if block.HasField("ask")]
    minted, new = ask_blocks[: len(stored)], ask_blocks[len(stored) :]
    choices = ["blank", "swap", "drop", "forge", "mint-new"]
    action = data.draw(st.sampled_from(choices))
    if action in ("blank", "drop") and minted:
        victim = data.draw(st.sampled_from(minted))
        if action == "blank":
            victim.ask.ask_id = ""
        else:
            update.remove(victim)
    elif action == "swap" and len(minted) >= 2:
        i, j = data.draw(
            st.lists(st.integers(0, len(minted) - 1), min_size=2, max_size=2, unique=True)
        )
        minted[i].ask.ask_id, minted[j].ask.ask_id = minted[j].ask.ask_id, minted[i].ask.ask_id
    elif action == "forge" and minted:
        data.draw(st.sampled_from(minted)).ask.ask_id = "ask_forged"
    elif new:
        data.draw(st.sampled_from(new)).ask.ask_id = data.draw(
            st.sampled_from(["ask_forged", *(a.ask_id for a in stored)])
        )
    else:
        return  # nothing to tamper with in this example
    assert ask_update_violations(stored, update) != []
