"""Connect wire details Compass owns: hardened codecs and compression, and error frames.

connect-python (0.9) decodes request bodies before any interceptor runs, and reports a decode
failure as UNKNOWN carrying the parser's exception text. We want INVALID_ARGUMENT with a message
of our own, so the codec registry gets hardened codecs (the registry is a module-level dict in
the pinned version; `install_hardened_codecs` is the one place that touches it). Gzip request
bodies are decompressed with an output cap, so a small compressed body cannot expand into an
unbounded allocation before the size check.
"""

from __future__ import annotations

import json
import struct
import zlib
from http import HTTPStatus
from typing import Final, TypeVar

from connectrpc import _codec as connect_codec  # pyright: ignore[reportPrivateUsage] - see module docstring
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from google.protobuf import json_format
from google.protobuf.message import Message

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

STREAMING_CONTENT_TYPE_PREFIX: Final = "application/connect+"
GRPC_CONTENT_TYPE: Final = "application/grpc"
STREAM_COMPRESSION: Final = "gzip"
"""The one request compression create_app registers besides identity (`BoundedGzip`)."""
_END_STREAM: Final = 0b10
_COMPRESSED: Final = 0b01


def _malformed(message: Message, encoding: str) -> ConnectError:
    name = message.DESCRIPTOR.full_name
    return ConnectError(Code.INVALID_ARGUMENT, f"request body is not a valid {name} in {encoding}")


class HardenedJSONCodec:
    """protobuf JSON (a connectrpc Codec); any decode failure is INVALID_ARGUMENT."""

    def name(self) -> str:
        return "json"

    def encode(self, message: Message) -> bytes:
        return json_format.MessageToJson(message, indent=None).encode()

    def decode(self, data: bytes | bytearray, message: M) -> M:
        try:
            json_format.Parse(bytes(data), message)
        except Exception:  # noqa: BLE001 - every parser failure means the same thing to a client
            raise _malformed(message, "JSON") from None
        return message


class HardenedBinaryCodec:
    """protobuf binary (a connectrpc Codec); any decode failure is INVALID_ARGUMENT."""

    def name(self) -> str:
        return "proto"

    def encode(self, message: Message) -> bytes:
        return message.SerializeToString()

    def decode(self, data: bytes | bytearray, message: M) -> M:
        try:
            message.ParseFromString(bytes(data))
        except Exception:  # noqa: BLE001 - every parser failure means the same thing to a client
            raise _malformed(message, "protobuf binary") from None
        return message


def install_hardened_codecs() -> None:
    """Replace connect-python's codecs (process-wide, idempotent) with the hardened ones."""
    json_codec = HardenedJSONCodec()
    connect_codec._codecs.update(  # pyright: ignore[reportPrivateUsage, reportUnknownMemberType] - the registry of the pinned version; see module docstring
        {
            connect_codec.CODEC_NAME_JSON: json_codec,
            connect_codec.CODEC_NAME_JSON_CHARSET_UTF8: json_codec,
            connect_codec.CODEC_NAME_PROTO: HardenedBinaryCodec(),
        }
    )


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

    def decompress(self, data: bytes | bytearray | memoryview) -> bytes:
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
    """Whether a content type selects gRPC or gRPC-Web (as connect-python negotiates it)."""
    media = content_type.lower()
    return media == GRPC_CONTENT_TYPE or media.startswith(
        (f"{GRPC_CONTENT_TYPE}+", f"{GRPC_CONTENT_TYPE}-web")
    )


def compressed_without_encoding(body: bytes, encoding: str | None) -> bool:
    """Whether a streaming request body has a message flagged compressed while its
    `connect-content-encoding` names no supported compression (connect-python then
    decodes with identity and fails with INTERNAL)."""
    if encoding == STREAM_COMPRESSION:  # compared as connect-python does: exactly
        return False
    offset = 0
    while len(body) - offset >= 5:
        flags, length = struct.unpack_from(">BI", body, offset)
        if flags & _COMPRESSED:
            return True
        offset += 5 + length
    return False


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
    frame = struct.pack(">BI", _END_STREAM, len(payload)) + payload
    return 200, [(b"content-type", content_type.encode("latin-1"))], frame


def end_stream_error_code(frame: bytes) -> str | None:
    """The error code inside an uncompressed end-of-stream frame, else None."""
    if len(frame) < 5 or frame[0] != _END_STREAM:
        return None
    (length,) = struct.unpack(">I", frame[1:5])
    try:
        doc: object = json.loads(frame[5 : 5 + length])
    except ValueError:
        return None
    if isinstance(doc, dict):
        error: object = doc.get("error")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType] - narrowed below
        if isinstance(error, dict):
            code: object = error.get("code")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType] - narrowed below
            if isinstance(code, str):
                return code
    return None
