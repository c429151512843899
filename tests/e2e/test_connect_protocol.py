"""Connect protocol details third-party clients rely on (issue 12): refused protocols get a
Connect error body, and media types are case-insensitive. Over real HTTP against
`compass serve`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from tests.e2e._connect import envelope, path, split_frames

if TYPE_CHECKING:
    import httpx

    from tests._server import SeededWorld

pytestmark = pytest.mark.usefixtures("module_world")


@pytest.mark.parametrize(
    "content_type",
    ["Application/JSON", "APPLICATION/JSON; charset=UTF-8", "application/Proto"],
)
async def test_unary_media_types_are_case_insensitive(
    http: httpx.AsyncClient, module_world: SeededWorld, content_type: str
) -> None:
    response = await http.post(
        path("ListChannels"),
        content=b"" if "proto" in content_type.lower() else b"{}",
        headers={
            "content-type": content_type,
            "authorization": f"Bearer {module_world.human.token}",
        },
    )
    assert response.status_code == 200, response.content


@pytest.mark.parametrize("encoding", ["br", "GZIP", "zstd"])
async def test_an_unsupported_stream_compression_is_unimplemented(
    http: httpx.AsyncClient, module_world: SeededWorld, encoding: str
) -> None:
    response = await http.post(
        path("WatchChannel"),
        content=envelope(json.dumps({"channelId": module_world.channel_id}).encode()),
        headers={
            "content-type": "application/connect+json",
            "authorization": f"Bearer {module_world.human.token}",
            "connect-content-encoding": encoding,
        },
    )
    assert response.status_code == 200, response.content
    (frame,) = split_frames(bytearray(response.content))
    assert frame.end
    error = frame.error()
    assert error is not None
    assert error["code"] == "unimplemented", error
    assert "supported encodings are gzip" in str(error["message"]), error  # names what is served


async def test_a_bad_header_on_a_stream_is_an_end_stream_error(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    response = await http.post(
        path("WatchChannel"),
        content=envelope(json.dumps({"channelId": module_world.channel_id}).encode()),
        headers={
            "content-type": "application/connect+json",
            "authorization": f"Bearer {module_world.human.token}",
            "connect-protocol-version": "2",
        },
    )
    assert response.status_code == 200, response.content
    assert response.headers["content-type"] == "application/connect+json"
    (frame,) = split_frames(bytearray(response.content))
    assert frame.end
    error = frame.error()
    assert error is not None
    assert error["code"] == "invalid_argument", error


@pytest.mark.parametrize("value", ["12345678901", "-5", "+5", "5x", "5ms", "1_000"])
@pytest.mark.parametrize("method", ["ListChannels", "WatchChannel"])
async def test_a_malformed_timeout_is_invalid_argument(
    http: httpx.AsyncClient, module_world: SeededWorld, method: str, value: str
) -> None:
    streaming = method == "WatchChannel"
    response = await http.post(
        path(method),
        content=envelope(json.dumps({"channelId": module_world.channel_id}).encode())
        if streaming
        else b"{}",
        headers={
            "content-type": "application/connect+json" if streaming else "application/json",
            "authorization": f"Bearer {module_world.human.token}",
            "connect-timeout-ms": value,
        },
    )
    if streaming:
        assert response.status_code == 200, response.content
        (frame,) = split_frames(bytearray(response.content))
        error = frame.error()
        assert error is not None
    else:
        assert response.status_code == 400, response.content
        error = response.json()
    assert error["code"] == "invalid_argument", error
    assert str(error["message"]).startswith("Invalid timeout header"), error


async def test_a_passed_deadline_is_deadline_exceeded_unary_and_streaming(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    """Connect-Timeout-Ms is enforced (connect-python 0.9 parsed it and let calls run on;
    connectrpc 0.13 enforces it itself)."""
    import time

    from tests.e2e._asks import post_ask
    from tests.e2e._connect import CAUGHT_UP, call, open_stream

    token = module_world.human.token
    expired = await call(http, "ListChannels", {}, token, headers={"connect-timeout-ms": "0"})
    assert (expired.status, expired.code) == (504, "deadline_exceeded"), expired
    roomy = await call(http, "ListChannels", {}, token, headers={"connect-timeout-ms": "10000"})
    assert roomy.ok, roomy

    # A live watch with a 400 ms deadline: its messages, then the deadline in its end frame.
    watch = {"channelId": module_world.channel_id}
    started = time.monotonic()
    async with open_stream(
        http, "WatchChannel", watch, token, headers={"connect-timeout-ms": "400"}
    ) as stream:
        while (frame := await stream.next(5)).json() != CAUGHT_UP:
            assert not frame.end, frame.payload
        end = await stream.end(5)
    took = time.monotonic() - started
    assert (end.error() or {}).get("code") == "deadline_exceeded", end.payload
    assert 0.3 < took < 3, took
    ask_id = await post_ask(http, module_world.agent.token, module_world.channel_id)
    async with open_stream(
        http,
        "WatchAsk",
        {"askId": ask_id},
        module_world.agent.token,
        headers={"connect-timeout-ms": "300"},
    ) as ask_watch:
        await ask_watch.message()
        ask_end = await ask_watch.end(5)
    assert (ask_end.error() or {}).get("code") == "deadline_exceeded"


async def test_streaming_media_types_are_case_insensitive(
    http: httpx.AsyncClient, module_world: SeededWorld
) -> None:
    from tests.e2e._connect import CAUGHT_UP, open_stream

    headers = {"content-type": "Application/Connect+JSON"}
    async with open_stream(
        http,
        "WatchChannel",
        {"channelId": module_world.channel_id},
        module_world.human.token,
        headers=headers,
    ) as stream:
        response = await stream.response()
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/connect+json"
        while (frame := await stream.next(5)).json() != CAUGHT_UP:
            assert not frame.end, frame.payload
