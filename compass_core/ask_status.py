"""What an Ask's status means, in one place: which asks are final, what their outcome is,
which are still to be delivered, and the names statuses and delivery states go by.

Final is any status but PENDING (design record, resolved decision 11): ANSWERED, DECLINED (a
participant), WITHDRAWN or TIMED_OUT (the asking agent), EXPIRED (the server); UNSPECIFIED
counts as PENDING. An ask that carries `answered_by_account_id` or `answered_at` but no
status is ANSWERED (`outcome`): a server older than the ask lifecycle writes no status. The
server's own store always writes one, and never an answer on a PENDING ask (the CHECK
constraints of migrations 0001 and 0002), so the twist changes nothing there.

Names are the enum's without its prefix, in lower case ("pending", "timed_out",
"not_delivered"): the `asks` table's columns, the MCP tools' `status`, the webhooks' payload
and the server's messages spell them so; the bridge's log lines say them in upper case.

Pure: protobuf and gen's messages only, shared by the server, the bridge and the MCP tools.
"""

from __future__ import annotations

from typing import Final

from gen.compass.v1 import comms_pb2

__all__ = [
    "DELIVERABLE_STATUSES",
    "DELIVERY_STATE_NAMES",
    "OPEN_STATUSES",
    "STATUS_NAMES",
    "delivery_state_name",
    "is_answered",
    "is_final",
    "outcome",
    "status_name",
    "to_deliver",
]

OPEN_STATUSES: Final = frozenset({comms_pb2.ASK_STATUS_PENDING, comms_pb2.ASK_STATUS_UNSPECIFIED})
"""The statuses of an ask still waiting for its outcome."""
DELIVERABLE_STATUSES: Final = frozenset(
    {comms_pb2.ASK_STATUS_ANSWERED, comms_pb2.ASK_STATUS_DECLINED}
)
"""The outcomes whose answer or decline is delivered to the agent (ReportDelivery)."""


def status_name(status: int) -> str:
    """The status's name: `withdrawn` for ASK_STATUS_WITHDRAWN (`unspecified` for 0).

    Raises:
        ValueError: `status` is no AskStatus.
    """
    return comms_pb2.AskStatus.Name(status).removeprefix("ASK_STATUS_").lower()


def delivery_state_name(state: int) -> str:
    """The delivery state's name: `not_delivered` for DELIVERY_STATE_NOT_DELIVERED.

    Raises:
        ValueError: `state` is no DeliveryState.
    """
    return comms_pb2.DeliveryState.Name(state).removeprefix("DELIVERY_STATE_").lower()


STATUS_NAMES: Final[dict[int, str]] = {
    status: status_name(status)
    for status in comms_pb2.AskStatus.values()
    if status != comms_pb2.ASK_STATUS_UNSPECIFIED
}
"""Every status an ask can be stored with, by name (pending, answered, declined, withdrawn,
timed_out, expired)."""
DELIVERY_STATE_NAMES: Final[dict[int, str]] = {
    state: delivery_state_name(state)
    for state in comms_pb2.DeliveryState.values()
    if state != comms_pb2.DELIVERY_STATE_UNSPECIFIED
}
"""Every state a receipt can be stored with, by name (delivered, delivered_with_changes,
not_delivered)."""


def is_answered(ask: comms_pb2.Ask) -> bool:
    """Whether `ask` carries a participant's answer (the server writes who answered)."""
    return bool(ask.answered_by_account_id) or ask.HasField("answered_at")


def outcome(ask: comms_pb2.Ask) -> comms_pb2.AskStatus:
    """The ask's status; ANSWERED for an answered ask of a server that writes no status."""
    status = ask.status
    if status in OPEN_STATUSES and is_answered(ask):
        return comms_pb2.ASK_STATUS_ANSWERED
    return status


def is_final(ask: comms_pb2.Ask) -> bool:
    """Whether `ask` reached its outcome: any status but PENDING (an answered ask of a server
    that writes no status counts as ANSWERED)."""
    return outcome(ask) not in OPEN_STATUSES


def to_deliver(ask: comms_pb2.Ask) -> bool:
    """Whether `ask` is still to be delivered: pending, or answered or declined without a
    receipt (the result of the call that made it never reached its client)."""
    if ask.status == comms_pb2.ASK_STATUS_PENDING:
        return True
    return ask.status in DELIVERABLE_STATUSES and not ask.HasField("delivery")
