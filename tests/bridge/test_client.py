"""client.py: AgentService on connectrpc's generated client as the bridge uses it, the three
points it adapts (each beside a `test_the_library_*` that shows what the library alone does),
error classes, and backoff."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import struct
from typing import TYPE_CHECKING

import pyqwest
import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from hypothesis import given, settings, strategies as st

from compass_bridge.client import (
    AgentClient,
    RpcError,
    backoff,
    bounded,
    fatal,
    retryable,
    transport,
)
from gen.compass.v1 import agent_pb2, comms_pb2
from gen.compass.v1.agent_connect import AgentServiceClient

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

TOKEN = "agt_secret_token_value"
SECRET_TEXT = "secret internals at /srv/compass"
PROTO = {"content-type": "application/proto"}
STREAM = {"content-type": "application/connect+proto"}


class MockTransport:
    """A pyqwest transport answering from `handler`; keeps the requests it saw."""

    def __init__(self, handler: Callable[[pyqwest.Request], Awaitable[pyqwest.Response]]) -> None:
        self._handler = handler
        self.requests: list[pyqwest.Request] = []

    async def execute(self, request: pyqwest.Request) -> pyqwest.Response:
        self.requests.append(request)
        return await self._handler(request)


def answer(
    status: int = 200,
    content: bytes | list[bytes] = b"",
    headers: dict[str, str] | None = None,
) -> Callable[[pyqwest.Request], Awaitable[pyqwest.Response]]:
    """A handler that answers every request alike (`content` as a list: streamed in chunks)."""

    async def handler(_request: pyqwest.Request) -> pyqwest.Response:
        body = chunks(content) if isinstance(content, list) else content
        return pyqwest.Response(
            status=status, headers=pyqwest.Headers(list((headers or {}).items())), content=body
        )

    return handler


def raising(exc: BaseException) -> Callable[[pyqwest.Request], Awaitable[pyqwest.Response]]:
    async def handler(_request: pyqwest.Request) -> pyqwest.Response:
        raise exc

    return handler


async def chunks(parts: list[bytes], pause: float = 0.0) -> AsyncIterator[bytes]:
    for part in parts:
        if pause:
            await asyncio.sleep(pause)  # time itself is under test where a pause is given
        yield part


def client_for(
    handler: Callable[[pyqwest.Request], Awaitable[pyqwest.Response]],
) -> tuple[AgentClient, MockTransport]:
    mock = MockTransport(handler)
    return AgentClient("http://compass.test/", TOKEN, http=pyqwest.Client(mock)), mock


def library_for(
    handler: Callable[[pyqwest.Request], Awaitable[pyqwest.Response]],
) -> AgentServiceClient:
    """The generated client alone, as the bridge configures it."""
    return AgentServiceClient(
        "http://compass.test",
        http_client=pyqwest.Client(MockTransport(handler)),
        send_compression=None,
        accept_compression=(),
    )


def envelope(flags: int, payload: bytes) -> bytes:
    # Framed by hand (flag byte, 4-byte big-endian length, payload): the test must not share
    # the code it checks.
    return struct.pack(">BI", flags, len(payload)) + payload


def keepalive() -> bytes:
    return envelope(0, agent_pb2.WatchAskResponse(keepalive=True).SerializeToString())


def watch_frames(*asks: comms_pb2.Ask | None, end: dict[str, object] | None = None) -> bytes:
    """WatchAsk's response body: each ask as a message, None as a keepalive, then the end."""
    body = b"".join(
        keepalive()
        if ask is None
        else envelope(0, agent_pb2.WatchAskResponse(ask=ask).SerializeToString())
        for ask in asks
    )
    return body + envelope(0b10, json.dumps(end or {}).encode())


def stored_message() -> comms_pb2.Message:
    message = comms_pb2.Message(message_id="msg_1", client_message_id="c")
    message.blocks.add().ask.ask_id = "ask_1"
    return message


async def read_all(client: AgentClient, ask_id: str = "ask_1") -> list[comms_pb2.Ask]:
    return [ask async for ask in client.watch_ask(ask_id)]


