"""The transport layer in front of the handlers: guard order, error mapping, no leaked text.

Drives a real connectrpc ASGI app (CommsService) through the gate with httpx's in-process
ASGI transport; the service here is a scripted stand-in that raises chosen errors, so these
tests cover only the transport (the store and services have their own tests).
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import httpx
import pytest
from connectrpc.code import Code
from google.rpc import error_details_pb2

from compass_server.domain.errors import (
    FieldViolation,
    InvalidArgumentError,
    NotFoundError,
    UnavailableError,
)
from compass_server.transport import gate as gate_module, wire
from compass_server.transport.auth import AuthContext
from compass_server.transport.error_mapping import ErrorMapping
from compass_server.transport.gate import ConnectGate, bearer_token
from gen.compass.v1 import comms_pb2
from gen.compass.v1.comms_connect import CommsService, CommsServiceASGIApplication

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from connectrpc.request import RequestContext
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

SECRET = "s3cr3t-detail-from-a-stack"


@dataclass(frozen=True)
class Account:
    name: str
    kind: str


TOKENS = {"human-token": Account("ada", "human"), "agent-token": Account("bot", "agent")}


async def authenticate(token: str) -> Account | None:
    if token == "db-down":
        raise UnavailableError("database unavailable")
    if token == "explode":
        raise RuntimeError(SECRET)
    return TOKENS.get(token)


def authorize(account: Account, service: str) -> str | None:
    wanted = {"compass.v1.CommsService": "human", "compass.v1.AgentService": "agent"}
    if wanted.get(service) != account.kind:
        return f"{account.kind} accounts may not call {service}"
    return None


AUTH: AuthContext[Account] = AuthContext()


class ScriptedComms(CommsService):
    """CommsService whose behaviour is chosen by the request."""

    async def list_channels(
        self, request: comms_pb2.ListChannelsRequest, ctx: RequestContext
    ) -> comms_pb2.ListChannelsResponse:
        me = AUTH.current()
        return comms_pb2.ListChannelsResponse(channels=[comms_pb2.Channel(name=me.name)])

    async def get_ask(
        self, request: comms_pb2.GetAskRequest, ctx: RequestContext
    ) -> comms_pb2.GetAskResponse:
        match request.ask_id:
            case "missing":
                raise NotFoundError("ask not found")
            case "invalid":
                raise InvalidArgumentError(
                    "answers are invalid",
                    [
                        FieldViolation(
                            field="answers[0]", description='question "db": x', question_id="db"
                        ),
                        FieldViolation(
                            field="answers", description='question "f": no answer', question_id="f"
                        ),
                    ],
                )
            case "down":
                raise UnavailableError("database unavailable")
            case "bug":
                raise RuntimeError(SECRET)
            case _:
                return comms_pb2.GetAskResponse(ask=comms_pb2.Ask(ask_id=request.ask_id))

    async def watch_channel(
        self, request: comms_pb2.WatchChannelRequest, ctx: RequestContext
    ) -> AsyncIterator[comms_pb2.WatchChannelResponse]:
        yield comms_pb2.WatchChannelResponse(message=comms_pb2.Message(message_id="m1"))
        if request.channel_id == "bug":
            raise RuntimeError(SECRET)


@pytest.fixture
def client() -> httpx.AsyncClient:
    rpc = CommsServiceASGIApplication(
        ScriptedComms(),
        interceptors=[ErrorMapping()],
        **wire.app_options(4096),
    )
    app = ConnectGate(
        cast("ASGIApp", rpc),  # connect types its apps with asgiref's types when installed
        auth=AUTH,
        authenticate=authenticate,
        authorize=authorize,
        max_body_bytes=4096,
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def _headers(token: str | None, content_type: str = "application/json") -> dict[str, str]:
    headers = {"content-type": content_type}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return headers


async def _call(
    client: httpx.AsyncClient,
    method: str,
    body: bytes | str,
    token: str | None = "human-token",
    **extra: str,
) -> httpx.Response:
    headers = _headers(token) | extra
    return await client.post(f"/compass.v1.CommsService/{method}", content=body, headers=headers)


def _stream_frames(body: bytes) -> list[tuple[int, dict[str, object]]]:
    frames: list[tuple[int, dict[str, object]]] = []
    while body:
        flags, length = struct.unpack(">BI", body[:5])
        frames.append((flags, json.loads(body[5 : 5 + length])))
        body = body[5 + length :]
    return frames


async def test_success_passes_the_account_to_the_handler(client: httpx.AsyncClient) -> None:
    response = await _call(client, "ListChannels", "{}")
    assert response.status_code == 200
    assert response.json() == {"channels": [{"name": "ada"}]}


@pytest.mark.parametrize(
    ("token", "status", "code"),
    [
        (None, 401, "unauthenticated"),
        ("", 401, "unauthenticated"),
        ("wrong", 401, "unauthenticated"),
        ("agent-token", 403, "permission_denied"),
        ("db-down", 503, "unavailable"),
        ("explode", 500, "internal"),
    ],
)
async def test_authentication_outcomes(
    client: httpx.AsyncClient, token: str | None, status: int, code: str
) -> None:
    response = await _call(client, "ListChannels", "{}", token=token)
    assert (response.status_code, response.json()["code"]) == (status, code)
    assert SECRET not in response.text


async def test_unauthenticated_wins_over_a_malformed_or_oversize_body(
    client: httpx.AsyncClient,
) -> None:
    for body in ("{not json", "x" * 10_000):
        response = await _call(client, "GetAsk", body, token=None)
        assert response.json()["code"] == "unauthenticated"


async def test_oversize_body_is_invalid_argument(client: httpx.AsyncClient) -> None:
    body = json.dumps({"askId": "a" * 5000})
    response = await _call(client, "GetAsk", body)
    assert (response.status_code, response.json()["code"]) == (400, "invalid_argument")
    assert "too large" in response.json()["message"]


async def test_malformed_bodies_are_invalid_argument_without_parser_text(
    client: httpx.AsyncClient,
) -> None:
    cases = [
        ("application/json", b"{not json"),
        ("application/json", b'{"askId": 5}'),
        ("application/json", b'{"noSuchField": 1}'),
        ("application/json", b"\xff\xfe"),
        ("application/proto", b"\xff\xff\xff"),
    ]
    for content_type, body in cases:
        response = await client.post(
            "/compass.v1.CommsService/GetAsk",
            content=body,
            headers=_headers("human-token", content_type),
        )
        assert response.status_code == 400, body
        doc = response.json()
        assert doc["code"] == "invalid_argument"
        assert doc["message"].startswith("request body is not a valid compass.v1.GetAskRequest")


async def test_gzip_expanding_past_the_limit_is_rejected(client: httpx.AsyncClient) -> None:
    bomb = gzip.compress(json.dumps({"askId": "a" * 100_000}).encode())
    assert len(bomb) < 4096
    response = await _call(client, "GetAsk", bomb, **{"content-encoding": "gzip"})
    assert response.json()["code"] == "invalid_argument"
    ok = await _call(
        client, "GetAsk", gzip.compress(b'{"askId": "x"}'), **{"content-encoding": "gzip"}
    )
    assert ok.json() == {"ask": {"askId": "x"}}


@pytest.mark.parametrize(
    ("ask_id", "status", "code"),
    [
        ("missing", 404, "not_found"),
        ("down", 503, "unavailable"),
        ("invalid", 400, "invalid_argument"),
    ],
)
async def test_domain_errors_map_to_their_codes(
    client: httpx.AsyncClient, ask_id: str, status: int, code: str
) -> None:
    response = await _call(client, "GetAsk", json.dumps({"askId": ask_id}))
    assert (response.status_code, response.json()["code"]) == (status, code)


async def test_field_violations_travel_as_bad_request(client: httpx.AsyncClient) -> None:
    response = await _call(client, "GetAsk", json.dumps({"askId": "invalid"}))
    details = {d["type"]: base64.b64decode(d["value"] + "==") for d in response.json()["details"]}
    assert set(details) == {"google.rpc.BadRequest", "compass.v1.InvalidFields"}
    bad = error_details_pb2.BadRequest.FromString(details["google.rpc.BadRequest"])
    assert [(v.field, v.description) for v in bad.field_violations] == [
        ("answers[0]", 'question "db": x'),
        ("answers", 'question "f": no answer'),
    ]
    # The same violations with their questions, for clients that place them per question.
    invalid = comms_pb2.InvalidFields.FromString(details["compass.v1.InvalidFields"])
    assert [(f.field, f.description, f.question_id) for f in invalid.fields] == [
        ("answers[0]", 'question "db": x', "db"),
        ("answers", 'question "f": no answer', "f"),
    ]


async def test_unexpected_exception_is_internal_and_logged(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        response = await _call(client, "GetAsk", json.dumps({"askId": "bug"}))
    assert response.status_code == 500
    assert response.json() == {"code": "internal", "message": "internal error"}
    assert SECRET in caplog.text  # the detail stays in the server log


async def test_stream_errors_are_mapped_in_the_end_frame(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/compass.v1.CommsService/WatchChannel",
        content=_envelope(b'{"channelId": "bug"}'),
        headers=_headers("human-token", "application/connect+json"),
    )
    frames = _stream_frames(response.content)
    assert frames[0] == (0, {"message": {"messageId": "m1"}})
    assert frames[-1] == (2, {"error": {"code": "internal", "message": "internal error"}})
    assert SECRET not in response.text


async def test_stream_rejections_use_the_stream_format(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/compass.v1.CommsService/WatchChannel",
        content=_envelope(b"{}"),
        headers=_headers(None, "application/connect+json"),
    )
    assert response.status_code == 200
    assert _stream_frames(response.content) == [
        (2, {"error": {"code": "unauthenticated", "message": "missing or malformed bearer token"}})
    ]


def _leaking_app(streaming: bool) -> ConnectGate[Account]:
    """A gate around an app that answers the way connectrpc does when something it did
    not foresee fails: UNKNOWN carrying the exception's text."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if streaming:
            status, headers, body = wire.stream_error(
                Code.UNKNOWN, SECRET, "application/connect+json"
            )
        else:
            status, headers, body = wire.unary_error(Code.UNKNOWN, SECRET)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    return ConnectGate(
        app, auth=AUTH, authenticate=authenticate, authorize=authorize, max_body_bytes=4096
    )


