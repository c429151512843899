"""Connection hygiene for `compass serve`: a connection cap, a request-read deadline, open-file
headroom and a rate-limited accept-error log.

uvicorn (0.55, h11) has `limit_concurrency` and `timeout_keep_alive`, and neither bounds a
client that opens connections and sends half a request: `limit_concurrency` is only checked
once a complete request head has arrived (then it answers 503), and the keep-alive timer runs
only between requests and is cancelled by the first byte a client sends. A thousand idle
half-sent connections therefore used up the process's file descriptors, and every accept()
then failed. uvicorn has no header-read timeout, and swapping the server (hypercorn has one)
would also swap how streams, shutdown and lifespan behave under everything else here; the guard
is a small subclass of uvicorn's own h11 protocol instead:

- at most `max_connections` open connections, and at most `max_per_client` from one peer
  address; a connection over either cap is answered 503 and closed before anything is read;
- a connection must deliver a whole request (head and body) within `read_timeout` seconds of
  being opened or of its previous response completing, else it is closed;
- an idle timer (that deadline, or uvicorn's keep-alive timeout) that runs while a request's
  bytes wait unread in the socket does not close the connection: under CPU contention the
  timer can run in the same turn of the event loop as a request that has just arrived,
  before the loop reads it, and closing then dropped that live request (its unread bytes make
  the kernel reset the connection: the client's `httpx.ReadError`). The loop reads the bytes
  next, which cancels the keep-alive timer and re-arms nothing until the response.
"""

from __future__ import annotations

import errno
import logging
import resource
import select
import time
from typing import TYPE_CHECKING, Any, ClassVar, Final

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

if TYPE_CHECKING:
    import asyncio
    import socket

    from uvicorn.config import Config
    from uvicorn.server import ServerState

logger = logging.getLogger("compass.net")

