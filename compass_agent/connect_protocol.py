"""The parts of the Connect protocol (https://connectrpc.com/docs/protocol/) that both sides
read by hand: the bridge's client (`compass_bridge.client`) and the server's span recorder
(`compass_server.telemetry`), and the server's own frames (`compass_server.transport.wire`).
Pure: no I/O, only `json`.

- `CODES`: the sixteen Connect codes ("there are no user-defined codes");
- `code_for_http_status`: the protocol's "HTTP to Error Code" table, for an error response that
  carries no Connect error of its own (a proxy's 502, a server still starting up);
- `FLAG_COMPRESSED`, `FLAG_END_STREAM`: the envelope flag bits of a streaming body;
- `error_of`: the (code, message) of a Connect error object;
- `end_stream_error`: the error an end-of-stream message carries, if any.

The browser's client (`compass_server/static/connect.js`) holds its own copy of the table and
the codes (it has no build step); `tests/unit/test_connect_protocol.py` fails when they drift.
"""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from compass_agent.jsonvalues import is_object

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "CODES",
    "FLAG_COMPRESSED",
    "FLAG_END_STREAM",
    "HTTP_CODES",
    "code_for_http_status",
    "end_stream_error",
    "error_of",
]

CODES: Final = frozenset(
    {
        "canceled",
        "unknown",
        "invalid_argument",
        "deadline_exceeded",
        "not_found",
        "already_exists",
        "permission_denied",
        "resource_exhausted",
        "failed_precondition",
        "aborted",
        "out_of_range",
        "unimplemented",
        "internal",
        "unavailable",
        "data_loss",
        "unauthenticated",
    }
)
"""Every Connect code, lower-case as the protocol writes them."""

HTTP_CODES: Final[Mapping[int, str]] = MappingProxyType(
    {
        400: "internal",
        401: "unauthenticated",
        403: "permission_denied",
        404: "unimplemented",
        429: "unavailable",
        502: "unavailable",
        503: "unavailable",
        504: "unavailable",
    }
)
"""The protocol's "HTTP to Error Code" table, row by row; every other status is `unknown`.
(A bare 400 is `internal`: only the server itself may say `invalid_argument`.)"""

FLAG_COMPRESSED: Final = 0b01
"""Envelope flag: the message is compressed with the stream's encoding."""
FLAG_END_STREAM: Final = 0b10
"""Envelope flag: the end-of-stream message, a JSON object `{"error"?, "metadata"?}`."""


def code_for_http_status(status: int) -> str:
    """The Connect code of an error response without a Connect error body."""
    return HTTP_CODES.get(status, "unknown")


def error_of(doc: object) -> tuple[str, str] | None:
    """A Connect error object's (code, message); None when `doc` is not an object or its code
    is not one of `CODES` (the caller falls back: the HTTP status, or `unknown`). A missing or
    non-string message is ""."""
    if not is_object(doc):
        return None
    code, message = doc.get("code"), doc.get("message")
    if not isinstance(code, str) or code not in CODES:
        return None
    return code, message if isinstance(message, str) else ""


def end_stream_error(body: bytes | bytearray) -> tuple[str, str] | None:
    """The (code, message) an end-of-stream message's `error` carries; None when the stream
    ended cleanly (no `error`, a null one, or an empty body). An `error` that is not a valid
    Connect error is `unknown` (with its message when it has a string one).

    Raises:
        ValueError: the body is not a JSON object.
    """
    if not body:
        return None
    doc: object = json.loads(body)  # JSONDecodeError and UnicodeDecodeError are ValueErrors
    if not is_object(doc):
        raise ValueError("the end-of-stream message is not a JSON object")
    error = doc.get("error")
    if error is None:
        return None
    found = error_of(error)
    if found is not None:
        return found
    message = error.get("message") if is_object(error) else None
    return "unknown", message if isinstance(message, str) else ""
