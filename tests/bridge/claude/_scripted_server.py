"""A scripted AgentService on loopback for `compass claude-hook` run as a process: a real
HTTP/1.1 server that answers each method as the test scripts it, or accepts the call and
never answers it (a server that hangs). It speaks Connect with the binary codec, framed by
hand (a test must not share the code it checks)."""

from __future__ import annotations

import asyncio
import contextlib
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gen.compass.v1 import agent_pb2, comms_pb2

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from google.protobuf.message import Message

__all__ = ["Reply", "ScriptedServer", "channel", "pending_watch", "stored_ask", "unary", "watch"]

SERVICE = "/compass.v1.AgentService/"


@dataclass(frozen=True)
class Reply:
    """One scripted response: its content type and body; `then_hang`: the body is sent
    (chunked) and the response never ends (a stream that goes silent)."""

    content_type: str
    body: bytes
    then_hang: bool = False


def unary(message: Message) -> Reply:
    return Reply("application/proto", message.SerializeToString())


def _envelope(flags: int, payload: bytes) -> bytes:
    return struct.pack(">BI", flags, len(payload)) + payload


def watch(ask: comms_pb2.Ask) -> Reply:
    """WatchAsk sending `ask`, then the end of the stream."""
    body = _envelope(0, agent_pb2.WatchAskResponse(ask=ask).SerializeToString())
    return Reply("application/connect+proto", body + _envelope(0b10, b"{}"))


def pending_watch(ask_id: str) -> Reply:
    """WatchAsk sending the ask as pending, then silence."""
    ask = comms_pb2.Ask(ask_id=ask_id, status=comms_pb2.ASK_STATUS_PENDING)
    body = _envelope(0, agent_pb2.WatchAskResponse(ask=ask).SerializeToString())
    return Reply("application/connect+proto", body, then_hang=True)


def stored_ask(ask_id: str = "ask_1") -> Reply:
    """AppendMessage's answer: the message holding one ask, with its minted id."""
    message = comms_pb2.Message(message_id="msg_1", client_message_id="claude-hook-x")
    message.blocks.add().ask.ask_id = ask_id
    return unary(agent_pb2.AppendMessageResponse(message=message))


def channel(channel_id: str) -> Reply:
    """GetChannel's answer: the channel."""
    return unary(agent_pb2.GetChannelResponse(channel=comms_pb2.Channel(channel_id=channel_id)))


@dataclass
class ScriptedServer:
    """`replies`: method name -> its Reply; a method without one is read and never answered."""

    replies: dict[str, Reply] = field(default_factory=dict[str, Reply])
    calls: list[str] = field(default_factory=list[str])
    """The methods called, in order (a call is listed once its request is read)."""
    url: str = ""
    _done: asyncio.Event = field(default_factory=asyncio.Event)

    async def _read_request(self, reader: asyncio.StreamReader) -> str:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        path = lines[0].split(" ")[1]
        headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in lines[1:] if line)
        }
        if "content-length" in headers:
            await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
                await reader.readexactly(size + 2)
            await reader.readuntil(b"\r\n")
        return path.removeprefix(SERVICE)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                method = await self._read_request(reader)
                self.calls.append(method)
                reply = self.replies.get(method)
                if reply is None:
                    await self._done.wait()
                    return
                if reply.then_hang:
                    writer.write(
                        f"HTTP/1.1 200 OK\r\ncontent-type: {reply.content_type}\r\n"
                        "transfer-encoding: chunked\r\n\r\n".encode()
                        + f"{len(reply.body):x}\r\n".encode()
                        + reply.body
                        + b"\r\n"
                    )
                    await writer.drain()
                    await self._done.wait()
                    return
                writer.write(
                    f"HTTP/1.1 200 OK\r\ncontent-type: {reply.content_type}\r\n"
                    f"content-length: {len(reply.body)}\r\n\r\n".encode()
                    + reply.body
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[ScriptedServer]:
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
        try:
            yield self
        finally:
            self._done.set()
            server.close()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    await server.wait_closed()
