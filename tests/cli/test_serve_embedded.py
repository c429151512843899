"""`compass serve` with no COMPASS_DATABASE_URL: it starts an embedded PostgreSQL in
COMPASS_DATA_DIR, applies migrations, prints the URL and serves; `compass admin` beside it
attaches to the same cluster without stopping it; SIGTERM stops the server AND its PostgreSQL,
leaving no postgres process on that data dir; a second start finds the data again.

This is what the README's first command (`./scripts/serve`, i.e. `compass serve --demo`) does,
so the test also signs in with the printed human token and sees the example ask.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from compass_server.embedded import LocalPostgres
from tests.cli.conftest import cli_env, command, run_cli
from tests.e2e._connect import call

READY = "Compass is running at "
START_SECONDS = 180.0
"""A cold start runs initdb (and, as root, may copy the PostgreSQL binaries once)."""
STOP_SECONDS = 30.0
STOPPED_BY_SIGTERM = (0, 128 + signal.SIGTERM, -signal.SIGTERM)
"""uvicorn re-raises the signal after its shutdown; the embedded-cluster wrapper then exits
with 128 + signum once PostgreSQL is stopped."""


class Serve:
    """A `compass serve` child; its output lines arrive in a queue."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.process = subprocess.Popen(
            [*command(), "serve", "--host", "127.0.0.1", "--port", "0", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.output: list[str] = []
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def until_ready(self) -> tuple[str, list[str]]:
        """The URL it prints, and the lines printed to stdout/stderr before it."""
        before: list[str] = []
        deadline = time.monotonic() + START_SECONDS
        while True:
            line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            assert line is not None, "".join(self.output)
            if line.startswith(READY):
                return line[len(READY) :].strip(), before
            before.append(line)

    def stop(self, signum: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signum)
        try:
            return self.process.wait(timeout=STOP_SECONDS)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self._reader.join(timeout=5)
            if self.process.stdout is not None:
                self.process.stdout.close()


def _postgres_processes_in(pgdata: Path) -> list[int]:
    """Live processes whose working directory is `pgdata` (every postgres process's is)."""
    found: list[int] = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cwd = (proc / "cwd").readlink()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and cwd == pgdata:
            found.append(int(proc.name))
    return found


def _run_as_printed(line: str, env: dict[str, str]) -> dict[str, Any]:
    """Run a command line a hint printed, in a shell whose PATH has no venv (so no `compass`),
    from another directory, as a newcomer's second terminal would; its JSON."""
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    done = subprocess.run(
        ["/bin/sh", "-c", line],
        env=env | {"PATH": path},
        cwd="/",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, (line, done.returncode, done.stderr)
    value = json.loads(done.stdout)
    assert isinstance(value, dict)
    return value  # pyright: ignore[reportUnknownVariableType] - checked to be an object


def _demo_json(lines: list[str]) -> dict[str, object]:
    """The JSON object `--demo` printed (among uvicorn's log lines)."""
    start = next(i for i, line in enumerate(lines) if line.rstrip() == "{")
    end = next(i for i in range(start, len(lines)) if lines[i].rstrip() == "}")
    value = json.loads("".join(lines[start : end + 1]))
    assert isinstance(value, dict)
    return value  # pyright: ignore[reportUnknownVariableType] - checked to be an object


async def test_serve_on_the_embedded_postgres_and_stop_it_with_sigterm(data_dir: Path) -> None:
    # Its own state directory: where `compass serve` says which address it listens on.
    env = cli_env(COMPASS_DATA_DIR=str(data_dir), XDG_STATE_HOME=str(data_dir.parent / "state"))
    pgdata = data_dir / "pgdata"
    server = Serve(env, "--demo")
    try:
        url, before = server.until_ready()
        assert url.startswith("http://127.0.0.1:")
        demo = _demo_json(before)
        human = demo["human"]
        assert isinstance(human, dict)
        cluster = LocalPostgres(data_dir=data_dir)
        postmaster = cluster.postmaster_pid()
        assert postmaster is not None
        assert postmaster in _postgres_processes_in(pgdata)

        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            assert (await client.get("/readyz")).json() == {
                "status": "ok",
                "database": "ok",
                "listener": "ok",
                "webhooks": "ok",
                "push": "ok",
            }
            assert (await client.get("/healthz")).json() == {"status": "ok"}
            channels = await call(client, "ListChannels", {}, str(human["token"]))
            assert channels.ok, channels
            ask = await call(
                client, "GetAsk", {"askId": demo["example_ask_id"]}, str(human["token"])
            )
            assert ask.ok, ask

            # An admin command beside the server attaches to its cluster and leaves it running,
            # printing its JSON and nothing else (issue 24: "INFO attached to PostgreSQL ..."
            # on every command).
            admin = run_cli(["admin", "create-workspace", "--name", "beside"], env)
            assert admin.code == 0, admin
            assert json.loads(admin.stdout)["name"] == "beside"
            assert admin.stderr == "", admin.stderr
            assert cluster.postmaster_pid() == postmaster
            # Links and demos name the running server's address, not the default port 8000.
            link = run_cli(["admin", "sign-in-link", "--account", str(human["account_id"])], env)
            assert link.code == 0, link
            assert str(json.loads(link.stdout)["url"]).startswith(f"{url.rstrip('/')}/#/sign-in/")
            other_demo = run_cli(["demo"], env)
            assert other_demo.code == 0, other_demo
            assert json.loads(other_demo.stdout)["url"] == url
            assert other_demo.stderr == "", other_demo.stderr
            assert (await client.get("/readyz")).status_code == 200
    finally:
        exit_code = server.stop()
    assert exit_code in STOPPED_BY_SIGTERM, "".join(server.output)
    assert cluster.postmaster_pid() is None
    assert _postgres_processes_in(pgdata) == [], "".join(server.output)
    assert not (pgdata / "postmaster.pid").exists()

    # Stopped: the address is no longer claimed.
    link = run_cli(["admin", "sign-in-link", "--account", str(human["account_id"])], env)
    assert str(json.loads(link.stdout)["url"]).startswith("http://127.0.0.1:8000/")

    # A second start finds the data: no new demo (the database has accounts), same tokens,
    # and a word on how to sign in (the first start's tokens are not shown again), with the
    # commands that do it, each on its own line, runnable as printed (issue 33 N3: they said
    # `compass ...`, which a shell without the venv on its PATH does not find).
    again = Serve(env, "--demo")
    try:
        url, before = again.until_ready()
        assert not any(line.rstrip() == "{" for line in before), before
        hint = [again.lines.get(timeout=10) for _ in range(5)]
        commands = [line.strip() for line in hint if line is not None and line.startswith("  ")]
        assert [shlex.split(c)[1:] for c in commands] == [
            ["admin", "list-accounts", "--kind", "human"],
            ["admin", "sign-in-link", "--account", "ACCOUNT_ID"],
            ["demo"],
        ], hint
        listed = _run_as_printed(commands[0], env)
        account_id = str(human["account_id"])
        assert account_id in [a["account_id"] for a in listed["accounts"]], listed
        link = _run_as_printed(commands[1].replace("ACCOUNT_ID", account_id), env)
        assert str(link["url"]).startswith(f"{url.rstrip('/')}/#/sign-in/"), link
        assert _run_as_printed(commands[2], env)["url"] == url
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            channels = await call(client, "ListChannels", {}, str(human["token"]))
            assert channels.ok, channels
    finally:
        assert again.stop() in STOPPED_BY_SIGTERM, "".join(again.output)
    assert _postgres_processes_in(pgdata) == []


async def test_ctrl_c_stops_the_server_and_its_postgres_quietly(data_dir: Path) -> None:
    env = cli_env(COMPASS_DATA_DIR=str(data_dir))
    pgdata = data_dir / "pgdata"
    server = Serve(env)
    try:
        url, _ = server.until_ready()
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            assert (await client.get("/readyz")).status_code == 200
        assert LocalPostgres(data_dir=data_dir).postmaster_pid() is not None
    finally:
        exit_code = server.stop(signal.SIGINT)
    output = "".join(server.output)
    assert exit_code == 128 + signal.SIGINT, output
    assert "Traceback" not in output
    assert LocalPostgres(data_dir=data_dir).postmaster_pid() is None
    assert _postgres_processes_in(pgdata) == [], output


async def test_a_killed_embedded_postgres_is_restarted_and_the_server_recovers(
    data_dir: Path,
) -> None:
    """Issue 12 F7: after `kill -9` of the postmaster the server answered UNAVAILABLE forever."""
    env = cli_env(COMPASS_DATA_DIR=str(data_dir))
    pgdata = data_dir / "pgdata"
    server = Serve(env, "--demo")
    try:
        url, before = server.until_ready()
        human = _demo_json(before)["human"]
        assert isinstance(human, dict)
        cluster = LocalPostgres(data_dir=data_dir)
        postmaster = cluster.postmaster_pid()
        assert postmaster is not None
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            assert (await client.get("/readyz")).status_code == 200
            killed = time.monotonic()
            os.kill(postmaster, signal.SIGKILL)
            recovered: float | None = None
            while time.monotonic() - killed < 60:
                try:
                    ready = (await client.get("/readyz")).status_code == 200
                except httpx.HTTPError:
                    ready = False
                if ready and cluster.postmaster_pid() not in (None, postmaster):
                    recovered = time.monotonic() - killed
                    break
                await asyncio.sleep(0.1)
            assert recovered is not None, "".join(server.output)
            channels = await call(client, "ListChannels", {}, str(human["token"]))
            assert channels.ok, channels
        print(f"killed postmaster -> /readyz ok again: {recovered:.2f} s")  # noqa: T201 - for the note, with -s
        assert "had died; restarted it" in "".join(server.output)
    finally:
        exit_code = server.stop()
    assert exit_code in STOPPED_BY_SIGTERM, "".join(server.output)
    assert _postgres_processes_in(pgdata) == [], "".join(server.output)
