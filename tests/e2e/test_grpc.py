"""gRPC and gRPC-Web against `compass serve`, with the clients people use.

gRPC: a real grpcio client (grpc.aio) on the HTTP/2 listener (COMPASS_GRPC_PORT, hypercorn).
gRPC-Web: its frames over HTTP/1.1 on the main listener (uvicorn), as a browser's gRPC-Web
client sends them. gRPC itself on the main listener is refused as gRPC (it needs trailers).
The guard order (docs/spec.md §4) and the error codes are the same as over Connect.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import struct
import time
import urllib.parse
from typing import TYPE_CHECKING, TypeVar

import grpc
import grpc.aio
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2  # pyright: ignore[reportMissingTypeStubs] - ships .pyi files but no py.typed marker

from gen.compass.v1 import agent_pb2, comms_pb2
from tests import _server
from tests.e2e._asks import DEFAULT_ASK, answer, append_request, respond
from tests.e2e._grpc import grpc_web_frames

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Generator

    import httpx

    from tests._server import SeededWorld

Req = TypeVar("Req", bound=Message)
Res = TypeVar("Res", bound=Message)

COMMS = "compass.v1.CommsService"
AGENT = "compass.v1.AgentService"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def grpc_port() -> int:
    return _free_port()


@pytest.fixture(scope="module")
def module_server(module_database_url: str, grpc_port: int) -> Generator[_server.RunningServer]:
    """`compass serve` with its HTTP/2 listener on `grpc_port`."""
    with _server.serve(module_database_url, env={"COMPASS_GRPC_PORT": str(grpc_port)}) as server:
        yield server


@pytest.fixture
async def channel(
    module_server: _server.RunningServer, grpc_port: int
) -> AsyncGenerator[grpc.aio.Channel]:
    del module_server  # started first: the listener exists
    async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as ch:
        await asyncio.wait_for(ch.channel_ready(), 10)
        yield ch


def _meta(token: str | None) -> tuple[tuple[str, str], ...]:
    return () if token is None else (("authorization", f"Bearer {token}"),)


async def unary(
    ch: grpc.aio.Channel,
    service: str,
    method: str,
    request: Message,
    response_type: type[Res],
    token: str | None,
) -> Res:
    call = ch.unary_unary(
        f"/{service}/{method}",
        request_serializer=type(request).SerializeToString,
        response_deserializer=response_type.FromString,
    )
    return await call(request, metadata=_meta(token), timeout=10)


async def rpc_error(
    ch: grpc.aio.Channel,
    service: str,
    method: str,
    request: Message,
    token: str | None,
) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await unary(ch, service, method, request, type(request), token)
    return caught.value


def _parsed(message_type: type[Req], doc: dict[str, object]) -> Req:
    return json_format.ParseDict(doc, message_type())


async def test_an_ask_round_trips_over_grpc(
    channel: grpc.aio.Channel, module_world: SeededWorld
) -> None:
    world = module_world
    appended = await unary(
        channel,
        AGENT,
        "AppendMessage",
        _parsed(agent_pb2.AppendMessageRequest, append_request(world.channel_id, DEFAULT_ASK)),
        agent_pb2.AppendMessageResponse,
        world.agent.token,
    )
    ask_id = appended.message.blocks[0].ask.ask_id
    assert ask_id

    # The agent waits on the answer over a gRPC server stream ...
    watch = channel.unary_stream(
        f"/{AGENT}/WatchAsk",
        request_serializer=agent_pb2.WatchAskRequest.SerializeToString,
        response_deserializer=agent_pb2.WatchAskResponse.FromString,
    )(agent_pb2.WatchAskRequest(ask_id=ask_id), metadata=_meta(world.agent.token), timeout=20)
    first = await watch.read()
    assert isinstance(first, agent_pb2.WatchAskResponse)
    assert first.ask.ask_id == ask_id
    assert first.ask.status == comms_pb2.ASK_STATUS_PENDING

    # ... a person finds it and answers it, also over gRPC.
    pending = await unary(
        channel,
        COMMS,
        "ListPendingAsks",
        comms_pb2.ListPendingAsksRequest(),
        comms_pb2.ListPendingAsksResponse,
        world.human.token,
    )
    assert ask_id in [p.ask.ask_id for p in pending.asks]
    await unary(
        channel,
        COMMS,
        "RespondToAsk",
        _parsed(
            comms_pb2.RespondToAskRequest,
            respond(ask_id, answer("db", "1"), answer("features", "0", custom_text="SSO later")),
        ),
        comms_pb2.RespondToAskResponse,
        world.human.token,
    )
    while True:
        update = await watch.read()
        assert isinstance(update, agent_pb2.WatchAskResponse), update
        if update.ask.status == comms_pb2.ASK_STATUS_ANSWERED:
            break
    chosen = {q.question_id: list(q.chosen_option_ids) for q in update.ask.questions}
    assert chosen == {"db": ["1"], "features": ["0"]}
    assert update.ask.questions[1].custom_text == "SSO later"
    watch.cancel()

    # ... and the agent's side reports what the agent received: the receipt, over gRPC too.
    reported = await unary(
        channel,
        AGENT,
        "ReportDelivery",
        agent_pb2.ReportDeliveryRequest(
            ask_id=ask_id, state=comms_pb2.DELIVERY_STATE_DELIVERED, payload='{"db":"1"}'
        ),
        agent_pb2.ReportDeliveryResponse,
        world.agent.token,
    )
    assert reported.ask.delivery.state == comms_pb2.DELIVERY_STATE_DELIVERED
    assert reported.ask.delivery.payload == '{"db":"1"}'
    assert reported.ask.delivery.reported_by_account_id == world.agent.account_id


async def test_grpc_errors_carry_the_same_codes_and_details(
    channel: grpc.aio.Channel, module_world: SeededWorld
) -> None:
    world = module_world
    listing = comms_pb2.ListChannelsRequest()
    unauthenticated = await rpc_error(channel, COMMS, "ListChannels", listing, None)
    assert unauthenticated.code() == grpc.StatusCode.UNAUTHENTICATED
    bogus = await rpc_error(channel, COMMS, "ListChannels", listing, "not-a-token")
    assert bogus.code() == grpc.StatusCode.UNAUTHENTICATED
    denied = await rpc_error(
        channel,
        AGENT,
        "GetChannel",
        agent_pb2.GetChannelRequest(channel_id=world.channel_id),
        world.human.token,
    )
    assert denied.code() == grpc.StatusCode.PERMISSION_DENIED
    missing = await rpc_error(
        channel, COMMS, "GetAsk", comms_pb2.GetAskRequest(ask_id="ask_nope"), world.human.token
    )
    assert missing.code() == grpc.StatusCode.NOT_FOUND

    # Field violations travel as google.rpc.BadRequest in grpc-status-details-bin.
    appended = await unary(
        channel,
        AGENT,
        "AppendMessage",
        _parsed(agent_pb2.AppendMessageRequest, append_request(world.channel_id, DEFAULT_ASK)),
        agent_pb2.AppendMessageResponse,
        world.agent.token,
    )
    ask_id = appended.message.blocks[0].ask.ask_id
    invalid = await rpc_error(
        channel,
        COMMS,
        "RespondToAsk",
        _parsed(comms_pb2.RespondToAskRequest, respond(ask_id, answer("db", "9"))),
        world.human.token,
    )
    assert invalid.code() == grpc.StatusCode.INVALID_ARGUMENT
    trailers = dict(invalid.trailing_metadata() or ())
    details = trailers["grpc-status-details-bin"]
    assert isinstance(details, bytes), details  # a -bin key's value arrives decoded
    status = status_pb2.Status.FromString(details)
    assert status.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    bad_request = error_details_pb2.BadRequest()
    assert status.details[0].Unpack(bad_request)
    assert {v.field for v in bad_request.field_violations} >= {"answers"}, bad_request


async def test_the_guard_order_holds_over_grpc(
    channel: grpc.aio.Channel, module_world: SeededWorld
) -> None:
    """No token beats an oversize body; with a token the oversize body is INVALID_ARGUMENT."""
    huge = comms_pb2.GetAskRequest(ask_id="x" * (2 << 20))
    anonymous = await rpc_error(channel, COMMS, "GetAsk", huge, None)
    assert anonymous.code() == grpc.StatusCode.UNAUTHENTICATED
    signed_in = await rpc_error(channel, COMMS, "GetAsk", huge, module_world.human.token)
    assert signed_in.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "too large" in (signed_in.details() or "")


async def test_a_grpc_deadline_ends_a_live_watch(
    channel: grpc.aio.Channel, module_world: SeededWorld
) -> None:
    watch = channel.unary_stream(
        f"/{COMMS}/WatchChannel",
        request_serializer=comms_pb2.WatchChannelRequest.SerializeToString,
        response_deserializer=comms_pb2.WatchChannelResponse.FromString,
    )
    started = time.monotonic()
    call = watch(
        comms_pb2.WatchChannelRequest(channel_id=module_world.channel_id),
        metadata=_meta(module_world.human.token),
        timeout=0.5,
    )
    seen: list[comms_pb2.WatchChannelResponse] = []

    async def read_all() -> None:
        async for message in call:
            seen.append(message)  # noqa: PERF401 - keeps what arrived before the error

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await read_all()
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert any(m.caught_up for m in seen), seen
    assert 0.4 < time.monotonic() - started < 5


# -- on the main (HTTP/1.1) listener ---------------------------------------------------------


def _frame(payload: bytes, flags: int = 0) -> bytes:
    return struct.pack(">BI", flags, len(payload)) + payload


async def test_grpc_web_is_served_over_http1(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    response = await http.post(
        f"/{COMMS}/ListChannels",
        content=_frame(comms_pb2.ListChannelsRequest().SerializeToString()),
        headers={
            "content-type": "application/grpc-web+proto",
            "x-grpc-web": "1",
            "authorization": f"Bearer {module_world.human.token}",
        },
    )
    assert response.status_code == 200, response.content
    assert response.headers["content-type"].startswith("application/grpc-web")
    messages, trailers = grpc_web_frames(response.content)
    assert trailers.get("grpc-status") == "0", (trailers, response.headers)
    (payload,) = messages
    listed = comms_pb2.ListChannelsResponse.FromString(payload)
    assert module_world.channel_id in [c.channel_id for c in listed.channels]

    refused = await http.post(
        f"/{COMMS}/ListChannels",
        content=_frame(b""),
        headers={"content-type": "application/grpc-web+proto"},
    )
    assert refused.status_code == 200
    assert refused.headers["grpc-status"] == "16"  # UNAUTHENTICATED, trailers-only


@pytest.mark.parametrize(
    "content_type", ["application/grpc", "application/grpc+proto", "Application/GRPC+json"]
)
async def test_grpc_on_the_http1_listener_is_unimplemented_as_grpc(
    http: httpx.AsyncClient, module_world: SeededWorld, content_type: str
) -> None:
    response = await http.post(
        f"/{COMMS}/ListChannels",
        content=_frame(b""),
        headers={
            "content-type": content_type,
            "authorization": f"Bearer {module_world.human.token}",
        },
    )
    assert response.status_code == 200, response.content
    assert response.headers["content-type"].startswith("application/grpc")
    assert response.headers["grpc-status"] == "12"  # UNIMPLEMENTED
    message = urllib.parse.unquote(response.headers["grpc-message"])
    assert "COMPASS_GRPC_PORT" in message, message
    assert response.content == b""


async def test_sigterm_ends_a_grpc_watch_and_the_process(database_url: str) -> None:
    """The HTTP/2 listener stops with the server: a live gRPC watch ends UNAVAILABLE (the same
    as over Connect) and the process exits promptly and cleanly."""
    port = _free_port()
    with _server.serve(database_url, env={"COMPASS_GRPC_PORT": str(port)}) as server:
        world = await _server.seed_world(database_url)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
            watch = ch.unary_stream(
                f"/{COMMS}/WatchChannel",
                request_serializer=comms_pb2.WatchChannelRequest.SerializeToString,
                response_deserializer=comms_pb2.WatchChannelResponse.FromString,
            )(
                comms_pb2.WatchChannelRequest(channel_id=world.channel_id),
                metadata=_meta(world.human.token),
                timeout=30,
            )
            first = await watch.read()
            assert isinstance(first, comms_pb2.WatchChannelResponse)
            assert first.caught_up
            server.process.send_signal(signal.SIGTERM)
            started = time.monotonic()
            with pytest.raises(grpc.aio.AioRpcError) as ended:
                await _read_until_end(watch)
            assert ended.value.code() == grpc.StatusCode.UNAVAILABLE, ended.value
        exit_code = await asyncio.to_thread(server.process.wait, 10)
    # uvicorn re-raises the signal once it has shut down cleanly.
    assert exit_code in (0, -signal.SIGTERM), server.log()
    assert "Application shutdown complete." in server.log()
    assert time.monotonic() - started < 10


async def _read_until_end(
    watch: grpc.aio.UnaryStreamCall[comms_pb2.WatchChannelRequest, comms_pb2.WatchChannelResponse],
) -> None:
    while (await watch.read()) is not grpc.aio.EOF:  # pyright: ignore[reportAttributeAccessIssue] - grpc.aio.EOF exists; the stubs miss it
        pass
