"""The `compass` command line: serve, migrate, demo and admin commands, and the agent side's.

Every command finds its database the same way: `COMPASS_DATABASE_URL` when set, else the
embedded PostgreSQL in `COMPASS_DATA_DIR` (default: a per-user data directory), started on
demand and, unless this command is the server, stopped again when the command is done.
Admin and demo output is JSON on stdout; tokens are printed once and never stored.

`main.py`: the parser, `main`, `entry`, the logging set-up and the database commands;
`serve.py`: `compass serve` (`workers.py`: its `--workers N` supervisor; `listen.py`: its
sockets, bound before the database starts); `database.py`: which database, migrated, and the
server's claim on its embedded cluster; `admin.py`, `demo.py`: what those commands do;
`address.py`: where a running server of a database listens; `command.py`: how printed hints
write `compass`.
"""

from __future__ import annotations

from compass_server.cli.errors import CliError
from compass_server.cli.main import build_parser, entry, main
from compass_server.cli.serve import (
    ACCEPT_ERROR_LOG_INTERVAL_SECONDS,
    SHUTDOWN_GRACE_SECONDS,
    announce,
    serve_one,
)

__all__ = [
    "ACCEPT_ERROR_LOG_INTERVAL_SECONDS",
    "SHUTDOWN_GRACE_SECONDS",
    "CliError",
    "announce",
    "build_parser",
    "entry",
    "main",
    "serve_one",
]
