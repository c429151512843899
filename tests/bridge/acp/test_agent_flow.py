"""AcpBridge on the recorded conversations of Claude Code and Codex (recorded/acp/): their
forms are presented at once (no hold: no ask call could ever claim them), the agent's
lead-in is posted before the ask, and the answer goes back in the form's terms with its
receipt."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from acp.client.router import (
    _mode_from_create_elicitation_request,  # pyright: ignore[reportPrivateUsage]
    _validate_create_elicitation_request,  # pyright: ignore[reportPrivateUsage]
)
from acp.schema import AcceptElicitationResponse, SessionNotification

from gen.compass.v1 import comms_pb2
from tests._wait import eventually
from tests.bridge.acp.test_agent_forms import agent_messages
from tests.bridge.test_outcomes import acp_bridge

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


def _update_of(message: dict[str, Any]) -> object:
    return SessionNotification.model_validate(message["params"]).update
