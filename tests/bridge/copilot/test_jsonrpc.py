"""The JSON-RPC connection to Copilot CLI's server (compass_bridge/copilot/jsonrpc.py): its
Content-Length framing both ways, requests and their answers, the CLI's notifications and
requests in order, and every way the stream can end or go wrong."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from compass_bridge.copilot import jsonrpc
from compass_bridge.copilot.jsonrpc import (
    Connection,
    ConnectionLostError,
    Incoming,
    RpcError,
    frame,
)
from tests._wait import eventually
from tests.bridge.copilot._recorded import conversation

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator


@dataclass
class Peer:
    """The CLI's end of the connection, and what the bridge's end heard."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    conn: Connection
    notifications: list[tuple[str, dict[str, Any]]] = field(
        default_factory=list[tuple[str, dict[str, Any]]]
    )
    requests: list[Incoming] = field(default_factory=list[Incoming])
    heard: list[str] = field(default_factory=list[str])
    """The methods of both, in arrival order."""

    def send(self, data: bytes) -> None:
        self.writer.write(data)

    async def receive(self) -> dict[str, Any]:
        """The next message the bridge's end wrote (read with its own framing here)."""
        headers = await self.reader.readuntil(b"\r\n\r\n")
        (length,) = [
            int(line.split(b":")[1])
            for line in headers.split(b"\r\n")
            if line.startswith(b"Content-Length")
        ]
        return json.loads(await self.reader.readexactly(length))


@contextlib.asynccontextmanager
async def connected() -> AsyncGenerator[Peer]:
    ours, theirs = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=ours)
    peer_reader, peer_writer = await asyncio.open_connection(sock=theirs)
    holder: list[Peer] = []

    def on_notification(method: str, params: dict[str, Any]) -> None:
        holder[0].notifications.append((method, params))
        holder[0].heard.append(method)

    def on_request(incoming: Incoming) -> None:
        holder[0].requests.append(incoming)
        holder[0].heard.append(incoming.method)

    conn = Connection(reader, writer, on_notification=on_notification, on_request=on_request)
    peer = Peer(peer_reader, peer_writer, conn)
    holder.append(peer)
    serving = asyncio.create_task(conn.serve())
    try:
        yield peer
    finally:
        peer_writer.close()
        await conn.close()
        async with asyncio.timeout(5):
            await serving


async def test_a_request_is_framed_and_answered() -> None:
    async with connected() as peer:
        call = asyncio.create_task(peer.conn.request("connect", {}))
        sent = await peer.receive()
        assert sent == {"jsonrpc": "2.0", "id": 1, "method": "connect", "params": {}}
        result = {"ok": True, "protocolVersion": 3, "version": "1.0.102"}
        peer.send(frame({"jsonrpc": "2.0", "id": 1, "result": result}))
        assert await call == result


async def test_an_error_answer_raises_with_its_code() -> None:
    async with connected() as peer:
        call = asyncio.create_task(peer.conn.request("session.abort", {"sessionId": "s"}))
        await peer.receive()
        error = {"code": -32602, "message": "bad params"}
        peer.send(frame({"jsonrpc": "2.0", "id": 1, "error": error}))
        with pytest.raises(RpcError) as raised:
            await call
        assert (raised.value.code, raised.value.message) == (-32602, "bad params")


async def test_the_recorded_conversation_is_heard_in_order_however_it_is_cut() -> None:
    """Every message the real CLI sent in a recorded run, written as one stream cut into
    pieces of 7 bytes: each notification and request is heard once, in order."""
    sent = [m for side, m in conversation("choice") if side == "agent" and "method" in m]
    data = b"".join(frame(m) for m in sent)
    async with connected() as peer:
        for start in range(0, len(data), 7):
            peer.send(data[start : start + 7])
        await peer.writer.drain()
        await eventually(lambda: len(peer.heard) >= len(sent), what="every message heard")
    assert peer.heard == [m["method"] for m in sent]
    (request,) = peer.requests
    assert (request.request_id, request.method) == (1, "userInput.request")
    assert request.params["question"] == "Which database should the new service use?"


async def test_answers_to_the_clis_requests_are_framed() -> None:
    async with connected() as peer:
        await peer.conn.respond(4, {"answer": "SQLite", "wasFreeform": False})
        await peer.conn.respond_error("x", jsonrpc.METHOD_NOT_FOUND, "sessionFs.readFile")
        assert await peer.receive() == {
            "jsonrpc": "2.0",
            "id": 4,
            "result": {"answer": "SQLite", "wasFreeform": False},
        }
        assert await peer.receive() == {
            "jsonrpc": "2.0",
            "id": "x",
            "error": {"code": -32601, "message": "sessionFs.readFile"},
        }


async def test_non_ascii_is_counted_in_bytes() -> None:
    async with connected() as peer:
        note = {"jsonrpc": "2.0", "method": "session.event", "params": {"text": "héllo ✓"}}
        peer.send(frame(note))
        await eventually(lambda: bool(peer.notifications), what="a notification")
    assert peer.notifications == [("session.event", {"text": "héllo ✓"})]


async def test_the_end_of_the_stream_fails_the_requests_still_waiting() -> None:
    async with connected() as peer:
        call = asyncio.create_task(peer.conn.request("session.send", {"prompt": "hi"}))
        await peer.receive()
        peer.writer.close()
        with pytest.raises(ConnectionLostError):
            await call
        await peer.conn.closed.wait()
        with pytest.raises(ConnectionLostError):
            await peer.conn.request("session.abort", {})


@pytest.mark.parametrize(
    ("output", "shown"),
    [
        (b"Usage: copilot [options]\n", "'Usage: copilot [options]'"),
        (b"Content-Length: x\r\n\r\n", "'Content-Length: x'"),
        (b"Content-Type: text/plain\r\n\r\n{}", "'a header block without Content-Length'"),
        (b"no newline at all", "'no newline at all'"),
    ],
)
async def test_output_that_is_not_a_frame_ends_the_connection_saying_what_it_was(
    output: bytes, shown: str
) -> None:
    async with connected() as peer:
        call = asyncio.create_task(peer.conn.request("connect", {}))
        await peer.receive()
        peer.send(output)
        peer.writer.write_eof()
        with pytest.raises(ConnectionLostError):
            await call
    assert peer.conn.not_rpc == shown


async def test_a_message_that_is_not_json_is_skipped(caplog: pytest.LogCaptureFixture) -> None:
    async with connected() as peer:
        peer.send(b"Content-Length: 5\r\n\r\nhello")
        peer.send(frame({"jsonrpc": "2.0", "method": "session.lifecycle", "params": {}}))
        await eventually(lambda: bool(peer.notifications), what="a notification")
    assert peer.heard == ["session.lifecycle"]
    assert "the CLI sent a message that is not JSON; skipped" in caplog.text


async def test_an_oversize_message_is_skipped(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(jsonrpc, "MAX_LINE_BYTES", 64)
    async with connected() as peer:
        big = {"jsonrpc": "2.0", "method": "session.event", "params": {"x": "y" * 200}}
        peer.send(frame(big))
        peer.send(frame({"jsonrpc": "2.0", "method": "session.lifecycle", "params": {}}))
        await eventually(lambda: bool(peer.notifications), what="a notification")
    assert peer.heard == ["session.lifecycle"]
    assert "skipped" in caplog.text
