"""Domain errors: what went wrong, in words a client may read. No transport imports here.

The interceptor (compass_server/transport/error_mapping.py) maps each class to one Connect code; the
message of a domain error is written for the client and is sent as is. Anything that is not
a CompassError becomes INTERNAL "internal error" there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldViolation:
    """One problem with one field of a request (becomes a google.rpc.BadRequest violation)."""

    field: str
    """Path of the offending field in the request, e.g. `answers[1].chosen_option_ids[0]`."""
    description: str
    """What is wrong, for people; names the question when there is one."""
    question_id: str = ""
    """The question the problem is about, when it is about one."""


class CompassError(Exception):
    """Base of every error the server reports to clients on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UnauthenticatedError(CompassError):
    """No credentials, bad credentials, or the account is disabled or unknown."""


class InvalidArgumentError(CompassError):
    """The request itself is wrong; `violations` lists every problem found."""

    def __init__(self, message: str, violations: Sequence[FieldViolation] = ()) -> None:
        super().__init__(message)
        self.violations: tuple[FieldViolation, ...] = tuple(violations)


class NotFoundError(CompassError):
    """The resource does not exist or the caller may not see it (the same answer for both)."""


class PermissionDeniedError(CompassError):
    """The caller can see the resource but may not act on it."""


class FailedPreconditionError(CompassError):
    """The resource is in a state that forbids the operation (e.g. already answered)."""


class AlreadyExistsError(CompassError):
    """A create collided with an existing resource under a different content."""


class ConflictError(CompassError):
    """A concurrent change won; the operation may be retried."""


class ResourceExhaustedError(CompassError):
    """The caller holds as much as it may (e.g. open streams); retry after releasing some."""


class UnavailableError(CompassError):
    """The database (or another dependency) cannot be reached; retry later."""


class CorruptDataError(CompassError):
    """Stored data breaks an invariant and cannot be decoded; never silently dropped.

    Reported to clients as INTERNAL; the detail goes to the server log.
    """
