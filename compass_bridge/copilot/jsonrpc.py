"""JSON-RPC 2.0 with Copilot CLI's headless server, over its stdin and stdout.

`copilot --headless --stdio` is the server its SDKs drive. Its messages are framed as the
Language Server Protocol frames them (vscode-jsonrpc's framing): a header block of
`Name: value` lines, `Content-Length` the body's size in bytes, a blank line, then the body,
one JSON-RPC message in UTF-8. Both sides send requests: the bridge's (`connect`,
`session.create`, `session.send`, `session.ui.handlePending*`, `session.abort`) and the CLI's
own (`userInput.request` and the like, answered or refused by the bridge); the CLI's
notifications (`session.event`, `session.lifecycle`) carry the session's events.

Why not the SDK (`github-copilot-sdk` on PyPI, `@github/copilot-sdk` on npm): the bridge needs
six of the protocol's methods and the ids that tie a question to its tool call, and the
Python SDK's user-input callback is handed neither the request id nor the tool call id (only
`question`, `choices`, `allowFreeform`); it reads the CLI on a thread of its own, pins and
downloads a runtime of its own (1.0.27 pins CLI 1.0.104), and is an alpha of some 100,000
lines with a release every few days. This module is the framing and the request bookkeeping,
no more; the methods and their shapes are read from the CLI's `schemas/api.schema.json` and
`session-events.schema.json` (bridge.py, process.py).

Nothing here retries: a connection that ends fails every request still waiting
(`ConnectionLostError`). A program that writes something else than a frame before its first
message is not the CLI's server: the connection ends and `not_rpc` says what it wrote; after
the first message a broken frame ends the connection too (a length-framed stream cannot be
resynchronized), a body that is not JSON is skipped with a warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from compass_bridge.process import MAX_LINE_BYTES, one_line
from compass_core.jsonvalues import is_object

if TYPE_CHECKING:
    from collections.abc import Callable

    from compass_core.jsonvalues import JsonObject

__all__ = [
    "METHOD_NOT_FOUND",
    "Connection",
    "ConnectionLostError",
    "Incoming",
    "RpcError",
    "frame",
]

logger = logging.getLogger("compass.bridge.copilot")

METHOD_NOT_FOUND: Final = -32601
"""JSON-RPC's "method not found": the answer to a request of the CLI the bridge does not serve."""
_MAX_HEADER_BYTES: Final = 8192
_HEADER: Final = re.compile(rb"([A-Za-z][A-Za-z0-9-]*):[ \t]*(.*?)[ \t]*\r?\n")


class RpcError(Exception):
    """The CLI answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{message} (JSON-RPC error {code})")
        self.code = code
        self.message = message


class ConnectionLostError(ConnectionError):
    """The connection to the CLI ended (it exited, or closed its output)."""


@dataclass(frozen=True, slots=True)
class Incoming:
    """A request of the CLI's: answer it with `Connection.respond` or `respond_error`."""

    request_id: int | str
    method: str
    params: JsonObject


def frame(message: JsonObject) -> bytes:
    """`message` as one frame on the wire."""
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class _NotAFrameError(Exception):
    """The stream holds something other than a frame here."""


