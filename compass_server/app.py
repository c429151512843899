"""The composition root: one Starlette app serving both Connect services, the MCP front door,
probes and the UI."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Final, TypeAlias, cast

from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from compass_server.background.sweeper import Sweeper, utc_now
from compass_server.domain.errors import UnavailableError
from compass_server.live.hub import ChangeHub
from compass_server.live.revocation import Revocations
from compass_server.live.shared_reads import SharedResponses
from compass_server.mcp.http import METADATA_PATH, PATH as MCP_PATH, ROOT_METADATA_PATH, McpFront
from compass_server.observe import tracing as telemetry
from compass_server.observe.metrics import Metrics, metrics_endpoint, open_metrics_endpoint
from compass_server.quota import PostQuota
from compass_server.service.asks import McpAsks
from compass_server.service.handlers import AgentHandlers, CommsHandlers
from compass_server.signin import sign_in_endpoint
from compass_server.store import AccountKind, AccountRow, Store
from compass_server.store.postgres import PostgresStore
from compass_server.store.postgres.webhooks import WebhookStore
from compass_server.transport import wire
from compass_server.transport.auth import AuthContext
from compass_server.transport.error_mapping import ErrorMapping
from compass_server.transport.gate import ConnectGate
from compass_server.webhooks.sender import BACKOFF, WebhookSender
from gen.compass.v1.agent_connect import AgentServiceASGIApplication
from gen.compass.v1.comms_connect import CommsServiceASGIApplication

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable
    from datetime import datetime

    from starlette.requests import Request
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from compass_server.config import Settings

logger = logging.getLogger(__name__)

LISTENER_GRACE_SECONDS: Final = 1.0
"""How long /readyz waits for a (re)connecting change listener before it says "down"."""

STATIC_DIR: Final = Path(__file__).parent / "static"

#: Which account kind may call which service (SPEC §1.3 "Auth").
SERVICE_KINDS: Final = {
    "compass.v1.AgentService": AccountKind.AGENT,
    "compass.v1.CommsService": AccountKind.HUMAN,
}


#: Response headers of the UI's static files. The page's own meta CSP cannot forbid framing,
#: and without a validator-forcing Cache-Control a browser may keep an old app.js after an
#: upgrade (heuristic caching of Last-Modified responses).
UI_HEADERS: Final = (
    (b"cache-control", b"no-cache"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        b"img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
)


def _with_headers(app: ASGIApp, headers: tuple[tuple[bytes, bytes], ...]) -> ASGIApp:
    """`app`, with `headers` added to every response it starts."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *headers]}
            await send(message)

        await app(scope, receive, send_with_headers)

    return wrapped


def authorize(account: AccountRow, service: str) -> str | None:
    """None when `account` may call `service`, else the PERMISSION_DENIED message."""
    wanted = SERVICE_KINDS.get(service)
    if wanted is None or account.kind is wanted:
        return None  # unknown paths are answered by connect itself (404)
    return f"{account.kind.value} accounts may not call {service}"


def _webhook_sender(settings: Settings, store: Store, metrics: Metrics) -> WebhookSender | None:
    """The outgoing-webhook worker (docs/webhooks.md), on PostgreSQL only."""
    if not isinstance(store, PostgresStore):
        return None
    after = settings.reminder_after_seconds
    return WebhookSender(
        WebhookStore(store),
        store,
        public_url=settings.public_url or f"http://{settings.host}:{settings.port}/",
        poll_seconds=settings.webhook_poll_seconds,
        timeout_seconds=settings.webhook_timeout_seconds,
        backoff=settings.webhook_backoff_seconds or BACKOFF,
        reminder_after=timedelta(seconds=after) if after > 0 and settings.reminder_max else None,
        reminder_max=settings.reminder_max,
        allow=settings.webhook_allow,
        on_outcome=metrics.webhook_outcome,
        on_error=metrics.webhook_worker_errors.inc,
    )