async def read_into(got: list[comms_pb2.Ask], client: AgentClient, ask_id: str = "a") -> None:
    """Like read_all, keeping what arrived before an error in `got`."""
    async for ask in client.watch_ask(ask_id):
        got.append(ask)  # noqa: PERF401 - one by one: kept when the stream then fails


async def test_append_message_speaks_connect_proto_with_the_bearer_token() -> None:
    body = agent_pb2.AppendMessageResponse(message=stored_message()).SerializeToString()
    client, mock = client_for(answer(200, body, PROTO))
    frame = comms_pb2.MessageUpdated(client_message_id="c")
    message = await client.append_message("ch_1", frame)
    assert message == stored_message()
    (request,) = mock.requests
    assert request.url == "http://compass.test/compass.v1.AgentService/AppendMessage"
    assert request.headers["content-type"] == "application/proto"
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.headers["connect-protocol-version"] == "1"
    assert request.headers.get("content-encoding", "identity") == "identity"
    assert isinstance(request.content, bytes)
    sent = agent_pb2.AppendMessageRequest.FromString(request.content)
    assert sent.channel_id == "ch_1"
    assert sent.frame == frame


@pytest.mark.parametrize(
    ("status", "content", "headers", "code"),
    [
        (400, b'{"code": "invalid_argument", "message": "bad blocks"}', None, "invalid_argument"),
        (503, b'{"code": "unavailable", "message": "try again later"}', None, "unavailable"),
        (401, b'{"code": "unauthenticated", "message": "no"}', None, "unauthenticated"),
        (502, b"<html>Bad Gateway</html>", {"content-type": "text/html"}, "unavailable"),
        (500, b"", None, "unknown"),
        # A code that is not one of Connect's sixteen, in a JSON error: unavailable.
        (503, b'{"code": "bogus", "message": "x"}', None, "unavailable"),
        (404, b"not here", {"content-type": "text/plain"}, "unimplemented"),
        (400, b"{nope", None, "internal"),
        (200, b"\xff\xff\xff", PROTO, "internal"),  # an undecodable response
        (200, b"", {"content-type": "text/html"}, "unknown"),  # not a Connect response
    ],
)
async def test_failed_calls_become_rpc_errors(
    status: int, content: bytes, headers: dict[str, str] | None, code: str
) -> None:
    json_error = {"content-type": "application/json"}
    client, _ = client_for(answer(status, content, headers or json_error))
    with pytest.raises(RpcError) as caught:
        await client.update_message(comms_pb2.MessageUpdated(message_id="m"))
    assert caught.value.code == code
    assert TOKEN not in str(caught.value)


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (ConnectionRefusedError(f"refused: {SECRET_TEXT}"), "unavailable"),
        (pyqwest.RemoteProtocolError(f"reset: {SECRET_TEXT}"), "unavailable"),
        (pyqwest.ReadError(f"broken: {SECRET_TEXT}"), "unavailable"),
        (TimeoutError(f"slow: {SECRET_TEXT}"), "deadline_exceeded"),
    ],
)
async def test_transport_failures_are_transient_and_named_by_their_type(
    exc: Exception, code: str
) -> None:
    client, _ = client_for(raising(exc))
    with pytest.raises(RpcError) as caught:
        await client.update_message(comms_pb2.MessageUpdated(message_id="m"))
    assert caught.value.code == code
    assert caught.value.retryable
    assert caught.value.message == f"UpdateMessage: {type(exc).__name__}"
    with pytest.raises(RpcError) as caught:
        await anext(client.watch_ask("ask_1"))
    assert caught.value.code == code
    assert SECRET_TEXT not in str(caught.value)


# -- reason 1: unforeseen failures ------------------------------------------------------------


