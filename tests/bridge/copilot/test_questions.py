"""Copilot CLI's questions <-> typed Asks (compass_bridge/copilot/questions.py), on its
conversations as published (recorded/, from Copilot CLI 1.0.102 through the bridge): each
recorded question becomes the Ask a person answers, and each answer goes back exactly as the
recorded reply the real CLI took (its model then read the recorded tool result)."""

from __future__ import annotations

from typing import Any

import pytest

from compass_bridge.copilot.questions import (
    QUESTION_ID,
    Form,
    UserInput,
    form_refusal,
    form_reply,
    read_form,
    read_tool_result,
    read_user_input,
    user_input_refusal,
    user_input_reply,
)
from gen.compass.v1 import comms_pb2
from tests.bridge.copilot._recorded import client_requests, events


def user_input(name: str) -> UserInput:
    (data,) = events(name, "user_input.requested")
    found = read_user_input(data)
    assert isinstance(found, UserInput), found
    return found


def form(name: str) -> Form:
    (data,) = events(name, "elicitation.requested")
    found = read_form(data)
    assert isinstance(found, Form), found
    return found


def recorded_reply(name: str, method: str, key: str) -> dict[str, Any]:
    (params,) = client_requests(name, method)
    return params[key]


def answered(ask: comms_pb2.Ask, **answers: tuple[list[str], str]) -> comms_pb2.Ask:
    copy = comms_pb2.Ask()
    copy.CopyFrom(ask)
    for question in copy.questions:
        chosen, text = answers.get(question.question_id, ([], ""))
        question.chosen_option_ids.extend(chosen)
        question.custom_text = text
    copy.status = comms_pb2.ASK_STATUS_ANSWERED
    return copy


def declined(ask: comms_pb2.Ask, by: str, reason: str) -> comms_pb2.Ask:
    copy = comms_pb2.Ask()
    copy.CopyFrom(ask)
    copy.status = comms_pb2.ASK_STATUS_DECLINED
    copy.closed_by_name = by
    copy.close_reason = reason
    return copy


# -- ask_user (Copilot's default variant) ---------------------------------------------------


def test_the_recorded_question_becomes_one_question_with_its_choices() -> None:
    request = user_input("choice")
    assert (request.request_id, request.tool_call_id) == (
        events("choice", "user_input.requested")[0]["requestId"],
        "call_ask_1",
    )
    (question,) = request.ask.questions
    assert (question.question_id, question.question, question.allow_multiple) == (
        QUESTION_ID,
        "Which database should the new service use?",
        False,
    )
    assert [(o.id, o.label) for o in question.options] == [("0", "Postgres"), ("1", "SQLite")]
    # allowFreeform: the person's own words reach the model; Copilot has no skip.
    assert (question.free_text, question.answer_required) == (comms_pb2.FREE_TEXT_ACCEPTED, True)


@pytest.mark.parametrize(
    ("name", "answer"),
    [("choice", (["1"], "")), ("free-text", ([], "CockroachDB"))],
)
def test_the_answer_goes_back_exactly_as_the_real_cli_took_it(
    name: str, answer: tuple[list[str], str]
) -> None:
    request = user_input(name)
    reply = user_input_reply(request, answered(request.ask, **{QUESTION_ID: answer}))
    assert reply.payload == recorded_reply(name, "session.ui.handlePendingUserInput", "response")
    assert reply.changes == ()


def test_a_decline_goes_back_in_the_words_the_model_read() -> None:
    request = user_input("decline")
    reply = user_input_refusal(declined(request.ask, "Ada", "not now"))
    assert reply.payload == recorded_reply(
        "decline", "session.ui.handlePendingUserInput", "response"
    )
    (result,) = events("decline", "tool.execution_complete")
    assert result["result"]["content"] == f"User responded: {reply.payload['answer']}"


def test_without_allow_freeform_free_text_is_refused_unless_nothing_else_answers() -> None:
    data = {**events("choice", "user_input.requested")[0], "allowFreeform": False}
    refused = read_user_input(data)
    assert isinstance(refused, UserInput)
    assert refused.ask.questions[0].free_text == comms_pb2.FREE_TEXT_REFUSED
    bare = read_user_input({**data, "choices": []})
    assert isinstance(bare, UserInput)
    assert bare.ask.questions[0].free_text == comms_pb2.FREE_TEXT_ACCEPTED
    assert list(bare.ask.questions[0].options) == []


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ("text", "the request is not an object"),
        ({"question": "Q?"}, "the request has no requestId"),
        (
            {"requestId": "r", "question": "Q?", "choices": "a, b"},
            "its choices are not a list of strings",
        ),
        ({"requestId": "r"}, "it cannot be asked: questions[0].question is missing"),
        (
            {"requestId": "r", "question": "Q\x00?"},
            "it cannot be asked: questions[0].question contains a NUL character",
        ),
    ],
)
def test_a_question_that_cannot_be_asked_says_why(data: object, why: str) -> None:
    assert read_user_input(data) == why


