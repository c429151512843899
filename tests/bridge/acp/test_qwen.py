"""Qwen Code's questions over ACP (compass_bridge/acp/qwen.py), on its conversations as
published (tests/bridge/acp/recorded/qwen-*.jsonl, captured from Qwen Code 0.24.4 through the
bridge by tests/realagent/test_acp_agents.py): the permission that carries the questions
becomes one Ask, the answer goes back in Qwen's own `answers` field exactly as the recorded
reply that the real agent took, and the receipt carries the text its model read. And the
rule for every other agent: a permission that expects answers Compass cannot give is never
answered as a bare permission."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from acp.schema import (
    PermissionOption,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    ToolCallUpdate,
)

from compass_bridge.acp.permission import expects_answers
from compass_bridge.acp.qwen import QwenQuestions, qwen_reply, read_questions
from compass_bridge.receipts import DECLINE_PAYLOAD
from gen.compass.v1 import comms_pb2
from tests._wait import eventually
from tests.bridge._inproc import acp_bridge
from tests.bridge.acp.test_agent_forms import RECORDED, agent_messages

ASK_CALL = "call_ask_1"


def client_messages(name: str) -> list[dict[str, Any]]:
    lines = (RECORDED / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["client"] for line in lines if '"client"' in line[:10]]


def recorded_permission(name: str) -> RequestPermissionRequest:
    (params,) = [
        m["params"] for m in agent_messages(name) if m.get("method") == "session/request_permission"
    ]
    return RequestPermissionRequest.model_validate(params)


def recorded_reply(name: str) -> dict[str, Any]:
    """What the bridge answered the permission request in the recorded run (id 0)."""
    (reply,) = [m["result"] for m in client_messages(name) if m.get("id") == 0 and "result" in m]
    return reply


def on_the_wire(response: RequestPermissionResponse) -> dict[str, Any]:
    """The response as the ACP library's connection writes it (connection._execute_request)."""
    return response.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)


def questions_of(name: str) -> QwenQuestions:
    request = recorded_permission(name)
    found = read_questions(request.tool_call, request.options)
    assert isinstance(found, QwenQuestions), found
    return found


def answered(ask: comms_pb2.Ask, **answers: tuple[list[str], str]) -> comms_pb2.Ask:
    copy = comms_pb2.Ask()
    copy.CopyFrom(ask)
    for question in copy.questions:
        chosen, text = answers.get(question.question_id, ([], ""))
        question.chosen_option_ids.extend(chosen)
        question.custom_text = text
    return copy


def test_the_recorded_questions_become_one_ask_with_every_question() -> None:
    ask = questions_of("qwen-ask").ask
    assert [
        (q.question_id, q.header, q.question, q.allow_multiple, q.free_text) for q in ask.questions
    ] == [
        (
            "question_0",
            "Database",
            "Which database should the new service use?",
            False,
            comms_pb2.FREE_TEXT_ACCEPTED,
        ),
        (
            "question_1",
            "Auth",
            "Which auth flows should ship in v1?",
            True,
            comms_pb2.FREE_TEXT_ACCEPTED,
        ),
    ]
    assert [(o.id, o.label, o.description) for o in ask.questions[1].options] == [
        ("0", "Email + password", "classic"),
        ("1", "OAuth", "Google, GitHub"),
    ]


def test_the_answer_goes_back_exactly_as_the_real_agent_took_it() -> None:
    questions = questions_of("qwen-ask")
    reply = qwen_reply(
        questions, answered(questions.ask, question_0=(["1"], ""), question_1=(["0", "1"], ""))
    )
    assert on_the_wire(reply.response) == recorded_reply("qwen-ask")
    assert reply.changes == ()


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        # Own words instead of a pick; after the picks of a multi-select (Qwen's dialog).
        (
            {"question_0": ([], "CockroachDB"), "question_1": (["0"], "Passkeys")},
            {"0": "CockroachDB", "1": "Email + password, Passkeys"},
        ),
        ({"question_1": ([], "Passkeys")}, {"1": "Passkeys"}),
        # A skipped question is left out, as Qwen's own dialog leaves it out.
        ({"question_1": (["1"], "")}, {"1": "OAuth"}),
        ({}, {}),
    ],
)
def test_free_text_and_skips_in_qwen_terms(
    answers: dict[str, tuple[list[str], str]], expected: dict[str, str]
) -> None:
    questions = questions_of("qwen-ask")
    reply = qwen_reply(questions, answered(questions.ask, **answers))
    assert reply.answers == expected
    assert on_the_wire(reply.response)["answers"] == expected
    assert reply.changes == ()


