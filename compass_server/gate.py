"""ASGI gate in front of the Connect apps: authentication, request size, error hygiene.

It runs before connect-python decodes anything, which is what makes SPEC §4's guard order
hold for every request: no or bad token -> UNAUTHENTICATED before a malformed or oversize
body -> INVALID_ARGUMENT. The authenticated account is put in a ContextVar for the handlers
(the Connect handler runs in the same task as this middleware).

Last-resort hygiene: connect-python answers failures it did not expect (a header that is not
UTF-8, a protocol it cannot serve here) with UNKNOWN and the exception text. The gate rewrites
such responses to INTERNAL "internal error" and logs what they said.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from contextvars import ContextVar
from typing import TYPE_CHECKING, Final, Generic, TypeVar

from connectrpc.code import Code

from compass_server import wire
from compass_server.errors import UnauthenticatedError, UnavailableError
from compass_server.interceptors import INTERNAL_MESSAGE

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Generator

    from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)

A = TypeVar("A")

MAX_TOKEN_LENGTH: Final = 512


class AuthContext(Generic[A]):
    """Where handlers find what the gate learned about the current request: the account it
    authenticated, and whether the client has gone away."""

    def __init__(self) -> None:
        self._var: ContextVar[A | None] = ContextVar("compass_account", default=None)
        self._gone: ContextVar[asyncio.Event | None] = ContextVar("compass_gone", default=None)
        self._token: ContextVar[str] = ContextVar("compass_token", default="")

    def current(self) -> A:
        """The caller's account.

        Raises:
            UnauthenticatedError: called outside a request that passed the gate.
        """
        account = self._var.get()
        if account is None:
            raise UnauthenticatedError("authentication required")
        return account

    def token(self) -> str:
        """The bearer token the current request was admitted with ("" outside one)."""
        return self._token.get()

    def client_gone(self) -> asyncio.Event:
        """Set once the client of the current request has disconnected.

        A live watch waits for changes and would only notice a gone client when it next has
        something to send; it waits for this too. Outside a gated request: a fresh event.
        """
        return self._gone.get() or asyncio.Event()

    @contextlib.contextmanager
    def bound(
        self, account: A, gone: asyncio.Event | None = None, token: str = ""
    ) -> Generator[None]:
        account_reset = self._var.set(account)
        gone_reset = self._gone.set(gone)
        token_reset = self._token.set(token)
        try:
            yield
        finally:
            self._token.reset(token_reset)
            self._gone.reset(gone_reset)
            self._var.reset(account_reset)


class _Reject(Exception):  # noqa: N818 - internal control flow, never escapes this module
    def __init__(self, code: Code, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


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
        headers = _headers(scope)
        content_type = headers.get("content-type", "")
        streaming = wire.is_streaming(content_type)
        try:
            account = await self._admit(scope, headers)
            if wire.is_grpc(content_type):
                # gRPC needs HTTP trailers, which uvicorn does not offer, and the gate's error
                # and hygiene handling speaks only the Connect protocol: refuse gRPC and
                # gRPC-Web up front, as a Connect error a client can read.
                raise _Reject(
                    Code.UNIMPLEMENTED,
                    "gRPC and gRPC-Web are not served here; use the Connect protocol",
                )
            if not _utf8_headers(scope):
                # connect-python decodes headers as UTF-8 and would fail with the codec's text.
                raise _Reject(Code.INVALID_ARGUMENT, "request headers must be valid UTF-8")
            timeout = headers.get("connect-timeout-ms")
            if timeout is not None and not (
                timeout.isascii() and timeout.isdigit() and len(timeout) <= 10
            ):
                # connect-python accepts whatever int() does ("-5", " 5", "1_000").
                raise _Reject(
                    Code.INVALID_ARGUMENT, "connect-timeout-ms must be 1 to 10 ASCII digits"
                )
            encoding = headers.get("connect-content-encoding")
            if streaming and encoding not in {None, "identity", wire.STREAM_COMPRESSION}:
                # connect-python would decode such a stream as identity (Connect protocol:
                # an unsupported compression is unimplemented, naming the supported ones).
                raise _Reject(
                    Code.UNIMPLEMENTED,
                    f"unsupported connect-content-encoding; supported: {wire.STREAM_COMPRESSION}",
                )
            body = await self._read_body(headers, receive)
            if streaming and wire.compressed_without_encoding(
                body, headers.get("connect-content-encoding")
            ):
                # connect-python reports this as INTERNAL; it is the client's mistake.
                raise _Reject(
                    Code.INVALID_ARGUMENT,
                    "a message is flagged compressed but connect-content-encoding names no "
                    "supported compression",
                )
        except _Reject as reject:
            await _send_error(send, reject.code, reject.message, streaming, content_type)
            return
        gone = asyncio.Event()
        token = bearer_token(headers.get("authorization")) or ""
        hygiene = _Hygiene(send, streaming, content_type)
        with self._auth.bound(account, gone, token):
            call = self._app(scope, _replay(body, receive, gone), hygiene)
            timeout = headers.get("connect-timeout-ms")
            if timeout is None:
                await call
            else:
                await _within_deadline(call, int(timeout) / 1000, hygiene)

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
        too_large = _Reject(
            Code.INVALID_ARGUMENT, f"request body is too large (limit {self._max_body} bytes)"
        )
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self._max_body:
            raise too_large
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Reject(Code.CANCELED, "client disconnected")
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > self._max_body:
                raise too_large
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _headers(scope: Scope) -> dict[str, str]:
    # latin-1 never fails; connect-python decodes again (as UTF-8) on its own.
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
    media types are case-insensitive (RFC 9110), connect-python compares them exactly."""
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


