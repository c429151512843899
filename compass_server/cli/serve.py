"""`compass serve`: one server process (`serve_one`), or the supervisor of several
(`--workers N`: cli/workers.py), on a migrated database; the URL printed once it listens.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import TYPE_CHECKING, Final

import uvicorn
from uvicorn.config import LOGGING_CONFIG

from compass_server import config as config_names
from compass_server.cli import listen
from compass_server.cli.command import compass_command
from compass_server.cli.database import (
    migrate,
    open_store,
    owning_database,
    using_database,
    with_database,
)
from compass_server.cli.errors import CliError
from compass_server.config import Settings
from compass_server.transport import netguard
from compass_server.transport.netguard import ensure_open_files, guarded_protocol

if TYPE_CHECKING:
    import argparse
    import socket
    from collections.abc import Awaitable, Callable

    from compass_server.app import ServerApp
    from compass_server.cli.workers import WorkerLink

logger = logging.getLogger("compass")

SHUTDOWN_GRACE_SECONDS: Final = 10
"""How long a stopping server waits for running requests before cancelling them."""
ACCEPT_ERROR_LOG_INTERVAL_SECONDS: Final = 10.0
"""accept() failing for want of file descriptors is logged at most once per this long."""


def sign_in_hint() -> str:
    """Printed by `compass serve --demo` on a database that already has accounts: how to
    sign in, each command on a line of its own, written as it runs (cli/command.py)."""
    compass = compass_command()
    return (
        "To sign in, use a token printed when this database was first set up, or a one-time "
        "sign-in link for a person's account (its ACCOUNT_ID: the first command):\n"
        f"  {compass} admin list-accounts --kind human\n"
        f"  {compass} admin sign-in-link --account ACCOUNT_ID\n"
        "or make a new demo workspace with fresh tokens:\n"
        f"  {compass} demo\n"
    )


def serve_command(args: argparse.Namespace) -> int:
    """`compass serve`."""
    settings = Settings.from_env()
    from compass_server.allocator import collect_less, keep_big_buffers_on_mmap

    keep_big_buffers_on_mmap()
    collect_less()

    where = listen.Address.of(args, settings)
    host, port = where.host, where.port
    if args.worker is not None:  # one of the processes a `--workers N` server started
        from compass_server.cli import workers

        return workers.run_worker(args.worker, args.worker_fds, settings, host, port)
    count: int = settings.workers if args.workers is None else args.workers
    # In this order, each refusing at once with one line before anything is started: another
    # server owns this embedded cluster; the port or host cannot be used.
    with (
        owning_database(settings),
        listen.closing(listen.bind(where, shared=count > 1)) as sockets,
    ):
        _probe_side_ports(where, settings)
        with using_database(settings, owner=True) as dsn:
            applied = asyncio.run(migrate(settings, dsn))
            if applied:
                logger.info("applied migrations %s", applied)
            if count > 1:
                from compass_server.cli import workers

                return workers.supervise(
                    with_database(settings, dsn),
                    reserved=sockets[0],
                    host=host,
                    count=count,
                    demo=args.demo,
                )
            serve_one(with_database(settings, dsn), host, port, demo=args.demo, sockets=sockets)
    return 0


def _probe_side_ports(where: listen.Address, settings: Settings) -> None:
    for port, variable in (
        (settings.metrics_port, config_names.METRICS_PORT),
        (settings.grpc_port, config_names.GRPC_PORT),
    ):
        if port is not None:
            listen.probe(where, port, variable)


def uvicorn_config(
    app: Callable[..., Awaitable[None]], settings: Settings, *, host: str, port: int
) -> uvicorn.Config:
    """How `compass serve` runs `app` under uvicorn (bench.respond's echo floor runs the same)."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        lifespan="on",
        log_level="info",
        access_log=False,
        # JSON logs: uvicorn's loggers propagate to the root's JSON handler.
        log_config=None if settings.log_format == "json" else LOGGING_CONFIG,
        # Live watches are ended by begin_shutdown; this bounds anything else that
        # would keep the process from stopping (a stalled client, a hung query).
        timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        # Connection caps and a request-read deadline (uvicorn has neither for a client
        # that sends half a request); see compass_server/transport/netguard.py.
        http=guarded_protocol(
            max_connections=settings.max_connections,
            max_per_client=settings.max_connections_per_client,
            read_timeout=settings.request_read_timeout_seconds,
        ),
        timeout_keep_alive=settings.keepalive_timeout_seconds,
        backlog=min(2048, settings.max_connections),
    )


