"""client.py: the Connect wire as the bridge speaks it, error classes, and backoff."""

from __future__ import annotations

import asyncio
import itertools
import json
import struct
from typing import TYPE_CHECKING

import httpx
import pytest
from hypothesis import given, settings, strategies as st

from compass_bridge.client import (
    AgentClient,
    RpcError,
    backoff,
    bounded,
    fatal,
    retryable,
)
from gen.compass.v1 import agent_pb2, comms_pb2

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

TOKEN = "agt_secret_token_value"


class Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


def client_for(
    handler: Callable[[httpx.Request], httpx.Response],
) -> tuple[AgentClient, httpx.AsyncClient]:
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return AgentClient("http://compass.test/", TOKEN, http=http), http


def envelope(flags: int, payload: bytes) -> bytes:
    return struct.pack(">BI", flags, len(payload)) + payload


def stored_message() -> comms_pb2.Message:
    message = comms_pb2.Message(message_id="msg_1", client_message_id="c")
    message.blocks.add().ask.ask_id = "ask_1"
    return message


async def test_append_message_speaks_connect_proto_with_the_bearer_token() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = agent_pb2.AppendMessageResponse(message=stored_message()).SerializeToString()
        return httpx.Response(200, headers={"content-type": "application/proto"}, content=body)

    client, http = client_for(handler)
    async with http:
        frame = comms_pb2.MessageUpdated(client_message_id="c")
        message = await client.append_message("ch_1", frame)
    assert message == stored_message()
    (request,) = seen
    assert request.url == "http://compass.test/compass.v1.AgentService/AppendMessage"
    assert request.headers["content-type"] == "application/proto"
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.headers["connect-protocol-version"] == "1"
    sent = agent_pb2.AppendMessageRequest.FromString(request.content)
    assert sent.channel_id == "ch_1"
    assert sent.frame == frame


@pytest.mark.parametrize(
    ("response", "code"),
    [
        (
            httpx.Response(400, json={"code": "invalid_argument", "message": "bad blocks"}),
            "invalid_argument",
        ),
        (
            httpx.Response(503, json={"code": "unavailable", "message": "try again later"}),
            "unavailable",
        ),
        (httpx.Response(401, json={"code": "unauthenticated", "message": "no"}), "unauthenticated"),
        (httpx.Response(502, text="<html>Bad Gateway</html>"), "unavailable"),
        (httpx.Response(500), "unknown"),
        # A code that is not one of Connect's sixteen: the status decides.
        (httpx.Response(503, json={"code": "bogus", "message": "x"}), "unavailable"),
        (httpx.Response(404, text="not here"), "unimplemented"),
        (
            httpx.Response(400, headers={"content-type": "application/json"}, content=b"{nope"),
            "internal",
        ),
        (httpx.Response(200, content=b"\xff\xff\xff"), "internal"),
    ],
)
async def test_failed_calls_become_rpc_errors(response: httpx.Response, code: str) -> None:
    client, http = client_for(lambda _request: response)
    async with http:
        with pytest.raises(RpcError) as caught:
            await client.update_message(comms_pb2.MessageUpdated(message_id="m"))
    assert caught.value.code == code
    assert TOKEN not in str(caught.value)


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (httpx.ConnectError("refused"), "unavailable"),
        (httpx.RemoteProtocolError("reset"), "unavailable"),
        (httpx.ReadTimeout("slow"), "deadline_exceeded"),
        (httpx.ConnectTimeout("slow"), "deadline_exceeded"),
    ],
)
async def test_transport_failures_are_transient(exc: Exception, code: str) -> None:
    def handler(_request: httpx.Request) -> httpx.Response:
        raise exc

    client, http = client_for(handler)
    async with http:
        with pytest.raises(RpcError) as caught:
            await client.update_message(comms_pb2.MessageUpdated(message_id="m"))
        assert caught.value.code == code
        assert caught.value.retryable
        with pytest.raises(RpcError) as caught:
            await anext(client.watch_ask("ask_1"))
        assert caught.value.code == code


def watch_frames(*asks: comms_pb2.Ask | None, end: dict[str, object] | None = None) -> bytes:
    """WatchAsk's response body: each ask as a message, None as a keepalive, then the end."""
    body = b"".join(
        envelope(
            0,
            (
                agent_pb2.WatchAskResponse(keepalive=True)
                if ask is None
                else agent_pb2.WatchAskResponse(ask=ask)
            ).SerializeToString(),
        )
        for ask in asks
    )
    return body + envelope(0b10, json.dumps(end or {}).encode())


async def test_watch_ask_keepalives_are_read_and_not_passed_on() -> None:
    """Issue 24 T: a keepalive only keeps the stream (and its read timeout) alive."""
    pending = comms_pb2.Ask(ask_id="ask_1")
    answered = comms_pb2.Ask(ask_id="ask_1", answered_by_account_id="acc")
    body = watch_frames(pending, None, None, answered)
    client, http = client_for(
        lambda _r: httpx.Response(
            200, headers={"content-type": "application/connect+proto"}, stream=Chunks([body])
        )
    )
    async with http:
        assert [ask async for ask in client.watch_ask("ask_1")] == [pending, answered]


