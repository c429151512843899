"""The optional HTTP/2 listener of `compass serve` (COMPASS_GRPC_PORT), for gRPC clients.

gRPC ends every response with HTTP trailers, over HTTP/2. uvicorn (the main listener) speaks
HTTP/1.1 only and sends no trailers, so gRPC is served on a second listener run by hypercorn
(HTTP/2 over cleartext with prior knowledge, as gRPC clients connect, and HTTP/1.1 too), in
the same process and event loop, on the same ASGI app: the same gate, handlers, pool and change
hub. Everything else (the browser, Connect, gRPC-Web) keeps using the main listener, whose
connection caps and request-read deadline (netguard.py) are uvicorn-specific; here hypercorn's
own limits apply (h2 streams per connection, header list size, keep-alive timeout).

hypercorn gets no read timeout: it would apply to every socket read, and a gRPC client watching
a channel sends nothing for as long as the watch lasts.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from starlette.types import ASGIApp, Receive, Scope, Send

logger = logging.getLogger("compass.h2")

MAX_CONCURRENT_STREAMS = 100
"""HTTP/2 streams one connection may have open (hypercorn's default, stated here)."""


def without_lifespan(app: ASGIApp) -> ASGIApp:
    """`app` for a second server: the main server already ran its lifespan (the pool, the
    listener, the sweeper), which must not run twice; this one reports it complete."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    return wrapped


async def serve_h2(
    app: ASGIApp,
    *,
    host: str,
    port: int,
    keepalive_seconds: float,
    graceful_seconds: float,
    shutdown: Callable[[], Awaitable[object]],
) -> None:
    """Serve `app` over HTTP/2 (and HTTP/1.1) on host:port until `shutdown` returns."""
    import hypercorn.asyncio
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.keep_alive_timeout = keepalive_seconds
    config.graceful_timeout = graceful_seconds
    config.h2_max_concurrent_streams = MAX_CONCURRENT_STREAMS
    config.accesslog = None  # the gate's compass.access line covers every RPC
    config.errorlog = logging.getLogger("hypercorn.error")  # through our handlers (JSON too)
    config.read_timeout = None  # see the module docstring
    logger.info("gRPC (HTTP/2) listener on %s:%d", host, port)
    await hypercorn.asyncio.serve(  # pyright: ignore[reportUnknownMemberType] - hypercorn's untyped parts
        cast("Any", without_lifespan(app)),  # hypercorn types apps with its own Protocol
        config,
        shutdown_trigger=shutdown,
        mode="asgi",
    )
