"""OpenCode's `question.asked` as one Ask, and an answered Ask as OpenCode's reply and the
text its model reads (compass_bridge/opencode/questions.py, pure). The shapes are the ones
OpenCode 1.18.33 sends (recorded/question_asked.json, from the real agent); what it then
hands its model is checked against the real agent in tests/realagent/test_opencode.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, strategies as st

from compass_bridge.opencode.questions import (
    REJECTED_TEXT,
    answered_text,
    decline_changes,
    read_request,
    reply_for,
)
from compass_core.jsonvalues import MappingError
from gen.compass.v1 import comms_pb2

RECORDED = Path(__file__).parent / "recorded"


def _recorded(name: str) -> dict[str, Any]:
    return json.loads((RECORDED / name).read_text(encoding="utf-8"))


def _answered(ask: comms_pb2.Ask, answers: dict[str, tuple[list[str], str]]) -> comms_pb2.Ask:
    """`ask` as WatchAsk sends it once answered (question id -> chosen ids, own text)."""
    done = comms_pb2.Ask()
    done.CopyFrom(ask)
    done.ask_id = "ask_1"
    done.status = comms_pb2.ASK_STATUS_ANSWERED
    for question in done.questions:
        chosen, text = answers.get(question.question_id, ([], ""))
        question.chosen_option_ids[:] = chosen
        question.custom_text = text
    return done


def test_the_recorded_event_is_one_ask() -> None:
    event = _recorded("question_asked.json")
    request = read_request(event["properties"])
    assert (request.request_id, request.session_id) == (
        event["properties"]["id"],
        event["properties"]["sessionID"],
    )
    assert (request.call_id, request.message_id) == (
        event["properties"]["tool"]["callID"],
        event["properties"]["tool"]["messageID"],
    )
    database, auth = request.ask.questions
    assert (database.question_id, database.header, database.recommended) == ("q1", "DB", 0)
    assert [(o.id, o.label, o.description) for o in database.options] == [
        ("0", "Postgres", "relational"),
        ("1", "SQLite", "file"),
    ]
    assert (database.allow_multiple, database.free_text) == (False, comms_pb2.FREE_TEXT_ACCEPTED)
    assert (auth.question_id, auth.header, auth.allow_multiple) == ("q2", "Auth", True)
    assert not auth.HasField("recommended")
    assert [o.label for o in auth.options] == ["Email", "OAuth", "SSO"]
    assert request.prompts[0].labels == ("Postgres (Recommended)", "SQLite")


def test_the_reply_carries_the_labels_as_opencode_listed_them() -> None:
    request = read_request(_recorded("question_asked.json")["properties"])
    reply = reply_for(request, _answered(request.ask, {"q1": (["0"], ""), "q2": (["2", "0"], "")}))
    assert reply.answers == (("Postgres (Recommended)",), ("SSO", "Email"))
    assert reply.text == (
        'User has answered your questions: "Which database?"="Postgres (Recommended)", '
        '"Which auth flows ship?"="SSO, Email". You can now continue with the user\'s answers '
        "in mind."
    )
    assert reply.changes == ()


def test_own_text_is_an_entry_of_its_own_and_a_skip_answers_nothing() -> None:
    request = read_request(_recorded("question_asked.json")["properties"])
    reply = reply_for(request, _answered(request.ask, {"q2": (["1"], "SCIM, later")}))
    assert reply.answers == ((), ("OAuth", "SCIM, later"))
    assert '"Which database?"="Unanswered", "Which auth flows ship?"="OAuth, SCIM, later"' in (
        reply.text
    )


def test_opencodes_own_question_takes_no_typed_answer() -> None:
    """plan_exit's question (recorded from the real agent) says `custom: false`."""
    request = read_request(_recorded("plan_exit_asked.json")["properties"])
    (question,) = request.ask.questions
    assert question.free_text == comms_pb2.FREE_TEXT_REFUSED
    assert question.header == "Build Agent"
    # Text given all the same (the server refuses it; a stale ask might not) is left out.
    reply = reply_for(request, _answered(request.ask, {"q1": (["0"], "maybe")}))
    assert reply.answers == (("Yes",),)
    assert reply.changes == (
        "question 'q1': OpenCode takes no typed answer here; the text was left out",
    )


@pytest.mark.parametrize(
    ("labels", "shown", "recommended"),
    [
        (["A (Recommended)", "B"], ["A", "B"], 0),
        (["A", "B (recommended) "], ["A", "B"], 1),
        (["A (Recommended)", "B (Recommended)"], ["A", "B (Recommended)"], 0),
        # Kept as it is where the shorter label would be another's, or nothing.
        (["A (Recommended)", "A"], ["A (Recommended)", "A"], None),
        (["(Recommended)", "B"], ["(Recommended)", "B"], None),
        (["A", "B"], ["A", "B"], None),
    ],
)
def test_the_recommended_option(
    labels: list[str], shown: list[str], recommended: int | None
) -> None:
    request = read_request(_event([_prompt(labels)]))
    (question,) = request.ask.questions
    assert [o.label for o in question.options] == shown
    assert (question.recommended if question.HasField("recommended") else None) == recommended
    assert request.prompts[0].labels == tuple(labels)


