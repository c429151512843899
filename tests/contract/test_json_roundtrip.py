"""A 2-question Ask with answer state survives protobuf JSON both ways, field for field."""

from __future__ import annotations

import json

import pytest
from google.protobuf import json_format

from gen.compass.v1 import comms_pb2


def _answered_ask() -> comms_pb2.Ask:
    ask = comms_pb2.Ask(
        ask_id="ask_01",
        questions=[
            comms_pb2.AskQuestion(
                question_id="db",
                question="Which database should the new service use?",
                header="Storage",
                options=[
                    comms_pb2.AskOption(
                        id="0",
                        label="Postgres",
                        description="Relational",
                        preview="CREATE TABLE t (id int);",
                    ),
                    comms_pb2.AskOption(id="1", label="SQLite"),
                ],
                recommended=0,
                chosen_option_ids=["0"],
            ),
            comms_pb2.AskQuestion(
                question_id="features",
                question="Which auth flows should ship in v1?",
                options=[comms_pb2.AskOption(id=str(i), label=f"flow {i}") for i in range(4)],
                allow_multiple=True,
                chosen_option_ids=["0", "2"],
                custom_text="WebAuthn too",
                timed_out=True,
            ),
        ],
        answered_by_account_id="acct_1",
        answered_by_name="Ada",
    )
    ask.answered_at.FromJsonString("2026-12-02T10:00:00Z")
    return ask


def test_json_round_trip_keeps_every_field() -> None:
    ask = _answered_ask()
    text = json_format.MessageToJson(ask)
    back = json_format.Parse(text, comms_pb2.Ask())
    assert back == ask
    assert back.SerializeToString(deterministic=True) == ask.SerializeToString(deterministic=True)
    assert back.questions[0].HasField("recommended")
    assert back.questions[0].recommended == 0
    assert not back.questions[1].HasField("recommended")


def test_json_uses_camel_case_names_and_keeps_zero_recommended() -> None:
    doc = json.loads(json_format.MessageToJson(_answered_ask()))
    first, second = doc["questions"]
    assert first["questionId"] == "db"
    assert first["recommended"] == 0  # presence: a set zero is written, unlike plain scalars
    assert "recommended" not in second
    assert second["allowMultiple"] is True
    assert second["chosenOptionIds"] == ["0", "2"]
    assert second["customText"] == "WebAuthn too"
    assert second["timedOut"] is True
    assert doc["askId"] == "ask_01"
    assert doc["answeredAt"] == "2026-12-02T10:00:00Z"


def test_respond_request_round_trip() -> None:
    request = comms_pb2.RespondToAskRequest(
        ask_id="ask_01",
        answers=[
            comms_pb2.AskQuestionAnswer(question_id="db", chosen_option_ids=["0"]),
            comms_pb2.AskQuestionAnswer(question_id="features", custom_text="none"),
            comms_pb2.AskQuestionAnswer(question_id="skip"),
        ],
    )
    back = json_format.Parse(json_format.MessageToJson(request), comms_pb2.RespondToAskRequest())
    assert back == request
    assert [a.question_id for a in back.answers] == ["db", "features", "skip"]


def test_old_flat_answer_field_is_rejected_by_json_parsing() -> None:
    # The superseded name is reserved: a stale client's JSON fails loudly, never binds.
    stale = '{"askId": "a", "chosenOptionIds": ["0"]}'
    with pytest.raises(json_format.ParseError, match="chosenOptionIds"):
        json_format.Parse(stale, comms_pb2.RespondToAskRequest())
