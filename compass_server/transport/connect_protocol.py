"""The parts of the Connect protocol (https://connectrpc.com/docs/protocol/) that the server
reads by hand, beside connectrpc: its span recorder (`compass_server.observe.tracing`), which watches
responses pass by in ASGI messages, and its own frames (`compass_server.transport.wire`). Pure:
no I/O, only `json`. (Both clients are generated: the bridge's is connectrpc's,
the browser's protoc-gen-es's with connect-web; neither uses this module.)

- `CODES`: the sixteen Connect codes ("there are no user-defined codes");
- `code_for_http_status`: the protocol's "HTTP to Error Code" table, for an error response that
  carries no Connect error of its own (a proxy's 502, a server still starting up);
- `FLAG_COMPRESSED`, `FLAG_END_STREAM`: the envelope flag bits of a streaming body;
- `envelope` frames one message, `EnvelopeReader` splits a streaming body back into
  envelopes as its chunks arrive (the one framer: the span recorder, the gate's request
  checks);
- `error_of`: the (code, message) of a Connect error object; `unary_error`: of a unary
  error response (its body, else its status);
- `end_stream_error`: the error an end-of-stream message carries, if any.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from compass_core.jsonvalues import is_object

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

__all__ = [
    "CODES",
    "FLAG_COMPRESSED",
    "FLAG_END_STREAM",
    "HTTP_CODES",
    "Envelope",
    "EnvelopeReader",
    "code_for_http_status",
    "end_stream_error",
    "envelope",
    "error_of",
    "unary_error",
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


def unary_error(status: int, body: bytes | bytearray | None) -> tuple[str, str]:
    """The (code, message) of a unary error response: the Connect error its JSON `body`
    carries, else the code of its HTTP `status` with "HTTP <status>" (None: no JSON body)."""
    doc: object = None
    if body is not None:
        try:
            doc = json.loads(body)  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        except ValueError:
            doc = None
    return error_of(doc) or (code_for_http_status(status), f"HTTP {status}")


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


HEADER_BYTES: Final = 5
"""An envelope's header: one flag byte, then the payload's length (4 bytes, big-endian)."""


def envelope(payload: bytes, flags: int = 0) -> bytes:
    """`payload` framed as one envelope."""
    return struct.pack(">BI", flags, len(payload)) + payload


@dataclass(frozen=True, slots=True)
class Envelope:
    """One envelope of a streaming body."""

    flags: int
    length: int
    """The payload's length as its header announced it."""
    payload: bytes | None
    """The payload; None when the reader was told not to keep it (then it is skipped as it
    arrives, never buffered)."""


class EnvelopeReader:
    """Splits a streaming body into envelopes as its chunks arrive, whatever their sizes.

    Hand-written (connectrpc's envelope code is internal to its client and server): the
    server's span recorder watches responses pass by in ASGI messages, and the gate checks
    request envelopes before connectrpc reads them.

    `keep(flags, length)` decides per envelope, when its header is complete, whether its
    payload is kept; a payload not kept is reported at once (as `Envelope(..., None)`, before
    its bytes arrive) and then skipped, so a caller that wants only some envelopes, or that
    refuses oversize ones, holds nothing else in memory.
    """

    def __init__(self, keep: Callable[[int, int], bool] = lambda _flags, _length: True) -> None:
        self._keep = keep
        self._header = bytearray()
        self._payload = bytearray()
        self._flags = 0
        self._remaining = 0
        self._kept = True

    def feed(self, data: bytes | bytearray | memoryview) -> Iterator[Envelope]:
        """The envelopes `data` completes (or, not kept, starts), in order."""
        view = memoryview(data)
        while view:
            if len(self._header) < HEADER_BYTES:
                take = HEADER_BYTES - len(self._header)
                self._header += view[:take]
                view = view[take:]
                if len(self._header) < HEADER_BYTES:
                    return
                self._flags = self._header[0]
                self._remaining = int.from_bytes(self._header[1:HEADER_BYTES], "big")
                self._kept = self._keep(self._flags, self._remaining)
                if not self._kept:
                    yield Envelope(self._flags, self._remaining, None)
                if self._remaining == 0:
                    yield from self._done()
                continue
            take = min(self._remaining, len(view))
            if self._kept:
                self._payload += view[:take]
            view = view[take:]
            self._remaining -= take
            if self._remaining == 0:
                yield from self._done()

    def _done(self) -> Iterator[Envelope]:
        if self._kept:
            yield Envelope(self._flags, len(self._payload), bytes(self._payload))
        self._header.clear()
        self._payload.clear()
        self._flags = 0
