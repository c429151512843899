"""`compass serve --workers 2`: a supervisor and its workers, as a user runs them.

On the embedded PostgreSQL (no COMPASS_DATABASE_URL): the supervisor alone owns the cluster,
the workers share it; a killed worker is replaced while the server keeps answering; SIGTERM
stops the workers, then the cluster, leaving no process behind. A supervisor killed outright
takes its workers down with it (they see their pipe to it close). The restart policy itself
(replace a dead worker, give up after too many) is held with real short-lived processes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from compass_server.cli import CliError, workers as workers_module
from compass_server.embedded import LocalPostgres
from tests import _procs
from tests._wait import eventually, eventually_sync
from tests.cli.conftest import cli_env
from tests.cli.test_serve_embedded import (
    STOPPED_BY_SIGTERM,
    Serve,
    _demo_json,  # pyright: ignore[reportPrivateUsage] - the sibling test's reader of --demo
    _postgres_processes_in,  # pyright: ignore[reportPrivateUsage] - as above
)
from tests.e2e._connect import call

if TYPE_CHECKING:
    from collections.abc import Callable


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def test_two_workers_share_the_embedded_postgres_survive_a_killed_worker_and_stop(
    data_dir: Path,
) -> None:
    env = cli_env(COMPASS_DATA_DIR=str(data_dir))
    pgdata = data_dir / "pgdata"
    server = Serve(env, "--demo", "--workers", "2")
    workers: list[int] = []
    try:
        url, before = server.until_ready()
        human = _demo_json(before)["human"]
        assert isinstance(human, dict)
        workers = _procs.children(server.process.pid)
        assert len(workers) == 2, workers
        postmaster = LocalPostgres(data_dir=data_dir).postmaster_pid()
        assert postmaster is not None
        assert postmaster not in workers  # the cluster belongs to the supervisor's side
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            assert (await client.get("/readyz")).status_code == 200

            os.kill(workers[0], signal.SIGKILL)

            def replaced_and_ready() -> bool:
                _, died, after = "".join(server.output).partition("stopped unexpectedly")
                return bool(died) and "worker 0 ready (pid" in after

            await eventually(
                replaced_and_ready,
                "a replacement worker",
                within=60,
                every=0.05,
            )
            replaced = _procs.children(server.process.pid)
            assert len(replaced) == 2, replaced
            assert workers[0] not in replaced, (workers, replaced)
            workers = replaced
            # Every new connection is served (by whichever worker the kernel picks).
            for _ in range(8):
                async with httpx.AsyncClient(base_url=url, timeout=30) as fresh:
                    reply = await call(fresh, "ListChannels", {}, str(human["token"]))
                    assert reply.ok, reply
    finally:
        exit_code = server.stop()
    output = "".join(server.output)
    assert exit_code in STOPPED_BY_SIGTERM, output
    assert "Traceback" not in output
    assert "all 2 workers stopped" in output
    assert not any(_alive(pid) for pid in workers), output
    assert LocalPostgres(data_dir=data_dir).postmaster_pid() is None
    assert _postgres_processes_in(pgdata) == [], output


def test_workers_stop_when_their_supervisor_is_killed(database_url: str) -> None:
    env = cli_env(COMPASS_DATABASE_URL=database_url)
    server = Serve(env, "--workers", "2")
    workers: list[int] = []
    try:
        server.until_ready()
        workers = _procs.children(server.process.pid)
        assert len(workers) == 2, workers
        server.process.kill()
        server.process.wait(timeout=30)
        eventually_sync(
            lambda: not any(_alive(pid) for pid in workers),
            "the orphaned workers stopping",
            within=30,
            every=0.05,
        )
    finally:
        server.stop()
        for pid in workers:  # whatever a failed test left running
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert "its supervisor is gone; shutting down" in "".join(server.output)


def test_bad_worker_counts_are_refused(database_url: str) -> None:
    env = cli_env(COMPASS_DATABASE_URL=database_url, COMPASS_WORKERS="many")
    done = subprocess.run(
        [sys.executable, "-m", "compass_server.cli", "serve", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "COMPASS_WORKERS must be a number of processes or auto" in done.stderr


# -- the restart policy, with real processes standing in for workers ---------------------------


def _stand_ins(tmp_path: Path, *, ready: bool = True) -> Callable[[int, int, int], list[str]]:
    """argv for a worker stand-in: a Python process that says it is ready (or exits without
    saying so) and then waits to be killed."""
    script = tmp_path / "worker.py"
    script.write_text(
        "import os, sys, time\n"
        "ready = int(sys.argv[1])\n"
        f"if {ready}:\n"
        "    os.write(ready, b'1')\n"
        "    time.sleep(600)\n"
    )
    return lambda _index, ready_fd, _parent: [sys.executable, str(script), str(ready_fd)]


def _supervisor(
    argv: Callable[[int, int, int], list[str]], count: int
) -> workers_module._Supervisor:  # pyright: ignore[reportPrivateUsage]
    read, write = os.pipe()
    os.close(write)
    return workers_module._Supervisor(argv=argv, env=dict(os.environ), count=count, parent_fd=read)  # pyright: ignore[reportPrivateUsage]


def _all_ready(supervisor: workers_module._Supervisor) -> None:  # pyright: ignore[reportPrivateUsage]
    deadline = time.monotonic() + 30
    while not supervisor.all_ready():
        assert time.monotonic() < deadline, "the stand-ins did not say they are ready"
        supervisor.wait(0.5)
        supervisor.reap()


def test_a_dead_worker_is_replaced_until_too_many_die(tmp_path: Path) -> None:
    supervisor = _supervisor(_stand_ins(tmp_path), count=2)
    try:
        for index in range(2):
            supervisor.spawn(index)
        _all_ready(supervisor)
        for _ in range(workers_module.RESTARTS_ALLOWED):
            victim = supervisor.workers[1].process
            victim.kill()
            victim.wait()
            supervisor.reap()
            assert supervisor.workers[1].process is not victim  # replaced at once
            _all_ready(supervisor)
        victim = supervisor.workers[0].process
        victim.kill()
        victim.wait()
        with pytest.raises(CliError, match="workers were replaced within 60 s"):
            supervisor.reap()
    finally:
        supervisor.stop()
    assert all(w.process.poll() is not None for w in supervisor.workers.values())


def test_a_worker_that_dies_before_it_is_ready_stops_the_server(tmp_path: Path) -> None:
    supervisor = _supervisor(_stand_ins(tmp_path, ready=False), count=1)
    try:
        supervisor.spawn(0)
        supervisor.workers[0].process.wait(timeout=30)
        supervisor.wait(5)  # the ready pipe's end-of-file
        with pytest.raises(CliError, match=r"worker 0 stopped \(exit code 0\) before it was ready"):
            supervisor.reap()
    finally:
        supervisor.stop()
