"""What the runtime can receive, and what it did receive (pure, "delivery truth").

A person's answer is never shown as given when the agent did not receive it. Two halves:

- Before the answer: the posted Ask says, per question, whether free text can reach the
  runtime (`AskQuestion.free_text`), so RespondToAsk refuses what cannot be delivered and
  the UI warns where a combination arrives changed. `mark_native_free_text` is the rule for
  oh-my-pi's native ask tool: free text always reaches it (`q<i>__other` over ACP, the
  "Other" editor over rpc-ui), but for a multi-select question of a multi-question ask its
  summary for the model shows only the text when picks come with it (docs/agents/omp.md, "Limits
  of the RPC mode" 3; the same formatting over ACP): FREE_TEXT_INSTEAD_OF_PICKS.
- After the answer: a `Receipt` (AgentService.ReportDelivery) says what the runtime got:
  DELIVERED, DELIVERED_WITH_CHANGES with the changes in words, or NOT_DELIVERED with why,
  and the payload, preferably the text the model reads (the ask tool's result), else what
  the bridge sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from compass_core.jsonvalues import is_array, is_object
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "DECLINE_PAYLOAD",
    "MAX_DETAIL",
    "MAX_PAYLOAD",
    "Receipt",
    "delivered",
    "mark_native_free_text",
    "not_delivered",
    "payload_of",
    "result_text",
]

MAX_DETAIL: Final = 1000
"""ReportDelivery's longest detail (characters)."""
MAX_PAYLOAD: Final = 65536
"""ReportDelivery's longest payload (characters)."""
_CUT: Final = " [...]"


@dataclass(frozen=True, slots=True)
class Receipt:
    """One ReportDelivery: what the runtime received of an ask's outcome."""

    state: comms_pb2.DeliveryState
    detail: str = ""
    payload: str = ""


def delivered(problems: Iterable[str], payload: str) -> Receipt:
    """The runtime got the answer: exactly as given, or with the `problems` (in words)."""
    changes = list(dict.fromkeys(problem for problem in problems if problem))
    if not changes:
        return Receipt(comms_pb2.DELIVERY_STATE_DELIVERED, "", _cut(payload, MAX_PAYLOAD))
    return Receipt(
        comms_pb2.DELIVERY_STATE_DELIVERED_WITH_CHANGES,
        _cut("; ".join(changes), MAX_DETAIL),
        _cut(payload, MAX_PAYLOAD),
    )


def not_delivered(why: str, payload: str = "") -> Receipt:
    """The runtime did not get the answer, because `why`."""
    return Receipt(
        comms_pb2.DELIVERY_STATE_NOT_DELIVERED,
        _cut(why or "not delivered", MAX_DETAIL),
        _cut(payload, MAX_PAYLOAD),
    )


DECLINE_PAYLOAD: Final = "(declined: the agent's request was cancelled)"
"""The payload of a delivered decline: the runtime got its cancel or decline."""


def payload_of(value: object) -> str:
    """`value` (what the bridge sent) as compact JSON text, non-ASCII kept readable."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def result_text(result: object) -> str | None:
    """The text a tool result hands the model (`{"content": [{"type": "text", "text"}]}`,
    oh-my-pi's and MCP's shape), or None when it carries none."""
    if not is_object(result):
        return None
    content = result.get("content")
    if not is_array(content):
        return None
    texts = [
        text
        for part in content
        if is_object(part) and part.get("type") == "text"
        for text in [part.get("text")]
        if isinstance(text, str)
    ]
    return "\n".join(texts) if texts else None


def mark_native_free_text(ask: comms_pb2.Ask) -> None:
    """Mark each question of an Ask mapped from oh-my-pi's ask tool with what free text it
    can receive (see the module docstring). Idempotent."""
    several = len(ask.questions) > 1
    for question in ask.questions:
        if question.allow_multiple and several and question.options:
            question.free_text = comms_pb2.FREE_TEXT_INSTEAD_OF_PICKS
        else:
            question.free_text = comms_pb2.FREE_TEXT_ACCEPTED


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - len(_CUT)] + _CUT
