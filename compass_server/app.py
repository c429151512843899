"""The composition root: one Starlette app serving both Connect services, the MCP front door,
probes and the UI."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Final, TypeAlias, cast

from starlette.applications import Starlette
from starlette.routing import Mount, Route

from compass_server.background.periodic import running
from compass_server.background.sweeper import Sweeper, utc_now
from compass_server.email.inbound import listening as inbound_listening
from compass_server.email.sender import from_settings as email_sender
from compass_server.email.unsubscribe import PATH as UNSUBSCRIBE_PATH, unsubscribe_endpoint
from compass_server.health import DatabaseHealth, JobHealth, ListenerHealth, Readiness, healthz
from compass_server.live.feed import ChangeFeed
from compass_server.live.hub import ChangeHub
from compass_server.live.revocation import Revocations
from compass_server.live.shared_reads import SharedResponses
from compass_server.live.tokens import TokenCache
from compass_server.mcp.http import METADATA_PATH, PATH as MCP_PATH, ROOT_METADATA_PATH, McpFront
from compass_server.observe import tracing as telemetry
from compass_server.observe.access_log import RpcObserver
from compass_server.observe.metrics import Metrics, metrics_endpoint, open_metrics_endpoint
from compass_server.push.answer import PATH as PUSH_ANSWER_PATH, answer_endpoint
from compass_server.push.keys import VapidSource
from compass_server.push.sender import from_settings as push_sender
from compass_server.quota import PostQuota
from compass_server.service.asks import McpAsks
from compass_server.service.email import Email, Reply, dkim_check
from compass_server.service.handlers import AgentHandlers, CommsHandlers
from compass_server.service.push import Push
from compass_server.signin import sign_in_endpoint
from compass_server.store import AccountKind, AccountRow, Store
from compass_server.store.postgres import PostgresStore
from compass_server.transport import wire
from compass_server.transport.auth import AuthContext
from compass_server.transport.error_mapping import ErrorMapping
from compass_server.transport.gate import ConnectGate
from compass_server.transport.static import ui_app
from compass_server.webhooks import sender
from gen.compass.v1.agent_connect import AgentServiceASGIApplication
from gen.compass.v1.comms_connect import CommsServiceASGIApplication

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Awaitable, Callable
    from datetime import datetime

    from starlette.types import ASGIApp

    from compass_server.config import Settings

#: Which account kind may call which service (docs/spec.md §1.3 "Auth").
SERVICE_KINDS: Final = {
    "compass.v1.AgentService": AccountKind.AGENT,
    "compass.v1.CommsService": AccountKind.HUMAN,
}


def authorize(account: AccountRow, service: str) -> str | None:
    """None when `account` may call `service`, else the PERMISSION_DENIED message."""
    wanted = SERVICE_KINDS.get(service)
    if wanted is None or account.kind is wanted:
        return None  # unknown paths are answered by connect itself (404)
    return f"{account.kind.value} accounts may not call {service}"


def _gated(
    rpc: object,
    auth: AuthContext[AccountRow],
    authenticate: Callable[[str], Awaitable[AccountRow | None]],
    settings: Settings,
) -> ASGIApp:
    """A Connect app behind the gate (transport/gate.py): authenticated, authorized, bounded."""
    return ConnectGate(
        cast("ASGIApp", rpc),
        auth=auth,
        authenticate=authenticate,
        authorize=authorize,
        max_body_bytes=settings.max_request_bytes,
    )


def rpc_interceptors(
    metrics: Metrics, auth: AuthContext[AccountRow]
) -> list[RpcObserver | ErrorMapping]:
    """The interceptors every Connect service here runs under, outermost first: the per-RPC
    observer (metrics and the access line), then the mapping of errors to Connect codes.
    (bench.respond's echo floor runs under the same.)"""
    return [RpcObserver(metrics, auth), ErrorMapping()]


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
    # -- the parts: metrics (docs/operating/metrics.md), the live machinery, the background jobs --
    metrics = Metrics(clock, pool_in_use=store.pool_in_use, count_pending=store.count_pending)
    auth: AuthContext[AccountRow] = AuthContext()
    hub = ChangeHub()
    # The token lookup, reused while the change listener stands (live/tokens.py), for at most
    # as long as a live stream's token goes unchecked (live/revocation.py).
    feed = ChangeFeed(store, hub, on_subscribed=metrics.listener_connected)
    tokens = TokenCache(
        store.authenticate, max_age=settings.auth_recheck_seconds, listening=feed.up.is_set
    )
    feed.tokens = tokens
    revocations = Revocations(store.valid_tokens, interval=settings.auth_recheck_seconds)
    responses = SharedResponses()  # watchers of one channel share each change's response
    quota = PostQuota(settings.posts_per_minute, settings.post_burst)
    grace = timedelta(seconds=settings.expiry_grace_seconds)
    sweeper = Sweeper(store, interval=settings.sweep_interval_seconds, grace=grace, clock=clock)
    sweeper.on_swept = metrics.swept
    webhooks = sender.from_settings(
        settings,
        store,
        on_outcome=metrics.webhook_outcome,
        on_error=metrics.webhook_worker_errors.inc,
    )
    metrics.watch_webhook_worker(None if webhooks is None else webhooks.alive)
    vapid = VapidSource(store.push(), settings.vapid_private_key)
    base_url = BaseUrl(settings.base_url)
    pushes = push_sender(
        settings,
        store,
        vapid,
        public_url=base_url,
        on_outcome=metrics.push_outcome,
        on_latency=metrics.push_latency.observe,
        on_error=metrics.push_worker_errors.inc,
    )
    metrics.watch_push_worker(None if pushes is None else pushes.alive)
    mails = email_sender(
        settings,
        store,
        public_url=base_url,
        on_outcome=metrics.email_outcome,
        on_latency=metrics.email_latency.observe,
        on_error=metrics.email_worker_errors.inc,
    )
    metrics.watch_email_worker(None if mails is None else mails.alive)
    # -- the front doors: both Connect services and /mcp on one application API, which they
    # share with its post quota and its cap of an account's open streams --
    asks = McpAsks(
        store,
        hub,
        metrics=metrics,
        quota=quota,
        revocations=revocations,
        max_streams_per_account=settings.max_streams_per_account,
    )
    push = Push(store.push(), asks, vapid, allow=settings.push_allow)
    email_store = store.email()

    def replied(reply: Reply) -> None:
        metrics.email_reply(reply.outcome, reply.reason)

    email = (
        None
        if email_store is None
        else Email(
            email_store,
            asks,
            sends=settings.email_out,
            require_dkim=dkim_check() if settings.email_require_dkim else None,
            on_reply=replied,
        )
    )
    options = wire.app_options(settings.max_request_bytes, responses)
    interceptors = rpc_interceptors(metrics, auth)
    agent_rpc = AgentServiceASGIApplication(
        AgentHandlers(asks, auth), interceptors=interceptors, **options
    )
    mcp = McpFront(settings=settings, asks=asks, authenticate=tokens.authenticate)
    comms_rpc = CommsServiceASGIApplication(
        CommsHandlers(asks, auth, push=push, email=email, responses=responses),
        interceptors=interceptors,
        **options,
    )
    # -- readiness, the jobs beside the requests, the routes --
    readiness = Readiness(
        [
            DatabaseHealth(store.ping),
            ListenerHealth(feed),
            JobHealth("webhooks", None if webhooks is None else webhooks.health),
            JobHealth("push", None if pushes is None else pushes.health),
            # Email is optional (no relay: no sender, and no line here).
            *([] if mails is None else [JobHealth("email", mails.health)]),
        ]
    )
    jobs = {
        "compass-change-listener": feed.run,
        "compass-ask-sweeper": sweeper.run,
        "compass-token-recheck": revocations.run,
    }
    if webhooks is not None:
        jobs["compass-webhooks"] = webhooks.run
    if pushes is not None:
        jobs["compass-push"] = pushes.run
    if mails is not None:
        jobs["compass-email"] = mails.run

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncGenerator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if tracing is not None:
                stack.enter_context(tracing.running())
            if owned is not None:
                await stack.enter_async_context(owned)
            await stack.enter_async_context(mcp.running())
            await stack.enter_async_context(running(jobs))
            if email is not None and settings.email_in:
                assert settings.inbound_smtp_host is not None  # noqa: S101 - set together
                assert settings.inbound_smtp_port is not None  # noqa: S101
                assert settings.email_reply_domain is not None  # noqa: S101
                _app.state.inbound_smtp_port = await stack.enter_async_context(
                    inbound_listening(
                        email,
                        host=settings.inbound_smtp_host,
                        port=settings.inbound_smtp_port,
                        reply_domain=settings.email_reply_domain,
                    )
                )
            yield

    # Starlette tries routes in order: the RPC mounts, which nearly every request is for, first.
    routes = [
        Mount(comms_rpc.path, app=_gated(comms_rpc, auth, tokens.authenticate, settings)),
        Mount(agent_rpc.path, app=_gated(agent_rpc, auth, tokens.authenticate, settings)),
        Route("/healthz", healthz),
        Route("/readyz", readiness.readyz),
        Route("/metrics", metrics_endpoint(metrics, settings.metrics_token)),
        Route("/auth/sign-in", sign_in_endpoint(store), methods=["POST"]),
        Route(PUSH_ANSWER_PATH, answer_endpoint(push), methods=["POST"]),
        Route(MCP_PATH, mcp),  # every method: its gate answers 405 to all but POST
        Route(METADATA_PATH, mcp.metadata, methods=["GET"]),
        Route(ROOT_METADATA_PATH, mcp.metadata, methods=["GET"]),
        Mount("/", app=ui_app()),
    ]
    if email is not None:
        routes.insert(
            0, Route(UNSUBSCRIBE_PATH, unsubscribe_endpoint(email), methods=["GET", "POST"])
        )
    app = Starlette(routes=routes, lifespan=lifespan)
    if tracing is not None:
        tracing.install(app)
    app.state.change_hub = hub
    app.state.metrics = metrics
    app.state.base_url = base_url
    app.state.public_url_set = bool(settings.public_url)
    app.state.inbound_smtp_port = None
    app.state.email_sender = mails
    return app


ServerApp: TypeAlias = Starlette
"""What `create_app` returns (the CLI names it without importing Starlette)."""


def metrics_only_app(app: Starlette) -> Starlette:
    """A tiny app serving `app`'s /metrics without a token (for COMPASS_METRICS_PORT)."""
    return Starlette(routes=[Route("/metrics", open_metrics_endpoint(app.state.metrics))])


@dataclass(slots=True)
class BaseUrl:
    """Where people open Compass, with a trailing slash: COMPASS_PUBLIC_URL, else where this
    server listens (`listening` sets it once the port is known: `--port 0` picks one)."""

    url: str

    def __call__(self) -> str:
        return self.url


def listening(app: Starlette, url: str) -> None:
    """The server of an app made by `create_app` listens at `url` (the links a push carries
    point there unless COMPASS_PUBLIC_URL says otherwise)."""
    base_url: object = app.state.base_url
    if isinstance(base_url, BaseUrl) and not app.state.public_url_set:
        base_url.url = url if url.endswith("/") else url + "/"


def begin_shutdown(app: Starlette) -> None:
    """End the live watches of an app made by `create_app` (clients get UNAVAILABLE).

    Call it when the server starts to shut down: uvicorn waits for every running response
    before it stops, and a watch runs until its client leaves.
    """
    hub: object = app.state.change_hub
    if isinstance(hub, ChangeHub):
        hub.close()
