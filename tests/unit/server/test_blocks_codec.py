"""JSONB codec of blocks and answers: lossless round trip, strict and loud decoding."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings

from compass_server.domain.errors import CorruptDataError
from compass_server.store.blocks import (
    apply_answer_state,
    decode_blocks,
    encode_answers,
    encode_blocks,
    same_content,
)
from gen.compass.v1 import comms_pb2
from tests.unit.server._strategies import block_sets


def roundtrip(value: object) -> object:
    return json.loads(json.dumps(value))


@settings(max_examples=150, deadline=None)
@given(block_sets(minted=True))
def test_blocks_round_trip_through_json(blocks: list[comms_pb2.MessageBlock]) -> None:
    decoded = decode_blocks(roundtrip(encode_blocks(blocks)), message_id="msg_1")
    assert decoded == blocks


def test_answer_state_is_never_encoded_into_blocks() -> None:
    block = comms_pb2.MessageBlock(
        ask=comms_pb2.Ask(
            ask_id="ask_1",
            questions=[
                comms_pb2.AskQuestion(
                    question_id="db",
                    options=[comms_pb2.AskOption(id="0")],
                    chosen_option_ids=["0"],
                    custom_text="x",
                    timed_out=True,
                )
            ],
            answered_by_account_id="acct_1",
            answered_by_name="Ada",
        )
    )
    encoded = json.dumps(encode_blocks([block]))
    for leaked in ("chosen_option_ids", "custom_text", "timed_out", "answered_by"):
        assert leaked not in encoded


def test_keep_ask_ids_false_blanks_them() -> None:
    block = comms_pb2.MessageBlock(
        ask=comms_pb2.Ask(ask_id="ask_1", questions=[comms_pb2.AskQuestion(question_id="q")])
    )
    assert encode_blocks([block], keep_ask_ids=False)[0] == {
        "ask": {
            "ask_id": "",
            "questions": [
                {
                    "question_id": "q",
                    "question": "",
                    "header": "",
                    "allow_multiple": False,
                    "options": [],
                }
            ],
        }
    }


@pytest.mark.parametrize(
    ("free_text", "stored"),
    [
        (comms_pb2.FREE_TEXT_ACCEPTED, "accepted"),
        (comms_pb2.FREE_TEXT_REFUSED, "refused"),
        (comms_pb2.FREE_TEXT_INSTEAD_OF_PICKS, "instead_of_picks"),
    ],
)
def test_free_text_is_stored_by_name(free_text: comms_pb2.FreeText, stored: str) -> None:
    question = comms_pb2.AskQuestion(
        question_id="db", options=[comms_pb2.AskOption(id="0")], free_text=free_text
    )
    block = comms_pb2.MessageBlock(ask=comms_pb2.Ask(ask_id="ask_1", questions=[question]))
    encoded = roundtrip(encode_blocks([block]))
    assert f'"free_text": "{stored}"' in json.dumps(encoded)
    assert decode_blocks(encoded, message_id="msg_1") == [block]


def test_rows_stored_before_free_text_existed_decode_as_unspecified() -> None:
    (block,) = decode_blocks([stored_ask(stored_question())], message_id="msg_1")
    assert block.ask.questions[0].free_text == comms_pb2.FREE_TEXT_UNSPECIFIED
    # And an UNSPECIFIED question is stored as they were: without the key.
    assert "free_text" not in json.dumps(encode_blocks([block]))


def test_free_text_is_part_of_the_stored_content() -> None:
    # An AppendMessage repeat (same client_message_id) with another free_text is not the same.
    def block(free_text: comms_pb2.FreeText) -> comms_pb2.MessageBlock:
        question = comms_pb2.AskQuestion(
            question_id="db", options=[comms_pb2.AskOption(id="0")], free_text=free_text
        )
        return comms_pb2.MessageBlock(ask=comms_pb2.Ask(questions=[question]))

    assert same_content([block(comms_pb2.FREE_TEXT_REFUSED)], [block(comms_pb2.FREE_TEXT_REFUSED)])
    assert not same_content(
        [block(comms_pb2.FREE_TEXT_REFUSED)], [block(comms_pb2.FREE_TEXT_ACCEPTED)]
    )
    assert not same_content(
        [block(comms_pb2.FREE_TEXT_UNSPECIFIED)], [block(comms_pb2.FREE_TEXT_ACCEPTED)]
    )


def stored_question(**override: object) -> dict[str, object]:
    base: dict[str, object] = {
        "question_id": "db",
        "question": "Which?",
        "header": "",
        "allow_multiple": False,
        "options": [{"id": "0", "label": "pg", "description": "", "preview": ""}],
    }
    base.update(override)
    return base


def stored_ask(*questions: dict[str, object], ask_id: str = "ask_1") -> dict[str, object]:
    return {"ask": {"ask_id": ask_id, "questions": list(questions)}}


CORRUPT = [
    pytest.param(
        [
            {
                "ask": {
                    "ask_id": "ask_1",
                    "question": "Pick one",
                    "options": [{"id": "a", "label": "A"}],
                }
            }
        ],
        "no questions",
        id="stale-pre-reshape-ask",
    ),
    pytest.param([{"question": "Pick one", "options": []}], "pre-reshape", id="stale-bare-block"),
    pytest.param([{"image": {}}], "exactly one kind", id="unknown-kind"),
    pytest.param([stored_ask()], "no questions", id="zero-questions"),
    pytest.param([{}], "exactly one kind", id="no-kind"),
    pytest.param([{"text": {"text": "a"}, "ask": {}}], "exactly one kind", id="two-kinds"),
    pytest.param(
        [stored_ask(stored_question(question_id=""))],
        "question_id is empty",
        id="empty-question-id",
    ),
    pytest.param(
        [stored_ask(stored_question(), stored_question())],
        "also used by",
        id="duplicate-question-id",
    ),
    pytest.param(
        [
            stored_ask(
                stored_question(options=[{"id": "", "label": "", "description": "", "preview": ""}])
            )
        ],
        "option id is empty",
        id="empty-option-id",
    ),
    pytest.param(
        [
            stored_ask(
                stored_question(
                    options=[{"id": "0", "label": "", "description": "", "preview": ""}] * 2
                )
            )
        ],
        "also used by",
        id="duplicate-option-id",
    ),
    pytest.param(
        [stored_ask(stored_question(), ask_id="")], "ask_id is empty", id="missing-ask-id"
    ),
    pytest.param([stored_ask(stored_question(extra=1))], "unexpected keys", id="unknown-key"),
    pytest.param(
        [stored_ask(stored_question(allow_multiple="yes"))], "expected a boolean", id="wrong-type"
    ),
    pytest.param([stored_ask(stored_question(recommended=True))], "int32", id="bool-recommended"),
    pytest.param(
        [stored_ask(stored_question(free_text="sometimes"))],
        "expected one of",
        id="unknown-free-text",
    ),
    pytest.param(
        [stored_ask(stored_question(free_text="unspecified"))],
        "expected one of",
        id="unspecified-free-text-is-never-written",
    ),
    pytest.param(
        [stored_ask(stored_question(free_text=2))], "expected one of", id="numeric-free-text"
    ),
    pytest.param(
        [stored_ask(stored_question(options=[], free_text="refused"))],
        "without options",
        id="refused-free-text-without-options",
    ),
    pytest.param({"not": "an array"}, "expected an array", id="not-an-array"),
    pytest.param([{"text": "bare"}], "expected an object", id="text-not-object"),
]


@pytest.mark.parametrize(("raw", "reason"), CORRUPT)
def test_corrupt_rows_fail_loudly_naming_the_message(raw: object, reason: str) -> None:
    with pytest.raises(CorruptDataError, match="stored message msg_42 is corrupt") as caught:
        decode_blocks(raw, message_id="msg_42")
    assert reason in caught.value.message


def test_answer_state_merges_into_the_ask() -> None:
    ask = comms_pb2.Ask(
        ask_id="ask_1",
        questions=[
            comms_pb2.AskQuestion(question_id="db", options=[comms_pb2.AskOption(id="0")]),
            comms_pb2.AskQuestion(question_id="why"),
        ],
    )
    at = datetime(2030, 1, 2, 3, 4, 5, 600000, tzinfo=UTC)
    apply_answer_state(
        ask,
        roundtrip(encode_answers([("db", ["0"], ""), ("why", [], "because")])),
        answered_by_account_id="acct_1",
        answered_at=at,
        answered_by_name="Ada",
        message_id="msg_1",
    )
    assert list(ask.questions[0].chosen_option_ids) == ["0"]
    assert ask.questions[1].custom_text == "because"
    assert not ask.questions[0].timed_out
    assert ask.answered_at.ToDatetime(tzinfo=UTC) == at
    assert (ask.answered_by_account_id, ask.answered_by_name) == ("acct_1", "Ada")


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(
            [{"question_id": "db", "chosen_option_ids": [], "custom_text": "", "timed_out": False}],
            id="missing-question",
        ),
        pytest.param(
            [
                {
                    "question_id": "db",
                    "chosen_option_ids": [],
                    "custom_text": "",
                    "timed_out": False,
                },
                {
                    "question_id": "zz",
                    "chosen_option_ids": [],
                    "custom_text": "",
                    "timed_out": False,
                },
            ],
            id="unknown-question",
        ),
        pytest.param([{"question_id": "db"}], id="missing-keys"),
        pytest.param("nope", id="not-an-array"),
        pytest.param(
            [
                {
                    "question_id": "db",
                    "chosen_option_ids": [1],
                    "custom_text": "",
                    "timed_out": False,
                }
            ],
            id="non-string-pick",
        ),
    ],
)
def test_corrupt_answer_state_fails_loudly(raw: object) -> None:
    ask = comms_pb2.Ask(
        ask_id="ask_1",
        questions=[
            comms_pb2.AskQuestion(question_id="db"),
            comms_pb2.AskQuestion(question_id="why"),
        ],
    )
    with pytest.raises(CorruptDataError, match="ask_1"):
        apply_answer_state(
            ask,
            raw,
            answered_by_account_id="acct_1",
            answered_at=datetime.now(UTC),
            answered_by_name="Ada",
            message_id="msg_1",
        )
