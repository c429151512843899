"""The one rule for receipts over ACP (compass_bridge/acp/calls.py): an answer handed over
for a tool call the agent announced is reported when that call ends (what the model read, or
NOT_DELIVERED for a failed call), within a bound; anything else at the hand-over."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from acp.client.router import (
    _mode_from_create_elicitation_request,  # pyright: ignore[reportPrivateUsage]
    _validate_create_elicitation_request,  # pyright: ignore[reportPrivateUsage]
)
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    PermissionOption,
    SessionNotification,
    ToolCallUpdate,
)

from compass_bridge.acp.calls import CallReceipts
from compass_bridge.receipts import Receipt, delivered
from gen.compass.v1 import comms_pb2
from tests._wait import eventually
from tests.bridge._inproc import acp_bridge

DELIVERED = comms_pb2.DELIVERY_STATE_DELIVERED
NOT_DELIVERED = comms_pb2.DELIVERY_STATE_NOT_DELIVERED
SENT = '{"db":"SQLite"}'
READ = 'The user answered: "Which database?"="SQLite"'

HOUR = 3600.0
"""A call end wait no test reaches."""


def update(**fields: Any) -> object:
    return SessionNotification.model_validate({"sessionId": "s", "update": fields}).update


def started(call_id: str = "c1", title: str = "Shell", raw_input: object = None) -> object:
    return update(
        sessionUpdate="tool_call",
        toolCallId=call_id,
        title=title,
        status="pending",
        rawInput=raw_input if raw_input is not None else {},
    )


def ended(call_id: str = "c1", status: str = "completed", raw_output: object = READ) -> object:
    fields: dict[str, Any] = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": status,
    }
    if raw_output is not None:
        fields["rawOutput"] = raw_output
    return update(**fields)


class _Asks:
    """Records what AgentAsks.report_soon is handed."""

    def __init__(self) -> None:
        self.reported: list[tuple[str, Receipt]] = []

    def report_soon(self, ask_id: str, receipt: Receipt) -> None:
        self.reported.append((ask_id, receipt))


def receipts(seconds: float = 3600.0) -> tuple[CallReceipts, _Asks]:
    asks = _Asks()
    return CallReceipts(asks, seconds), asks  # pyright: ignore[reportArgumentType]


# -- the rule ----------------------------------------------------------------------------------


async def test_a_completed_call_reports_what_the_model_read() -> None:
    calls, asks = receipts()
    calls.update(started())
    calls.report("c1", "a1", delivered((), SENT))
    assert asks.reported == []
    calls.update(ended(raw_output={"content": [{"type": "text", "text": "ok"}]}))
    assert asks.reported == [("a1", Receipt(DELIVERED, "", "ok"))]


async def test_a_call_ending_without_a_result_keeps_what_was_sent_and_its_changes() -> None:
    calls, asks = receipts()
    calls.update(started())
    sent = delivered(["question 'db': left out"], SENT)
    calls.report("c1", "a1", sent)
    calls.update(ended(raw_output=None))
    assert asks.reported == [("a1", sent)]


async def test_a_failed_call_did_not_deliver() -> None:
    calls, asks = receipts()
    calls.update(started())
    calls.report("c1", "a1", delivered((), SENT))
    calls.update(ended(status="failed"))
    ((ask_id, receipt),) = asks.reported
    assert (ask_id, receipt.state, receipt.payload) == ("a1", NOT_DELIVERED, SENT)
    assert "failed after the answer was handed to it" in receipt.detail


async def test_a_call_that_ended_before_the_answer_did_not_take_it() -> None:
    calls, asks = receipts()
    calls.update(started())
    calls.update(ended())
    calls.report("c1", "a1", delivered((), SENT))
    ((_, receipt),) = asks.reported
    assert (receipt.state, receipt.payload) == (NOT_DELIVERED, SENT)
    assert "had ended before the answer was handed to it" in receipt.detail


@pytest.mark.parametrize("call_id", [None, "never-announced"])
async def test_an_answer_for_no_announced_call_is_reported_at_once(call_id: str | None) -> None:
    """Codex's `request_user_input` form names an item of no tool call: nothing will say
    more than what was sent."""
    calls, asks = receipts()
    calls.update(started("other"))
    calls.report(call_id, "a1", delivered((), SENT))
    assert asks.reported == [("a1", Receipt(DELIVERED, "", SENT))]


async def test_an_update_alone_announces_a_call() -> None:
    calls, asks = receipts()
    calls.update(update(sessionUpdate="tool_call_update", toolCallId="c1", status="in_progress"))
    calls.report("c1", "a1", delivered((), SENT))
    assert asks.reported == []
    calls.update(ended())
    assert asks.reported == [("a1", Receipt(DELIVERED, "", READ))]


async def test_the_turn_end_reports_what_was_sent_and_later_answers_at_once() -> None:
    calls, asks = receipts()
    calls.update(started())
    calls.report("c1", "a1", delivered((), SENT))
    calls.end_turn()
    calls.report("c1", "a2", delivered((), SENT))  # no call ends after the turn
    calls.update(ended())
    assert asks.reported == [
        ("a1", Receipt(DELIVERED, "", SENT)),
        ("a2", Receipt(DELIVERED, "", SENT)),
    ]


async def test_a_call_that_never_ends_gets_what_was_sent_after_the_bound(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls, asks = receipts(seconds=0.01)
    calls.update(started())
    calls.report("c1", "a1", delivered((), SENT))
    await eventually(lambda: asks.reported, "the receipt after the bound")
    assert asks.reported == [("a1", Receipt(DELIVERED, "", SENT))]
    assert "did not end within 0.01 s of the answer" in caplog.text
    calls.update(ended(status="failed"))  # too late: a receipt cannot be changed
    assert len(asks.reported) == 1


# -- through the bridge ------------------------------------------------------------------------


def form_for(call_id: str) -> Any:
    request = _validate_create_elicitation_request(
        {
            "mode": "form",
            "sessionId": "s",
            "toolCallId": call_id,
            "message": "Answer",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "db": {"type": "string", "title": "Which database?", "enum": ["P", "SQLite"]}
                },
            },
        }
    )
    return _mode_from_create_elicitation_request(request)


@pytest.mark.parametrize(
    ("title", "raw_input"),
    [
        ("Shell", {}),
        # Claude Code's AskUserQuestion announced with its questions (no ids): no Ask maps.
        ("Asking for your input", {"questions": [{"question": "Which database?"}]}),
        # Titled as oh-my-pi's ask tool, but with arguments no Ask maps from.
        ("ask", {"questions": [{"question": "Which database?"}]}),
    ],
    ids=["another tool", "questions without ids", "an ask without an Ask"],
)
async def test_a_form_naming_a_running_call_waits_for_it_whatever_the_call_is(
    title: str, raw_input: object
) -> None:
    async with acp_bridge(call_end_seconds=HOUR) as (bridge, service):
        await bridge.session_update("s", started("c1", title, raw_input))
        form = asyncio.create_task(bridge.create_elicitation("Answer", form_for("c1")))
        await eventually(service.ask_ids, "the form's ask posted")
        (ask_id,) = service.ask_ids()
        service.answer(ask_id, {"db": (["1"], "")})
        async with asyncio.timeout(5):
            response = await form
        assert isinstance(response, AcceptElicitationResponse)
        assert response.content == {"db": "SQLite"}
        assert bridge.asks.receipts == {}
        await bridge.session_update("s", ended("c1"))
        await eventually(lambda: service.receipts, "the receipt reported")
        (receipt,) = service.receipts
        assert (receipt.ask_id, receipt.state, receipt.payload) == (ask_id, DELIVERED, READ)


async def test_a_call_that_never_ends_gets_its_receipt_before_the_turn_does() -> None:
    async with acp_bridge(call_end_seconds=0.01) as (bridge, service):
        await bridge.session_update("s", started("c1"))
        form = asyncio.create_task(bridge.create_elicitation("Answer", form_for("c1")))
        await eventually(service.ask_ids, "the form's ask posted")
        (ask_id,) = service.ask_ids()
        service.answer(ask_id, {"db": (["1"], "")})
        async with asyncio.timeout(5):
            await form
        await eventually(lambda: service.receipts, "the receipt reported")
        (receipt,) = service.receipts
        assert (receipt.ask_id, receipt.state, receipt.payload) == (ask_id, DELIVERED, SENT)


async def test_a_permissions_choice_is_reported_at_the_hand_over_even_for_a_running_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A permission is a gate, not the call's input: a reject fails the call by design, an
    allowed command may fail on its own; neither says the choice was not received."""
    caplog.set_level(logging.INFO, logger="compass_bridge")
    async with acp_bridge(call_end_seconds=HOUR) as (bridge, service):
        await bridge.session_update("s", started("c1", "touch marker"))
        options = [
            PermissionOption(option_id="a", name="Allow", kind="allow_once"),
            PermissionOption(option_id="r", name="Reject", kind="reject_once"),
        ]
        asking = asyncio.create_task(
            bridge.request_permission(
                "s", ToolCallUpdate(tool_call_id="c1", title="touch marker"), options
            )
        )
        await eventually(service.ask_ids, "the permission's ask posted")
        (ask_id,) = service.ask_ids()
        service.answer(ask_id, {"permission": (["1"], "")})
        async with asyncio.timeout(5):
            response = await asking
        assert response.outcome == AllowedOutcome(outcome="selected", option_id="r")
        assert bridge.asks.receipts == {
            ask_id: Receipt(DELIVERED, "", '{"kind":"reject_once","option":"Reject"}')
        }
        await bridge.session_update("s", ended("c1", "failed", None))
        await eventually(lambda: service.receipts, "the receipt reported")
        (receipt,) = service.receipts
        assert (receipt.state, receipt.payload) == (
            DELIVERED,
            '{"kind":"reject_once","option":"Reject"}',
        )
