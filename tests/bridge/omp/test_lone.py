"""omp/lone.py: a dialog no ask call claims (another extension's select, confirm, input or
editor, in pi's `--mode rpc` or omp's) is asked in Compass as one question of its own, and
its answer is the dialog's reply. The frames are pi's (src/modes/rpc/rpc-mode.ts; the
gate's confirm is also recorded: test_pi.py)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from compass_bridge.omp.lone import KEEP_PREFILL
from compass_bridge.receipts import DECLINE_PAYLOAD
from gen.compass.v1 import agent_pb2, comms_pb2
from tests._wait import eventually
from tests.bridge._inproc import Harness, harness

Frame = dict[str, Any]


def dialog(method: str, rid: str = "d1", **fields: Any) -> Frame:
    return {"type": "extension_ui_request", "id": rid, "method": method, **fields}


async def asked(h: Harness, frame: Frame) -> comms_pb2.Ask:
    """Feed the dialog; the Ask it became, once stored."""
    h.feed(frame)
    await h.settle()
    return h.service.ask(h.service.ask_ids()[-1])


async def receipt(h: Harness) -> agent_pb2.ReportDeliveryRequest:
    await eventually(lambda: h.service.receipts, "the delivery receipt")
    return h.service.receipts[-1]


@pytest.mark.parametrize(
    ("frame", "question", "labels", "free_text", "required"),
    [
        (
            dialog("select", title="Deploy to?", options=["staging", "prod"]),
            "Deploy to?",
            ["staging", "prod"],
            comms_pb2.FREE_TEXT_REFUSED,
            True,
        ),
        (
            dialog("confirm", title="Clear session?", message="All messages will be lost."),
            "Clear session?\n\nAll messages will be lost.",
            ["Yes", "No"],
            comms_pb2.FREE_TEXT_REFUSED,
            True,
        ),
        (
            dialog("input", title="Enter a value", placeholder="type something..."),
            "Enter a value",
            [],
            comms_pb2.FREE_TEXT_ACCEPTED,
            False,
        ),
        (
            dialog("editor", title="Commit message"),
            "Commit message",
            [],
            comms_pb2.FREE_TEXT_ACCEPTED,
            False,
        ),
        (
            dialog("editor", title="Edit some text", prefill="Line 1\nLine 2"),
            "Edit some text",
            [KEEP_PREFILL],
            comms_pb2.FREE_TEXT_ACCEPTED,
            True,
        ),
    ],
    ids=["select", "confirm", "input", "editor", "editor-prefilled"],
)
async def test_each_dialog_is_one_question(
    frame: Frame, question: str, labels: list[str], free_text: int, required: bool
) -> None:
    async with harness() as h:
        ask = await asked(h, frame)
    (only,) = ask.questions
    assert (only.question_id, only.question) == (frame["method"], question)
    assert [o.label for o in only.options] == labels
    assert (only.free_text, only.answer_required) == (free_text, required)
    assert not ask.HasField("deadline")
    if frame.get("prefill"):
        assert only.options[0].preview == frame["prefill"]


@pytest.mark.parametrize(
    ("frame", "answer", "reply"),
    [
        (dialog("select", title="Deploy to?", options=["staging", "prod"]), (["1"], ""), {"value": "prod"}),
        (dialog("confirm", title="Clear?", message=""), (["0"], ""), {"confirmed": True}),
        (dialog("confirm", title="Clear?", message=""), (["1"], ""), {"confirmed": False}),
        (dialog("input", title="Name?"), ([], "ledger\nsvc"), {"value": "ledger\nsvc"}),
        (dialog("input", title="Name?"), ([], ""), {"value": ""}),
        (dialog("editor", title="Msg", prefill="feat: x"), (["0"], ""), {"value": "feat: x"}),
        (dialog("editor", title="Msg", prefill="feat: x"), ([], "fix: y"), {"value": "fix: y"}),
    ],
    ids=["select", "yes", "no", "input", "input-skipped", "editor-kept", "editor-replaced"],
)  # fmt: skip
async def test_the_answer_is_the_dialogs_reply_exactly(
    frame: Frame, answer: tuple[list[str], str], reply: Frame
) -> None:
    async with harness() as h:
        ask = await asked(h, frame)
        h.service.answer(ask.ask_id, {frame["method"]: answer})
        (written,) = await h.replies(1)
        assert written == {"type": "extension_ui_response", "id": "d1", **reply}
        sent = await receipt(h)
        assert h.bridge.delivered == 1
    assert sent.state == comms_pb2.DELIVERY_STATE_DELIVERED
    assert json.loads(sent.payload) == written


@pytest.mark.parametrize(
    ("frame", "detail"),
    [
        (dialog("select", title="Deploy to?", options=["staging"]), ""),
        (dialog("confirm", title="Clear?", message=""), "a cancelled confirm reads as No"),
    ],
    ids=["select", "confirm"],
)
async def test_a_decline_is_the_dialogs_cancel(frame: Frame, detail: str) -> None:
    """As Escape at pi's own terminal: the extension reads undefined, or false for a confirm
    (which the receipt says)."""
    async with harness() as h:
        ask = await asked(h, frame)
        h.service.decline(ask.ask_id, "not now")
        (written,) = await h.replies(1)
        assert written == {"type": "extension_ui_response", "id": "d1", "cancelled": True}
        sent = await receipt(h)
    assert sent.payload == DECLINE_PAYLOAD
    if detail:
        assert sent.state == comms_pb2.DELIVERY_STATE_DELIVERED_WITH_CHANGES
        assert detail in sent.detail
    else:
        assert sent.state == comms_pb2.DELIVERY_STATE_DELIVERED


async def test_a_dialogs_timeout_is_the_asks_deadline() -> None:
    """pi reads its default when the timeout passes and says nothing: the server expires the
    Ask at the same moment (FAIL)."""
    async with harness() as h:
        before = int(time.time() * 1000)
        ask = await asked(h, dialog("confirm", title="Allow?", message="", timeout=5000))
    assert before + 5000 <= ask.deadline.ToMilliseconds() <= time.time() * 1000 + 5000
    assert ask.on_timeout == comms_pb2.ASK_TIMEOUT_POLICY_FAIL


@pytest.mark.parametrize(
    ("end", "reason"),
    [
        ({"type": "extension_ui_cancel", "id": "d1"}, "runtime cancelled the request"),
        (dialog("cancel", rid="c1", targetId="d1"), "runtime cancelled the request"),
        ({"type": "agent_end", "messages": []}, "turn ended"),
        (None, "runtime exited"),
    ],
    ids=["extension_ui_cancel", "cancel", "agent_end", "runtime-gone"],
)
async def test_when_the_runtime_stops_waiting_the_ask_is_withdrawn(
    end: Frame | None, reason: str
) -> None:
    async with harness() as h:
        ask = await asked(h, dialog("input", title="Name?"))
        await eventually(lambda: ask.ask_id in h.service.watching, "the wait on WatchAsk")
        if end is None:
            await h.bridge.stop_waiting()
        else:
            h.feed(end)
        await eventually(lambda: h.service.closes, "the close")
        await h.bridge.asks.settle(1)
        (close,) = h.service.closes
        assert (close.status, close.reason) == (comms_pb2.ASK_STATUS_WITHDRAWN, reason)
        assert h.sink.lines == []  # nothing is written to a dialog nobody waits for
        assert not h.bridge.waiting


async def test_a_dialog_compass_cannot_store_is_answered_cancelled() -> None:
    async with harness() as h:
        h.feed(dialog("select", title="nul\x00here", options=["a"]))
        (written,) = await h.replies(1)
        assert written == {"type": "extension_ui_response", "id": "d1", "cancelled": True}
        assert h.service.ask_ids() == []
        assert h.bridge.unmapped_counts() == {"extension_ui_request:select": 1}


async def test_a_dialog_of_no_question_of_a_running_ask_user_call_is_its_own() -> None:
    questions = [{"id": "name", "question": "Service name?", "options": []}]
    async with harness() as h:
        call = {"type": "tool_execution_start", "toolCallId": "c1", "toolName": "ask_user"}
        h.feed(call | {"args": {"questions": questions}})
        await h.settle()
        h.feed(dialog("input", rid="gate", title="Something else?"))
        await h.settle()
        first, second = (h.service.ask(i) for i in h.service.ask_ids())
        assert [q.question_id for q in first.questions] == ["name"]
        assert [q.question for q in second.questions] == ["Something else?"]