async def test_the_library_maps_an_unforeseen_failure_to_unavailable_with_its_text() -> None:
    """Upstream (connectrpc 0.13, `_client_async`): `except Exception as e: raise
    ConnectError(Code.UNAVAILABLE, str(e))`. A bug, or a malformed end-of-stream message,
    becomes a failure a client retries for ever, carrying text meant for no one."""
    library = library_for(raising(RuntimeError(SECRET_TEXT)))
    with pytest.raises(ConnectError) as caught:
        await library.get_channel(agent_pb2.GetChannelRequest(channel_id="c"))
    assert (caught.value.code, caught.value.message) == (Code.UNAVAILABLE, SECRET_TEXT)

    library = library_for(answer(200, [envelope(0b10, b'{"error": "unavailable"}')], STREAM))
    with pytest.raises(ConnectError) as caught:
        _ = [m async for m in library.watch_ask(agent_pb2.WatchAskRequest(ask_id="a"))]
    assert caught.value.code == Code.UNAVAILABLE
    assert "has no attribute" in caught.value.message  # the parser's own words

    library = library_for(answer(200, b"\xff\xff\xff", PROTO))
    with pytest.raises(ConnectError) as caught:
        await library.get_channel(agent_pb2.GetChannelRequest(channel_id="c"))
    assert caught.value.code == Code.INVALID_ARGUMENT  # as if the request were at fault


async def test_an_unforeseen_failure_is_internal_and_named_by_its_type() -> None:
    client, _ = client_for(raising(RuntimeError(SECRET_TEXT)))
    with pytest.raises(RpcError) as caught:
        await client.get_channel("c")
    assert (caught.value.code, caught.value.message) == ("internal", "GetChannel: RuntimeError")
    assert caught.value.retryable
    assert bounded(caught.value.code)  # retried, but not for ever
    with pytest.raises(RpcError) as caught:
        await anext(client.watch_ask("ask_1"))
    assert (caught.value.code, caught.value.message) == ("internal", "WatchAsk: RuntimeError")


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"code": "not_found", "message": "ask not found"}, ("not_found", "ask not found")),
        # Not a valid Connect error, but an error all the same.
        ({"code": "bogus", "message": "m"}, ("unknown", "m")),
        # Not an error object: unreadable (the library alone says UNAVAILABLE, see above).
        ("unavailable", ("internal", "WatchAsk: AttributeError")),
    ],
)
async def test_an_error_at_the_end_of_the_stream_is_raised(
    error: object, expected: tuple[str, str]
) -> None:
    client, _ = client_for(answer(200, [watch_frames(end={"error": error})], STREAM))
    with pytest.raises(RpcError) as caught:
        await read_all(client)
    assert (caught.value.code, caught.value.message) == expected


@pytest.mark.parametrize("end", [b"{nope", b"[]"])
async def test_an_unreadable_end_of_the_stream_is_internal(end: bytes) -> None:
    client, _ = client_for(answer(200, [envelope(0b10, end)], STREAM))
    with pytest.raises(RpcError) as caught:
        await anext(client.watch_ask("ask_1"))
    assert caught.value.code == "internal"
    assert "Expecting" not in caught.value.message


# -- reason 2: cancellation ---------------------------------------------------------------------


def hanging() -> tuple[asyncio.Event, Callable[[pyqwest.Request], Awaitable[pyqwest.Response]]]:
    """A handler that never answers, and the event set once a request reached it."""
    reached = asyncio.Event()

    async def handler(_request: pyqwest.Request) -> pyqwest.Response:
        reached.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return reached, handler


async def test_the_library_turns_cancellation_into_canceled() -> None:
    """Upstream (connectrpc 0.13, `_client_async`): `except CancelledError as e: raise
    ConnectError(Code.CANCELED, ...)`. The cancelled task is not cancelled, and
    `asyncio.timeout` around a call raises ConnectError instead of TimeoutError."""
    reached, handler = hanging()
    library = library_for(handler)
    task = asyncio.create_task(library.get_channel(agent_pb2.GetChannelRequest(channel_id="c")))
    await reached.wait()
    task.cancel()
    with pytest.raises(ConnectError) as caught:
        await task
    assert caught.value.code == Code.CANCELED
    assert not task.cancelled()

    with pytest.raises(ConnectError):
        async with asyncio.timeout(0):
            await library.get_channel(agent_pb2.GetChannelRequest(channel_id="c"))