def serve_one(
    settings: Settings,
    host: str,
    port: int,
    *,
    demo: bool = False,
    worker: WorkerLink | None = None,
    sockets: list[socket.socket] | None = None,
) -> None:
    """Run one server process on `settings.database_url` until it is told to stop: the whole
    server (`--workers 1`, on `sockets` when bound already: cli/listen.py), or one worker of
    several (`worker`: its link to the supervisor)."""
    from compass_server.app import create_app

    if settings.database_url is None:
        raise CliError("serve_one needs settings.database_url")
    app = create_app(settings)
    _check_open_files(settings)
    config = uvicorn_config(app, settings, host=host, port=port)
    server = _AnnouncingServer(
        config, app=app, settings=settings, dsn=settings.database_url, demo=demo, worker=worker
    )
    sides = worker is None or worker.index == 0
    if worker is not None:
        sockets = worker.sockets
    asyncio.run(_serve_all(server, app, host, settings, sockets=sockets, side_listeners=sides))


async def announce(settings: Settings, dsn: str, host: str, port: int, *, demo: bool) -> None:
    """The server listens: record where (cli/address.py), with `demo` seed a demo workspace
    on a first start (printing its tokens), and print the URL people open."""
    url = public_url(settings, host, port)
    from compass_server.cli import address

    address.record(dsn, url)
    seeded = None
    if demo:
        seeded = await _seed_demo_if_empty(dsn, settings, url)
        if seeded is not None:
            print_json(seeded)
    running = f"Compass is running at {url}\n"
    if demo and seeded is None:
        # A restart: the first start's tokens were printed once and are not stored.
        running += sign_in_hint()
    sys.stdout.write(running)  # one write: no log line lands inside it
    sys.stdout.flush()


def _check_open_files(settings: Settings) -> None:
    """Raise the open-files limit to what the connection cap needs, or say it is too low."""
    listeners = 2 if settings.grpc_port is not None else 1  # each caps its own connections
    have, needed = ensure_open_files(
        listeners * settings.max_connections + settings.pool_max + netguard.FD_RESERVE
    )
    if have < needed:
        logger.warning(
            "the open-files limit is %d but %s=%d needs about %d: raise it (ulimit -n %d, "
            "LimitNOFILE= in systemd, --ulimit nofile= in Docker) or lower %s",
            have,
            config_names.MAX_CONNECTIONS,
            settings.max_connections,
            needed,
            needed,
            config_names.MAX_CONNECTIONS,
        )


async def _serve_all(
    server: _AnnouncingServer,
    app: ServerApp,
    host: str,
    settings: Settings,
    *,
    sockets: list[socket.socket] | None = None,
    side_listeners: bool = True,
) -> None:
    """Run `server`; beside it (`side_listeners`), with COMPASS_METRICS_PORT a tiny
    /metrics-only server, and with COMPASS_GRPC_PORT the HTTP/2 listener for gRPC
    (compass_server/transport/h2.py). The side servers stop when the main one does."""
    sides: list[asyncio.Task[None]] = []
    stopping = asyncio.Event()
    metrics_server: uvicorn.Server | None = None
    if side_listeners and settings.metrics_port is not None:
        from compass_server.app import metrics_only_app

        metrics_server = uvicorn.Server(
            uvicorn.Config(
                metrics_only_app(app),
                host=host,
                port=settings.metrics_port,
                lifespan="off",
                log_level="warning",
                access_log=False,
            )
        )
        metrics_server.install_signal_handlers = lambda: None  # pyright: ignore[reportAttributeAccessIssue] - uvicorn's own hook
        sides.append(asyncio.create_task(metrics_server.serve(), name="compass-metrics-server"))
    if side_listeners and settings.grpc_port is not None:
        from compass_server.transport.h2 import H2Limits, serve_h2

        limits = H2Limits(
            max_connections=settings.max_connections,
            max_per_client=settings.max_connections_per_client,
            max_handlers=settings.max_connections,
            body_seconds=settings.request_read_timeout_seconds,
            body_bytes_per_connection=8 * settings.max_request_bytes,
            body_bytes=32 * settings.max_request_bytes,
        )
        h2_task = asyncio.create_task(
            serve_h2(
                app,
                host=host,
                port=settings.grpc_port,
                limits=limits,
                keepalive_seconds=settings.keepalive_timeout_seconds,
                graceful_seconds=SHUTDOWN_GRACE_SECONDS,
                shutdown=stopping.wait,
            ),
            name="compass-h2-server",
        )
        sides.append(h2_task)

        async def stop_h2() -> None:
            stopping.set()
            await asyncio.wait({h2_task})

        server.before_shutdown.append(stop_h2)
    try:
        await server.serve(sockets=sockets)
    finally:
        stopping.set()
        if metrics_server is not None:
            metrics_server.should_exit = True
        await asyncio.gather(*sides)


