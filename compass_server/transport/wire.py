"""Connect wire details Compass owns: hardened codecs and compression, and error frames.

connectrpc (0.13) reports a body it cannot decode or inflate as INVALID_ARGUMENT, but with the
parser's exception text appended ("unmarshal message: ..."); no exception text reaches a
client here, so the apps get codecs (`codecs()`) and a gzip (`BoundedGzip`) whose failures are
ConnectErrors with messages of our own. The library then passes them through unchanged.
"""

from __future__ import annotations

import json
import urllib.parse
import zlib
from http import HTTPStatus
from typing import TYPE_CHECKING, Final, Protocol, TypedDict, TypeVar

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from google.protobuf import json_format
from google.protobuf.message import Message

from compass_server.transport.connect_protocol import (
    FLAG_COMPRESSED,
    FLAG_END_STREAM,
    EnvelopeReader,
    end_stream_error,
    envelope,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from connectrpc.codec import Codec
    from connectrpc.compression import Compression

M = TypeVar("M", bound=Message)

#: HTTP status of a unary Connect error, per the Connect protocol's code table.
HTTP_STATUS: Final[dict[Code, int]] = {
    Code.CANCELED: 499,
    Code.UNKNOWN: HTTPStatus.INTERNAL_SERVER_ERROR,
    Code.INVALID_ARGUMENT: HTTPStatus.BAD_REQUEST,
    Code.DEADLINE_EXCEEDED: HTTPStatus.GATEWAY_TIMEOUT,
    Code.NOT_FOUND: HTTPStatus.NOT_FOUND,
    Code.ALREADY_EXISTS: HTTPStatus.CONFLICT,
    Code.PERMISSION_DENIED: HTTPStatus.FORBIDDEN,
    Code.RESOURCE_EXHAUSTED: HTTPStatus.TOO_MANY_REQUESTS,
    Code.FAILED_PRECONDITION: HTTPStatus.BAD_REQUEST,
    Code.ABORTED: HTTPStatus.CONFLICT,
    Code.OUT_OF_RANGE: HTTPStatus.BAD_REQUEST,
    Code.UNIMPLEMENTED: HTTPStatus.NOT_IMPLEMENTED,
    Code.INTERNAL: HTTPStatus.INTERNAL_SERVER_ERROR,
    Code.UNAVAILABLE: HTTPStatus.SERVICE_UNAVAILABLE,
    Code.DATA_LOSS: HTTPStatus.INTERNAL_SERVER_ERROR,
    Code.UNAUTHENTICATED: HTTPStatus.UNAUTHORIZED,
}

#: gRPC's status code numbers (grpc-status), per the gRPC protocol.
GRPC_STATUS: Final[dict[Code, int]] = {
    Code.CANCELED: 1,
    Code.UNKNOWN: 2,
    Code.INVALID_ARGUMENT: 3,
    Code.DEADLINE_EXCEEDED: 4,
    Code.NOT_FOUND: 5,
    Code.ALREADY_EXISTS: 6,
    Code.PERMISSION_DENIED: 7,
    Code.RESOURCE_EXHAUSTED: 8,
    Code.FAILED_PRECONDITION: 9,
    Code.ABORTED: 10,
    Code.OUT_OF_RANGE: 11,
    Code.UNIMPLEMENTED: 12,
    Code.INTERNAL: 13,
    Code.UNAVAILABLE: 14,
    Code.DATA_LOSS: 15,
    Code.UNAUTHENTICATED: 16,
}

STREAMING_CONTENT_TYPE_PREFIX: Final = "application/connect+"
GRPC_CONTENT_TYPE: Final = "application/grpc"
GRPC_WEB_CONTENT_TYPE: Final = "application/grpc-web"
STREAM_COMPRESSION: Final = "gzip"
"""The one request compression create_app registers besides identity (`BoundedGzip`)."""


def _malformed(message: type[Message], encoding: str) -> ConnectError:
    name = message.DESCRIPTOR.full_name
    return ConnectError(Code.INVALID_ARGUMENT, f"request body is not a valid {name} in {encoding}")


class EncodeMemo(Protocol):
    """Encodings shared between responses sent to many clients (shared_reads.SharedResponses)."""

    def encoded(self, message: object, codec: str, encode: Callable[[], bytes]) -> bytes: ...


class _NoMemo:
    def encoded(self, message: object, codec: str, encode: Callable[[], bytes]) -> bytes:
        del message, codec
        return encode()


class HardenedJSONCodec:
    """protobuf JSON (a connectrpc Codec); any decode failure is INVALID_ARGUMENT."""

    def __init__(self, memo: EncodeMemo | None = None) -> None:
        self._memo = memo or _NoMemo()

    def name(self) -> str:
        return "json"

    def encode(self, message: Message) -> bytes:
        return self._memo.encoded(
            message, "json", lambda: json_format.MessageToJson(message, indent=None).encode()
        )

    def decode(self, data: bytes | bytearray, message_class: type[M]) -> M:
        message = message_class()
        try:
            json_format.Parse(bytes(data), message)
        except Exception:  # noqa: BLE001 - every parser failure means the same thing to a client
            raise _malformed(message_class, "JSON") from None
        return message


class HardenedBinaryCodec:
    """protobuf binary (a connectrpc Codec); any decode failure is INVALID_ARGUMENT."""

    def __init__(self, memo: EncodeMemo | None = None) -> None:
        self._memo = memo or _NoMemo()

    def name(self) -> str:
        return "proto"

    def encode(self, message: Message) -> bytes:
        return self._memo.encoded(message, "proto", message.SerializeToString)

    def decode(self, data: bytes | bytearray, message_class: type[M]) -> M:
        message = message_class()
        try:
            message.ParseFromString(bytes(data))
        except Exception:  # noqa: BLE001 - every parser failure means the same thing to a client
            raise _malformed(message_class, "protobuf binary") from None
        return message


class AppOptions(TypedDict):
    """Keyword arguments of every generated `...ASGIApplication` here."""

    codecs: list[Codec]
    compressions: list[Compression]
    read_max_bytes: int


def app_options(max_request_bytes: int, memo: EncodeMemo | None = None) -> AppOptions:
    """Hardened codecs (encoding shared responses once, with `memo`), the one request
    compression (bounded gzip) and the body limit."""
    return {
        "codecs": [HardenedBinaryCodec(memo), HardenedJSONCodec(memo)],
        "compressions": [BoundedGzip(max_request_bytes)],
        "read_max_bytes": max_request_bytes,
    }


class BoundedGzip:
    """gzip with a cap on the decompressed size (a connectrpc Compression)."""

    def __init__(self, max_output_bytes: int, level: int = 6) -> None:
        self._max = max_output_bytes
        self._level = level

    def name(self) -> str:
        return "gzip"

    def compress(self, data: bytes | bytearray | memoryview) -> bytes:
        # wbits 31: gzip container, as the Connect protocol's "gzip" requires.
        compressor = zlib.compressobj(self._level, zlib.DEFLATED, 31)
        return compressor.compress(data) + compressor.flush()

    def decompress(
        self, data: bytes | bytearray | memoryview, read_max_bytes: int | None = None
    ) -> bytes:
        # The cap is ours (the gate's limit), whatever the app's read_max_bytes says.
        del read_max_bytes
        inflater = zlib.decompressobj(31)
        try:
            out = inflater.decompress(data, self._max + 1)
        except zlib.error:
            raise ConnectError(Code.INVALID_ARGUMENT, "request body is not valid gzip") from None
        if len(out) > self._max or inflater.unconsumed_tail:
            raise ConnectError(Code.INVALID_ARGUMENT, "request body is too large")
        if not inflater.eof:
            raise ConnectError(Code.INVALID_ARGUMENT, "request body is not valid gzip")
        return out


def error_body(code: Code, message: str) -> bytes:
    """The JSON of a Connect error without details."""
    return json.dumps({"code": code.value, "message": message}).encode()


def is_streaming(content_type: str) -> bool:
    """Whether a request's content type selects the Connect streaming protocol."""
    return content_type.lower().startswith(STREAMING_CONTENT_TYPE_PREFIX)


def is_grpc(content_type: str) -> bool:
    """Whether a content type selects gRPC or gRPC-Web (as connectrpc negotiates it)."""
    media = content_type.lower()
    return media == GRPC_CONTENT_TYPE or media.startswith(
        (f"{GRPC_CONTENT_TYPE}+", f"{GRPC_CONTENT_TYPE}-web")
    )


def is_grpc_web(content_type: str) -> bool:
    """Whether a content type selects gRPC-Web (trailers travel in the body: HTTP/1.1 will do)."""
    return content_type.lower().startswith(GRPC_WEB_CONTENT_TYPE)


def grpc_status(code: Code, message: str) -> list[tuple[bytes, bytes]]:
    """The grpc-status and grpc-message fields (headers or trailers) of an error."""
    return [
        (b"grpc-status", str(GRPC_STATUS[code]).encode()),
        # gRPC's percent-encoding of grpc-message (unreserved characters kept).
        (b"grpc-message", urllib.parse.quote(message, safe="").encode()),
    ]


def grpc_media_type(content_type: str) -> bytes:
    """The response content type for a gRPC or gRPC-Web request's `content_type`."""
    return (content_type.partition(";")[0].strip().lower() or GRPC_CONTENT_TYPE).encode("latin-1")


def compressed_without_encoding(body: bytes, encoding: str | None) -> bool:
    """Whether a streaming request body has a message flagged compressed while its
    `connect-content-encoding` names no supported compression (connectrpc then
    decodes with identity and fails with INTERNAL)."""
    if encoding == STREAM_COMPRESSION:  # compared as connectrpc does: exactly
        return False
    skipped = EnvelopeReader(keep=lambda _flags, _length: False)
    return any(frame.flags & FLAG_COMPRESSED for frame in skipped.feed(body))


def unary_error(code: Code, message: str) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """(status, headers, body) of a unary Connect error response."""
    return (
        int(HTTP_STATUS.get(code, HTTPStatus.INTERNAL_SERVER_ERROR)),
        [(b"content-type", b"application/json")],
        error_body(code, message),
    )


def stream_error(
    code: Code, message: str, content_type: str
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """(status, headers, body) of a Connect streaming response that only carries an error.

    Streaming responses always have HTTP 200; the error travels in the end-of-stream frame.
    """
    payload = json.dumps({"error": {"code": code.value, "message": message}}).encode()
    return (
        200,
        [(b"content-type", content_type.encode("latin-1"))],
        envelope(payload, FLAG_END_STREAM),
    )


def end_stream_error_code(frame: bytes) -> str | None:
    """The error code inside an uncompressed end-of-stream frame, else None."""
    if frame[:1] != bytes((FLAG_END_STREAM,)):  # a message: the gate asks for every one
        return None
    first = next(EnvelopeReader().feed(frame), None)
    if first is None or first.flags != FLAG_END_STREAM or first.payload is None:
        return None
    try:
        error = end_stream_error(first.payload)
    except ValueError:
        return None
    return None if error is None else error[0]