async def test_a_cancelled_call_is_cancelled() -> None:
    reached, handler = hanging()
    client, _ = client_for(handler)
    for call in (client.get_channel("c"), anext(client.watch_ask("ask_1"))):
        reached.clear()
        task = asyncio.create_task(call)
        await reached.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert task.cancelled()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0):
            await client.get_channel("c")


async def test_a_watch_cancelled_between_messages_is_cancelled() -> None:
    """Cancelled while the stream is open and waiting for the next message."""
    opened = asyncio.Event()

    async def endless(_request: pyqwest.Request) -> pyqwest.Response:
        async def body() -> AsyncIterator[bytes]:
            yield envelope(0, agent_pb2.WatchAskResponse(ask=comms_pb2.Ask()).SerializeToString())
            opened.set()
            await asyncio.Event().wait()
            yield b""  # pragma: no cover - never reached

        return pyqwest.Response(
            status=200, headers=pyqwest.Headers(list(STREAM.items())), content=body()
        )

    client, _ = client_for(endless)
    task = asyncio.create_task(read_all(client))
    await opened.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


# -- reason 3: the stream timeout -----------------------------------------------------------------


async def test_the_library_stream_timeout_bounds_the_whole_stream() -> None:
    """Upstream (connectrpc 0.13): `timeout_ms` is one deadline for the whole stream, so a
    watch that is never silent still ends; the bridge bounds the silence with the
    transport's read timeout instead (below) and gives WatchAsk no `timeout_ms`."""
    parts = [keepalive()] * 10 + [envelope(0b10, b"{}")]

    async def ticking(_request: pyqwest.Request) -> pyqwest.Response:
        body = chunks(parts, pause=0.05)
        return pyqwest.Response(
            status=200, headers=pyqwest.Headers(list(STREAM.items())), content=body
        )

    library = library_for(ticking)
    with pytest.raises(ConnectError) as caught:
        _ = [
            m
            async for m in library.watch_ask(agent_pb2.WatchAskRequest(ask_id="a"), timeout_ms=200)
        ]
    assert caught.value.code == Code.DEADLINE_EXCEEDED


class StreamingServer:
    """A real HTTP/1.1 server on loopback answering every request with a WatchAsk stream:
    `mode` "ticking" (a keepalive every 50 ms, 40 times, then the end), "silent" (one ask,
    then nothing), or "cut" (one ask, then the connection closes mid-stream)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.url = ""
        self._done = asyncio.Event()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        await reader.readexactly(length)
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/connect+proto\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )

        def chunk(data: bytes) -> bytes:
            return f"{len(data):x}\r\n".encode() + data + b"\r\n"

        pending = agent_pb2.WatchAskResponse(ask=comms_pb2.Ask(ask_id="a")).SerializeToString()
        try:
            if self.mode == "ticking":
                for _ in range(40):
                    writer.write(chunk(keepalive()))
                    await writer.drain()
                    await asyncio.sleep(0.05)  # time itself is under test: 2 s in all
                writer.write(chunk(watch_frames(comms_pb2.Ask(ask_id="a"))) + b"0\r\n\r\n")
                await writer.drain()
                await self._done.wait()
            elif self.mode == "silent":
                writer.write(chunk(envelope(0, pending)))
                await writer.drain()
                await self._done.wait()
            else:
                writer.write(chunk(envelope(0, pending)))
                await writer.drain()
        finally:
            writer.close()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[StreamingServer]:
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
        try:
            yield self
        finally:
            self._done.set()
            server.close()
            await server.wait_closed()


def real_client(url: str, read_timeout: float) -> AgentClient:
    return AgentClient(url, TOKEN, http=pyqwest.Client(transport(read_timeout=read_timeout)))


async def test_the_read_timeout_bounds_the_silence_not_the_stream() -> None:
    """Over real HTTP: a stream that runs twice the read timeout but is never silent for
    long completes; one that goes silent is given up after the read timeout."""
    async with StreamingServer("ticking").running() as server, asyncio.timeout(60):
        assert [a.ask_id for a in await read_all(real_client(server.url, 1.0))] == ["a"]
    async with StreamingServer("silent").running() as server, asyncio.timeout(60):
        got: list[comms_pb2.Ask] = []
        with pytest.raises(RpcError) as caught:
            await read_into(got, real_client(server.url, 0.5))
    assert [a.ask_id for a in got] == ["a"]
    assert caught.value.code == "deadline_exceeded"
    assert caught.value.retryable


async def test_a_connection_cut_mid_stream_is_transient() -> None:
    async with StreamingServer("cut").running() as server, asyncio.timeout(60):
        got: list[comms_pb2.Ask] = []
        with pytest.raises(RpcError) as caught:
            await read_into(got, real_client(server.url, 30.0))
    assert [a.ask_id for a in got] == ["a"]
    assert caught.value.code == "unavailable"
    assert caught.value.retryable
    assert not bounded(caught.value.code)


def test_the_read_timeout_outlasts_the_servers_keepalive_interval() -> None:
    """The bridge gives up on a silent WatchAsk only after missing keepalives: the server's
    interval (its re-check) and the bridge's read timeout are held together here."""
    from compass_bridge.client import READ_TIMEOUT_SECONDS, SERVER_KEEPALIVE_SECONDS
    from compass_server.service.streams import RECHECK_SECONDS

    assert SERVER_KEEPALIVE_SECONDS == RECHECK_SECONDS
    assert READ_TIMEOUT_SECONDS >= 2 * RECHECK_SECONDS