@pytest.mark.parametrize("streaming", [False, True])
async def test_leaked_unknown_errors_become_internal(
    caplog: pytest.LogCaptureFixture, streaming: bool
) -> None:
    content_type = "application/connect+json" if streaming else "application/json"
    transport = httpx.ASGITransport(app=_leaking_app(streaming))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        with caplog.at_level(logging.ERROR):
            response = await client.post(
                "/compass.v1.CommsService/GetAsk",
                content=_envelope(b"{}") if streaming else b"{}",
                headers=_headers("human-token", content_type),
            )
    if streaming:
        assert _stream_frames(response.content) == [
            (2, {"error": {"code": "internal", "message": "internal error"}})
        ]
    else:
        assert response.status_code == 500
        assert response.json() == {"code": "internal", "message": "internal error"}
    assert SECRET not in response.text
    assert "rewrote a leaked UNKNOWN" in caplog.text


def _grpc_web_leaking_app(trailers_only: bool) -> ConnectGate[Account]:
    """A gate around an app answering gRPC-Web the way connectrpc does for an exception raised
    outside a handler: grpc-status 2 (UNKNOWN) with the exception's text."""
    leaked = [(b"grpc-status", b"2"), (b"grpc-message", SECRET.encode())]

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        media = (b"content-type", b"application/grpc-web+proto")
        if trailers_only:
            await send({"type": "http.response.start", "status": 200, "headers": [media, *leaked]})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        trailer = b"".join(k + b": " + v + b"\r\n" for k, v in leaked)
        frames = struct.pack(">BI", 0, 0) + struct.pack(">BI", 0x80, len(trailer)) + trailer
        await send({"type": "http.response.start", "status": 200, "headers": [media]})
        await send({"type": "http.response.body", "body": frames, "more_body": False})

    return ConnectGate(
        app, auth=AUTH, authenticate=authenticate, authorize=authorize, max_body_bytes=4096
    )