@pytest.mark.parametrize(
    ("properties", "why"),
    [
        ([], "properties is not an object (got array)"),
        ({"sessionID": "s", "questions": []}, "properties.id is missing"),
        ({"id": "", "sessionID": "s", "questions": []}, "properties.id is empty"),
        ({"id": "q", "sessionID": "s", "questions": []}, "questions is empty"),
        (
            {"id": "q", "sessionID": "s", "questions": [{"question": "Go?", "options": "yes"}]},
            "properties.questions[0].options is not an array (got string)",
        ),
        (
            {
                "id": "q",
                "sessionID": "s",
                "questions": [{"question": "Go?", "header": "", "options": [], "custom": False}],
            },
            "properties.questions[0].options is empty and the question takes no typed answer",
        ),
        (
            {
                "id": "q",
                "sessionID": "s",
                "questions": [{"question": "Go?", "options": [], "multiple": "yes"}],
            },
            "properties.questions[0].multiple is not a boolean (got string)",
        ),
    ],
)
def test_what_cannot_be_asked_says_where(properties: object, why: str) -> None:
    with pytest.raises(MappingError) as raised:
        read_request(properties)
    assert raised.value.reason == why


def test_a_decline_loses_only_its_reason() -> None:
    declined = comms_pb2.Ask(status=comms_pb2.ASK_STATUS_DECLINED)
    assert decline_changes(declined) == ()
    declined.close_reason = "not now"
    assert decline_changes(declined) == (
        f"OpenCode's rejection carries no reason: the model reads {REJECTED_TEXT!r} without "
        "'not now'",
    )


def test_the_models_text_as_opencode_writes_it() -> None:
    """OpenCode's tool: `"${question}"="${answer.length ? answer.join(", ") : "Unanswered"}"`,
    joined by ", "; an answer it was not given reads "Unanswered" too."""
    request = read_request(_event([_prompt(["A"], "One?"), _prompt(["B"], 'Two "2"?')]))
    assert answered_text(request.prompts, [("A", "x, y")]) == (
        'User has answered your questions: "One?"="A, x, y", "Two "2"?"="Unanswered". You can '
        "now continue with the user's answers in mind."
    )


# -- any question OpenCode can send ----------------------------------------------------------

_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12)


@st.composite
def _questions(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(1, 4))
    found: list[dict[str, Any]] = []
    for _ in range(count):
        labels = draw(
            st.lists(
                _TEXT.filter(
                    lambda t: t not in {"Other (type your own)", "Chat about this", "Next →"}
                ),
                max_size=5,
                unique=True,
            )
        )
        custom = draw(st.sampled_from([None, True, False]))
        if not labels and custom is False:
            custom = None
        question: dict[str, Any] = {
            "question": draw(_TEXT),
            "header": draw(_TEXT),
            "options": [{"label": label, "description": draw(_TEXT)} for label in labels],
        }
        if draw(st.booleans()):
            question["multiple"] = draw(st.booleans())
        if custom is not None:
            question["custom"] = custom
        found.append(question)
    return found


@given(questions=_questions(), data=st.data())
def test_any_question_maps_and_any_answer_goes_back_exactly(
    questions: list[dict[str, Any]], data: st.DataObject
) -> None:
    request = read_request(_event(questions))
    ask = request.ask
    assert [q.question_id for q in ask.questions] == [f"q{i + 1}" for i in range(len(questions))]
    picks: dict[str, tuple[list[str], str]] = {}
    expected: list[tuple[str, ...]] = []
    for sent, question in zip(questions, ask.questions, strict=True):
        labels = [o["label"] for o in sent["options"]]
        assert question.question == sent["question"]
        assert question.header == sent["header"]
        assert question.allow_multiple is sent.get("multiple", False)
        assert question.free_text == (
            comms_pb2.FREE_TEXT_REFUSED
            if sent.get("custom") is False
            else comms_pb2.FREE_TEXT_ACCEPTED
        )
        assert [o.description for o in question.options] == [
            o["description"] for o in sent["options"]
        ]
        # A shown label is the label, or the recommended one without its mark.
        for index, (option, label) in enumerate(zip(question.options, labels, strict=True)):
            if question.HasField("recommended") and question.recommended == index:
                assert label.startswith(option.label)
                assert label != option.label
            else:
                assert option.label == label
        indexes = data.draw(
            st.lists(st.integers(0, len(labels) - 1), unique=True, max_size=len(labels))
            if labels
            else st.just([])
        )
        if not question.allow_multiple:
            indexes = indexes[:1]
        text = data.draw(_TEXT) if sent.get("custom") is not False else ""
        if text and indexes and not question.allow_multiple:
            text = ""  # one or the other on a single-select question (the server's rule)
        picks[question.question_id] = ([str(i) for i in indexes], text)
        expected.append(tuple([labels[i] for i in indexes] + ([text] if text else [])))
    reply = reply_for(request, _answered(ask, picks))
    assert reply.answers == tuple(expected)
    assert reply.changes == ()
    assert reply.text == answered_text(request.prompts, expected)


def _prompt(labels: list[str], text: str = "Which?") -> dict[str, Any]:
    return {
        "question": text,
        "header": "H",
        "options": [{"label": label, "description": ""} for label in labels],
    }


def _event(questions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "que_1",
        "sessionID": "ses_1",
        "questions": questions,
        "tool": {"messageID": "msg_1", "callID": "call_1"},
    }
