"""One `compass serve` per embedded cluster, and where it listens checked first (issue 33 N1).

Before: a second `compass serve` on the same data directory attached to the first one's
PostgreSQL and, when it exited (a busy port, a bad COMPASS_HOST, or stopped normally on another
port), stopped it: the first server logged a traceback and "PostgreSQL ... had died; restarted
it", and /readyz said the listener was down. A busy port was reported only after the database
had started and migrated, as uvicorn's `[Errno 98] ... address already in use`; a bad host as
`[Errno -2] Name or service not known`, naming no setting.

Now the cluster has one owner (a lock held for the server's life, in the data directory): a
second `serve` refuses at once with "Compass is already running at URL (pid N)" and touches
nothing; a server killed with SIGKILL leaves the lock to the kernel, and the next `serve`
adopts the PostgreSQL it left. The port is bound before the database starts, and a bad host
or port names the setting it came from, in one line.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import threading
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx

from compass_server import config as config_names
from compass_server.cli.database import using_database
from compass_server.config import Settings
from compass_server.embedded import LocalPostgres
from tests.cli.conftest import cli_env, command
from tests.cli.test_serve_embedded import (
    READY,
    STOP_SECONDS,
    STOPPED_BY_SIGTERM,
    Serve,
    _postgres_processes_in,  # pyright: ignore[reportPrivateUsage] - the sibling test's finder
)

if TYPE_CHECKING:
    from collections.abc import Generator, Mapping
    from pathlib import Path


class _Readiness:
    """Polls a server's /readyz from a thread; every answer that was not 200 is kept."""

    def __init__(self, url: str) -> None:
        self._url = url.rstrip("/") + "/readyz"
        self._done = threading.Event()
        self.checks = 0
        self.failures: list[str] = []
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        with httpx.Client(timeout=10) as client:
            while not self._done.is_set():
                try:
                    response = client.get(self._url)
                    if response.status_code != 200:
                        self.failures.append(f"{response.status_code} {response.text}")
                except httpx.HTTPError as exc:
                    self.failures.append(repr(exc))
                self.checks += 1
                self._done.wait(0.05)

    @contextlib.contextmanager
    def watching(self) -> Generator[_Readiness]:
        self._thread.start()
        try:
            yield self
        finally:
            self._done.set()
            self._thread.join(timeout=15)


