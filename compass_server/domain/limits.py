"""Request limits, status names and the text checks every other rule uses."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final

from compass_core import ask_status

# The block limits live with the agent side, whose mapper must refuse exactly what this
# module refuses; they are re-exported here for the server's own callers.
from compass_core.limits import (
    MAX_OPTIONS_PER_QUESTION,
    MAX_QUESTIONS_PER_ASK,
    NUL,
)
from compass_server.domain.errors import (
    FieldViolation,
    InvalidArgumentError,
)
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Iterable

MAX_NAME_LENGTH: Final = 200
"""Longest workspace, channel or account name."""
MAX_TOKEN_LENGTH: Final = 200
"""Longest bearer token worth looking up (minted ones are ~50 characters): the gate refuses a
longer one before the store is asked."""
MAX_ANSWERS: Final = MAX_QUESTIONS_PER_ASK
"""A RespondToAsk with more entries than any ask can have questions is oversize."""
MAX_CHOSEN_PER_ANSWER: Final = MAX_OPTIONS_PER_QUESTION
MAX_CUSTOM_TEXT_LENGTH: Final = 10_000

# What an ask's status means, and the names of statuses and delivery states, live in the
# shared kernel (the bridge and the MCP tools read them too); the server's names for them:
#: AskStatus <-> the `asks.status` column.
STATUS_NAMES: Final = ask_status.STATUS_NAMES
STATUS_BY_NAME: Final[dict[str, comms_pb2.AskStatus]] = {
    "pending": comms_pb2.ASK_STATUS_PENDING,
    "answered": comms_pb2.ASK_STATUS_ANSWERED,
    "declined": comms_pb2.ASK_STATUS_DECLINED,
    "withdrawn": comms_pb2.ASK_STATUS_WITHDRAWN,
    "timed_out": comms_pb2.ASK_STATUS_TIMED_OUT,
    "expired": comms_pb2.ASK_STATUS_EXPIRED,
}
#: AskTimeoutPolicy <-> the `asks.on_timeout` column.
TIMEOUT_POLICY_NAMES: Final[dict[int, str]] = {
    comms_pb2.ASK_TIMEOUT_POLICY_UNSPECIFIED: "unspecified",
    comms_pb2.ASK_TIMEOUT_POLICY_PICK_RECOMMENDED: "pick_recommended",
    comms_pb2.ASK_TIMEOUT_POLICY_FAIL: "fail",
}
TIMEOUT_POLICY_BY_NAME: Final[dict[str, comms_pb2.AskTimeoutPolicy]] = {
    "unspecified": comms_pb2.ASK_TIMEOUT_POLICY_UNSPECIFIED,
    "pick_recommended": comms_pb2.ASK_TIMEOUT_POLICY_PICK_RECOMMENDED,
    "fail": comms_pb2.ASK_TIMEOUT_POLICY_FAIL,
}
#: FreeText <-> its name in a stored question (`store.blocks`; UNSPECIFIED is stored as no
#: key, as questions were before the field existed).
FREE_TEXT_NAMES: Final[dict[int, str]] = {
    comms_pb2.FREE_TEXT_ACCEPTED: "accepted",
    comms_pb2.FREE_TEXT_REFUSED: "refused",
    comms_pb2.FREE_TEXT_INSTEAD_OF_PICKS: "instead_of_picks",
}
FREE_TEXT_BY_NAME: Final[dict[str, comms_pb2.FreeText]] = {
    "accepted": comms_pb2.FREE_TEXT_ACCEPTED,
    "refused": comms_pb2.FREE_TEXT_REFUSED,
    "instead_of_picks": comms_pb2.FREE_TEXT_INSTEAD_OF_PICKS,
}
#: DeliveryState <-> the `asks.delivery_state` column (and the metric's `state` label).
DELIVERY_STATE_NAMES: Final = ask_status.DELIVERY_STATE_NAMES
DELIVERY_STATE_BY_NAME: Final[dict[str, comms_pb2.DeliveryState]] = {
    "delivered": comms_pb2.DELIVERY_STATE_DELIVERED,
    "delivered_with_changes": comms_pb2.DELIVERY_STATE_DELIVERED_WITH_CHANGES,
    "not_delivered": comms_pb2.DELIVERY_STATE_NOT_DELIVERED,
}
#: The outcomes whose answer or decline is delivered to the agent (ReportDelivery).
DELIVERABLE_STATUSES: Final = ask_status.DELIVERABLE_STATUSES
#: The statuses of an ask still waiting for its outcome.
OPEN_STATUSES: Final = ask_status.OPEN_STATUSES
#: What CloseAsk may write.
CLOSE_STATUSES: Final = frozenset({comms_pb2.ASK_STATUS_WITHDRAWN, comms_pb2.ASK_STATUS_TIMED_OUT})
#: Timestamp.seconds of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z (protobuf's range).
MIN_TIMESTAMP_SECONDS: Final = -62_135_596_800
MAX_TIMESTAMP_SECONDS: Final = 253_402_300_799


def quote(value: str) -> str:
    """`value` in double quotes with JSON escapes, as violations name questions and options."""
    return json.dumps(value, ensure_ascii=False)


def question_label(question_id: str) -> str:
    return f"question {quote(question_id)}"


def nul(field: str, value: str, question_id: str = "") -> list[FieldViolation]:
    # PostgreSQL text and jsonb cannot hold U+0000; refuse it here with a clear error rather
    # than let the database fail the write.
    if NUL not in value:
        return []
    prefix = f"{question_label(question_id)}: " if question_id else ""
    return [
        FieldViolation(
            field=field,
            description=f"{prefix}contains a NUL character, which cannot be stored",
            question_id=question_id,
        )
    ]


def nuls(
    path: str, fields: Iterable[tuple[str, str]], question_id: str = ""
) -> list[FieldViolation]:
    """`nul` for each (name, value) of `fields` at `path`: the violations of `path.name`, whose
    field path is built only for a value that holds a NUL (every read of a stored ask checks
    every text of it)."""
    return [
        violation
        for name, value in fields
        if NUL in value
        for violation in nul(f"{path}.{name}", value, question_id)
    ]


def too_long(field: str, what: str, limit: int, question_id: str = "") -> FieldViolation:
    prefix = f"{question_label(question_id)}: " if question_id else ""
    return FieldViolation(
        field=field,
        description=f"{prefix}{what} is longer than {limit} characters",
        question_id=question_id,
    )


def check_text(field: str, value: str, *, max_length: int, required: bool = True) -> None:
    """Check one free-standing text argument (a name, a client_message_id).

    Raises:
        InvalidArgumentError: `value` is empty (when `required`), too long, holds NUL, or is
            not valid Unicode.
    """
    violations = nul(field, value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        # A str can hold unpaired surrogates (e.g. argv decoded with surrogateescape);
        # protobuf strings cannot, so only free-standing text needs this check.
        violations.append(FieldViolation(field=field, description=f"{field} is not valid Unicode"))
    if required and not value:
        violations.append(FieldViolation(field=field, description=f"{field} is empty"))
    if len(value) > max_length:
        violations.append(too_long(field, field, max_length))
    if violations:
        raise InvalidArgumentError(f"invalid {field}", violations)


def check_name(value: str) -> None:
    """Check the name of a workspace, channel or account: `check_text`, and not blank.

    Raises:
        InvalidArgumentError: as check_text, or `value` is only spaces.
    """
    check_text("name", value, max_length=MAX_NAME_LENGTH)
    if not value.strip():
        raise InvalidArgumentError(
            "invalid name",
            [FieldViolation(field="name", description="name is blank (only spaces)")],
        )
