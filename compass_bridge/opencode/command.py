"""`compass opencode ask` and `compass opencode install`: their arguments and what runs them.

compass_bridge/cli.py registers `opencode` and reads the connection (--server, --channel and
the token, from --token-file or $COMPASS_TOKEN) as for every agent command; the rest is here.

- `ask` is the plugin's command (relay.py): exit 0 whatever the person did; 1 when it cannot
  ask in Compass (one line on stderr, the last: the plugin shows it); 2 for a usage error.
- `install` is a person's command: it reads and merges the config file first, then checks
  the token and the channel with the server (unless --no-check), then writes. Any problem is
  one line on stderr, exit 2, and nothing written. `--print` prints the entry and writes
  nothing (for a config OpenCode reads that this command will not write, e.g. one with
  comments).
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

__all__ = ["EXIT_CANNOT_ASK", "EXIT_USAGE", "add_arguments", "ask_main", "install_main"]

EXIT_USAGE: Final = 2
EXIT_CANNOT_ASK: Final = 1


def add_arguments(
    parser: argparse.ArgumentParser, connection: Callable[[argparse.ArgumentParser], None]
) -> None:
    """Add `ask` and `install` to `compass opencode`'s parser; `connection` adds --server,
    --channel and --token-file to each."""
    actions = parser.add_subparsers(dest="opencode_action", metavar="{install,ask}")
    actions.required = True
    install = actions.add_parser(
        "install",
        help="put Compass's plugin into OpenCode's config (default: the user's)",
        description="Write the entry of Compass's OpenCode plugin into an OpenCode config "
        "file, keeping its other plugins and settings: OpenCode's question tool is then asked "
        "in Compass. Running it again updates the entry in place.",
    )
    where = install.add_mutually_exclusive_group()
    where.add_argument(
        "--user",
        dest="scope",
        action="store_const",
        const="user",
        help="OpenCode's global config, in $XDG_CONFIG_HOME/opencode or ~/.config/opencode "
        "(the default)",
    )
    where.add_argument(
        "--project",
        dest="scope",
        action="store_const",
        const="project",
        help="the config of the project in the current directory (opencode.json)",
    )
    where.add_argument("--config", type=Path, help="this config file")
    connection(install)
    install.add_argument(
        "--command",
        dest="compass_command",
        help="how the plugin runs compass (default: this compass, by its absolute path)",
    )
    install.add_argument(
        "--no-check",
        dest="check",
        action="store_false",
        help="write the entry without asking the server whether the token may post in the "
        "channel (GetChannel)",
    )
    install.add_argument(
        "--print",
        dest="print_only",
        action="store_true",
        help="print the plugin entry to add to OpenCode's `plugin` list; write nothing",
    )
    ask = actions.add_parser(
        "ask",
        help="answer one OpenCode question in Compass (the plugin's command: its events on "
        "stdin, the reply on stdout)",
    )
    connection(ask)
    ask.add_argument(
        "--max-backoff",
        type=float,
        default=5.0,
        help="longest wait between retries while the server is unreachable (seconds)",
    )


def ask_main(args: argparse.Namespace, server: str, channel_id: str, token: str) -> int:
    """`compass opencode ask` with its connection read; the exit status."""
    max_backoff: float = args.max_backoff
    if not 0 < max_backoff <= 3600:
        sys.stderr.write("compass opencode ask: --max-backoff out of range\n")
        return EXIT_USAGE
    from compass_bridge.opencode.relay import AskOptions, run

    options = AskOptions(server=server, channel_id=channel_id, token=token, max_backoff=max_backoff)
    return asyncio.run(run(options))


def install_main(
    args: argparse.Namespace,
    server: str,
    channel_id: str,
    *,
    token: str | None,
    token_env: str,
) -> int:
    """`compass opencode install` with its connection read (`token`: from --token-file or
    `token_env`, None without either); the exit status."""
    import functools
    import os

    from compass_bridge import config_files
    from compass_bridge.opencode.install import (
        PLUGIN_FILE,
        ask_command,
        config_path,
        merge,
        parse,
        plugin_entry,
    )

    name = "opencode install"

    def refuse(problem: str) -> int:
        sys.stderr.write(f"compass {name}: {problem}\n")
        return EXIT_USAGE

    if not PLUGIN_FILE.is_file():
        return refuse(f"the plugin {PLUGIN_FILE} is missing from this Compass; nothing was written")
    token_file: Path | None = args.token_file
    compass: str | None = args.compass_command
    command = ask_command(
        shlex.split(compass) if compass else config_files.compass_argv(),
        server=server,
        channel_id=channel_id,
        token_file=token_file.absolute() if token_file is not None else None,
    )
    entry = plugin_entry(command)
    if args.print_only:
        sys.stdout.write(json.dumps(entry, indent=2) + "\n")
        return 0
    explicit: Path | None = args.config
    path = explicit or config_path(args.scope or "user", Path.cwd(), os.environ)
    check = functools.partial(
        config_files.server_check, server, channel_id, token, token_env=token_env, agent="OpenCode"
    )
    try:
        changed = config_files.install_checked(
            path, merge(entry), parse=parse, check=check if args.check else None
        )
    except config_files.ConfigFileError as exc:
        return refuse(str(exc))
    summary = {"config": str(path), "changed": changed, "plugin": entry}
    sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    if token_file is None:
        sys.stderr.write(
            f"compass {name}: the plugin's command reads the token from ${token_env} in "
            "OpenCode's environment\n"
        )
    return 0
