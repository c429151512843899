"""An idle kept-alive connection is closed by a timer (uvicorn's keep-alive timeout, the guard's
request-read deadline). Under CPU contention the timer can run in the same turn of the event
loop as a request that has just arrived, before the loop reads it: closing then drops a live
request, and because its bytes sit unread the kernel resets the connection, so the client sees
`httpx.ReadError` (bench.respond crashed so on a busy machine). The guard answers such a
request instead (docs/operating/protocols.md).

The late timer is simulated exactly: the request's bytes are in the server's socket buffer,
unread, when the timer's handler runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
from typing import TYPE_CHECKING

import pytest
import uvicorn

from compass_server.transport.netguard import GuardedH11Protocol, guarded_protocol
from tests._wait import eventually

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable

    from starlette.types import Receive, Scope, Send

pytestmark = pytest.mark.e2e

REQUEST = b"GET / HTTP/1.1\r\nHost: compass\r\n\r\n"


async def _hello(scope: Scope, receive: Receive, send: Send) -> None:
    assert scope["type"] == "http"
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"5")]}
    )
    await send({"type": "http.response.body", "body": b"hello"})


@contextlib.asynccontextmanager
async def _server() -> AsyncGenerator[uvicorn.Server]:
    config = uvicorn.Config(
        _hello,
        host="127.0.0.1",
        port=0,
        lifespan="off",
        log_level="warning",
        http=guarded_protocol(max_connections=10, max_per_client=0, read_timeout=30),
        timeout_keep_alive=30,
    )
    server = uvicorn.Server(config)
    server.install_signal_handlers = lambda: None  # pyright: ignore[reportAttributeAccessIssue] - uvicorn's own hook
    task = asyncio.create_task(server.serve())
    try:
        await eventually(lambda: server.started, "the server started")
        yield server
    finally:
        server.should_exit = True
        await task


def _read_response(conn: socket.socket) -> bytes:
    """One whole response (ours end with b'hello'), or what came before the connection ended."""
    got = b""
    conn.settimeout(10)
    try:
        while not got.endswith(b"hello"):
            chunk = conn.recv(4096)
            if not chunk:
                break
            got += chunk
    except ConnectionResetError:
        return got + b"<reset>"
    return got


async def _second_request_as_the_timer_fires(fire: Callable[[GuardedH11Protocol], None]) -> bytes:
    async with _server() as server:
        port = server.servers[0].sockets[0].getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as conn:
            conn.sendall(REQUEST)
            first = await asyncio.to_thread(_read_response, conn)
            assert first.startswith(b"HTTP/1.1 200"), first
            (protocol,) = server.server_state.connections
            assert isinstance(protocol, GuardedH11Protocol)
            # All in one callback of the loop: the next request arrives, and the idle timer
            # runs before the loop has read it.
            conn.sendall(REQUEST)
            fd = protocol.transport.get_extra_info("socket").fileno()
            assert select.select([fd], [], [], 5)[0], "the request never reached the server"
            fire(protocol)
            return await asyncio.to_thread(_read_response, conn)


async def test_a_request_that_arrived_as_the_keepalive_timer_fired_is_answered() -> None:
    second = await _second_request_as_the_timer_fires(lambda p: p.timeout_keep_alive_handler())
    assert second.startswith(b"HTTP/1.1 200"), second


async def test_a_request_that_arrived_as_the_read_deadline_fired_is_answered() -> None:
    second = await _second_request_as_the_timer_fires(
        lambda p: p._read_timed_out()  # pyright: ignore[reportPrivateUsage] - the timer's own callback
    )
    assert second.startswith(b"HTTP/1.1 200"), second
