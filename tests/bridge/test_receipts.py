"""Delivery truth in the bridge (issue 22): what the posted asks say the runtime can receive,
and the receipt (ReportDelivery) after every answer or decline, on both transports, against
the in-process AgentService peer. The end-to-end and real-agent tests check the same against
the real server.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any

import pytest
from acp.schema import PermissionOption, ToolCallUpdate

from compass_bridge.receipts import DECLINE_PAYLOAD, delivered, mark_native_free_text
from gen.compass.v1 import comms_pb2
from tests._wait import eventually
from tests.bridge import _events as ev
from tests.bridge._inproc import acp_bridge, harness
from tests.bridge.test_outcomes import (
    GALLERY,
    ONE,
    _acp_ask,  # pyright: ignore[reportPrivateUsage]
    _call_end,  # pyright: ignore[reportPrivateUsage]
    _posted,  # pyright: ignore[reportPrivateUsage]
    _select,  # pyright: ignore[reportPrivateUsage]
    _tool_end,  # pyright: ignore[reportPrivateUsage]
)

if TYPE_CHECKING:
    from tests.bridge._fake_service import FakeAgentService

DELIVERED = comms_pb2.DELIVERY_STATE_DELIVERED
CHANGED = comms_pb2.DELIVERY_STATE_DELIVERED_WITH_CHANGES
NOT_DELIVERED = comms_pb2.DELIVERY_STATE_NOT_DELIVERED
ACCEPTED = comms_pb2.FREE_TEXT_ACCEPTED
INSTEAD = comms_pb2.FREE_TEXT_INSTEAD_OF_PICKS
MULTI_ONLY = [GALLERY[1]]


async def _receipts(service: FakeAgentService, count: int = 1) -> list[tuple[str, int, str, str]]:
    await eventually(lambda: len(service.receipts) >= count, f"{count} receipt(s)")
    return [(r.ask_id, r.state, r.detail, r.payload) for r in service.receipts]


def _result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "details": {}}


# -- what the posted ask says ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("questions", "expected"),
    [
        (GALLERY, [ACCEPTED, INSTEAD]),  # omp summarises picks + text of `features` as the text
        (MULTI_ONLY, [ACCEPTED]),  # one question: its summary shows both
        (ONE, [ACCEPTED]),
    ],
)
async def test_an_omp_ask_says_what_free_text_the_runtime_receives(
    questions: list[dict[str, Any]], expected: list[int]
) -> None:
    async with harness() as h:
        await _posted(h, questions)
        (message,) = h.service.messages.values()
        (block,) = [b for b in message.blocks if b.HasField("ask")]
        assert [q.free_text for q in block.ask.questions] == expected
    async with acp_bridge() as (bridge, service):
        form, ask_id = await _acp_ask(bridge, service, questions)
        assert [q.free_text for q in service.ask(ask_id).questions] == expected
        form.cancel()


def test_marking_is_idempotent_and_leaves_a_question_without_options_accepting() -> None:
    ask = comms_pb2.Ask()
    ask.questions.add(question_id="a", allow_multiple=True)  # no options
    ask.questions.add(question_id="b", allow_multiple=True).options.add(id="0", label="x")
    mark_native_free_text(ask)
    first = ask.SerializeToString()
    mark_native_free_text(ask)
    assert ask.SerializeToString() == first
    assert [q.free_text for q in ask.questions] == [ACCEPTED, INSTEAD]


def test_a_receipt_cuts_what_the_server_would_refuse() -> None:
    receipt = delivered(["x" * 700, "y" * 700, "x" * 700], "z" * 70_000)
    assert receipt.state == CHANGED
    assert len(receipt.detail) == 1000
    assert receipt.detail.endswith(" [...]")
    assert len(receipt.payload) == 65536
    assert delivered([], "p").state == DELIVERED


# -- ACP ---------------------------------------------------------------------------------------


async def test_acp_the_receipt_waits_for_the_call_and_carries_what_the_model_read() -> None:
    async with acp_bridge() as (bridge, service):
        form, ask_id = await _acp_ask(bridge, service, ONE)
        service.answer(ask_id, {"db": (["1"], "")})
        async with asyncio.timeout(5):
            assert (await form).action == "accept"
        await asyncio.sleep(0.05)  # time for a wrong, early receipt to show up
        assert service.receipts == []  # not before the agent confirmed it by ending the call
        read = "User selected: SQLite"
        await bridge.session_update("s", _call_end("c1", "completed", _result(read)))
        assert await _receipts(service) == [(ask_id, DELIVERED, "", read)]


async def test_acp_picks_and_text_the_agent_summarises_as_text_are_a_change() -> None:
    async with acp_bridge() as (bridge, service):
        form, ask_id = await _acp_ask(bridge, service, GALLERY)
        service.answer(ask_id, {"db": (["0"], ""), "features": (["0", "2"], "and passkeys")})
        async with asyncio.timeout(5):
            response = await form
        assert response.content == {
            "q0": "Postgres",
            "q1": ["Email + password", "Magic links"],
            "q1__other": "and passkeys",
        }
        bridge.end_turn()  # no call end came: the receipt says what the bridge sent
        ((got_id, state, detail, payload),) = await _receipts(service)
        assert (got_id, state) == (ask_id, CHANGED)
        assert "question 'features'" in detail
        assert "shows only the text" in detail
        assert json.loads(payload) == response.content


async def test_acp_a_call_that_fails_after_the_answer_is_not_delivered() -> None:
    async with acp_bridge() as (bridge, service):
        form, ask_id = await _acp_ask(bridge, service, ONE)
        service.answer(ask_id, {"db": ([], "Something else")})
        async with asyncio.timeout(5):
            assert (await form).action == "accept"
        await bridge.session_update("s", _call_end("c1", "failed"))
        ((got_id, state, detail, payload),) = await _receipts(service)
        assert (got_id, state) == (ask_id, NOT_DELIVERED)
        assert "failed" in detail
        assert json.loads(payload) == {"q0__other": "Something else"}
        assert service.closes == []  # answered: nothing to close


async def test_acp_a_decline_is_delivered_as_the_agents_decline() -> None:
    async with acp_bridge() as (bridge, service):
        form, ask_id = await _acp_ask(bridge, service, GALLERY)
        service.decline(ask_id, "not now")
        async with asyncio.timeout(5):
            assert (await form).action == "decline"
        assert await _receipts(service) == [(ask_id, DELIVERED, "", DECLINE_PAYLOAD)]


async def test_acp_a_permission_answer_and_a_missing_choice_are_reported() -> None:
    async with acp_bridge() as (bridge, service):
        options = [
            PermissionOption(option_id="a", name="Allow", kind="allow_once"),
            PermissionOption(option_id="r", name="Reject", kind="reject_once"),
        ]
        for posted, chosen in enumerate((["0"], [])):
            asking = asyncio.create_task(
                bridge.request_permission(
                    "s", ToolCallUpdate(tool_call_id="t", title="ls"), options
                )
            )
            await eventually(lambda n=posted: len(service.ask_ids()) > n, "the ask posted")
            ask_id = service.ask_ids()[-1]
            question = service.ask(ask_id).questions[0]
            assert question.free_text == comms_pb2.FREE_TEXT_REFUSED
            service.answer(ask_id, {"permission": (chosen, "")})
            async with asyncio.timeout(5):
                await asking
        receipts = await _receipts(service, 2)
    (first, second) = receipts
    assert first[1:3] == (DELIVERED, "")
    assert json.loads(first[3]) == {"kind": "allow_once", "option": "Allow"}
    assert second[1] == CHANGED
    assert "no option was chosen" in second[2]
    assert json.loads(second[3]) == {"kind": "reject_once", "option": "Reject"}


async def test_a_server_without_receipts_is_warned_about_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="compass_bridge")
    async with acp_bridge() as (bridge, service):
        service.legacy = True
        for call in ("c1", "c2"):
            form = asyncio.create_task(bridge.create_elicitation("Answer", _form(ONE)))
            await asyncio.sleep(0)
            await bridge.session_update("s", _ask(ONE, call))
            await eventually(lambda c=call: _stored(service, c), "the ask posted")
            service.answer(service.ask_ids()[-1], {"db": (["0"], "")})
            async with asyncio.timeout(5):
                await form
            await bridge.session_update("s", _call_end(call, "completed", _result("ok")))
        await bridge.asks.settle()
        assert len(service.receipts) == 1  # the second one is not even tried
    said = [r.getMessage() for r in caplog.records if "no delivery receipts" in r.getMessage()]
    assert len(said) == 1


def _form(questions: list[dict[str, Any]]) -> Any:
    from tests.bridge.test_outcomes import _form_mode  # pyright: ignore[reportPrivateUsage]

    return _form_mode(questions)


def _ask(questions: list[dict[str, Any]], call_id: str) -> object:
    from tests.bridge.test_outcomes import _ask_call  # pyright: ignore[reportPrivateUsage]

    return _ask_call(questions, call_id)


def _stored(service: FakeAgentService, call: str) -> bool:
    return len(service.ask_ids()) == int(call[1:])


# -- omp's RPC mode ----------------------------------------------------------------------------


async def test_rpc_a_decline_is_delivered_as_the_runtimes_cancel() -> None:
    async with harness() as h:
        ask_id = await _posted(h, ONE)
        h.service.decline(ask_id)
        await h.replies(1)
        assert await _receipts(h.service) == [(ask_id, DELIVERED, "", DECLINE_PAYLOAD)]


async def test_rpc_a_failed_call_after_the_answer_is_not_delivered() -> None:
    async with harness() as h:
        ask_id = await _posted(h, ONE)
        h.service.answer(ask_id, {"db": (["2"], "")})
        await h.replies(1)  # the select is answered
        h.feed(_tool_end("c1", is_error=True))
        ((got_id, state, detail, _payload),) = await _receipts(h.service)
        assert (got_id, state) == (ask_id, NOT_DELIVERED)
        assert "failed" in detail


async def test_rpc_the_runtime_exiting_mid_answer_is_not_delivered() -> None:
    async with harness() as h:
        ask_id = await _posted(h, MULTI_ONLY)
        h.service.answer(ask_id, {"features": (["0", "1"], "")})
        await h.replies(1)  # the first pick; the runtime would ask again for the second
        await h.bridge.stop_waiting()
        ((got_id, state, detail, _payload),) = await _receipts(h.service)
        assert (got_id, state) == (ask_id, NOT_DELIVERED)
        assert "stopped before the ask call ended" in detail


async def test_rpc_a_runtime_that_asked_before_its_call_gets_one_receipt() -> None:
    """The held first select (omp sends it before the call starts) changes nothing."""
    async with harness(hold_seconds=2.0) as h:
        h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", ONE)]))
        h.feed(_select(ONE), ev.ask_start("c1", ONE))
        await h.settle()
        (ask_id,) = h.service.ask_ids()
        h.service.answer(ask_id, {"db": (["0"], "")})
        await h.replies(1)
        h.feed(_tool_end("c1", result=_result("User selected: Postgres")))
        assert await _receipts(h.service) == [(ask_id, DELIVERED, "", "User selected: Postgres")]
        await h.bridge.stop_waiting()
        assert len(h.service.receipts) == 1
