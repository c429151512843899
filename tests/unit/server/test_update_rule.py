"""The update rule for a message's asks: positional matching against the stored asks.

The i-th ask block of an update is the i-th stored ask and must carry its minted id (or, for
a retry, an empty id and the stored ask's very content); ask blocks after the stored ones
are new (empty id, no answer state). See `compass_server.domain.ask_update_violations` and
the design record, resolved decision 9.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings, strategies as st

from compass_server.domain import (
    ask_update_violations,
    block_violations,
    check_ask_update,
    same_ask,
    with_minted_ask_ids,
)
from compass_server.domain.errors import InvalidArgumentError
from compass_server.store.blocks import same_content
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


def test_an_empty_id_with_the_stored_content_is_the_stored_ask() -> None:
    # A retry of the update that added the ask: it is sent again as it was when new.
    update = blocks_of("t", ask(q("db", "0", "1")), ask(q("auth", "0")), ask(q("new")))
    assert fields(STORED, update) == []
    check_ask_update([answered(STORED[0]), STORED[1]], update)
    filled = with_minted_ask_ids(STORED, update)
    assert [b.ask.ask_id for b in filled if b.HasField("ask")] == ["ask_a", "ask_b", ""]
    assert [b.ask.ask_id for b in update if b.HasField("ask")] == ["", "", ""]  # copies
    assert filled == blocks_of("t", *STORED, ask(q("new")))


def test_an_empty_id_on_a_minted_ask_names_the_id_to_carry() -> None:
    update = blocks_of("t", STORED[0], ask(q("auth", "0", "1")))
    (violation,) = ask_update_violations(STORED, update)
    assert violation.field == "blocks[2].ask.ask_id"
    assert violation.description == (
        'ask_id is empty: this ask block must carry the ask_id minted for it, "ask_b"'
    )
    assert with_minted_ask_ids(STORED, update) == update  # nothing to fill in


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
            victim.ask.ask_id = ""  # with other content than the stored ask's
            victim.ask.questions[0].question += " (changed)"
        else:
            update.remove(victim)
            # A later ask moving into the dropped position with the dropped ask's content
            # would be that ask, retried (`with_minted_ask_ids`): not tampering.
            assume(not any(same_ask(s, n.ask) for s in stored for n in new))
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


@settings(max_examples=150, deadline=None)
@given(stored_and_update(), st.data())
def test_unminted_repeats_of_the_stored_asks_are_those_asks(
    case: tuple[list[comms_pb2.Ask], list[comms_pb2.MessageBlock]], data: st.DataObject
) -> None:
    stored, update = case
    minted = [block for block in update if block.HasField("ask")][: len(stored)]
    # Any of the minted asks sent again as they were stored, but without their ids.
    for block, original in zip(minted, stored, strict=True):
        if data.draw(st.booleans()):
            block.ask.CopyFrom(original)
            block.ask.ask_id = ""
    assert ask_update_violations(stored, update) == []
    filled = with_minted_ask_ids(stored, update)
    assert [b.ask.ask_id for b in filled if b.HasField("ask")][: len(stored)] == [
        ask.ask_id for ask in stored
    ]


_NOT_CONTENT = ("ask_id", "answer", "status", "deadline", "on_timeout", "delivery")
_CONTENT = (
    "question_id", "question", "header", "allow_multiple", "recommended", "free_text",
    "option_id", "label", "description", "preview", "add_option", "add_question",
)  # fmt: skip


def _changed(ask: comms_pb2.Ask, change: str) -> comms_pb2.Ask:
    copy = comms_pb2.Ask()
    copy.CopyFrom(ask)
    question = copy.questions[0]
    option = question.options[0]
    match change:
        case "ask_id":
            copy.ask_id = "ask_other"
        case "answer":
            question.chosen_option_ids.append(option.id)
            question.custom_text = "typed"
            question.timed_out = True
            copy.answered_by_account_id = "acct_1"
            copy.answered_by_name = "Ada"
            copy.answered_at.GetCurrentTime()
        case "status":
            copy.status = comms_pb2.ASK_STATUS_DECLINED
            copy.close_reason = "no"
        case "deadline":
            copy.deadline.GetCurrentTime()
        case "on_timeout":
            copy.on_timeout = comms_pb2.ASK_TIMEOUT_POLICY_FAIL
        case "delivery":
            copy.delivery.state = comms_pb2.DELIVERY_STATE_NOT_DELIVERED
            copy.delivery.detail = "the form was cancelled"
        case "free_text":
            question.free_text = (
                comms_pb2.FREE_TEXT_ACCEPTED
                if question.free_text == comms_pb2.FREE_TEXT_REFUSED
                else comms_pb2.FREE_TEXT_REFUSED
            )
        case "question_id":
            question.question_id += "z"
        case "question" | "header":
            setattr(question, change, getattr(question, change) + "z")
        case "allow_multiple":
            question.allow_multiple = not question.allow_multiple
        case "recommended":
            if question.HasField("recommended"):
                question.ClearField("recommended")
            else:
                question.recommended = 0
        case "option_id":
            option.id += "z"
        case "label" | "description" | "preview":
            setattr(option, change, getattr(option, change) + "z")
        case "add_option":
            question.options.add(id="new")
        case _:
            copy.questions.add(question_id="new")
    return copy


@settings(max_examples=100, deadline=None)
@given(asks(ask_id="ask_a"), st.sampled_from(_NOT_CONTENT + _CONTENT))
def test_same_ask_compares_what_the_store_keeps_of_an_ask(ask_: comms_pb2.Ask, change: str) -> None:
    # Equal for `same_ask` exactly when AppendMessage's idempotent repeat finds the blocks
    # equal (store.blocks.same_content), so a retried update and a retried append agree on
    # what "the same ask" is.
    if not ask_.questions[0].options:
        ask_.questions[0].options.add(id="o")
    other = _changed(ask_, change)
    stored_equal = same_content(
        [comms_pb2.MessageBlock(ask=ask_)], [comms_pb2.MessageBlock(ask=other)]
    )
    assert same_ask(ask_, other) is stored_equal
    assert stored_equal is (change in _NOT_CONTENT)
