"""telemetry.ConnectCodeReader: the error code of a response from its ASGI messages, for every
protocol the server speaks (Connect unary and streaming, gRPC, gRPC-Web)."""

from __future__ import annotations

import json
import struct
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, strategies as st

from compass_server.observe.tracing import ConnectCodeReader
from compass_server.transport import wire

if TYPE_CHECKING:
    from starlette.types import Message

from connectrpc.code import Code


def _read(messages: list[Message]) -> ConnectCodeReader:
    reader = ConnectCodeReader()
    for message in messages:
        reader.feed(message)
    return reader


def _start(content_type: str, *extra: tuple[bytes, bytes], trailers: bool = False) -> Message:
    headers = [(b"content-type", content_type.encode()), *extra]
    return {"type": "http.response.start", "status": 200, "headers": headers, "trailers": trailers}


def _body(data: bytes, more: bool = False) -> Message:
    return {"type": "http.response.body", "body": data, "more_body": more}


def _frame(flags: int, payload: bytes) -> bytes:
    return struct.pack(">BI", flags, len(payload)) + payload


@pytest.mark.parametrize("code", [None, *Code])
def test_grpc_status_in_the_trailers(code: Code | None) -> None:
    status = [(b"grpc-status", b"0")] if code is None else wire.grpc_status(code, "why")
    reader = _read(
        [
            _start("application/grpc+proto", trailers=True),
            _body(_frame(0, b"\x08\x01"), more=True),
            _body(b""),
        ]
    )
    assert not reader.done  # the status is still to come
    reader.feed({"type": "http.response.trailers", "headers": status, "more_trailers": False})
    assert reader.done
    assert reader.code == (None if code is None else code.value)


def test_grpc_trailers_only() -> None:
    reader = _read(
        [
            _start("application/grpc", *wire.grpc_status(Code.UNAUTHENTICATED, "no token")),
            _body(b""),
        ]
    )
    assert (reader.done, reader.code) == (True, "unauthenticated")


@given(
    code=st.sampled_from([None, *Code]),
    messages=st.lists(st.binary(max_size=40), max_size=4),
    cut=st.integers(min_value=1, max_value=7),
)
def test_grpc_web_trailer_frame_in_any_chunking(
    code: Code | None, messages: list[bytes], cut: int
) -> None:
    number = 0 if code is None else wire.GRPC_STATUS[code]
    trailer = f"grpc-status: {number}\r\ngrpc-message: x\r\n".encode()
    body = b"".join(_frame(0, m) for m in messages) + _frame(0x80, trailer)
    chunks = [body[i : i + cut] for i in range(0, len(body), cut)]
    reader = _read(
        [
            _start("application/grpc-web+proto"),
            *[_body(chunk, more=True) for chunk in chunks],
            _body(b""),
        ]
    )
    assert reader.done
    assert reader.code == (None if code is None else code.value)


def test_connect_stream_end_frame_still_read() -> None:
    end = json.dumps({"error": {"code": "not_found", "message": "x"}}).encode()
    reader = _read([_start("application/connect+json"), _body(_frame(2, end))])
    assert (reader.done, reader.code) == (True, "not_found")