def test_the_read_timeout_outlasts_the_servers_keepalive_interval() -> None:
    """The bridge gives up on a silent WatchAsk only after missing keepalives: the server's
    interval (its re-check) and the bridge's read timeout are held together here."""
    from compass_bridge.client import SERVER_KEEPALIVE_SECONDS, STREAM_TIMEOUT
    from compass_server.service import RECHECK_SECONDS

    assert SERVER_KEEPALIVE_SECONDS == RECHECK_SECONDS
    assert STREAM_TIMEOUT.read is not None
    assert STREAM_TIMEOUT.read >= 2 * RECHECK_SECONDS


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=200), max_size=6))
def test_watch_ask_reads_messages_split_anywhere(cuts: list[int]) -> None:
    pending = comms_pb2.Ask(ask_id="ask_1", questions=[comms_pb2.AskQuestion(question_id="q")])
    answered = comms_pb2.Ask()
    answered.CopyFrom(pending)
    answered.answered_by_account_id = "acc"
    body = watch_frames(pending, answered)
    points = sorted({min(c, len(body)) for c in cuts} | {0, len(body)})
    chunks = [body[a:b] for a, b in itertools.pairwise(points)]
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200, headers={"content-type": "application/connect+proto"}, stream=Chunks(chunks)
        )

    async def scenario() -> list[comms_pb2.Ask]:
        client, http = client_for(handler)
        async with http:
            return [ask async for ask in client.watch_ask("ask_1")]

    assert asyncio.run(scenario()) == [pending, answered]
    request = seen[0]
    assert request.headers["content-type"] == "application/connect+proto"
    flags, length = struct.unpack(">BI", request.content[:5])
    assert flags == 0
    assert agent_pb2.WatchAskRequest.FromString(request.content[5 : 5 + length]).ask_id == "ask_1"


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"code": "not_found", "message": "ask not found"}, ("not_found", "ask not found")),
        # Not a valid Connect error, but an error all the same (connect.js reads it alike).
        ({"code": "bogus", "message": "m"}, ("unknown", "m")),
        ("unavailable", ("unknown", "")),
    ],
)
async def test_an_error_at_the_end_of_the_stream_is_raised(
    error: object, expected: tuple[str, str]
) -> None:
    body = watch_frames(end={"error": error})
    client, http = client_for(lambda _r: httpx.Response(200, stream=Chunks([body])))
    async with http:
        with pytest.raises(RpcError) as caught:
            _ = [ask async for ask in client.watch_ask("ask_1")]
    assert (caught.value.code, caught.value.message) == expected


@pytest.mark.parametrize("end", [b"{nope", b"[]"])
async def test_an_unreadable_end_of_the_stream_is_internal(end: bytes) -> None:
    body = envelope(0b10, end)
    client, http = client_for(lambda _r: httpx.Response(200, stream=Chunks([body])))
    async with http:
        with pytest.raises(RpcError) as caught:
            await anext(client.watch_ask("ask_1"))
    assert caught.value.code == "internal"


async def test_a_stream_cut_before_its_end_frame_is_transient() -> None:
    body = envelope(
        0, agent_pb2.WatchAskResponse(ask=comms_pb2.Ask(ask_id="a")).SerializeToString()
    )
    client, http = client_for(lambda _r: httpx.Response(200, stream=Chunks([body])))
    got: list[comms_pb2.Ask] = []

    async def read_all() -> None:
        stream = client.watch_ask("a")
        got.append(await anext(stream))
        await anext(stream)  # the body ends here, without an end-of-stream envelope

    async with http:
        with pytest.raises(RpcError) as caught:
            await read_all()
    assert [a.ask_id for a in got] == ["a"]
    assert caught.value.code == "unavailable"


async def test_a_stream_refused_up_front_carries_the_connect_error() -> None:
    client, http = client_for(
        lambda _r: httpx.Response(401, json={"code": "unauthenticated", "message": "bad token"})
    )
    async with http:
        with pytest.raises(RpcError) as caught:
            await anext(client.watch_ask("a"))
    assert caught.value.code == "unauthenticated"


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


async def test_close_ask_sends_the_status_reason_and_timeout_answers() -> None:
    seen: list[agent_pb2.CloseAskRequest] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/compass.v1.AgentService/CloseAsk"
        assert request.headers["content-type"] == "application/proto"
        seen.append(agent_pb2.CloseAskRequest.FromString(request.content))
        ask = comms_pb2.Ask(ask_id="ask_1", status=comms_pb2.ASK_STATUS_TIMED_OUT)
        body = agent_pb2.CloseAskResponse(ask=ask).SerializeToString()
        return httpx.Response(200, headers={"content-type": "application/proto"}, content=body)

    client, http = client_for(handler)
    answers = [comms_pb2.AskQuestionAnswer(question_id="db", chosen_option_ids=["0"])]
    async with http:
        ask = await client.close_ask(
            "ask_1", comms_pb2.ASK_STATUS_TIMED_OUT, "runtime timeout picked the answer", answers
        )
    assert ask.status == comms_pb2.ASK_STATUS_TIMED_OUT
    (request,) = seen
    assert request == agent_pb2.CloseAskRequest(
        ask_id="ask_1",
        status=comms_pb2.ASK_STATUS_TIMED_OUT,
        reason="runtime timeout picked the answer",
        answers=answers,
    )


async def test_close_ask_on_a_server_without_it_is_unimplemented() -> None:
    client, http = client_for(lambda _: httpx.Response(404))
    async with http:
        with pytest.raises(RpcError) as caught:
            await client.close_ask("ask_1", comms_pb2.ASK_STATUS_WITHDRAWN, "turn ended")
    assert caught.value.code == "unimplemented"
    assert not caught.value.retryable