class _AnnouncingServer(uvicorn.Server):
    """uvicorn's server, printing the URL (and, with --demo, first-run tokens) once it listens,
    and ending live watches when it begins to shut down."""

    def __init__(
        self,
        config: uvicorn.Config,
        *,
        app: ServerApp,
        settings: Settings,
        dsn: str,
        demo: bool,
        worker: WorkerLink | None = None,
    ) -> None:
        super().__init__(config)
        self._app = app
        self._settings = settings
        self._dsn = dsn
        self._demo = demo
        self.worker = worker
        """Set in a worker of `--workers N`: it tells its supervisor when it is ready (the
        supervisor announces the server) and stops when the supervisor is gone."""
        self.before_shutdown: list[Callable[[], Awaitable[None]]] = []

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        from compass_server.app import begin_shutdown

        # uvicorn waits for every running response to finish; a live watch would run until
        # its client leaves (SIGTERM would never stop a server a browser is watching).
        begin_shutdown(self._app)
        # Side listeners (COMPASS_GRPC_PORT) stop first: the lifespan's end closes the pool.
        for stop in self.before_shutdown:
            await stop()
        if self.worker is None:  # a supervisor records and forgets for its workers
            from compass_server.cli import address

            address.forget(self._dsn)
        await super().shutdown(sockets=sockets)

    def _stop_now(self) -> None:
        self.should_exit = True

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        netguard.install_accept_error_limiter(
            asyncio.get_running_loop(), interval=ACCEPT_ERROR_LOG_INTERVAL_SECONDS
        )
        await super().startup(sockets=sockets)
        if self.should_exit:
            return
        from compass_server.allocator import freeze_startup

        freeze_startup()
        from compass_server.app import listening

        port = self.config.port
        for server in self.servers:
            for sock in server.sockets:
                port = int(sock.getsockname()[1])  # the real port when asked for port 0
        listening(self._app, public_url(self._settings, self.config.host, port))
        if self.worker is not None:
            self.worker.started(asyncio.get_running_loop(), stop=self._stop_now)
            return
        await announce(self._settings, self._dsn, self.config.host, port, demo=self._demo)


async def _seed_demo_if_empty(dsn: str, settings: Settings, url: str) -> dict[str, object] | None:
    from compass_server.cli.demo import is_empty, seed

    async with open_store(dsn, settings) as store:
        if not await is_empty(store):
            return None
        return await seed(store, url)


def public_url(settings: Settings, host: str, port: int) -> str:
    """The URL people open of a server listening on `host`:`port` (COMPASS_PUBLIC_URL when
    set)."""
    if settings.public_url:
        return settings.public_url
    shown = "127.0.0.1" if host in {"0.0.0.0", "::", ""} else host  # noqa: S104 - display only
    return f"http://{shown}:{port}/"


def server_url(settings: Settings, dsn: str) -> str:
    """The URL people open, for commands other than `serve`: COMPASS_PUBLIC_URL, else where
    this user's running `compass serve` of the same database listens (cli/address.py), else
    http://COMPASS_HOST:COMPASS_PORT/."""
    from compass_server.cli import address

    if settings.public_url:
        return settings.public_url
    return address.recorded(dsn) or public_url(settings, settings.host, settings.port)


def print_json(value: object) -> None:
    """A command's result, as JSON on stdout."""
    sys.stdout.write(json.dumps(value, indent=2) + "\n")
    sys.stdout.flush()