def test_what_cannot_reach_qwen_is_said() -> None:
    questions = questions_of("qwen-ask")
    reply = qwen_reply(questions, answered(questions.ask, question_0=(["1", "7"], "and text")))
    assert reply.answers == {"0": "SQLite"}
    assert reply.changes == (
        "question 'question_0': chosen id '7' is not an option index",
        "question 'question_0': Qwen Code takes one answer to a single-select question; the "
        "free text was left out",
    )


@pytest.mark.parametrize("name", ["claude-permission", "codex-permission", "qwen-permission"])
def test_no_recorded_permission_is_mistaken_for_an_unfillable_form(name: str) -> None:
    """Conservative: the real permissions of three agents are asked as permissions."""
    request = recorded_permission(name)
    assert read_questions(request.tool_call, request.options) is None
    assert expects_answers(request.tool_call) is None


def _call(raw: object = None, meta: dict[str, Any] | None = None) -> ToolCallUpdate:
    return ToolCallUpdate.model_validate(
        {"toolCallId": "t", "title": "t", "rawInput": raw, "_meta": meta}
    )


SUBMIT = [
    PermissionOption(option_id="proceed_once", name="Submit", kind="allow_once"),
    PermissionOption(option_id="cancel", name="Cancel", kind="reject_once"),
]
QUESTION = {"question": "Q?", "header": "H", "options": [{"label": "A", "description": "a"}]}


@pytest.mark.parametrize(
    ("call", "why"),
    [
        (_call({"questions": [QUESTION]}), "its rawInput.questions holds 1 question(s)"),
        (_call(meta={"fooQuestions": [QUESTION]}), "its _meta.fooQuestions holds 1 question(s)"),
        (_call({"requestedSchema": {"type": "object"}}), "its rawInput.requestedSchema is a form"),
        (
            _call(meta={"qwenInteractionKind": "user_input"}),
            "its _meta.qwenInteractionKind is 'user_input'",
        ),
    ],
)
def test_a_permission_that_expects_answers_is_recognised(call: ToolCallUpdate, why: str) -> None:
    assert read_questions(call, SUBMIT) is None
    assert expects_answers(call) == why


@pytest.mark.parametrize(
    ("meta", "options", "why"),
    [
        ({"qwenInteractionKind": "user_question"}, SUBMIT, "it carries no list of questions"),
        (
            {"qwenInteractionKind": "user_question", "qwenQuestions": [QUESTION]},
            SUBMIT[1:],
            "it offers no option that submits answers",
        ),
        (
            {"qwenInteractionKind": "user_question", "qwenQuestions": [{"header": "H"}]},
            SUBMIT,
            "its questions cannot be asked: questions[0].question is missing",
        ),
    ],
)
def test_qwen_questions_that_cannot_be_asked_say_why(
    meta: dict[str, Any], options: list[PermissionOption], why: str
) -> None:
    assert read_questions(_call(meta=meta), options) == why


def _update_of(message: dict[str, Any]) -> object:
    return SessionNotification.model_validate(message["params"]).update


async def _replay_until_permission(
    bridge: Any, name: str
) -> tuple[RequestPermissionRequest, list[dict[str, Any]]]:
    recorded = agent_messages(name)
    for index, message in enumerate(recorded):
        if message.get("method") == "session/update":
            await bridge.session_update("s", _update_of(message))
        elif message.get("method") == "session/request_permission":
            return RequestPermissionRequest.model_validate(message["params"]), recorded[index + 1 :]
    raise AssertionError("no permission request recorded")


