"""Ask outcomes: which states are final, and the guards of DeclineAsk and CloseAsk (docs/ask-outcomes.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

# The block limits live with the agent side, whose mapper must refuse exactly what this
# module refuses; they are re-exported here for the server's own callers.
from compass_core.limits import (
    MAX_CLOSE_REASON_LENGTH,
    MAX_ID_LENGTH,
)
from compass_server.domain.answers import check_answer_request, is_identical_answer
from compass_server.domain.errors import (
    FieldViolation,
    InvalidArgumentError,
)
from compass_server.domain.limits import (
    CLOSE_STATUSES,
    MAX_TIMESTAMP_SECONDS,
    MIN_TIMESTAMP_SECONDS,
    TIMEOUT_POLICY_NAMES,
    nul,
    too_long,
)
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Sequence

# ---------------------------------------------------------------------------------------------
# Outcomes: status, deadline, DeclineAsk, CloseAsk (design record, resolved decision 11)


def outcome_violations(ask: comms_pb2.Ask, path: str) -> list[FieldViolation]:
    """The lifecycle fields of a NEW ask: the agent may send `deadline` and `on_timeout`;
    status must be UNSPECIFIED or PENDING and the closed_* fields empty (server-written)."""
    violations: list[FieldViolation] = []
    if ask.status not in (comms_pb2.ASK_STATUS_UNSPECIFIED, comms_pb2.ASK_STATUS_PENDING):
        violations.append(
            FieldViolation(
                field=f"{path}.status",
                description="status is written by the server; a new ask must be sent UNSPECIFIED or PENDING",
            )
        )
    closed = "is written by the server when the ask is closed; send it empty"
    for field, present in (
        ("closed_by_account_id", bool(ask.closed_by_account_id)),
        ("closed_at", ask.HasField("closed_at")),
        ("closed_by_name", bool(ask.closed_by_name)),
        ("close_reason", bool(ask.close_reason)),
    ):
        if present:
            violations.append(
                FieldViolation(field=f"{path}.{field}", description=f"{field} {closed}")
            )
    if ask.on_timeout not in TIMEOUT_POLICY_NAMES:
        violations.append(
            FieldViolation(
                field=f"{path}.on_timeout",
                description=f"on_timeout {ask.on_timeout} is not an AskTimeoutPolicy",
            )
        )
    if ask.HasField("deadline") and not (
        MIN_TIMESTAMP_SECONDS <= ask.deadline.seconds <= MAX_TIMESTAMP_SECONDS
        and 0 <= ask.deadline.nanos <= 999_999_999
    ):
        violations.append(
            FieldViolation(
                field=f"{path}.deadline", description="deadline is not a valid timestamp"
            )
        )
    return violations


def outcome_message(ask: comms_pb2.Ask) -> str:
    """The FAILED_PRECONDITION message for acting on the final `ask`, naming its outcome."""
    status = ask.status
    if status == comms_pb2.ASK_STATUS_DECLINED:
        return f"the ask was declined by {ask.closed_by_name}"
    if status == comms_pb2.ASK_STATUS_WITHDRAWN:
        return "the ask was withdrawn by the agent"
    if status == comms_pb2.ASK_STATUS_TIMED_OUT:
        return "the ask timed out"
    if status == comms_pb2.ASK_STATUS_EXPIRED:
        return "the ask expired"
    return "the ask is already answered"


def reason_violations(reason: str) -> list[FieldViolation]:
    violations = nul("reason", reason)
    if len(reason) > MAX_CLOSE_REASON_LENGTH:
        violations.append(too_long("reason", "reason", MAX_CLOSE_REASON_LENGTH))
    return violations


def ask_id_violations(ask_id: str) -> list[FieldViolation]:
    violations: list[FieldViolation] = []
    if not ask_id:
        violations.append(FieldViolation(field="ask_id", description="ask_id is empty"))
    elif len(ask_id) > MAX_ID_LENGTH:
        violations.append(too_long("ask_id", "ask_id", MAX_ID_LENGTH))
    violations.extend(nul("ask_id", ask_id))
    return violations


def check_decline_request(ask_id: str, reason: str) -> None:
    """DeclineAsk step 2: reject a malformed request before any lookup.

    Raises:
        InvalidArgumentError: empty or oversize ask_id, a reason longer than
            MAX_CLOSE_REASON_LENGTH, or text holding NUL; with every violation found.
    """
    violations = ask_id_violations(ask_id) + reason_violations(reason)
    if violations:
        raise InvalidArgumentError("malformed DeclineAsk request", violations)


def check_close_request(
    ask_id: str, status: int, reason: str, answers: Sequence[comms_pb2.AskQuestionAnswer]
) -> None:
    """CloseAsk step 2: reject a malformed request before any lookup.

    Raises:
        InvalidArgumentError: empty or oversize ask_id; status other than WITHDRAWN or
            TIMED_OUT; answers with WITHDRAWN; an oversize or NUL-holding reason; answers
            malformed like RespondToAsk's (see `check_answer_request`).
    """
    violations = ask_id_violations(ask_id) + reason_violations(reason)
    if status not in CLOSE_STATUSES:
        violations.append(
            FieldViolation(
                field="status",
                description="CloseAsk closes an ask as ASK_STATUS_WITHDRAWN or ASK_STATUS_TIMED_OUT",
            )
        )
    if status == comms_pb2.ASK_STATUS_WITHDRAWN and answers:
        violations.append(
            FieldViolation(field="answers", description="a WITHDRAWN ask has no answers; send none")
        )
    try:
        check_answer_request(ask_id or "-", answers)
    except InvalidArgumentError as exc:
        violations.extend(v for v in exc.violations if v.field != "ask_id")
    if violations:
        raise InvalidArgumentError("malformed CloseAsk request", violations)


def is_identical_decline(ask: comms_pb2.Ask, account_id: str, reason: str) -> bool:
    """Whether a DeclineAsk by `account_id` with `reason` repeats the stored outcome."""
    return (
        ask.status == comms_pb2.ASK_STATUS_DECLINED
        and ask.closed_by_account_id == account_id
        and ask.close_reason == reason
    )


def is_identical_close(
    ask: comms_pb2.Ask,
    account_id: str,
    status: int,
    reason: str,
    answers: Sequence[comms_pb2.AskQuestionAnswer],
) -> bool:
    """Whether a CloseAsk by `account_id` repeats the stored outcome exactly (same status,
    reason and, for TIMED_OUT, answers)."""
    if ask.status != status or ask.closed_by_account_id != account_id or ask.close_reason != reason:
        return False
    if status == comms_pb2.ASK_STATUS_TIMED_OUT:
        return is_identical_answer(ask, account_id, answers)
    return not answers
