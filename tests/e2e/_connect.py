"""A small Connect client over plain httpx, for end-to-end tests that speak the wire themselves.

Unary calls: POST `application/json` (or `application/proto`), the response is a `Reply`.
Server streams: POST `application/connect+json` with one enveloped request (flag byte, 4-byte
big-endian length, payload); the response is read incrementally by a background task into a
queue of `Frame`s, so a test can wait for the next message with a timeout while the stream
stays open (WatchChannel and WatchAsk wait for changes after their first messages).

Nothing here uses generated clients: the point is to exercise the HTTP wire as a browser or a
foreign client would.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import httpx
from google.rpc import error_details_pb2

from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Mapping

END_STREAM: Final = 0b10
COMPRESSED: Final = 0b01

COMMS: Final = "compass.v1.CommsService"
AGENT: Final = "compass.v1.AgentService"

#: RPC name -> service, for every RPC of the contract.
SERVICE_OF: Final = {
    "GetMe": COMMS,
    "ListChannels": COMMS,
    "ListPendingAsks": COMMS,
    "ListMessages": COMMS,
    "GetAsk": COMMS,
    "WatchChannel": COMMS,
    "RespondToAsk": COMMS,
    "DeclineAsk": COMMS,
    "GetPushConfig": COMMS,
    "AddPushSubscription": COMMS,
    "RemovePushSubscription": COMMS,
    "ListPushSubscriptions": COMMS,
    "GetEmailSettings": COMMS,
    "SetEmailAsks": COMMS,
    "AppendMessage": AGENT,
    "UpdateMessage": AGENT,
    "WatchAsk": AGENT,
    "CloseAsk": AGENT,
    "GetChannel": AGENT,
    "ReportDelivery": AGENT,
}
STREAMING: Final = frozenset({"WatchChannel", "WatchAsk"})
CAUGHT_UP: Final = {"caughtUp": True}
"""A WatchChannel response without a message: the replay is done (then a keepalive)."""


def path(method: str) -> str:
    return f"/{SERVICE_OF[method]}/{method}"


def auth(token: str | None) -> dict[str, str]:
    return {} if token is None else {"authorization": f"Bearer {token}"}


def envelope(payload: bytes, flags: int = 0) -> bytes:
    return struct.pack(">BI", flags, len(payload)) + payload


@dataclass(frozen=True, slots=True)
class Violation:
    field: str
    description: str


@dataclass(frozen=True, slots=True)
class Reply:
    """A unary response: `code` is "ok" for HTTP 200, else the Connect error code."""

    status: int
    code: str
    message: str
    body: dict[str, object]
    """The JSON response (OK, JSON codec) or the error JSON; {} otherwise."""
    raw: bytes
    details: tuple[tuple[str, str], ...] = ()
    """(type, base64 value) of each error detail."""

    @property
    def ok(self) -> bool:
        return self.code == "ok"

    def invalid_fields(self) -> list[tuple[str, str, str]]:
        """(field, description, question_id) of the compass.v1.InvalidFields details."""
        found: list[tuple[str, str, str]] = []
        for type_name, value in self.details:
            if type_name == "compass.v1.InvalidFields":
                detail = comms_pb2.InvalidFields.FromString(_b64(value))
                found.extend((f.field, f.description, f.question_id) for f in detail.fields)
        return found

    def violations(self) -> list[Violation]:
        """The field violations of the google.rpc.BadRequest details of an error."""
        found: list[Violation] = []
        for type_name, value in self.details:
            if type_name != "google.rpc.BadRequest":
                continue
            detail = error_details_pb2.BadRequest.FromString(_b64(value))
            found.extend(Violation(v.field, v.description) for v in detail.field_violations)
        return found


def _b64(value: str) -> bytes:
    return base64.b64decode(value + "=" * (-len(value) % 4))


def parse_reply(response: httpx.Response) -> Reply:
    raw = response.content
    content_type = response.headers.get("content-type", "")
    if response.status_code == 200:
        body: dict[str, object] = {}
        if content_type.startswith("application/json"):
            body = json.loads(raw)
        return Reply(status=200, code="ok", message="", body=body, raw=raw)
    doc: object = None
    if content_type.startswith("application/json") and raw:
        doc = json.loads(raw)
    if not isinstance(doc, dict):
        return Reply(status=response.status_code, code="", message="", body={}, raw=raw)
    details = tuple(
        (str(d.get("type", "")), str(d.get("value", "")))
        for d in doc.get("details", [])
        if isinstance(d, dict)
    )
    return Reply(
        status=response.status_code,
        code=str(doc.get("code", "")),
        message=str(doc.get("message", "")),
        body=doc,
        raw=raw,
        details=details,
    )


async def call(
    client: httpx.AsyncClient,
    method: str,
    body: Mapping[str, object] | bytes,
    token: str | None,
    *,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    """One unary Connect call; a mapping body is sent as JSON, bytes as they are."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"content-type": "application/json", **auth(token), **(headers or {})}
    return parse_reply(await client.post(path(method), content=content, headers=sent))


