"""The agent's tool calls, and the receipts that wait for one to end (one rule for all).

An answer the bridge hands over for a tool call the agent announced (a form or a permission
request naming its `toolCallId`, as `tool_call`/`tool_call_update` notifications did) is
read by the agent's model only when that call completes, and the call's completing update
says what the model read. So the receipt of every such answer waits for the call's end:

- Claude Code's AskUserQuestion form (its `rawOutput`: the exact tool result), oh-my-pi's
  ask form (`rawOutput` `{"content": [{"type": "text", ...}]}`), Qwen Code's questions (a
  permission request; the text content of its completing update);
- a form that names no tool call, or one the agent never announced (Codex's
  `request_user_input` form names an item id of no tool call), is reported at the hand-over
  with what the bridge sent: nothing will tell more. Ordinary permission requests are, too
  (the bridge does not call `report` for them): their choice is a gate, not the call's input,
  and the call's end says nothing about it (a reject fails the call by design, an allowed
  command may fail on its own).

The rule keys on the call's id and its announcements only, never on what the translator made
of the call: Claude Code's adapter announces AskUserQuestion with empty arguments and refines
them, or, when Claude Code's permission callback beats the adapter's reading of the stream,
announces it once with its questions (tests/bridge/acp/test_agent_flow.py has both orders).

When the call ends (`update`): completed -> the receipt as built at the hand-over (DELIVERED,
or DELIVERED_WITH_CHANGES with its changes) with the text the model read as payload, when the
update carries any; failed -> NOT_DELIVERED (the call took the answer but did not hand it to
the model). A call that had already ended when the answer was handed over did not take it:
NOT_DELIVERED at once.

A call that does not end within `seconds` (CALL_END_SECONDS) of the hand-over, or before the
turn ends, gets the receipt as built at the hand-over: DELIVERED (or WITH_CHANGES) with what
the bridge sent. Honest, because by then the agent has taken the answer (its request was
answered, and it neither failed the call nor ended the turn over it) and the payload is, as
ReportDelivery defines it, what the bridge handed over; only what its model read is unknown.
NOT_DELIVERED would tell the person an answer the agent holds was lost, inviting a second
answer; and a receipt cannot be changed once stored, so waiting longer only delays the one
the person sees. The bound is logged.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from acp.schema import ToolCallProgress, ToolCallStart

from compass_bridge.acp.events import content_text
from compass_bridge.receipts import Receipt, not_delivered, result_text

if TYPE_CHECKING:
    from compass_bridge.asks import AgentAsks

__all__ = ["CALL_END_SECONDS", "CallReceipts"]

logger = logging.getLogger("compass.bridge.acp")

CALL_END_SECONDS: Final = 30.0
"""How long a delivered answer's receipt waits for its tool call to end. Calls that take an
answer end within milliseconds of it (Claude Code, Qwen Code, oh-my-pi); the bound is for
one that never does."""
_ENDED: Final = frozenset({"completed", "failed"})


@dataclass(slots=True, eq=False)
class _Waiting:
    ask_id: str
    receipt: Receipt
    timer: asyncio.TimerHandle


class CallReceipts:
    """The tool calls of one session, and the receipts waiting for one to end (see the
    module docstring). Synchronous; runs on the event loop's thread."""

    def __init__(self, asks: AgentAsks, seconds: float = CALL_END_SECONDS) -> None:
        self._asks = asks
        self._seconds = seconds
        self._running: set[str] = set()
        self._ended: set[str] = set()
        self._waiting: dict[str, _Waiting] = {}
        self._turn_over = False

    def update(self, update: object) -> None:
        """One `session/update`, in order: a tool call announced, or ended (its waiting
        receipt is reported)."""
        if not isinstance(update, ToolCallStart | ToolCallProgress):
            return
        call_id = update.tool_call_id
        if call_id in self._ended:
            return
        if update.status not in _ENDED:
            self._running.add(call_id)
            return
        self._running.discard(call_id)
        self._ended.add(call_id)
        waiting = self._waiting.pop(call_id, None)
        if waiting is None:
            return
        waiting.timer.cancel()
        receipt = waiting.receipt
        if update.status == "failed":
            receipt = not_delivered(
                "the agent's tool call failed after the answer was handed to it", receipt.payload
            )
        elif isinstance(update, ToolCallProgress):
            raw = update.raw_output
            text = raw if isinstance(raw, str) and raw else result_text(raw)
            text = text or content_text(update)
            if text:
                receipt = Receipt(receipt.state, receipt.detail, text)
        self._asks.report_soon(waiting.ask_id, receipt)

    def report(self, tool_call_id: str | None, ask_id: str, receipt: Receipt) -> None:
        """The receipt of an answer just handed over for `tool_call_id` (None: no call):
        reported now, or once that call ends."""
        if tool_call_id in self._ended:
            self._asks.report_soon(
                ask_id,
                not_delivered(
                    "the agent's tool call had ended before the answer was handed to it",
                    receipt.payload,
                ),
            )
        elif tool_call_id in self._running and not self._turn_over:
            timer = asyncio.get_running_loop().call_later(
                self._seconds, self._expired, tool_call_id
            )
            self._waiting[tool_call_id] = _Waiting(ask_id, receipt, timer)
        else:
            self._asks.report_soon(ask_id, receipt)

    def end_turn(self) -> None:
        """The prompt turn ended: no call will end any more; every waiting receipt is
        reported as built at the hand-over."""
        self._turn_over = True
        for waiting in self._waiting.values():
            waiting.timer.cancel()
            self._asks.report_soon(waiting.ask_id, waiting.receipt)
        self._waiting.clear()

    def _expired(self, tool_call_id: str) -> None:
        waiting = self._waiting.pop(tool_call_id, None)
        if waiting is None:
            return
        logger.warning(
            "ask %s: the agent's tool call %s did not end within %g s of the answer; its "
            "receipt says what the bridge handed over",
            waiting.ask_id,
            tool_call_id,
            self._seconds,
        )
        self._asks.report_soon(waiting.ask_id, waiting.receipt)
