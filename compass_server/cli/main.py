"""The `compass` command: its parser, `main`, `entry` and the logging set-up; the database
commands (migrate, demo, admin) and the agent side's commands. `compass serve` is
cli/serve.py.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from compass_server import config as config_names
from compass_server.cli.command import compass_command
from compass_server.cli.database import migrate, open_store, using_database
from compass_server.cli.errors import CliError
from compass_server.cli.serve import print_json, serve_command, server_url
from compass_server.config import ConfigError, Settings

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from compass_server.domain.errors import CompassError as CompassErrorType


# -- migrate -------------------------------------------------------------------------------


def _migrate_command(_args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    with using_database(settings, owner=False) as dsn:
        applied = asyncio.run(migrate(settings, dsn))
    print_json({"applied": applied})
    return 0


# -- demo ----------------------------------------------------------------------------------


async def _seed_demo(dsn: str, settings: Settings, url: str) -> dict[str, object]:
    from compass_server.cli.demo import seed

    async with open_store(dsn, settings) as store:
        return await seed(store, url)


def _demo(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    with using_database(settings, owner=False) as dsn:
        asyncio.run(migrate(settings, dsn))
        url = args.url or server_url(settings, dsn)
        print_json(asyncio.run(_seed_demo(dsn, settings, url)))
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
        async with open_store(dsn, settings) as store:
            return await action(store, **params)

    with using_database(settings, owner=False) as dsn:
        asyncio.run(migrate(settings, dsn))
        if "url" in params and not params["url"]:
            params["url"] = server_url(settings, dsn)
        print_json(asyncio.run(run(dsn)))
    return 0


# -- parser --------------------------------------------------------------------------------


def _worker_count(raw: str) -> int:
    try:
        return config_names.worker_count(raw)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _port(raw: str) -> int:
    if not raw.isdigit() or int(raw) > 65535:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a port (0 to 65535; 0 = any)")
    return int(raw)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="compass", description="Compass: typed asks from agents.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.set_defaults(
        handler=_choose(
            parser,
            "choose a command: serve, migrate, demo, admin, agent-bridge "
            f"({compass_command()} --help)",
        )
    )

    serve = commands.add_parser("serve", help="run the Compass server")
    serve.add_argument("--host", help="address to listen on (default COMPASS_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=_port, help="port (default COMPASS_PORT or 8000; 0 = any)")
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
    serve.set_defaults(handler=serve_command)

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
            f"choose an action: {', '.join(admin.COMMANDS)} "
            f"({compass_command()} admin ACTION --help)",
        )
    )
    for name, (help_text, arguments) in admin.COMMANDS.items():
        sub = actions.add_parser(name, help=help_text)
        for arg in arguments:
            sub.add_argument(
                arg.flag,
                required=arg.required,
                help=arg.help,
                choices=arg.choices,
                type=arg.type or str,
            )
        sub.set_defaults(handler=_admin, action=name.replace("-", "_"))

    # `agent-bridge`, `mcp` and `claude-hook`: the agent side's commands, each a client of some
    # server (compass_bridge/cli.py).
    from compass_bridge.cli import register as register_agent_commands

    register_agent_commands(commands)
    return parser


def _choose(parser: argparse.ArgumentParser, message: str) -> Callable[[argparse.Namespace], int]:
    """The handler of a command given without its subcommand: a usage error saying which."""

    def handler(_args: argparse.Namespace) -> int:
        parser.error(message)

    return handler


def configure_logging(log_format: str, *, quiet: bool = False) -> None:
    """Text lines (default) or, with COMPASS_LOG_FORMAT=json, one JSON object per record,
    uvicorn's own loggers included; `quiet`: warnings and errors only. (bench.respond's echo
    floor logs the same way.)"""
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
        # user, the tool call goes on). `claude-hook install` is run by a person: 2 as usual.
        given = sys.argv[1:] if argv is None else argv
        if exc.code == 2 and given[:1] == ["claude-hook"] and given[1:2] != ["install"]:
            raise SystemExit(1) from None
        raise
    # Commands other than `serve` print their result as JSON: their INFO lines (the embedded
    # PostgreSQL attached to or started, migrations) were noise on every call.
    quiet = getattr(args, "handler", None) in (_admin, _demo, _migrate_command)
    configure_logging(os.environ.get("COMPASS_LOG_FORMAT") or "text", quiet=quiet)
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
