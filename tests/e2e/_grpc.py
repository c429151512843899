"""Reading gRPC-Web responses (tests/e2e/test_grpc.py, test_wire.py, test_fuzz.py)."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx


def grpc_web_frames(body: bytes) -> tuple[list[bytes], dict[str, str]]:
    """(message payloads, trailers) of a gRPC-Web response body; fails on a torn frame."""
    messages: list[bytes] = []
    trailers: dict[str, str] = {}
    offset = 0
    while offset < len(body):
        assert len(body) - offset >= 5, ("a torn frame header", body)
        flags, length = struct.unpack_from(">BI", body, offset)
        payload = body[offset + 5 : offset + 5 + length]
        assert len(payload) == length, ("a torn frame", body)
        if flags & 0x80:
            for line in payload.decode().split("\r\n"):
                if line:
                    name, _, value = line.partition(":")
                    trailers[name.strip().lower()] = value.strip()
        else:
            messages.append(payload)
        offset += 5 + length
    return messages, trailers


def grpc_status(response: httpx.Response) -> tuple[int, str, list[bytes]]:
    """(grpc-status, grpc-message, message payloads) of a gRPC or gRPC-Web response over
    HTTP/1.1: the status from the headers (trailers-only) or from the trailer frame."""
    messages, trailers = grpc_web_frames(response.content)
    status = response.headers.get("grpc-status") or trailers.get("grpc-status")
    message = response.headers.get("grpc-message") or trailers.get("grpc-message", "")
    assert status is not None, (response.headers, response.content)
    assert status.isdigit(), (response.headers, response.content)
    return int(status), message, messages