def _replay(body: bytes, receive: Receive, gone: asyncio.Event) -> Receive:
    """A receive() that yields the already-read body once, then defers to the real one,
    setting `gone` when that reports the client's disconnect (connect-python keeps reading
    receive() while it serves a server stream, to learn exactly that)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
        return message

    return replay


async def _send_error(
    send: Send, code: Code, message: str, streaming: bool, content_type: str
) -> None:
    if streaming and not wire.is_grpc(content_type):
        status, headers, body = wire.stream_error(code, message, content_type)
        if code is Code.UNIMPLEMENTED:
            headers.append((b"connect-accept-encoding", wire.STREAM_COMPRESSION.encode()))
    else:
        status, headers, body = wire.unary_error(code, message)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _within_deadline(call: Awaitable[None], seconds: float, hygiene: _Hygiene) -> None:
    """Run `call` (the Connect app) until the client's Connect-Timeout-Ms passes; then cancel
    it and answer DEADLINE_EXCEEDED (a unary error, or the stream's end frame).

    connect-python 0.9 parses the header but enforces no deadline. Whatever the cancelled
    app still tries to send (its own CANCELED end frame) is dropped.
    """
    task = asyncio.ensure_future(call)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if task in done:
        task.result()
        return
    hygiene.closed = True
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    await hygiene.deadline_exceeded()


class _Hygiene:
    """send() wrapper turning a leaked UNKNOWN error into INTERNAL "internal error"; it also
    answers DEADLINE_EXCEEDED for `_within_deadline`."""

    def __init__(self, send: Send, streaming: bool, content_type: str = "") -> None:
        self._send = send
        self._streaming = streaming
        self._content_type = content_type
        self._held_start: Message | None = None
        self._held_body: list[bytes] = []
        self._started = False  # a response start went out
        self._finished = False  # and its last body
        self.closed = False
        """Set once the deadline passed: the app's later sends are dropped."""

    async def deadline_exceeded(self) -> None:
        if self._finished:
            return
        message = "the deadline (connect-timeout-ms) passed"
        if self._streaming:
            status, headers, frame = wire.stream_error(
                Code.DEADLINE_EXCEEDED, message, self._content_type
            )
            if not self._started:
                await self._raw(
                    {"type": "http.response.start", "status": status, "headers": headers}
                )
            await self._raw({"type": "http.response.body", "body": frame, "more_body": False})
        elif not self._started:
            status, headers, body = wire.unary_error(Code.DEADLINE_EXCEEDED, message)
            await self._raw({"type": "http.response.start", "status": status, "headers": headers})
            await self._raw({"type": "http.response.body", "body": body, "more_body": False})

    async def _raw(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self._started = True
        elif not message.get("more_body", False):
            self._finished = True
        await self._send(message)

    async def __call__(self, message: Message) -> None:
        if self.closed:
            return
        kind = message["type"]
        if kind == "http.response.start":
            status = int(message.get("status", 200))
            if status >= 500 or (self._streaming and status != 200):
                # Also for a streaming request: connect-python answers failures before the
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
            # connect-python answers failures before a stream starts (a bad
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
