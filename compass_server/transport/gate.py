"""ASGI gate in front of the Connect apps: authentication, request size, error hygiene.

It runs before connectrpc reads anything, which is what makes docs/spec.md §4's guard order hold for
every request and every protocol (Connect, gRPC, gRPC-Web): no or bad token ->
UNAUTHENTICATED before a malformed or oversize body -> INVALID_ARGUMENT. (connectrpc 0.13's
metadata interceptors also run before the body is read, but it reports an oversize body as
RESOURCE_EXHAUSTED and decodes headers as UTF-8 unchecked, and the size limit must hold before
anything is buffered.) The authenticated account is put in a ContextVar for the handlers (the
Connect handler runs in the same task as this middleware). Errors the gate answers itself are
written in the request's protocol.

Last-resort hygiene: connectrpc answers exceptions raised outside a handler (our interceptors
map everything raised inside one) with UNKNOWN and the exception text. The gate rewrites such
responses to INTERNAL "internal error" and logs what they said; a streaming call's
unary-style error (raised before its stream starts) becomes its end-stream frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import TYPE_CHECKING, Final, Generic, TypeVar

from connectrpc.code import Code

from compass_server.domain.errors import UnavailableError
from compass_server.domain.limits import MAX_TOKEN_LENGTH
from compass_server.transport import wire
from compass_server.transport.error_mapping import INTERNAL_MESSAGE

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from compass_server.transport.auth import AuthContext

logger = logging.getLogger(__name__)

A = TypeVar("A")


class _Reject(Exception):  # noqa: N818 - internal control flow, never escapes this module
    def __init__(self, code: Code, message: str, *, body_read: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.body_read = body_read
        """Whether the request's body has been read to its end (or the client left)."""