@pytest.mark.parametrize("trailers_only", [True, False])
async def test_leaked_unknown_grpc_statuses_become_internal(
    caplog: pytest.LogCaptureFixture, trailers_only: bool
) -> None:
    transport = httpx.ASGITransport(app=_grpc_web_leaking_app(trailers_only))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        with caplog.at_level(logging.ERROR):
            response = await client.post(
                "/compass.v1.CommsService/GetAsk",
                content=_envelope(b""),
                headers=_headers("human-token", "application/grpc-web+proto"),
            )
    assert response.status_code == 200
    if trailers_only:
        assert response.headers["grpc-status"] == "13"
        assert response.headers["grpc-message"] == "internal error"
    else:
        trailer_at = response.content.index(bytes([0x80]), 5)
        trailer = response.content[trailer_at + 5 :].decode()
        assert "grpc-status: 13\r\n" in trailer, trailer
        assert "grpc-message: internal error\r\n" in trailer, trailer
        (length,) = struct.unpack(">I", response.content[trailer_at + 1 : trailer_at + 5])
        assert length == len(trailer)
    assert SECRET not in response.text
    assert SECRET not in str(response.headers)
    assert "rewrote a leaked UNKNOWN gRPC" in caplog.text


def _envelope(payload: bytes) -> bytes:
    return struct.pack(">BI", 0, len(payload)) + payload


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer   abc ", "abc"),
        ("Basic abc", None),
        ("Bearer", None),
        ("Bearer a b", None),
        ("Bearer " + "x" * 600, None),
        ("Bearer caf\u00e9", None),
        (None, None),
    ],
)
def test_bearer_token_parsing(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


@pytest.mark.parametrize("more_body", [False, True])
async def test_big_bodies_reach_the_server_in_slices(more_body: bool) -> None:
    """A stalled client then leaves at most one slice in the server's write buffer."""
    big = bytes(range(256)) * 1000  # 256,000 bytes

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        start = {"type": "http.response.start", "status": 200, "headers": []}
        await send(start)
        await send({"type": "http.response.body", "body": big, "more_body": more_body})
        if more_body:
            await send({"type": "http.response.body", "body": b"end", "more_body": False})

    gate = ConnectGate(
        app, auth=AUTH, authenticate=authenticate, authorize=authorize, max_body_bytes=4096
    )
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def capture(message: Message) -> None:
        sent.append(message)

    scope: Scope = {
        "type": "http",
        "path": "/compass.v1.CommsService/GetAsk",
        "method": "POST",
        "headers": [(k.encode(), v.encode()) for k, v in _headers("human-token").items()],
    }
    await gate(scope, receive, capture)
    bodies = [m for m in sent if m["type"] == "http.response.body"]
    assert all(len(m["body"]) <= gate_module.SLICE_BYTES for m in bodies)
    assert len(bodies) == 4 + more_body
    assert b"".join(m["body"] for m in bodies) == big + (b"end" if more_body else b"")
    assert [m["more_body"] for m in bodies] == [True] * (len(bodies) - 1) + [False]