def _second_serve(env: Mapping[str, str], *args: str) -> tuple[int, list[str], float]:
    """Run another `compass serve`: its exit code, output lines and seconds. One that starts
    serving (what a second server did before) is stopped with SIGTERM once it says so."""
    started = time.monotonic()
    process = subprocess.Popen(
        [*command(), "serve", *args],
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    lines: list[str] = []
    for line in process.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith(READY):
            process.send_signal(signal.SIGTERM)
    code = process.wait(timeout=STOP_SECONDS)
    process.stdout.close()
    return code, lines, time.monotonic() - started


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_second_serve_on_the_same_data_directory_refuses_and_leaves_the_first_alone(
    data_dir: Path,
) -> None:
    env = cli_env(COMPASS_DATA_DIR=str(data_dir), XDG_STATE_HOME=str(data_dir.parent / "state"))
    pgdata = data_dir / "pgdata"
    first = Serve(env)
    third: Serve | None = None
    try:
        url, _ = first.until_ready()
        port = urlsplit(url).port
        assert port is not None
        cluster = LocalPostgres(data_dir=data_dir)
        postmaster = cluster.postmaster_pid()
        assert postmaster is not None
        refusal = f"compass: Compass is already running at {url} (pid {first.process.pid})"
        with _Readiness(url).watching() as readiness:
            for case, args, extra in [
                ("busy port", ("--host", "127.0.0.1", "--port", str(port)), {}),
                ("bad host", ("--port", str(_free_port())), {"COMPASS_HOST": "not-a-host"}),
                ("another port", ("--host", "127.0.0.1", "--port", str(_free_port())), {}),
            ]:
                code, lines, seconds = _second_serve(env | extra, *args)
                print(f"second serve, {case}: exit {code}, {len(lines)} line(s), {seconds:.1f} s")  # noqa: T201 - the figure, with -s
                assert (code, lines[:1]) == (1, [lines[0]]), lines
                assert lines[0].startswith(refusal), lines
                assert len(lines) == 1, lines
                # It touched nothing: the first server's PostgreSQL was neither stopped nor
                # restarted (a stopped one is gone, or revived under another pid, by now).
                assert cluster.postmaster_pid() == postmaster, (case, "".join(first.output))
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                assert (await client.get("/readyz")).status_code == 200
        assert readiness.checks > 0
        assert readiness.failures == [], readiness.failures
        output = "".join(first.output)
        assert "had died" not in output, output
        assert "Traceback" not in output, output

        # Killed outright, the first server cannot release anything: the kernel drops its lock,
        # its PostgreSQL keeps running, and the next `serve` adopts it and serves.
        first.process.kill()
        first.process.wait(timeout=STOP_SECONDS)
        assert cluster.postmaster_pid() == postmaster
        third = Serve(env)
        url, _ = third.until_ready()
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            assert (await client.get("/readyz")).status_code == 200
        assert cluster.postmaster_pid() == postmaster
    finally:
        first.stop()
        if third is not None:
            assert third.stop() in STOPPED_BY_SIGTERM, "".join(third.output)
    assert cluster.postmaster_pid() is None
    assert _postgres_processes_in(pgdata) == []


def test_the_address_is_checked_before_the_database_starts_naming_its_setting(
    data_dir: Path,
) -> None:
    """A fresh data directory each time: nothing may be started in it (no `pgdata`)."""
    env = cli_env(COMPASS_DATA_DIR=str(data_dir), XDG_STATE_HOME=str(data_dir.parent / "state"))
    with socket.socket() as taken, socket.socket() as shared:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = int(taken.getsockname()[1])
        # A `--workers N` server's port: SO_REUSEPORT, which another `--workers` server of the
        # same user could join (and take half of its connections) unless it checks first.
        shared.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        shared.bind(("127.0.0.1", 0))
        shared.listen()
        reused = int(shared.getsockname()[1])
        cases: list[tuple[str, tuple[str, ...], dict[str, str], int, tuple[str, ...]]] = [
            ("--port busy", ("--host", "127.0.0.1", "--port", str(busy)), {}, 1,
             (f"127.0.0.1:{busy}", "in use", "--port")),
            ("COMPASS_PORT busy", ("--host", "127.0.0.1"), {"COMPASS_PORT": str(busy)}, 1,
             (f"127.0.0.1:{busy}", "in use", "COMPASS_PORT")),
            ("--workers 2 on a shared port", ("--host", "127.0.0.1", "--port", str(reused),
             "--workers", "2"), {}, 1, (f"127.0.0.1:{reused}", "in use", "--port")),
            ("COMPASS_HOST unknown", ("--port", "0"), {"COMPASS_HOST": "not-a-host"}, 1,
             ("not-a-host", "COMPASS_HOST")),
            ("--host unknown", ("--host", "not-a-host", "--port", "0"), {}, 1,
             ("not-a-host", "--host")),
            ("--host not of this machine", ("--host", "192.0.2.1", "--port", "0"), {}, 1,
             ("192.0.2.1", "--host")),
            ("--port out of range", ("--host", "127.0.0.1", "--port", "70000"), {}, 2,
             ("--port", "70000")),
        ]  # fmt: skip
        for case, args, extra, expected, words in cases:
            code, lines, seconds = _second_serve(env | extra, *args)
            print(f"{case}: exit {code}, {len(lines)} line(s), {seconds:.1f} s: {lines[-1:]}")  # noqa: T201 - the figure, with -s
            assert code == expected, (case, lines)
            message = lines[-1]
            assert all(word in message for word in words), (case, lines)
            assert "Traceback" not in "\n".join(lines), (case, lines)
            if expected == 1:
                assert lines == [message], (case, lines)
                assert message.startswith("compass: "), (case, lines)
            assert not (data_dir / "pgdata").exists(), (case, lines)


def test_a_command_that_started_the_cluster_leaves_it_to_a_server_that_adopted_it(
    data_dir: Path,
) -> None:
    """`compass admin` with no server running starts the embedded PostgreSQL and stops it when
    done, unless a `compass serve` started meanwhile and adopted it: then it is the server's."""
    settings = Settings.from_env({config_names.DATA_DIR: str(data_dir)})
    cluster = LocalPostgres(data_dir=data_dir)
    adopted = contextlib.ExitStack()
    try:
        with using_database(settings, owner=False):
            postmaster = cluster.postmaster_pid()
            assert postmaster is not None
            # What `compass serve` holds from its start (before it attaches) to its end.
            adopted.enter_context(LocalPostgres(data_dir=data_dir).owned())
        assert cluster.postmaster_pid() == postmaster
    finally:
        adopted.close()
    cluster.stop_unless_owned()  # owned by nobody now: stopped
    assert cluster.postmaster_pid() is None
