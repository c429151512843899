"""AcpBridge on the recorded conversations of Claude Code and Codex (recorded/acp/): their
forms are presented at once (no hold: no ask call could ever claim them), the agent's
lead-in is posted before the ask, and the answer goes back in the form's terms with its
receipt: Claude Code's once its AskUserQuestion call ended, in either order its adapter
announces that call in."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest
from acp.client.router import (
    _mode_from_create_elicitation_request,  # pyright: ignore[reportPrivateUsage]
    _validate_create_elicitation_request,  # pyright: ignore[reportPrivateUsage]
)
from acp.schema import AcceptElicitationResponse, SessionNotification

from gen.compass.v1 import comms_pb2
from tests._wait import eventually
from tests.bridge._inproc import acp_bridge
from tests.bridge.acp.test_agent_forms import agent_messages

if TYPE_CHECKING:
    from compass_bridge.acp.bridge import AcpBridge

HOUR = 3600.0
"""A hold that would outlast the test: a form held at all fails it."""


@pytest.mark.parametrize(
    ("name", "answers", "content"),
    [
        (
            "claude-ask",
            {"question_0": (["1"], ""), "question_1": ([], "Passkeys")},
            {"question_0": "SQLite", "question_1_custom": "Passkeys"},
        ),
        (
            "codex-ask",
            {"db": ([], "CockroachDB"), "name": (["0"], "")},
            {"db": "None of the above", "db_note": "CockroachDB", "name": "ledger"},
        ),
    ],
)
async def test_a_recorded_agent_form_is_asked_at_once_after_its_lead_in(
    name: str, answers: dict[str, tuple[list[str], str]], content: dict[str, object]
) -> None:
    async with acp_bridge(hold_seconds=HOUR) as (bridge, service):
        form: asyncio.Task[object] | None = None
        after: list[dict[str, Any]] = []
        recorded = agent_messages(name)
        for index, message in enumerate(recorded):
            method = message.get("method")
            if method == "session/update":
                await bridge.session_update("s", _update_of(message))
            elif method == "elicitation/create":
                after = recorded[index + 1 :]
                params = message["params"]
                mode = _mode_from_create_elicitation_request(
                    _validate_create_elicitation_request(params)
                )
                form = asyncio.create_task(bridge.create_elicitation(params["message"], mode))
                break
        assert form is not None
        await eventually(service.ask_ids, "the form's ask posted")
        (ask_id,) = service.ask_ids()
        stored = list(service.messages.values())
        texts = [b.text.text for m in stored for b in m.blocks if b.HasField("text")]
        where = next(i for i, m in enumerate(stored) if any(b.HasField("ask") for b in m.blocks))
        lead_in = next(
            i
            for i, m in enumerate(stored)
            if any("Let me ask you first." in b.text.text for b in m.blocks)
        )
        assert lead_in < where, texts
        service.answer(ask_id, answers)
        async with asyncio.timeout(5):
            response = await form
        assert isinstance(response, AcceptElicitationResponse)
        assert response.content == content
        if name == "claude-ask":  # reported only once the call ended (below)
            assert bridge.asks.receipts == {}
        # The rest of the recorded turn: Claude Code's call ends with what its model read.
        for message in after:
            if message.get("method") == "session/update":
                await bridge.session_update("s", _update_of(message))
        bridge.end_turn()
        await eventually(lambda: service.receipts, "the receipt reported")
        (receipt,) = service.receipts
        assert (receipt.ask_id, receipt.state) == (ask_id, comms_pb2.DELIVERY_STATE_DELIVERED)
        ended = [
            m["params"]["update"].get("rawOutput")
            for m in after
            if m.get("method") == "session/update"
            and m["params"]["update"].get("status") == "completed"
            and m["params"]["update"].get("toolCallId") == "toolu_ask1"
        ]
        # Claude: the text its model read (recorded); Codex (no tool call): the content sent.
        expected = ended[0] if ended else json.dumps(content, sort_keys=True, separators=(",", ":"))
        assert receipt.payload == expected


def _announced_complete(recorded: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Claude Code's conversation in the order its adapter (claude-agent-acp 0.101.0) sends
    when Claude Code's permission callback for AskUserQuestion beats the adapter's reading of
    the model's stream (a busy machine): `ensureToolCallEmitted` announces the call with its
    complete input (one `tool_call` whose `rawInput` holds the questions) before the form,
    and the streamed tool_use only refines it later (`tool_call_update`), after the form."""
    updates = [m for m in recorded if m.get("method") == "session/update"]
    start = next(m for m in updates if m["params"]["update"]["sessionUpdate"] == "tool_call")
    refinement = next(
        m
        for m in updates
        if m["params"]["update"]["sessionUpdate"] == "tool_call_update"
        and "rawInput" in m["params"]["update"]
    )
    eager = json.loads(json.dumps(start))
    eager["params"]["update"]["rawInput"] = refinement["params"]["update"]["rawInput"]
    reordered: list[dict[str, Any]] = []
    for message in recorded:
        if message is start:
            reordered.append(eager)
        elif message is not refinement:
            reordered.append(message)
        if message.get("method") == "elicitation/create":
            reordered.append(refinement)
    return reordered


@pytest.mark.parametrize("order", ["as recorded", "announced complete"])
async def test_claude_codes_receipt_waits_for_its_call_in_either_order(order: str) -> None:
    """The receipt carries the text Claude Code's model read (its call's `rawOutput`), never
    the form content the bridge sent, whichever way the call was announced."""
    recorded = agent_messages("claude-ask")
    if order == "announced complete":
        recorded = _announced_complete(recorded)
    async with acp_bridge(hold_seconds=HOUR) as (bridge, service):
        form, after = await _until_form(bridge, recorded)
        await eventually(service.ask_ids, "the form's ask posted")
        (ask_id,) = service.ask_ids()
        service.answer(ask_id, {"question_0": (["1"], ""), "question_1": (["0", "1"], "")})
        async with asyncio.timeout(5):
            response = await form
        assert isinstance(response, AcceptElicitationResponse)
        assert bridge.asks.receipts == {}  # not at the hand-over: the call has not ended
        for message in after:
            if message.get("method") == "session/update":
                await bridge.session_update("s", _update_of(message))
        (read,) = [
            m["params"]["update"]["rawOutput"]
            for m in after
            if m.get("method") == "session/update"
            and m["params"]["update"].get("status") == "completed"
        ]
        # Reported when the call ended, before the turn did.
        await eventually(lambda: service.receipts, "the receipt reported")
        (receipt,) = service.receipts
        assert (receipt.ask_id, receipt.state, receipt.payload) == (
            ask_id,
            comms_pb2.DELIVERY_STATE_DELIVERED,
            read,
        )
        bridge.end_turn()


async def _until_form(
    bridge: AcpBridge, recorded: list[dict[str, Any]]
) -> tuple[asyncio.Task[object], list[dict[str, Any]]]:
    """Feed `recorded` to the bridge up to its form: the form's answer (a task) and the
    messages after the form."""
    for index, message in enumerate(recorded):
        method = message.get("method")
        if method == "session/update":
            await bridge.session_update("s", _update_of(message))
        elif method == "elicitation/create":
            params = message["params"]
            mode = _mode_from_create_elicitation_request(
                _validate_create_elicitation_request(params)
            )
            form = asyncio.create_task(bridge.create_elicitation(params["message"], mode))
            return form, recorded[index + 1 :]
    raise AssertionError("no form in the conversation")


def _update_of(message: dict[str, Any]) -> object:
    return SessionNotification.model_validate(message["params"]).update