class Connection:
    """One connection to the CLI's server (see the module docstring)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        on_notification: Callable[[str, JsonObject], None],
        on_request: Callable[[Incoming], None],
    ) -> None:
        """`on_notification(method, params)` and `on_request(incoming)` are called in the
        order the messages arrive, synchronously (they start tasks for what takes time)."""
        self._reader = reader
        self._writer = writer
        self._on_notification = on_notification
        self._on_request = on_request
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[object]] = {}
        self._spoken = False
        self.closed = asyncio.Event()
        """Set when the connection ended (`serve` returned)."""
        self.not_rpc: str | None = None
        """What the program wrote first, when that was not a frame."""

    # -- writing -------------------------------------------------------------------------

    async def request(self, method: str, params: JsonObject) -> object:
        """Send a request; its result.

        Raises:
            RpcError: the CLI answered with an error.
            ConnectionLostError: the connection ended before the answer.
        """
        request_id = next(self._ids)
        waiter: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = waiter
        try:
            message: JsonObject = {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": method,
                "params": params,
            }
            await self._send(message)
            return await waiter
        finally:
            self._waiting.pop(request_id, None)

    async def respond(self, request_id: int | str, result: object) -> None:
        """Answer the CLI's request `request_id` with `result` (dropped if the CLI is gone)."""
        await self._answer({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def respond_error(self, request_id: int | str, code: int, message: str) -> None:
        """Answer the CLI's request `request_id` with an error (dropped if the CLI is gone)."""
        error: JsonObject = {"code": code, "message": message}
        await self._answer({"jsonrpc": "2.0", "id": request_id, "error": error})

    async def _answer(self, message: JsonObject) -> None:
        try:
            await self._send(message)
        except ConnectionLostError:
            logger.debug("the CLI is gone: dropped the answer to its request")

    async def _send(self, message: JsonObject) -> None:
        if self.closed.is_set() or self._writer.is_closing():
            raise ConnectionLostError("the connection to the CLI is closed")
        try:
            self._writer.write(frame(message))
            await self._writer.drain()
        except ConnectionError as exc:
            raise ConnectionLostError(f"cannot write to the CLI: {exc}") from exc

    async def close(self) -> None:
        """Close the CLI's input (it ends its server)."""
        if not self._writer.is_closing():
            self._writer.close()
        with contextlib.suppress(ConnectionError):
            await self._writer.wait_closed()

    # -- reading -------------------------------------------------------------------------

    async def serve(self) -> None:
        """Read and dispatch the CLI's messages until its output ends; then every request
        still waiting fails with ConnectionLostError."""
        try:
            while True:
                body = await self._next_body()
                if body is None:
                    return
                self._dispatch(body)
        finally:
            self.closed.set()
            for waiter in self._waiting.values():
                if not waiter.done():
                    waiter.set_exception(ConnectionLostError("the CLI closed the connection"))

    async def _next_body(self) -> bytes | None:
        """The next frame's body; None at the end (or at a stream that is not framed)."""
        while True:
            try:
                length = await self._headers()
            except _NotAFrameError as exc:
                if not self._spoken:
                    self.not_rpc = repr(one_line(str(exc)))
                else:
                    logger.error("the CLI wrote a broken frame (%s); the connection ends", exc)
                return None
            if length is None:
                return None
            if length > MAX_LINE_BYTES:
                logger.warning("the CLI sent a message of %d bytes; skipped", length)
                await self._skip(length)
                continue
            try:
                return await self._reader.readexactly(length)
            except asyncio.IncompleteReadError:
                return None

    async def _headers(self) -> int | None:
        """Read one header block; its Content-Length, or None at the end of the stream."""
        length: int | None = None
        size = 0
        first = b""
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                # The stream ended inside a header block: what it held was no frame.
                seen = (first or exc.partial).strip()
                if seen and not self._spoken:
                    raise _NotAFrameError(seen.decode(errors="replace")) from None
                return None
            except asyncio.LimitOverrunError:
                raise _NotAFrameError("an overlong line") from None
            size += len(line)
            first = first or line
            if line in {b"\r\n", b"\n"}:
                if length is None:
                    if size == len(line):
                        size, first = 0, b""
                        continue  # blank lines between frames
                    raise _NotAFrameError("a header block without Content-Length")
                return length
            match = _HEADER.fullmatch(line)
            if match is None or size > _MAX_HEADER_BYTES:
                raise _NotAFrameError(line.decode(errors="replace").rstrip())
            name, value = match.group(1).lower(), match.group(2)
            if name == b"content-length":
                if not value.isdigit():
                    raise _NotAFrameError(line.decode(errors="replace").rstrip())
                length = int(value)

    async def _skip(self, length: int) -> None:
        left = length
        while left > 0:
            chunk = await self._reader.read(min(left, 1 << 20))
            if not chunk:
                return
            left -= len(chunk)

    def _dispatch(self, body: bytes) -> None:
        try:
            message: object = json.loads(body)
        except (ValueError, RecursionError):
            logger.warning("the CLI sent a message that is not JSON; skipped")
            return
        if not is_object(message):
            logger.warning("the CLI sent a message that is not a JSON object; skipped")
            return
        self._spoken = True
        method = message.get("method")
        request_id = message.get("id")
        params = message.get("params")
        params = params if is_object(params) else {}
        if isinstance(method, str):
            if isinstance(request_id, int | str) and not isinstance(request_id, bool):
                self._on_request(Incoming(request_id, method, params))
            else:
                self._on_notification(method, params)
            return
        if not isinstance(request_id, int) or isinstance(request_id, bool):
            return
        waiter = self._waiting.get(request_id)
        if waiter is None or waiter.done():
            return
        error = message.get("error")
        if is_object(error):
            code = error.get("code")
            text = error.get("message")
            waiter.set_exception(
                RpcError(
                    code if isinstance(code, int) else 0,
                    text if isinstance(text, str) else "error",
                )
            )
        else:
            waiter.set_result(message.get("result"))