def bearer_token(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    if not token.isascii() or not token.isprintable() or " " in token:
        return None
    return token


class ConnectGate(Generic[A]):
    """ASGI middleware wrapping the mounted Connect applications."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        auth: AuthContext[A],
        authenticate: Callable[[str], Awaitable[A | None]],
        authorize: Callable[[A, str], str | None],
        max_body_bytes: int,
    ) -> None:
        """Args:
        app: the Connect application(s) behind the gate.
        auth: where the authenticated account is published for handlers.
        authenticate: token -> account, or None when unknown or disabled. May raise
            UnavailableError.
        authorize: (account, service full name) -> None when allowed, else the
            PERMISSION_DENIED message.
        max_body_bytes: the largest request body accepted (INVALID_ARGUMENT above).
        """
        self._app = app
        self._auth = auth
        self._authenticate = authenticate
        self._authorize = authorize
        self._max_body = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        scope = _normalized_media_type(scope)
        headers = request_headers(scope)
        content_type = headers.get("content-type", "")
        streaming = wire.is_streaming(content_type)
        grpc = wire.is_grpc(content_type)
        try:
            account = await self._admit(scope, headers)
            if grpc and not wire.is_grpc_web(content_type) and not _has_trailers(scope):
                # gRPC ends every response with HTTP trailers: only the HTTP/2 listener
                # (COMPASS_GRPC_PORT) has them; uvicorn's HTTP/1.1 does not. gRPC-Web carries
                # its trailers in the body and is served on every listener.
                raise _Reject(
                    Code.UNIMPLEMENTED,
                    "gRPC is served on the HTTP/2 listener (COMPASS_GRPC_PORT); on this one, "
                    "use gRPC-Web or the Connect protocol",
                )
            if not _utf8_headers(scope):
                # connectrpc decodes headers as UTF-8 and would fail with the codec's text.
                raise _Reject(Code.INVALID_ARGUMENT, "request headers must be valid UTF-8")
            body = await self._read_body(headers, receive)
            if streaming and wire.compressed_without_encoding(
                body, headers.get("connect-content-encoding")
            ):
                # connectrpc reports this as INTERNAL; it is the client's mistake.
                raise _Reject(
                    Code.INVALID_ARGUMENT,
                    "a message is flagged compressed but connect-content-encoding names no "
                    "supported compression",
                )
        except _Reject as reject:
            if grpc:
                if _has_trailers(scope) and not reject.body_read:
                    await _drain(receive)
                await _send_grpc_error(send, reject.code, reject.message, content_type, scope)
            else:
                await _send_error(send, reject.code, reject.message, streaming, content_type)
            return
        token = bearer_token(headers.get("authorization")) or ""
        hygiene: Send = _GrpcHygiene(send) if grpc else _Hygiene(send, streaming, content_type)
        with self._auth.bound(account, token):
            await self._app(scope, replay(body, receive), hygiene)

    async def _admit(self, scope: Scope, headers: dict[str, str]) -> A:
        token = bearer_token(headers.get("authorization"))
        if token is None:
            raise _Reject(Code.UNAUTHENTICATED, "missing or malformed bearer token")
        try:
            account = await self._authenticate(token)
        except UnavailableError as exc:
            raise _Reject(Code.UNAVAILABLE, exc.message) from None
        except Exception:  # logged; the client only learns it was internal
            logger.exception("authentication failed")
            raise _Reject(Code.INTERNAL, INTERNAL_MESSAGE) from None
        if account is None:
            raise _Reject(Code.UNAUTHENTICATED, "invalid token")
        path: str = scope.get("path", "")
        service = path.strip("/").split("/", 1)[0]
        denied = self._authorize(account, service)
        if denied is not None:
            raise _Reject(Code.PERMISSION_DENIED, denied)
        return account

    async def _read_body(self, headers: dict[str, str], receive: Receive) -> bytes:
        try:
            return await read_body(headers, receive, self._max_body)
        except BodyTooLargeError as exc:
            raise _Reject(
                Code.INVALID_ARGUMENT,
                f"request body is too large (limit {self._max_body} bytes)",
                body_read=exc.body_read,
            ) from None
        except ClientGoneError:
            raise _Reject(Code.CANCELED, "client disconnected", body_read=True) from None


class BodyTooLargeError(Exception):
    """A request body is over the limit (`body_read`: it was read to its end anyway)."""

    def __init__(self, *, body_read: bool) -> None:
        super().__init__("request body is too large")
        self.body_read = body_read


class ClientGoneError(Exception):
    """The client disconnected before its request body was complete."""


async def read_body(headers: dict[str, str], receive: Receive, max_bytes: int) -> bytes:
    """A request's whole body, at most `max_bytes` (the gates of /compass.v1.* and /mcp):
    a declared length over it is refused before anything is read, and reading stops at the
    first chunk over it.

    Raises:
        BodyTooLargeError: over `max_bytes`.
        ClientGoneError: the client left first.
    """
    declared = headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise BodyTooLargeError(body_read=False)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGoneError
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > max_bytes:
            raise BodyTooLargeError(body_read=not message.get("more_body", False))
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def request_headers(scope: Scope) -> dict[str, str]:
    """A request's headers by lower-case name (latin-1 never fails; connectrpc decodes
    again, as UTF-8, on its own)."""
    raw: list[tuple[bytes, bytes]] = scope.get("headers", [])
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}


def _utf8_headers(scope: Scope) -> bool:
    raw: list[tuple[bytes, bytes]] = scope.get("headers", [])
    try:
        for name, value in raw:
            name.decode()
            value.decode()
    except UnicodeDecodeError:
        return False
    return True


def _normalized_media_type(scope: Scope) -> Scope:
    """`scope` with the media type of its content-type in lower case (parameters kept):
    media types are case-insensitive (RFC 9110), connectrpc compares them exactly."""
    raw: list[tuple[bytes, bytes]] = scope.get("headers", [])
    changed = False
    headers: list[tuple[bytes, bytes]] = []
    for name, value in raw:
        kept = value
        if name.lower() == b"content-type":
            media, sep, params = value.partition(b";")
            kept = media.strip().lower() + sep + params
            changed = changed or kept != value
        headers.append((name, kept))
    return {**scope, "headers": headers} if changed else scope


def replay(body: bytes, receive: Receive) -> Receive:
    """A receive() that yields the already-read body once, then defers to the real one
    (connectrpc keeps reading it while it serves a stream, to learn of a disconnect: it then
    cancels the handler)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


DRAIN_SECONDS: Final = 5.0
"""How long a refused HTTP/2 request's body is read (and dropped) before the error is sent."""