def create_app(
    settings: Settings,
    *,
    store: Store | None = None,
    clock: Callable[[], datetime] = utc_now,
    tracing: telemetry.Tracing | None = None,
) -> Starlette:
    """Build the ASGI app.

    Args:
        settings: server settings; `database_url` is used unless `store` is given.
        store: an already-open store (tests); its owner opens and closes it. When omitted,
            the lifespan opens a PostgresStore on `settings.database_url`.
        clock: "now" for the deadline sweeper (tests inject their own).
        tracing: OpenTelemetry traces (tests); when omitted, as the environment says (off
            unless configured: `telemetry.from_environment`).
    """
    tracing = tracing or telemetry.from_environment()
    owned: PostgresStore | None = None
    if store is None:
        if not settings.database_url:
            raise ValueError("create_app needs settings.database_url or an open store")
        # No I/O until the lifespan enters it (docs/architecture.md, "The composition root":
        # the mounted connect apps never see lifespan events, so Starlette's lifespan owns
        # the pool).
        store = owned = PostgresStore(
            settings.database_url,
            pool_min=settings.pool_min,
            pool_max=settings.pool_max,
            timeout=settings.db_timeout_seconds,
            listen_dsn=settings.listen_database_url,
            statement_cache_size=settings.statement_cache_size,
        )
    auth: AuthContext[AccountRow] = AuthContext()
    hub = ChangeHub()
    sweeper = Sweeper(
        store,
        interval=settings.sweep_interval_seconds,
        grace=timedelta(seconds=settings.expiry_grace_seconds),
        clock=clock,
    )
    # -- metrics (README "Operating") --
    metrics = Metrics(
        clock,
        pool_in_use=store.pool_in_use if isinstance(store, PostgresStore) else lambda: None,
        count_pending=store.count_pending if isinstance(store, PostgresStore) else None,
    )
    sweeper.on_swept = metrics.swept
    listener_up = asyncio.Event()

    def listener_connected() -> None:
        listener_up.set()
        metrics.listener_connected()
        hub.resync()

    async def listen() -> None:
        if isinstance(store, PostgresStore):
            await store.listen(hub.publish, listener_connected, on_lost=listener_up.clear)
        else:
            await store.listen(hub.publish, listener_connected)

    revocations = Revocations(store.valid_tokens, interval=settings.auth_recheck_seconds)
    # Watchers of one channel share each change's response and its encodings.
    responses = SharedResponses()
    options = wire.app_options(settings.max_request_bytes, responses)
    interceptors = [metrics.interceptor(auth), ErrorMapping()]
    quota = PostQuota(settings.posts_per_minute, settings.post_burst)
    # One application API under every front door: the Connect handlers and /mcp share its
    # post quota and its cap of an account's open streams.
    asks = McpAsks(
        store,
        hub,
        metrics=metrics,
        quota=quota,
        revocations=revocations,
        max_streams_per_account=settings.max_streams_per_account,
    )
    agent_rpc = AgentServiceASGIApplication(
        AgentHandlers(asks, auth), interceptors=interceptors, **options
    )
    mcp = McpFront(settings=settings, asks=asks, authenticate=store.authenticate)
    comms_rpc = CommsServiceASGIApplication(
        CommsHandlers(asks, auth, responses=responses), interceptors=interceptors, **options
    )

    def gated(rpc: ASGIApp) -> ASGIApp:
        return ConnectGate(
            rpc,
            auth=auth,
            authenticate=store.authenticate,
            authorize=authorize,
            max_body_bytes=settings.max_request_bytes,
        )

    webhooks = _webhook_sender(settings, store, metrics)
    webhook_task: asyncio.Task[None] | None = None

    def webhooks_alive() -> bool:
        return (
            webhooks is not None
            and webhook_task is not None
            and not webhook_task.done()
            and webhooks.alive()
        )

    metrics.watch_webhook_worker(webhooks_alive)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncGenerator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if tracing is not None:
                stack.enter_context(tracing.running())
            if owned is not None:
                await stack.enter_async_context(owned)
            await stack.enter_async_context(mcp.running())
            listener = asyncio.create_task(listen(), name="compass-change-listener")
            sweeping = asyncio.create_task(sweeper.run(), name="compass-ask-sweeper")
            rechecking = asyncio.create_task(revocations.run(), name="compass-token-recheck")
            tasks = [rechecking, sweeping, listener]
            if webhooks is not None:
                nonlocal webhook_task
                webhook_task = asyncio.create_task(webhooks.run(), name="compass-webhooks")
                tasks.append(webhook_task)
            try:
                yield
            finally:
                for task in tasks:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    async def healthz(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def readyz(_request: Request) -> JSONResponse:
        database = "ok"
        try:
            await store.ping()
        except UnavailableError:
            database = "down"
        if not metrics.listener_ever_connected:  # just started: a moment's grace
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(listener_up.wait(), LISTENER_GRACE_SECONDS)
        listener = "ok" if listener_up.is_set() else "down"
        # The webhook worker: "off" without one (an in-memory store); "down" when it stopped,
        # or ended no round lately (its first round, just after start, gets a moment).
        worker = "off"
        if webhooks is not None:
            if not webhooks_alive() and webhook_task is not None and not webhook_task.done():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(webhooks.first_round.wait(), LISTENER_GRACE_SECONDS)
            worker = "ok" if webhooks_alive() else "down"
        ready = database == "ok" and listener == "ok" and worker != "down"
        return JSONResponse(
            {
                "status": "ok" if ready else "unavailable",
                "database": database,
                "listener": listener,
                "webhooks": worker,
            },
            status_code=200 if ready else 503,
        )

    routes = [
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/metrics", metrics_endpoint(metrics, settings.metrics_token)),
        Route("/auth/sign-in", sign_in_endpoint(store), methods=["POST"]),
        Route(MCP_PATH, mcp),  # every method: its gate answers 405 to all but POST
        Route(METADATA_PATH, mcp.metadata, methods=["GET"]),
        Route(ROOT_METADATA_PATH, mcp.metadata, methods=["GET"]),
        Mount(agent_rpc.path, app=gated(cast("ASGIApp", agent_rpc))),
        Mount(comms_rpc.path, app=gated(cast("ASGIApp", comms_rpc))),
        Mount("/", app=_with_headers(StaticFiles(directory=STATIC_DIR, html=True), UI_HEADERS)),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    if tracing is not None:
        tracing.install(app)
    app.state.change_hub = hub
    app.state.metrics = metrics
    return app


ServerApp: TypeAlias = Starlette
"""What `create_app` returns (the CLI names it without importing Starlette)."""


def metrics_only_app(app: Starlette) -> Starlette:
    """A tiny app serving `app`'s /metrics without a token (for COMPASS_METRICS_PORT)."""
    return Starlette(routes=[Route("/metrics", open_metrics_endpoint(app.state.metrics))])


def begin_shutdown(app: Starlette) -> None:
    """End the live watches of an app made by `create_app` (clients get UNAVAILABLE).

    Call it when the server starts to shut down: uvicorn waits for every running response
    before it stops, and a watch runs until its client leaves.
    """
    hub: object = app.state.change_hub
    if isinstance(hub, ChangeHub):
        hub.close()