def test_a_bad_chosen_id_is_reported_not_guessed() -> None:
    request = user_input("choice")
    reply = user_input_reply(request, answered(request.ask, **{QUESTION_ID: (["7"], "")}))
    assert reply.payload == {"answer": "", "wasFreeform": False}
    assert reply.changes == (
        "chosen id '7' is not one of the choices",
        "nothing was chosen; Copilot got an empty answer",
    )


# -- ask_user's form variant ------------------------------------------------------------------


def test_the_recorded_form_becomes_one_question_per_field_taking_own_words() -> None:
    found = form("form")
    assert (found.tool_call_id, found.source) == ("call_ask_1", "")
    ask = found.plan.ask
    assert [
        (q.question_id, q.question, q.allow_multiple, q.free_text, [o.label for o in q.options])
        for q in ask.questions
    ] == [
        ("db", "Database", False, comms_pb2.FREE_TEXT_ACCEPTED, ["Postgres", "SQLite"]),
        ("extras", "Extras", True, comms_pb2.FREE_TEXT_ACCEPTED, ["cache", "queue"]),
        ("note", "Anything else?", False, comms_pb2.FREE_TEXT_ACCEPTED, []),
    ]
    assert found.plan.intro == "Set up the new service"


def test_the_form_answer_goes_back_exactly_as_the_real_cli_took_it() -> None:
    found = form("form")
    reply = form_reply(
        found,
        answered(
            found.plan.ask,
            db=([], "MariaDB"),
            extras=(["0", "1"], ""),
            note=([], "ship it friday"),
        ),
    )
    assert reply.payload == recorded_reply("form", "session.ui.handlePendingElicitation", "result")
    content = reply.payload["content"]
    assert isinstance(content, dict)
    assert list(content) == ["db", "extras", "note"]  # the model reads them in this order
    assert reply.changes == ()


def test_a_multi_select_takes_picks_and_own_words() -> None:
    found = form("form")
    reply = form_reply(found, answered(found.plan.ask, extras=(["1"], "search")))
    assert reply.payload == {"action": "accept", "content": {"extras": ["queue", "search"]}}


def test_a_declined_form_is_declined_any_other_outcome_cancelled() -> None:
    found = form("form-decline")
    reply = form_refusal(declined(found.plan.ask, "Ada", "not now"))
    assert reply.payload == recorded_reply(
        "form-decline", "session.ui.handlePendingElicitation", "result"
    )
    expired = comms_pb2.Ask()
    expired.CopyFrom(found.plan.ask)
    expired.status = comms_pb2.ASK_STATUS_EXPIRED
    assert form_refusal(expired).payload == {"action": "cancel"}


def test_an_mcp_servers_form_is_answered_in_its_schemas_terms() -> None:
    (data,) = events("form", "elicitation.requested")
    found = read_form({**data, "elicitationSource": "deploy-server"})
    assert isinstance(found, Form)
    # Only Copilot's own form takes words in a choice: an MCP server validates its schema.
    assert [q.free_text for q in found.plan.ask.questions] == [
        comms_pb2.FREE_TEXT_REFUSED,
        comms_pb2.FREE_TEXT_REFUSED,
        comms_pb2.FREE_TEXT_ACCEPTED,
    ]
    reply = form_reply(found, answered(found.plan.ask, db=(["0"], ""), note=([], "hi")))
    assert reply.payload == {"action": "accept", "content": {"db": "Postgres", "note": "hi"}}


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (
            {"requestId": "r", "message": "m", "mode": "url", "url": "https://x"},
            "a 'url' elicitation is not a form",
        ),
        ({"requestId": "r", "message": "m"}, "the form has no requestedSchema or message"),
        (
            {"requestId": "r", "message": "m", "requestedSchema": {"properties": {}}},
            "the form has no properties",
        ),
    ],
)
def test_a_form_that_cannot_be_presented_says_why(data: object, why: str) -> None:
    assert read_form(data) == why


# -- what the model read ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["choice", "free-text", "decline", "form", "form-decline"])
def test_the_tool_result_is_the_text_the_model_read(name: str) -> None:
    (data,) = events(name, "tool.execution_complete")
    result = read_tool_result(data)
    assert result is not None
    assert (result.tool_call_id, result.success) == ("call_ask_1", True)
    assert result.text == data["result"]["content"]


def test_a_failed_call_reads_its_error() -> None:
    result = read_tool_result(
        {"toolCallId": "c", "success": False, "error": {"message": "denied", "code": "denied"}}
    )
    assert result is not None
    assert (result.success, result.text) == (False, "denied")
    assert read_tool_result({"success": True}) is None