REFUSED: Final = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: 20\r\n"
    b"connection: close\r\n\r\n"
    b"too many connections"
)
"""Written (without reading the request) to a connection over a cap."""
FD_RESERVE: Final = 64
"""File descriptors kept for everything but client connections (listeners, log files, the
embedded PostgreSQL's pipes, ...); database connections are added on top."""
ACCEPTS_PER_WAKEUP: Final = 16
"""accept() calls asyncio makes per wake-up of a listening socket (see install_accept_error_limiter)."""
_ACCEPT_ERRNOS: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a connection cap and a request-read deadline.

    Build one with `guarded_protocol(...)`, which binds the limits (uvicorn instantiates the
    class itself, with its own constructor arguments).
    """

    max_connections: ClassVar[int] = 1000
    max_per_client: ClassVar[int] = 0
    read_timeout: ClassVar[float] = 10.0
    per_client: ClassVar[dict[str, int]] = {}
    refused: ClassVar[RateLimitedLog]

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._read_deadline: asyncio.TimerHandle | None = None
        self._read_since_armed = False
        self._peer: str | None = None

    def connection_made(  # pyright: ignore[reportIncompatibleMethodOverride] - uvicorn's own signature
        self, transport: asyncio.Transport
    ) -> None:
        super().connection_made(transport)
        peer = self.client[0] if self.client else None
        over_total = len(self.connections) > self.max_connections
        over_peer = False
        if peer is not None:
            count = self.per_client.get(peer, 0) + 1
            self.per_client[peer] = count
            self._peer = peer
            over_peer = 0 < self.max_per_client < count
        if over_total or over_peer:
            which = "connections" if over_total else f"connections from {peer}"
            self.refused.emit(f"refused a connection: too many open {which}")
            transport.write(REFUSED)
            transport.close()
            return
        self._arm_read_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_read_deadline()
        if self._peer is not None:
            left = self.per_client.get(self._peer, 1) - 1
            if left > 0:
                self.per_client[self._peer] = left
            else:
                self.per_client.pop(self._peer, None)
            self._peer = None
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is h11.DONE or self.transport.is_closing():
            self._disarm_read_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # The next request (on a kept-alive connection) gets a fresh deadline; uvicorn's
        # keep-alive timer closes an idle one sooner, but is cancelled by its first byte.
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm_read_deadline()

    def data_received(self, data: bytes) -> None:
        self._read_since_armed = True
        super().data_received(data)

    def _arm_read_deadline(self, *, keep_count: bool = False) -> None:
        if not keep_count:
            self._read_since_armed = False
        self._disarm_read_deadline()
        self._read_deadline = self.loop.call_later(self.read_timeout, self._read_timed_out)

    def _disarm_read_deadline(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def timeout_keep_alive_handler(self) -> None:
        if self._bytes_waiting():
            return  # a request just arrived: the loop reads it next (see the module's doc)
        super().timeout_keep_alive_handler()

    def _bytes_waiting(self) -> bool:
        """Whether the peer sent bytes the loop has not read yet (and will: reading is on)."""
        if self.transport.is_closing() or not self.transport.is_reading():
            return False
        sock = self.transport.get_extra_info("socket")
        if sock is None:
            return False
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        return bool(poller.poll(0))

    def _read_timed_out(self) -> None:
        self._read_deadline = None
        if self.transport.is_closing():
            return
        if (
            self.conn.their_state is h11.IDLE
            and not self._read_since_armed
            and self._bytes_waiting()
        ):
            # A request's first bytes just arrived as the deadline ran (see the module's doc):
            # it gets one more deadline from now, once (what arrives is read before the next
            # deadline, so a trickle of bytes cannot keep a connection open).
            self._arm_read_deadline(keep_count=True)
            return
        if self.conn.their_state in {h11.IDLE, h11.SEND_BODY}:
            # A request still incomplete: nothing was answered, so there is nothing to send
            # that the client would read; a running handler sees http.disconnect.
            logger.debug("closed a connection that sent no complete request in time")
            self.transport.close()


def guarded_protocol(
    *, max_connections: int, max_per_client: int, read_timeout: float
) -> type[GuardedH11Protocol]:
    """A GuardedH11Protocol class bound to these limits (`max_per_client` 0: no per-peer cap)."""
    return type(
        "BoundGuardedH11Protocol",
        (GuardedH11Protocol,),
        {
            "max_connections": max_connections,
            "max_per_client": max_per_client,
            "read_timeout": read_timeout,
            "per_client": {},
            "refused": RateLimitedLog(logger, interval=10.0),
        },
    )


class RateLimitedLog:
    """Logs a warning at most once per `interval` seconds, saying how many were suppressed."""

    def __init__(self, log: logging.Logger, *, interval: float) -> None:
        self._log = log
        self._interval = interval
        self._last: float | None = None
        self._suppressed = 0

    def emit(self, message: str) -> None:
        now = time.monotonic()
        if self._last is not None and now - self._last < self._interval:
            self._suppressed += 1
            return
        suffix = (
            f" ({self._suppressed} more in the last {now - self._last:.0f} s)"
            if self._suppressed and self._last is not None
            else ""
        )
        self._last = now
        self._suppressed = 0
        self._log.warning("%s%s", message, suffix)


def install_accept_error_limiter(loop: asyncio.AbstractEventLoop, *, interval: float) -> None:
    """Log accept() resource errors (EMFILE "Too many open files", ...) as one line per
    `interval` seconds with a count, instead of asyncio's traceback per failed accept.
    Everything else still goes to the loop's previous (or default) handler.

    Also works around CPython's selector loop (3.11-3.13; python/cpython#151615): after an
    accept() resource error it goes on calling accept() up to `backlog` times per wake-up
    (here up to 2,048), and every failure schedules its own retry of `_start_serving` a
    second later, thousands of them; the ones still pending when the server closes its socket
    each log `ValueError: Invalid file descriptor: -1` with a traceback (4,589 of them in
    one measured run). The wrapper below lets one wake-up accept at most ACCEPTS_PER_WAKEUP (the loop
    is woken again at once while more wait) and makes a retry for a closed socket do nothing.
    """
    _tame_accept_retries(loop)
    previous = loop.get_exception_handler()
    limited = RateLimitedLog(logger, interval=interval)

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in _ACCEPT_ERRNOS:
            limited.emit(
                f"cannot accept connections: {exc.strerror or exc} (raise the open-files "
                "limit, ulimit -n, or lower COMPASS_MAX_CONNECTIONS)"
            )
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handle)


def _tame_accept_retries(loop: asyncio.AbstractEventLoop) -> None:
    start = getattr(loop, "_start_serving", None)
    if start is None or not callable(start):  # not a selector loop (e.g. uvloop): nothing to do
        return

    def start_serving(
        protocol_factory: object,
        sock: socket.socket,
        sslcontext: object = None,
        server: object = None,
        backlog: int = 100,
        *rest: object,
    ) -> None:
        if sock.fileno() < 0:  # a retry scheduled before the server closed: nothing to serve
            return
        start(protocol_factory, sock, sslcontext, server, min(backlog, ACCEPTS_PER_WAKEUP), *rest)

    # An instance attribute: asyncio looks `self._start_serving` up on the loop each time.
    loop._start_serving = start_serving  # pyright: ignore[reportAttributeAccessIssue] - the private hook described above


def ensure_open_files(needed: int) -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE towards `needed` (at most to the hard limit).

    Returns (soft limit now, needed); the caller warns when the first is smaller.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            return soft, needed
        soft = target
    return (needed if soft == resource.RLIM_INFINITY else soft), needed