async def _drain(receive: Receive) -> None:
    """Read and drop what is left of a refused request's body, for at most DRAIN_SECONDS.

    hypercorn (0.18) drops an HTTP/2 connection when DATA arrives for a stream whose response
    is complete (a KeyError in its event loop), which would fail every other call on the
    connection; so the body is consumed first. Nothing is kept: memory stays flat."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(DRAIN_SECONDS):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect" or not message.get("more_body", False):
                    return


SLICE_BYTES: Final = 64 * 1024
"""The most of a response body handed to the server in one send()."""


async def _sliced(send: Send, message: Message) -> None:
    """send() `message`, a big body in SLICE_BYTES pieces.

    The server writes each body message to its transport whole, and a client that stopped
    reading leaves the unsent rest in the transport's buffer (a copy of it): a 1 MB message
    to a stalled watcher kept ~1 MB more per stream. uvicorn waits for the buffer to drain
    before each send(), so in pieces at most one piece waits there.
    """
    body = message.get("body", b"") if message["type"] == "http.response.body" else b""
    if len(body) <= SLICE_BYTES:
        await send(message)
        return
    more: bool = message.get("more_body", False)
    for at in range(0, len(body), SLICE_BYTES):
        last = at + SLICE_BYTES >= len(body)
        await send(
            {
                "type": "http.response.body",
                "body": body[at : at + SLICE_BYTES],
                "more_body": more or not last,
            }
        )


def _has_trailers(scope: Scope) -> bool:
    """Whether the ASGI server can send HTTP trailers on this request's response."""
    extensions: dict[str, object] = scope.get("extensions") or {}
    return "http.response.trailers" in extensions


async def _send_grpc_error(
    send: Send, code: Code, message: str, content_type: str, scope: Scope
) -> None:
    """A gRPC or gRPC-Web error response with no messages. Where the server has trailers
    (HTTP/2) the status goes in them: a "trailers-only" response needs END_STREAM on the
    HEADERS frame, which ASGI cannot ask for (a server ends such a response with an empty DATA
    frame, and gRPC clients then report "Stream removed"). Without trailers (gRPC-Web over
    HTTP/1.1) the status goes in the headers, which gRPC-Web clients read."""
    media = (b"content-type", wire.grpc_media_type(content_type))
    status = wire.grpc_status(code, message)
    if wire.is_grpc_web(content_type) or not _has_trailers(scope):
        await send({"type": "http.response.start", "status": 200, "headers": [media, *status]})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [media], "trailers": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})
    await send({"type": "http.response.trailers", "headers": status, "more_trailers": False})