@dataclass(frozen=True, slots=True)
class Frame:
    flags: int
    payload: bytes

    @property
    def end(self) -> bool:
        return bool(self.flags & END_STREAM)

    def json(self) -> dict[str, object]:
        doc: object = json.loads(self.payload)
        assert isinstance(doc, dict)
        return doc  # pyright: ignore[reportUnknownVariableType] - a test helper; shape checked by the tests

    def error(self) -> dict[str, object] | None:
        """The `error` object of an end-of-stream frame, if it has one."""
        error = self.json().get("error") if self.end else None
        return error if isinstance(error, dict) else None  # pyright: ignore[reportUnknownVariableType] - as above


def split_frames(buffer: bytearray) -> list[Frame]:
    """Take every complete envelope off the front of `buffer`."""
    frames: list[Frame] = []
    while len(buffer) >= 5:
        flags, length = struct.unpack(">BI", bytes(buffer[:5]))
        if len(buffer) < 5 + length:
            break
        frames.append(Frame(flags, bytes(buffer[5 : 5 + length])))
        del buffer[: 5 + length]
    return frames


class StreamClosedError(Exception):
    """The server ended the response before the frame a test waited for."""


@dataclass
class Stream:
    """An open server-stream call; frames arrive in `frames` as they are read.

    The request is sent by a background task, so the stream is "open" at once even though
    connectrpc sends the response headers only with the first message.
    """

    request: httpx.Request
    frames: asyncio.Queue[Frame | None] = field(default_factory=asyncio.Queue[Frame | None])
    received: list[Frame] = field(default_factory=list[Frame])
    _response: asyncio.Future[httpx.Response] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    async def response(self, within: float = 5.0) -> httpx.Response:
        """The response (status and headers), once the server sent them."""
        async with asyncio.timeout(within):
            return await asyncio.shield(self._response)

    async def next(self, within: float = 5.0) -> Frame:
        """The next frame, waiting at most `within` seconds (else TimeoutError)."""
        async with asyncio.timeout(within):
            frame = await self.frames.get()
        if frame is None:
            raise StreamClosedError("the stream ended")
        return frame

    async def message(self, within: float = 5.0) -> dict[str, object]:
        """The next message frame's JSON, skipping WatchChannel's caught-up keepalives; fails
        on an end-of-stream frame."""
        while True:
            frame = await self.next(within)
            assert not frame.end, (
                f"expected a message, got the end of the stream: {frame.payload!r}"
            )
            doc = frame.json()
            if doc != CAUGHT_UP:
                return doc

    async def end(self, within: float = 5.0) -> Frame:
        """Skip messages up to the end-of-stream frame and return it."""
        while True:
            frame = await self.next(within)
            if frame.end:
                return frame

    async def run(self, client: httpx.AsyncClient) -> None:
        """Send the request and queue the frames of the response; None marks the end."""
        buffer = bytearray()
        try:
            response = await client.send(self.request, stream=True)
        except httpx.HTTPError as exc:
            self._response.set_exception(exc)
            await self.frames.put(None)
            return
        self._response.set_result(response)
        try:
            async for chunk in response.aiter_raw():
                buffer.extend(chunk)
                for frame in split_frames(buffer):
                    self.received.append(frame)
                    await self.frames.put(frame)
        except httpx.HTTPError:
            pass  # the connection went away; the None below tells the reader
        finally:
            await response.aclose()
            await self.frames.put(None)


@contextlib.asynccontextmanager
async def open_stream(
    client: httpx.AsyncClient,
    method: str,
    body: Mapping[str, object] | bytes,
    token: str | None,
    *,
    headers: Mapping[str, str] | None = None,
    raw_body: bool = False,
) -> AsyncGenerator[Stream]:
    """Start a server-stream call and read its frames until the block exits (then close it).

    A mapping body is JSON-encoded and enveloped; bytes are enveloped unless `raw_body`.
    """
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    content = payload if raw_body else envelope(payload)
    sent = {"content-type": "application/connect+json", **auth(token), **(headers or {})}
    # No read timeout: a watch may rightly stay silent; tests bound their waits in `next`.
    timeout = httpx.Timeout(30.0, read=None)
    request = client.build_request(
        "POST", path(method), content=content, headers=sent, timeout=timeout
    )
    stream = Stream(request)
    task = asyncio.create_task(stream.run(client))
    try:
        yield stream
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if not stream._response.done():  # pyright: ignore[reportPrivateUsage] - the owner tidies up
            stream._response.cancel()  # pyright: ignore[reportPrivateUsage] - as above
