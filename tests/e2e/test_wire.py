"""Wire-level requests a client may get wrong: each gets a defined code, never INTERNAL or a
500, and never the text of an exception.

Protocols the server does not speak (gRPC, gRPC-Web), headers that are not UTF-8, stream
envelopes flagged compressed without a compression, gzip bodies (valid, broken, and a small
body that inflates past the size limit).
"""

from __future__ import annotations

import gzip
import json
from typing import TYPE_CHECKING

import httpx
import pytest

from compass_server.transport import wire
from compass_server.transport.auth import AuthContext
from compass_server.transport.gate import ConnectGate
from tests.e2e._asks import post, text_block
from tests.e2e._connect import envelope, open_stream, parse_reply, path, split_frames
from tests.e2e._grpc import grpc_status

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

    from tests._server import SeededWorld

pytestmark = pytest.mark.usefixtures("module_world")

LEAKS = ("codec", "Traceback", "Error", "ASGI", "trailers", "decode", "byte 0x")


def assert_clean(body: bytes) -> None:
    text = body.decode("utf-8", "replace")
    for leak in LEAKS:
        assert leak not in text, text


@pytest.mark.parametrize(
    "content_type",
    [
        "application/grpc",
        "application/grpc+proto",
        "application/grpc+json",
        "application/grpc-web",
        "application/grpc-web+proto",
        "application/grpc-web+json",
    ],
)
@pytest.mark.parametrize("method", ["ListChannels", "WatchChannel"])
async def test_grpc_protocols_answer_as_grpc_without_leaks(
    http: httpx.AsyncClient, module_world: SeededWorld, content_type: str, method: str
) -> None:
    """On the HTTP/1.1 listener gRPC-Web is served and gRPC is refused, both in gRPC's terms
    (tests/e2e/test_grpc.py has the round trips): HTTP 200 and a defined grpc-status, in the
    headers or in gRPC-Web's trailer frame, never an exception's text."""
    response = await http.post(
        path(method),
        content=envelope(b""),
        headers={
            "content-type": content_type,
            "authorization": f"Bearer {module_world.human.token}",
        },
    )
    assert response.status_code == 200, response.content
    assert response.headers["content-type"].startswith("application/grpc")
    status, message, _ = grpc_status(response)
    assert 0 <= status <= 16, status
    if "web" not in content_type:
        assert status == 12  # UNIMPLEMENTED: gRPC needs the HTTP/2 listener
    assert_clean(response.content)
    assert_clean(message.encode())


@pytest.mark.parametrize(
    "header",
    [
        ("x-note", b"caf\xe9"),
        ("x-note", b"\xff\xfe"),
        ("content-type", b"application/json\xff"),
        ("connect-protocol-version", b"\xc3"),
    ],
    ids=["latin-1", "bom", "content-type", "truncated-sequence"],
)
async def test_headers_that_are_not_utf8_are_invalid_argument(
    http: httpx.AsyncClient, module_world: SeededWorld, header: tuple[str, bytes]
) -> None:
    token = f"Bearer {module_world.human.token}".encode()
    for content_type, method, body in (
        (b"application/json", "ListChannels", b"{}"),
        (b"application/connect+json", "WatchChannel", envelope(b"{}")),
    ):
        name = header[0].encode()
        headers = [(b"authorization", token), (b"content-type", content_type)]
        headers = [h for h in headers if h[0] != name] + [(name, header[1])]
        response = await http.post(path(method), content=body, headers=headers)
        assert_clean(response.content)
        if response.status_code == 200:  # a stream: the error is in its end frame
            (frame,) = split_frames(bytearray(response.content))
            error = json.loads(frame.payload)["error"]
        else:
            error = response.json()
            assert response.status_code == 400
        assert error["code"] == "invalid_argument", error
        assert error["message"] == "request headers must be valid UTF-8"


async def test_a_stream_message_flagged_compressed_needs_a_compression(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    request = json.dumps({"channelId": module_world.channel_id}).encode()
    for encoding in (None, "identity"):
        headers = {} if encoding is None else {"connect-content-encoding": encoding}
        async with open_stream(
            http,
            "WatchChannel",
            envelope(request, flags=1),
            module_world.human.token,
            headers=headers,
            raw_body=True,
        ) as stream:
            frame = await stream.next()
        assert frame.end, frame
        error = frame.error()
        assert error is not None
        assert error["code"] == "invalid_argument", (encoding, error)
    # With the compression named, the same compressed message is served.
    await post(http, module_world.agent.token, module_world.channel_id, text_block("hello"))
    async with open_stream(
        http,
        "WatchChannel",
        envelope(gzip.compress(request), flags=1),
        module_world.human.token,
        headers={"connect-content-encoding": "gzip"},
        raw_body=True,
    ) as stream:
        await stream.message()


async def test_gzip_request_bodies(http: httpx.AsyncClient, module_world: SeededWorld) -> None:
    headers = {
        "content-type": "application/json",
        "content-encoding": "gzip",
        "authorization": f"Bearer {module_world.human.token}",
    }
    ok = await http.post(path("ListChannels"), content=gzip.compress(b"{}"), headers=headers)
    assert ok.status_code == 200, ok.content
    broken = parse_reply(
        await http.post(path("ListChannels"), content=b"\x1f\x8bnot gzip", headers=headers)
    )
    assert (broken.status, broken.code) == (400, "invalid_argument")
    # 8 MiB of spaces compress to a few KiB: under the body limit, far over it once inflated.
    bomb = gzip.compress(b"{" + b" " * (8 << 20) + b"}")
    assert len(bomb) < 64 << 10
    inflated = parse_reply(await http.post(path("ListChannels"), content=bomb, headers=headers))
    assert (inflated.status, inflated.code) == (400, "invalid_argument"), inflated
    unknown = parse_reply(
        await http.post(
            path("ListChannels"), content=b"{}", headers={**headers, "content-encoding": "br"}
        )
    )
    assert (unknown.status, unknown.code) == (501, "unimplemented"), unknown


async def test_the_gate_rewrites_unknown_errors_of_streaming_requests_too() -> None:
    # What connectrpc sends when something it did not expect fails before a stream
    # starts: a unary-style error with status 500, code unknown and the exception's text.
    async def leaky(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        body = json.dumps({"code": "unknown", "message": "KeyError: 'secret'"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 500,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def authenticate(token: str) -> str | None:
        return "someone" if token == "t" else None

    gate = ConnectGate(
        leaky,
        auth=AuthContext[str](),
        authenticate=authenticate,
        authorize=lambda _account, _service: None,
        max_body_bytes=1024,
    )
    transport = httpx.ASGITransport(app=gate)
    async with httpx.AsyncClient(transport=transport, base_url="http://gate") as client:
        for content_type in ("application/json", "application/connect+json"):
            response = await client.post(
                path("WatchChannel"),
                content=envelope(b"{}"),
                headers={"content-type": content_type, "authorization": "Bearer t"},
            )
            if wire.is_streaming(content_type):
                # A stream's error travels in its end-stream frame, with HTTP 200.
                assert response.status_code == 200
                (frame,) = split_frames(bytearray(response.content))
                assert frame.end
                assert frame.error() == {"code": "internal", "message": "internal error"}
            else:
                assert response.status_code == 500
                assert response.json() == {"code": "internal", "message": "internal error"}
    assert wire.is_streaming("application/connect+json")
