"""A real PgBouncer (Debian's `pgbouncer`, installed by scripts/ensure-pgbouncer) in transaction
mode in front of the tests' PostgreSQL, as docs/operating/deploying.md puts it in front of Compass.

`running(admin_dsn)` starts one on a free loopback port, forwarding every database name to the
server of `admin_dsn` with that DSN's user and password (`auth_type = any`: PgBouncer itself asks
the client for nothing; it listens on 127.0.0.1 only, for the test run). `Bouncer.dsn_for(dsn)`
is `dsn` rerouted through it; `Bouncer.logins(database)` counts the client logins PgBouncer
logged for a database, so a test can tell that traffic really went through it.

PgBouncer refuses to run as root: as root it runs as the embedded PostgreSQL's OS user.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import asyncpg

from compass_server.embedded import OS_USER
from compass_server.embedded.osuser import ensure_os_user

if TYPE_CHECKING:
    from collections.abc import Generator

ROOT = Path(__file__).resolve().parent.parent
DEPLOY_INI = ROOT / "deploy" / "pgbouncer" / "pgbouncer.ini"
START_SECONDS = 30.0


def binary() -> str:
    """The pgbouncer binary (installing Debian's package when missing, as root)."""
    done = subprocess.run(
        [str(ROOT / "scripts" / "ensure-pgbouncer")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"scripts/ensure-pgbouncer failed: {done.stderr.strip()}")
    return done.stdout.strip().splitlines()[-1]


@dataclass(frozen=True, slots=True)
class Bouncer:
    host: str
    port: int
    log: Path

    def dsn_for(self, dsn: str) -> str:
        """`dsn` (any database of the proxied server) through PgBouncer."""
        parts = urlsplit(dsn)
        query = [(k, v) for k, v in parse_qsl(parts.query) if k not in {"host", "port"}]
        user = f"{parts.username}@" if parts.username else ""  # no password: auth_type any
        return urlunsplit(
            (parts.scheme, f"{user}{self.host}:{self.port}", parts.path, urlencode(query), "")
        )

    async def shares_server_connections(self, dsn: str) -> bool:
        """Whether two client connections, one after the other, ran on the same server
        connection while both stayed open: true in transaction mode (a client holds a server
        connection only for a transaction), never in session mode."""
        first = await asyncpg.connect(self.dsn_for(dsn), statement_cache_size=0)
        second = await asyncpg.connect(self.dsn_for(dsn), statement_cache_size=0)
        try:
            pid = await first.fetchval("SELECT pg_backend_pid()")
            return pid == await second.fetchval("SELECT pg_backend_pid()")
        finally:
            await first.close()
            await second.close()

    def logins(self, database: str) -> int:
        """Client logins PgBouncer logged for `database` (its admin console speaks only the
        simple query protocol, which gives asyncpg no rows; its log says it as well)."""
        try:
            text = self.log.read_text()
        except OSError:
            return 0
        return text.count(f"login attempt: db={database} ")


@contextlib.contextmanager
def running(admin_dsn: str) -> Generator[Bouncer]:
    """A PgBouncer in transaction mode in front of the server of `admin_dsn`, until exit."""
    pgbouncer = binary()
    target = urlsplit(admin_dsn)
    query = dict(parse_qsl(target.query))
    # A TCP server, or a local cluster's unix socket directory (tests/_pg tier 3).
    host = query.get("host") or target.hostname or "127.0.0.1"
    server_port = query.get("port") or str(target.port or 5432)
    user_name = unquote(target.username or query.get("user") or "postgres")
    forward = f"host={host} port={server_port} user={user_name}"
    if target.password:
        forward += f" password={unquote(target.password)}"
    port = _free_port()
    workdir = Path(tempfile.mkdtemp(prefix="compass-pgbouncer-"))
    ini = workdir / "pgbouncer.ini"
    log = workdir / "pgbouncer.log"
    users = workdir / "userlist.txt"
    users.write_text("")
    # The deployment's own configuration (transaction mode and the rest), then what differs
    # here: where it listens and forwards to, and no client authentication on loopback.
    ini.write_text(
        # PgBouncer reads an %include only inside a section, and a section header seen again
        # starts that section's settings afresh: so the overrides follow the include, in the
        # [pgbouncer] section the deployment's file ends with, and [databases] comes last.
        f"[pgbouncer]\n%include {DEPLOY_INI}\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\n"
        f"auth_type = any\nauth_file = {users}\n"
        f"logfile = {log}\npidfile = {workdir / 'pgbouncer.pid'}\n"
        "[databases]\n"
        f"* = {forward}\n"
    )
    uid: int | None = None
    gid: int | None = None
    if os.geteuid() == 0:  # PgBouncer will not run as root
        entry = ensure_os_user(OS_USER)
        uid, gid = entry.pw_uid, entry.pw_gid
        os.chown(workdir, uid, gid)
        for path in (ini, users):
            os.chown(path, uid, gid)
    process = subprocess.Popen(
        [pgbouncer, str(ini)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        user=uid,
        group=gid,
        extra_groups=None if uid is None else [],
    )
    try:
        _wait_listening(port, process, log)
        yield Bouncer(host="127.0.0.1", port=port, log=log)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)  # PgBouncer's "safe shutdown"
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(workdir, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_listening(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"pgbouncer exited ({process.returncode}):\n{_tail(log)}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"pgbouncer did not listen within {START_SECONDS:g}s:\n{_tail(log)}")
        time.sleep(0.05)


def _tail(log: Path) -> str:
    try:
        return "\n".join(log.read_text().splitlines()[-20:])
    except OSError:
        return "(no log)"
