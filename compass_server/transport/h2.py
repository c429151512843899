"""The optional HTTP/2 listener of `compass serve` (COMPASS_GRPC_PORT), for gRPC clients.

gRPC ends every response with HTTP trailers, over HTTP/2. uvicorn (the main listener) speaks
HTTP/1.1 only and sends no trailers, so gRPC is served on a second listener, in the same
process and event loop, on the same ASGI app (the same gate, handlers, pool and change hub):
hypercorn's HTTP/2 protocol (`hypercorn.protocol.h2.H2Protocol`, on the `h2` library), driven
by this module's own accept loop. It speaks HTTP/2 over cleartext with prior knowledge only,
as gRPC clients connect; an HTTP/1.1 request is answered 505 and closed (Connect, gRPC-Web and
the browser use the main listener).

hypercorn (0.18) bounds none of what CVE-2023-44487 ("rapid reset") and its relatives abuse
(docs/operating/protocols.md): every HEADERS spawned a handler whatever the client did next, so a
client opening and at once resetting streams ran thousands of handlers (each a token lookup
in the database) and stalled the whole process; request bodies that never end were buffered
without a deadline; and an exception on hostile input was logged with a traceback carrying
the connection's raw bytes (HPACK, from which a bearer token decodes back). The guard, as
the servers that fixed the CVE did (Go's x/net/http2, nginx, Envoy):

- connections: at most `max_connections` open on this listener and `max_per_client` from one
  address; one over a cap is closed before anything is read;
- handlers: at most `handlers_per_connection` running per connection (a stream its client
  reset still counts until its handler ends) and `max_handlers` in all; a stream over either
  is refused (RST_STREAM REFUSED_STREAM) without a handler; a stream reset by its client
  before its handler started runs none;
- resets: each connection has a bucket of `reset_burst` stream resets and refusals, refilled
  at `resets_per_second`; a connection that empties it gets GOAWAY ENHANCE_YOUR_CALM;
- bodies: a request body must end within `body_seconds` of its HEADERS, and the bodies still
  arriving may hold at most `body_bytes_per_connection` per connection and `body_bytes` in all;
  a stream over these is reset and its handler sees the client gone;
- logs: one line per kind of trouble per 10 s, naming the peer address and what it did,
  never its bytes or an exception's text.

hypercorn gets no read timeout: it would apply to every socket read, and a gRPC client watching
a channel sends nothing for as long as the watch lasts. Idle connections (no stream open) close
after the keep-alive timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast

import h2.events
import h2.exceptions
from h2.errors import ErrorCodes
from hypercorn.app_wrappers import ASGIWrapper
from hypercorn.asyncio.task_group import TaskGroup
from hypercorn.asyncio.tcp_server import TCPServer
from hypercorn.asyncio.worker_context import WorkerContext
from hypercorn.config import Config
from hypercorn.events import Closed, Event, RawData, Updated
from hypercorn.protocol.h2 import H2Protocol
from hypercorn.typing import ConnectionState

from compass_server.transport.netguard import RateLimitedLog

if TYPE_CHECKING:
    import socket
    from collections.abc import Awaitable, Callable

    from hypercorn.typing import (
        AppWrapper,
        ASGIReceiveCallable,
        ASGISendCallable,
        Scope,
        TaskGroup as TaskGroupProtocol,
        WorkerContext as WorkerContextProtocol,
    )
    from starlette.types import ASGIApp

logger = logging.getLogger("compass.h2")

MAX_CONCURRENT_STREAMS: Final = 100
"""HTTP/2 streams one connection may have open (hypercorn's default, stated here)."""
LOG_INTERVAL_SECONDS: Final = 10.0
PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_NOT_HTTP2_TEXT: Final = (
    b"this port serves gRPC over HTTP/2 (prior knowledge); use the main port for HTTP/1.1\n"
)
NOT_HTTP2: Final = (
    b"HTTP/1.1 505 HTTP Version Not Supported\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\n"
    b"connection: close\r\n\r\n%s" % (len(_NOT_HTTP2_TEXT), _NOT_HTTP2_TEXT)
)
"""The answer to an HTTP/1.x request on this listener."""
READ_SLICE: Final = 8192
"""Bytes handed to h2 at a time (see GuardedH2Protocol.handle)."""
LINGER_SECONDS: Final = 1.0
"""How long a connection sent GOAWAY is still read (and its bytes dropped) before it is closed:
closing with unread bytes makes the kernel send a reset, which can destroy the GOAWAY before
the client reads it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class H2Limits:
    """What one client may make the listener do (see the module docstring)."""

    max_connections: int = 1000
    max_per_client: int = 200
    """0: no per-address cap (behind a proxy that connects from one address)."""
    handlers_per_connection: int = MAX_CONCURRENT_STREAMS
    max_handlers: int = 1000
    reset_burst: int = 200
    resets_per_second: float = 100.0
    body_seconds: float = 10.0
    body_bytes_per_connection: int = 8 << 20
    body_bytes: int = 32 << 20


@dataclass(slots=True)
class Guard:
    """The listener's shared counts and rate-limited logs."""

    limits: H2Limits
    connections: int = 0
    per_client: dict[str, int] = field(default_factory=dict[str, int])
    running: int = 0
    """Handlers running now."""
    starting: int = 0
    """Streams admitted whose handler has not started yet."""
    body_bytes: int = 0
    """Bytes of request bodies still arriving, over all connections."""
    refused: RateLimitedLog = field(
        default_factory=lambda: RateLimitedLog(logger, interval=LOG_INTERVAL_SECONDS)
    )
    abusive: RateLimitedLog = field(
        default_factory=lambda: RateLimitedLog(logger, interval=LOG_INTERVAL_SECONDS)
    )
    broken: RateLimitedLog = field(
        default_factory=lambda: RateLimitedLog(logger, interval=LOG_INTERVAL_SECONDS)
    )

    def admit(self, peer: str | None) -> str | None:
        """Count a new connection in; None, or why it is refused (then it is not counted)."""
        if self.connections >= self.limits.max_connections:
            return "too many open connections"
        count = self.per_client.get(peer, 0) if peer is not None else 0
        if peer is not None and 0 < self.limits.max_per_client <= count:
            return f"too many open connections from {peer}"
        self.connections += 1
        if peer is not None:
            self.per_client[peer] = count + 1
        return None

    def release(self, peer: str | None) -> None:
        self.connections -= 1
        if peer is not None:
            left = self.per_client.get(peer, 1) - 1
            if left > 0:
                self.per_client[peer] = left
            else:
                self.per_client.pop(peer, None)


class GuardedH2Protocol(H2Protocol):
    """hypercorn's HTTP/2 protocol under the guard's limits, for one connection."""

    def __init__(
        self,
        app: AppWrapper,
        config: Config,
        context: WorkerContextProtocol,
        task_group: TaskGroupProtocol,
        client: tuple[str, int] | None,
        server: tuple[str, int] | None,
        send: Callable[[Event], Awaitable[None]],
        *,
        guard: Guard,
    ) -> None:
        super().__init__(
            app, config, context, task_group, ConnectionState({}), False, client, server, send
        )
        self._guard = guard
        self._limits = guard.limits
        self._peer = client[0] if client else "unknown"
        self._starting: set[int] = set()
        """Streams admitted whose handler has not started."""
        self._running: set[int] = set()
        self._abandoned: set[int] = set()
        """Streams reset by the client before their handler started: none will run."""
        self._body: dict[int, int] = {}
        """Streams whose request body is still arriving -> bytes received so far."""
        self._body_bytes = 0
        self._deadlines: dict[int, asyncio.TimerHandle] = {}
        self._tokens = float(self._limits.reset_burst)
        self._refilled = time.monotonic()
        self._first = True
        self._ending = False

    # -- hypercorn's hooks ------------------------------------------------------------------

    async def initiate(
        self, headers: list[tuple[bytes, bytes]] | None = None, settings: bytes | None = None
    ) -> None:
        """Deferred to the client's first bytes: an HTTP/1.1 client is answered in HTTP/1.1."""

    async def handle(self, event: Event) -> None:
        if isinstance(event, Closed):
            self._settle()
        elif isinstance(event, RawData) and self._first:
            self._first = False
            if not PREFACE.startswith(event.data[: len(PREFACE)]):
                await self._not_http2(event.data)
                return
            await super().initiate()  # the server's SETTINGS, and hypercorn's sending task
        if isinstance(event, RawData):
            # In slices, yielding between them: h2 turns a whole read (up to 64 KiB, ~1,000
            # streams of a rapid reset) into events at once, which blocked the loop for up
            # to 0.3 s; and a GOAWAY stops the parsing at the slice it came from.
            for start in range(0, len(event.data), READ_SLICE):
                if self._ending:
                    return  # GOAWAY sent: what else comes is dropped
                await self._handle_safely(RawData(data=event.data[start : start + READ_SLICE]))
                await asyncio.sleep(0)
            return
        await self._handle_safely(event)

    async def _handle_safely(self, event: Event) -> None:
        try:
            await super().handle(event)
        except Exception as exc:  # noqa: BLE001 - hypercorn raises on some hostile input (a non-ASCII :method, ...); its text and traceback would carry the client's bytes
            self._guard.broken.emit(
                f"closed an HTTP/2 connection from {self._peer}: its frames raised "
                f"{type(exc).__name__}"
            )
            await self._go_away(ErrorCodes.PROTOCOL_ERROR)

    async def _handle_events(self, events: list[h2.events.Event]) -> None:
        # Events are handed to hypercorn in runs; before this guard resets a stream or ends
        # the connection, the run so far is handled, so hypercorn never meets a stream in a
        # state it did not expect (it raises KeyError on those).
        passed: list[h2.events.Event] = []
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                if not self._admit(event.stream_id):
                    with contextlib.suppress(h2.exceptions.ProtocolError):
                        self.connection.reset_stream(event.stream_id, ErrorCodes.REFUSED_STREAM)
                    if not self._spend():
                        await super()._handle_events(passed)
                        await self._calm_down("opened streams over its handler limit")
                        return
                    continue
            elif isinstance(event, h2.events.DataReceived):
                stream_id = event.stream_id
                if stream_id not in self._body:
                    # A stream refused, reset, or answered before its body ended: hypercorn
                    # 0.18 would look it up, fail, and drop the whole connection. The data is
                    # only handed back to flow control.
                    self._acknowledge(event)
                    continue
                if not self._take_body(stream_id, len(event.data or b"")):
                    self._acknowledge(event)
                    await super()._handle_events(passed)
                    passed = []
                    self._guard.abusive.emit(
                        f"reset an HTTP/2 stream from {self._peer}: the request bodies still "
                        "arriving passed their byte budget"
                    )
                    await self._reset(stream_id, ErrorCodes.ENHANCE_YOUR_CALM)
                    if not self._spend():
                        await self._calm_down("sent more unfinished request bodies than allowed")
                        return
                    continue
            elif isinstance(event, h2.events.StreamEnded):
                self._body_ended(event.stream_id)
            elif isinstance(event, h2.events.StreamReset):
                if event.stream_id in self._starting:
                    self._abandoned.add(event.stream_id)
                if event.remote_reset and not self._spend():
                    await super()._handle_events([*passed, event])
                    await self._calm_down("reset streams faster than allowed")
                    return
            passed.append(event)
        await super()._handle_events(passed)

    async def _create_stream(self, request: h2.events.RequestReceived) -> None:
        # HTTPStream takes the protocol's app when it is made: give each stream its own,
        # which knows the stream (to skip an abandoned one, to count it out when it ends).
        app = self.app
        self.app = self._stream_app(request.stream_id, app)
        try:
            await super()._create_stream(request)
        finally:
            self.app = app

    async def _close_stream(self, stream_id: int) -> None:
        self._body_ended(stream_id)
        await super()._close_stream(stream_id)
        if self.idle and not self.closed:
            # hypercorn restarts the idle timer only when a handler ends its stream; a
            # connection whose streams were all reset would otherwise stay open for ever.
            await self.send(Updated(idle=True))

    # -- handlers ---------------------------------------------------------------------------

    def _admit(self, stream_id: int) -> bool:
        guard, limits = self._guard, self._limits
        if self.context.terminated.is_set():  # shutting down: hypercorn would refuse it too
            return False
        if len(self._starting) + len(self._running) >= limits.handlers_per_connection:
            return False
        if guard.running + guard.starting >= limits.max_handlers:
            return False
        self._starting.add(stream_id)
        guard.starting += 1
        self._body[stream_id] = 0
        self._deadlines[stream_id] = asyncio.get_running_loop().call_later(
            limits.body_seconds, self._body_overdue, stream_id
        )
        return True

    def _stream_app(self, stream_id: int, app: AppWrapper) -> AppWrapper:
        async def run(
            scope: Scope,
            receive: ASGIReceiveCallable,
            send: ASGISendCallable,
            sync_spawn: Callable[..., Any],
            call_soon: Callable[..., Any],
        ) -> None:
            if stream_id not in self._starting:  # the connection ended before it began
                return
            self._starting.discard(stream_id)
            self._guard.starting -= 1
            if stream_id in self._abandoned or self.closed:
                self._abandoned.discard(stream_id)
                return  # the client reset it first: nobody is waiting for an answer
            self._running.add(stream_id)
            self._guard.running += 1
            try:
                await app(scope, receive, send, sync_spawn, call_soon)
            finally:
                self._running.discard(stream_id)
                self._guard.running -= 1

        return run

    def _settle(self) -> None:
        """The connection is gone: streams admitted but never started will not start."""
        self._guard.starting -= len(self._starting)
        self._starting.clear()
        for stream_id in list(self._body):
            self._body_ended(stream_id)

    # -- resets -----------------------------------------------------------------------------

    def _spend(self) -> bool:
        """Take one token for a reset or refused stream; False when the bucket is empty."""
        now = time.monotonic()
        self._tokens = min(
            float(self._limits.reset_burst),
            self._tokens + (now - self._refilled) * self._limits.resets_per_second,
        )
        self._refilled = now
        self._tokens -= 1
        return self._tokens >= 0

    async def _calm_down(self, what: str) -> None:
        self._guard.abusive.emit(f"sent GOAWAY to an HTTP/2 client at {self._peer}: it {what}")
        await self._go_away(ErrorCodes.ENHANCE_YOUR_CALM)

    async def _go_away(self, code: ErrorCodes) -> None:
        if self._ending:
            return
        self._ending = True
        with contextlib.suppress(h2.exceptions.ProtocolError):
            self.connection.close_connection(error_code=code)
        with contextlib.suppress(Exception):  # the socket may be gone already
            await self._flush()
        self.task_group.spawn(self._linger)  # pyright: ignore[reportUnknownMemberType] - hypercorn types func loosely

    async def _linger(self) -> None:
        await asyncio.sleep(LINGER_SECONDS)
        await self.send(Closed())

    async def _not_http2(self, data: bytes) -> None:
        self._ending = True
        if data[:8].split(b" ", 1)[0].isalpha():  # an HTTP/1.x request line
            await self.send(RawData(data=NOT_HTTP2))
        self._guard.refused.emit(f"closed a connection from {self._peer} that spoke no HTTP/2")
        await self.send(Closed())

    # -- bodies -----------------------------------------------------------------------------

    def _take_body(self, stream_id: int, size: int) -> bool:
        guard, limits = self._guard, self._limits
        if (
            self._body_bytes + size > limits.body_bytes_per_connection
            or guard.body_bytes + size > limits.body_bytes
        ):
            return False
        self._body[stream_id] += size
        self._body_bytes += size
        guard.body_bytes += size
        return True

    def _body_ended(self, stream_id: int) -> None:
        size = self._body.pop(stream_id, 0)
        self._body_bytes -= size
        self._guard.body_bytes -= size
        deadline = self._deadlines.pop(stream_id, None)
        if deadline is not None:
            deadline.cancel()

    def _body_overdue(self, stream_id: int) -> None:
        self._deadlines.pop(stream_id, None)
        if stream_id in self._body and not self.closed:
            self.task_group.spawn(self._expire, stream_id)  # pyright: ignore[reportUnknownMemberType] - hypercorn types func loosely

    async def _expire(self, stream_id: int) -> None:
        self._guard.abusive.emit(
            f"reset an HTTP/2 stream from {self._peer}: its request body did not end within "
            f"{self._limits.body_seconds:g} s"
        )
        await self._reset(stream_id, ErrorCodes.CANCEL)
        with contextlib.suppress(Exception):  # the socket may be gone already
            await self._flush()

    async def _reset(self, stream_id: int, code: ErrorCodes) -> None:
        with contextlib.suppress(h2.exceptions.ProtocolError, KeyError):
            self.connection.reset_stream(stream_id, code)
        await self._close_stream(stream_id)  # the handler sees http.disconnect

    def _acknowledge(self, event: h2.events.DataReceived) -> None:
        with contextlib.suppress(h2.exceptions.ProtocolError):
            self.connection.acknowledge_received_data(
                event.flow_controlled_length or 0, event.stream_id
            )


class _Connection(TCPServer):
    """hypercorn's connection driver, with the guarded HTTP/2 protocol from the first byte
    (TCPServer.run would start with HTTP/1.1 and switch on the preface)."""

    def __init__(
        self,
        app: AppWrapper,
        config: Config,
        context: WorkerContext,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        guard: Guard,
    ) -> None:
        super().__init__(app, asyncio.get_running_loop(), config, context, {}, reader, writer)
        self._guard = guard

    async def run(self) -> None:
        sock: socket.socket = self.writer.get_extra_info("socket")
        try:
            client, server = _address(sock.getpeername()), _address(sock.getsockname())
            async with TaskGroup(self.loop) as task_group:
                self._task_group = task_group
                protocol = GuardedH2Protocol(
                    self.app,
                    self.config,
                    self.context,
                    task_group,
                    client,
                    server,
                    self.protocol_send,
                    guard=self._guard,
                )
                # TCPServer only calls handle() on it, which both protocols have.
                self.protocol = cast("Any", protocol)
                await protocol.initiate()
                await self.idle_task.restart(task_group, self._idle_timeout)  # pyright: ignore[reportUnknownMemberType] - hypercorn types action loosely
                await self._read_data()
        except OSError:
            pass
        finally:
            await self._close()


def _address(raw: object) -> tuple[str, int] | None:
    """(host, port) of a socket address (IPv6 ones have four parts)."""
    if isinstance(raw, tuple) and len(raw) >= 2:  # pyright: ignore[reportUnknownArgumentType] - a socket address
        host, port = raw[0], raw[1]  # pyright: ignore[reportUnknownVariableType]
        if isinstance(host, str) and isinstance(port, int):
            return host, port
    return None


async def serve_h2(
    app: ASGIApp,
    *,
    host: str,
    port: int,
    limits: H2Limits,
    keepalive_seconds: float,
    graceful_seconds: float,
    shutdown: Callable[[], Awaitable[object]],
) -> None:
    """Serve `app` over HTTP/2 on host:port until `shutdown` returns; then stop accepting,
    let running streams finish for up to `graceful_seconds`, and cancel the rest."""
    config = Config()
    config.keep_alive_timeout = keepalive_seconds
    config.graceful_timeout = graceful_seconds
    config.h2_max_concurrent_streams = MAX_CONCURRENT_STREAMS
    config.accesslog = None  # the gate's compass.access line covers every RPC
    config.errorlog = logging.getLogger("hypercorn.error")  # through our handlers (JSON too)
    config.read_timeout = None  # see the module docstring
    wrapped = ASGIWrapper(cast("Any", app))  # hypercorn types apps with its own Protocol
    context = WorkerContext(None)
    guard = Guard(limits)
    connections: set[asyncio.Task[None]] = set()

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = _address(writer.get_extra_info("peername"))
        address = peer[0] if peer is not None else None
        refused = guard.admit(address)
        if refused is not None:
            guard.refused.emit(f"refused an HTTP/2 connection: {refused}")
            writer.close()
            return
        task = asyncio.current_task()
        if task is not None:
            connections.add(task)
        try:
            await _Connection(wrapped, config, context, reader, writer, guard=guard)
        finally:
            guard.release(address)
            if task is not None:
                connections.discard(task)

    server = await asyncio.start_server(
        connected, host, port, backlog=min(2048, limits.max_connections)
    )
    logger.info("gRPC (HTTP/2) listener on %s:%d", host, port)
    try:
        await shutdown()
    finally:
        await context.terminated.set()  # new streams are refused; idle connections close
        server.close()
        if connections:
            _, late = await asyncio.wait(set(connections), timeout=graceful_seconds)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late)
        await server.wait_closed()