# -- the stream -------------------------------------------------------------------------------


async def test_watch_ask_keepalives_are_read_and_not_passed_on() -> None:
    """Issue 24 T: a keepalive only keeps the stream (and its read timeout) alive."""
    pending = comms_pb2.Ask(ask_id="ask_1")
    answered = comms_pb2.Ask(ask_id="ask_1", answered_by_account_id="acc")
    client, _ = client_for(answer(200, [watch_frames(pending, None, None, answered)], STREAM))
    assert await read_all(client) == [pending, answered]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=200), max_size=6))
def test_watch_ask_reads_messages_split_anywhere(cuts: list[int]) -> None:
    pending = comms_pb2.Ask(ask_id="ask_1", questions=[comms_pb2.AskQuestion(question_id="q")])
    answered = comms_pb2.Ask()
    answered.CopyFrom(pending)
    answered.answered_by_account_id = "acc"
    body = watch_frames(pending, answered)
    points = sorted({min(c, len(body)) for c in cuts} | {0, len(body)})
    parts = [body[a:b] for a, b in itertools.pairwise(points)]
    client, mock = client_for(answer(200, parts, STREAM))

    assert asyncio.run(read_all(client)) == [pending, answered]
    (request,) = mock.requests
    assert request.headers["content-type"] == "application/connect+proto"
    assert isinstance(request.content, bytes)
    flags, length = struct.unpack(">BI", request.content[:5])
    assert flags == 0
    assert agent_pb2.WatchAskRequest.FromString(request.content[5 : 5 + length]).ask_id == "ask_1"


async def test_a_body_that_ends_without_its_end_frame_is_a_protocol_error() -> None:
    """A complete HTTP body without the end-of-stream message: INTERNAL, as connect-go and
    the conformance suite read it (retried, bounded). A connection that breaks mid-stream is
    UNAVAILABLE (test_a_connection_cut_mid_stream_is_transient)."""
    body = envelope(
        0, agent_pb2.WatchAskResponse(ask=comms_pb2.Ask(ask_id="a")).SerializeToString()
    )
    client, _ = client_for(answer(200, [body], STREAM))
    got: list[comms_pb2.Ask] = []
    with pytest.raises(RpcError) as caught:
        await read_into(got, client)
    assert [a.ask_id for a in got] == ["a"]
    assert caught.value.code == "internal"
    assert caught.value.retryable


async def test_an_oversize_message_is_refused() -> None:
    header = struct.pack(">BI", 0, 65 * 1024 * 1024)  # announces more than MAX_MESSAGE_BYTES
    client, _ = client_for(answer(200, [header], STREAM))
    with pytest.raises(RpcError) as caught:
        await anext(client.watch_ask("a"))
    assert caught.value.code == "resource_exhausted"