async def test_the_recorded_conversation_answers_qwen_and_the_receipt_holds_what_it_read() -> None:
    async with acp_bridge() as (bridge, service):
        request, after = await _replay_until_permission(bridge, "qwen-ask")
        pending = asyncio.create_task(
            bridge.request_permission("s", request.tool_call, request.options)
        )
        await eventually(service.ask_ids, "the questions' ask posted")
        (ask_id,) = service.ask_ids()
        service.answer(ask_id, {"question_0": (["1"], ""), "question_1": (["0", "1"], "")})
        async with asyncio.timeout(5):
            response = await pending
        assert on_the_wire(response) == recorded_reply("qwen-ask")
        for message in after:
            if message.get("method") == "session/update":
                await bridge.session_update("s", _update_of(message))
        bridge.end_turn()
        await eventually(lambda: service.receipts, "the receipt reported")
        (receipt,) = service.receipts
        (read,) = [
            m["params"]["update"]["content"][0]["content"]["text"]
            for m in after
            if m.get("method") == "session/update"
            and m["params"]["update"].get("toolCallId") == ASK_CALL
            and m["params"]["update"].get("status") == "completed"
        ]
        assert read == (
            "User has provided the following answers:\n\n"
            "**Database**: SQLite\n**Auth**: Email + password, OAuth"
        )
        assert (receipt.ask_id, receipt.state, receipt.detail, receipt.payload) == (
            ask_id,
            comms_pb2.DELIVERY_STATE_DELIVERED,
            "",
            read,
        )
        # Qwen sends no message ids: the lead-in, the ask and the model's next reply are
        # three messages, in that order.
        stored = list(service.messages.values())
        assert [
            [b.text.text if b.HasField("text") else "ask" for b in m.blocks] for m in stored
        ] == [["Two quick questions first."], ["ask"], ["Thanks."]]


async def test_a_recorded_decline_is_qwens_cancel() -> None:
    async with acp_bridge() as (bridge, service):
        request, _after = await _replay_until_permission(bridge, "qwen-decline")
        pending = asyncio.create_task(
            bridge.request_permission("s", request.tool_call, request.options)
        )
        await eventually(service.ask_ids, "the questions' ask posted")
        (ask_id,) = service.ask_ids()
        service.decline(ask_id, "not now")
        async with asyncio.timeout(5):
            response = await pending
        assert on_the_wire(response) == recorded_reply("qwen-decline")
        assert on_the_wire(response) == {"outcome": {"outcome": "selected", "optionId": "cancel"}}
        bridge.end_turn()
        await eventually(lambda: service.receipts, "the receipt reported")
        (receipt,) = service.receipts
        assert (receipt.state, receipt.payload) == (
            comms_pb2.DELIVERY_STATE_DELIVERED,
            DECLINE_PAYLOAD,
        )


async def test_a_permission_expecting_answers_is_cancelled_without_asking() -> None:
    async with acp_bridge() as (bridge, service):
        response = await bridge.request_permission(
            "s", _call({"questions": [QUESTION]}), list(SUBMIT)
        )
        assert on_the_wire(response) == {"outcome": {"outcome": "cancelled"}}
        assert service.ask_ids() == []
        assert bridge.delivered == 0


async def test_a_call_that_fails_after_submit_is_not_delivered() -> None:
    async with acp_bridge() as (bridge, service):
        request, after = await _replay_until_permission(bridge, "qwen-ask")
        pending = asyncio.create_task(
            bridge.request_permission("s", request.tool_call, request.options)
        )
        await eventually(service.ask_ids, "the questions' ask posted")
        (ask_id,) = service.ask_ids()
        service.answer(ask_id, {"question_0": (["1"], ""), "question_1": (["0", "1"], "")})
        async with asyncio.timeout(5):
            await pending
        (ended,) = [
            m
            for m in after
            if m.get("method") == "session/update"
            and m["params"]["update"].get("status") == "completed"
        ]
        failed = json.loads(json.dumps(ended))
        failed["params"]["update"]["status"] = "failed"
        await bridge.session_update("s", _update_of(failed))
        bridge.end_turn()
        await eventually(lambda: service.receipts, "the receipt reported")
        (receipt,) = service.receipts
        assert (receipt.state, receipt.detail) == (
            comms_pb2.DELIVERY_STATE_NOT_DELIVERED,
            "the agent's tool call failed after the answer was handed to it",
        )
        assert receipt.payload == '{"0":"SQLite","1":"Email + password, OAuth"}'
