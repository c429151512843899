"""Delivery receipts (AgentService.ReportDelivery): the request's shape, and what a stored
receipt and the ask's outcome allow (docs/ask-outcomes.md, "Delivery receipts")."""

from __future__ import annotations

from compass_core.limits import MAX_DELIVERY_DETAIL_LENGTH, MAX_DELIVERY_PAYLOAD_LENGTH
from compass_server.domain.errors import FieldViolation, InvalidArgumentError
from compass_server.domain.limits import (
    DELIVERABLE_STATUSES,
    DELIVERY_STATE_NAMES,
    OPEN_STATUSES,
    nul,
    too_long,
)
from compass_server.domain.outcomes import ask_id_violations, outcome_message
from gen.compass.v1 import comms_pb2


def check_delivery_request(ask_id: str, state: int, detail: str, payload: str) -> None:
    """ReportDelivery step 2: reject a malformed receipt before any lookup.

    Raises:
        InvalidArgumentError: empty or oversize ask_id; a state other than DELIVERED,
            DELIVERED_WITH_CHANGES or NOT_DELIVERED; a blank detail when the state is not
            DELIVERED; a detail over MAX_DELIVERY_DETAIL_LENGTH or a payload over
            MAX_DELIVERY_PAYLOAD_LENGTH characters; NUL in any text. With every violation.
    """
    violations = ask_id_violations(ask_id)
    if state not in DELIVERY_STATE_NAMES:
        violations.append(
            FieldViolation(
                field="state",
                description="state must be DELIVERY_STATE_DELIVERED, DELIVERY_STATE_DELIVERED_WITH_CHANGES or DELIVERY_STATE_NOT_DELIVERED",
            )
        )
    violations.extend(nul("detail", detail))
    if len(detail) > MAX_DELIVERY_DETAIL_LENGTH:
        violations.append(too_long("detail", "detail", MAX_DELIVERY_DETAIL_LENGTH))
    if (
        state
        in (
            comms_pb2.DELIVERY_STATE_DELIVERED_WITH_CHANGES,
            comms_pb2.DELIVERY_STATE_NOT_DELIVERED,
        )
        and not detail.strip()
    ):
        violations.append(
            FieldViolation(
                field="detail",
                description="detail is empty: say what changed, or why the answer was not delivered",
            )
        )
    violations.extend(nul("payload", payload))
    if len(payload) > MAX_DELIVERY_PAYLOAD_LENGTH:
        violations.append(too_long("payload", "payload", MAX_DELIVERY_PAYLOAD_LENGTH))
    if violations:
        raise InvalidArgumentError("malformed ReportDelivery request", violations)


def undeliverable_message(ask: comms_pb2.Ask) -> str | None:
    """Why `ask` (as stored) has nothing to deliver, or None when it is ANSWERED or DECLINED."""
    if ask.status in DELIVERABLE_STATUSES:
        return None
    if ask.status in OPEN_STATUSES:
        return "the ask is still pending: nothing delivered yet"
    return f"{outcome_message(ask)}: there is no answer to deliver"


def is_identical_delivery(
    ask: comms_pb2.Ask, account_id: str, state: int, detail: str, payload: str
) -> bool:
    """Whether a receipt from `account_id` repeats the one stored on `ask` exactly."""
    stored = ask.delivery
    return (
        ask.HasField("delivery")
        and stored.reported_by_account_id == account_id
        and stored.state == state
        and stored.detail == detail
        and stored.payload == payload
    )


def reported_message(ask: comms_pb2.Ask) -> str:
    """The FAILED_PRECONDITION message for a receipt that differs from the stored one."""
    state = DELIVERY_STATE_NAMES.get(ask.delivery.state, "unknown").replace("_", " ")
    return f"the ask's delivery was already reported ({state}); a receipt cannot be changed"
