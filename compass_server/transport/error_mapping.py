"""The one place that turns exceptions into Connect errors (unary and server-streaming RPCs).

Domain errors (compass_server/domain/errors.py) carry messages written for clients and map to one
code each; InvalidArgumentError's violations travel as a google.rpc.BadRequest detail and, with
the question each is about, as a compass.v1.InvalidFields detail. Anything
else is logged here with its traceback and reaches the client only as INTERNAL
"internal error": connectrpc would otherwise send `str(exc)` as an UNKNOWN error.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final, TypeVar

from connectrpc.code import Code
from connectrpc.errors import ConnectError, ErrorDetail
from google.rpc import error_details_pb2  # pyright: ignore[reportMissingTypeStubs] - ships .pyi files but no py.typed marker
from protobuf.wkt import Any

from compass_server.domain.errors import (
    AlreadyExistsError,
    CompassError,
    ConflictError,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    ResourceExhaustedError,
    UnauthenticatedError,
    UnavailableError,
)
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

    from connectrpc.request import RequestContext
    from google.protobuf.message import Message

logger = logging.getLogger(__name__)

REQ = TypeVar("REQ")
RES = TypeVar("RES")

INTERNAL_MESSAGE: Final = "internal error"

_CODES: Final[Mapping[type[CompassError], Code]] = {
    UnauthenticatedError: Code.UNAUTHENTICATED,
    InvalidArgumentError: Code.INVALID_ARGUMENT,
    NotFoundError: Code.NOT_FOUND,
    PermissionDeniedError: Code.PERMISSION_DENIED,
    FailedPreconditionError: Code.FAILED_PRECONDITION,
    AlreadyExistsError: Code.ALREADY_EXISTS,
    ConflictError: Code.ABORTED,
    UnavailableError: Code.UNAVAILABLE,
    ResourceExhaustedError: Code.RESOURCE_EXHAUSTED,
}


def to_connect_error(exc: Exception, method: str) -> ConnectError:
    """The ConnectError a client receives for `exc` raised while serving `method`."""
    if isinstance(exc, ConnectError):
        return exc
    # Most specific class first, so a subclass may map differently from its base.
    for cls in type(exc).__mro__:
        code = _CODES.get(cls)  # pyright: ignore[reportArgumentType] - non-CompassError classes simply miss
        if code is not None and isinstance(exc, CompassError):
            if code is Code.UNAVAILABLE:
                logger.warning("%s: %s", method, exc.message, exc_info=exc.__cause__)
            return ConnectError(code, exc.message, details=_details(exc))
    # CorruptDataError, bugs, and anything a dependency raised that nobody translated.
    logger.error("%s failed", method, exc_info=exc)
    return ConnectError(Code.INTERNAL, INTERNAL_MESSAGE)


def _details(exc: CompassError) -> list[ErrorDetail]:
    if not isinstance(exc, InvalidArgumentError) or not exc.violations:
        return []
    violations = [
        error_details_pb2.BadRequest.FieldViolation(field=v.field, description=v.description)
        for v in exc.violations
    ]
    bad_request = error_details_pb2.BadRequest(field_violations=violations)
    # The same violations with the question each is about (clients place them by it).
    invalid = comms_pb2.InvalidFields(
        fields=[
            comms_pb2.InvalidField(
                field=v.field, description=v.description, question_id=v.question_id
            )
            for v in exc.violations
        ]
    )
    return [_packed(bad_request), _packed(invalid)]


def _packed(message: Message) -> ErrorDetail:
    # connectrpc packs details as protobuf-py messages; ours are Google protobuf messages,
    # so the Any is built from the serialized bytes (the wire form is the same).
    return ErrorDetail(
        Any(
            type_url=f"type.googleapis.com/{message.DESCRIPTOR.full_name}",
            value=message.SerializeToString(),
        )
    )


class ErrorMapping:
    """Connect interceptor (unary and server-stream) applying `to_connect_error`."""

    async def intercept_unary(
        self,
        call_next: Callable[[REQ, RequestContext[REQ, RES]], Awaitable[RES]],
        request: REQ,
        ctx: RequestContext[REQ, RES],
    ) -> RES:
        try:
            return await call_next(request, ctx)
        except Exception as exc:  # noqa: BLE001 - translated and re-raised, never swallowed
            raise to_connect_error(exc, ctx.method.name) from None

    async def intercept_server_stream(
        self,
        call_next: Callable[[REQ, RequestContext[REQ, RES]], AsyncIterator[RES]],
        request: REQ,
        ctx: RequestContext[REQ, RES],
    ) -> AsyncIterator[RES]:
        try:
            async for response in call_next(request, ctx):
                yield response
        except Exception as exc:  # noqa: BLE001 - translated and re-raised, never swallowed
            raise to_connect_error(exc, ctx.method.name) from None