async def test_a_stream_refused_up_front_carries_the_connect_error() -> None:
    client, _ = client_for(
        answer(
            401,
            b'{"code": "unauthenticated", "message": "bad token"}',
            {"content-type": "application/json"},
        )
    )
    with pytest.raises(RpcError) as caught:
        await anext(client.watch_ask("a"))
    assert (caught.value.code, caught.value.message) == ("unauthenticated", "bad token")


# -- error classes and backoff ----------------------------------------------------------------


def test_the_error_classes() -> None:
    transient = ["unavailable", "deadline_exceeded", "aborted", "resource_exhausted"]
    assert all(retryable(code) and not bounded(code) for code in transient)
    assert all(retryable(code) and bounded(code) for code in ["internal", "unknown"])
    permanent = [
        "invalid_argument",
        "already_exists",
        "failed_precondition",
        "not_found",
        "unimplemented",
    ]
    assert not any(retryable(code) or fatal(code) for code in permanent)
    assert fatal("unauthenticated")
    assert fatal("permission_denied")


@settings(max_examples=30, deadline=None)
@given(st.floats(min_value=0.001, max_value=1.0), st.floats(min_value=0.001, max_value=60.0))
def test_backoff_grows_to_its_cap_with_jitter(initial: float, cap: float) -> None:
    waits: list[float] = []

    async def sleep(delay: float) -> None:  # stamina sleeps with asyncio.sleep
        waits.append(delay)

    async def scenario() -> list[int]:
        tried: list[int] = []
        async for attempt in backoff(RpcError, initial=initial, cap=cap):
            with attempt:
                tried.append(attempt.num)
                if len(tried) <= 40:
                    raise RpcError("unavailable", "down")
        return tried

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(asyncio, "sleep", sleep)
        tried = asyncio.run(scenario())
    assert tried == list(range(1, 42))  # forever: here until the 41st attempt succeeds
    for retry, wait in enumerate(waits, start=1):
        floor = min(cap, initial * 2 ** (retry - 1))
        assert floor <= wait <= min(cap, floor + initial)  # jitter up to `initial`
    assert len(waits) == 40


async def test_backoff_retries_only_what_it_is_told_to() -> None:
    tried: list[int] = []

    async def attempts() -> None:
        async for attempt in backoff(RpcError, initial=0.001, cap=0.001):
            with attempt:
                tried.append(attempt.num)
                raise ValueError("not retried")

    with pytest.raises(ValueError, match="not retried"):
        await attempts()
    assert tried == [1]


# -- CloseAsk -----------------------------------------------------------------------------------


async def test_close_ask_sends_the_status_reason_and_timeout_answers() -> None:
    ask = comms_pb2.Ask(ask_id="ask_1", status=comms_pb2.ASK_STATUS_TIMED_OUT)
    body = agent_pb2.CloseAskResponse(ask=ask).SerializeToString()
    client, mock = client_for(answer(200, body, PROTO))
    answers = [comms_pb2.AskQuestionAnswer(question_id="db", chosen_option_ids=["0"])]
    got = await client.close_ask(
        "ask_1", comms_pb2.ASK_STATUS_TIMED_OUT, "runtime timeout picked the answer", answers
    )
    assert got.status == comms_pb2.ASK_STATUS_TIMED_OUT
    (request,) = mock.requests
    assert request.url == "http://compass.test/compass.v1.AgentService/CloseAsk"
    assert request.headers["content-type"] == "application/proto"
    assert isinstance(request.content, bytes)
    assert agent_pb2.CloseAskRequest.FromString(request.content) == agent_pb2.CloseAskRequest(
        ask_id="ask_1",
        status=comms_pb2.ASK_STATUS_TIMED_OUT,
        reason="runtime timeout picked the answer",
        answers=answers,
    )


async def test_close_ask_on_a_server_without_it_is_unimplemented() -> None:
    client, _ = client_for(answer(404))
    with pytest.raises(RpcError) as caught:
        await client.close_ask("ask_1", comms_pb2.ASK_STATUS_WITHDRAWN, "turn ended")
    assert caught.value.code == "unimplemented"
    assert not caught.value.retryable