async def _send_error(
    send: Send, code: Code, message: str, streaming: bool, content_type: str
) -> None:
    if streaming:
        status, headers, body = wire.stream_error(code, message, content_type)
        if code is Code.UNIMPLEMENTED:
            headers.append((b"connect-accept-encoding", wire.STREAM_COMPRESSION.encode()))
    else:
        status, headers, body = wire.unary_error(code, message)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class _Hygiene:
    """send() wrapper turning a leaked UNKNOWN error into INTERNAL "internal error", and a
    streaming call's unary-style error into its end-stream frame."""

    def __init__(self, send: Send, streaming: bool, content_type: str = "") -> None:
        self._send = send
        self._streaming = streaming
        self._content_type = content_type
        self._held_start: Message | None = None
        self._held_body: list[bytes] = []

    async def _raw(self, message: Message) -> None:
        await _sliced(self._send, message)

    async def __call__(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            status = int(message.get("status", 200))
            if status >= 500 or (self._streaming and status != 200):
                # Also for a streaming request: connectrpc answers failures before the
                # stream starts with a unary-style JSON error (streams themselves send 200).
                self._held_start = message  # decide once the body is complete
                return
            await self._raw(message)
        elif kind == "http.response.body" and self._held_start is not None:
            self._held_body.append(message.get("body", b""))
            if not message.get("more_body", False):
                await self._flush_unary(self._held_start)
        elif kind == "http.response.body" and self._streaming:
            body: bytes = message.get("body", b"")
            if wire.end_stream_error_code(body) == Code.UNKNOWN.value:
                logger.error("rewrote a leaked UNKNOWN stream error: %r", body[5:])
                _, _, body = wire.stream_error(Code.INTERNAL, INTERNAL_MESSAGE, "")
                message = {**message, "body": body}
            await self._raw(message)
        else:
            await self._raw(message)

    async def _flush_unary(self, start: Message) -> None:
        body = b"".join(self._held_body)
        if self._streaming and (error := _unary_error(body)) is not None:
            # connectrpc answers failures before a stream starts (a bad
            # connect-protocol-version, ...) unary-style; a stream's error belongs in its
            # end-stream frame, with HTTP 200.
            code, text = error
            if code == Code.UNKNOWN.value:
                logger.error("rewrote a leaked UNKNOWN error: %r", body)
                code, text = Code.INTERNAL.value, INTERNAL_MESSAGE
            status, headers, body = wire.stream_error(Code(code), text, self._content_type)
            start = {**start, "status": status, "headers": headers}
        elif _unary_error_code(body) == Code.UNKNOWN.value:
            logger.error("rewrote a leaked UNKNOWN error: %r", body)
            status, headers, body = wire.unary_error(Code.INTERNAL, INTERNAL_MESSAGE)
            start = {**start, "status": status, "headers": headers}
        await self._raw(start)
        await self._raw({"type": "http.response.body", "body": body, "more_body": False})


class _GrpcHygiene:
    """send() wrapper for gRPC and gRPC-Web: a leaked UNKNOWN status (grpc-status 2, with
    whatever exception text connectrpc put in grpc-message) becomes INTERNAL "internal error",
    in the headers of a trailers-only response, in the trailers, or in gRPC-Web's trailer
    frame."""

    def __init__(self, send: Send) -> None:
        self._send = send

    async def __call__(self, message: Message) -> None:
        kind = message["type"]
        if kind in {"http.response.start", "http.response.trailers"}:
            headers: list[tuple[bytes, bytes]] = message.get("headers", [])
            if (b"grpc-status", b"2") in headers:
                logger.error("rewrote a leaked UNKNOWN gRPC status: %r", headers)
                message = {**message, "headers": _internal_status(headers)}
        elif kind == "http.response.body":
            body: bytes = message.get("body", b"")
            rewritten = _grpc_web_trailer_frame_unknown_to_internal(body)
            if rewritten is not None:
                logger.error("rewrote a leaked UNKNOWN gRPC-Web status: %r", body)
                message = {**message, "body": rewritten}
        await self._send(message)


def _internal_status(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    kept = [(k, v) for k, v in headers if k not in {b"grpc-status", b"grpc-message"}]
    internal = str(wire.GRPC_STATUS[Code.INTERNAL]).encode()
    return [*kept, (b"grpc-status", internal), (b"grpc-message", INTERNAL_MESSAGE.encode())]


def _grpc_web_trailer_frame_unknown_to_internal(body: bytes) -> bytes | None:
    """`body` with its gRPC-Web trailer frame (flag 0x80, uncompressed) saying grpc-status 2
    rewritten to INTERNAL; None when it has no such frame."""
    offset = 0
    while len(body) - offset >= 5:
        flags = body[offset]
        length = int.from_bytes(body[offset + 1 : offset + 5], "big")
        if flags == 0x80:
            lines = body[offset + 5 : offset + 5 + length].split(b"\r\n")
            fields = [tuple(part.strip() for part in line.split(b":", 1)) for line in lines if line]
            if (b"grpc-status", b"2") not in fields:
                return None
            kept = [
                line
                for line in lines
                if line and not line.lower().startswith((b"grpc-status:", b"grpc-message:"))
            ]
            status = str(wire.GRPC_STATUS[Code.INTERNAL]).encode()
            kept += [b"grpc-status: " + status, b"grpc-message: " + INTERNAL_MESSAGE.encode()]
            trailer = b"\r\n".join(kept) + b"\r\n"
            frame = bytes([0x80]) + len(trailer).to_bytes(4, "big") + trailer
            return body[:offset] + frame + body[offset + 5 + length :]
        offset += 5 + length
    return None


def _unary_error_code(body: bytes) -> str | None:
    try:
        doc: object = json.loads(body)
    except ValueError:
        return None
    if isinstance(doc, dict):
        code: object = doc.get("code")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType] - narrowed below
        if isinstance(code, str):
            return code
    return None


def _unary_error(body: bytes) -> tuple[str, str] | None:
    """(code, message) of a unary Connect error body with a known code, else None."""
    code = _unary_error_code(body)
    if code is None or code not in {c.value for c in Code}:
        return None
    doc: dict[str, object] = json.loads(body)
    message = doc.get("message")
    return code, message if isinstance(message, str) else ""
