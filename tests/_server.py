"""Real Compass servers for end-to-end tests: `compass serve` in a subprocess, on a real
database, reached over real HTTP on 127.0.0.1; plus a seeded world with a token per account.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import uvicorn

from compass_server.store import AccountKind
from compass_server.store.postgres import PostgresStore

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Generator, Mapping, Sequence

    from starlette.applications import Starlette

READY_PREFIX = "Compass is running at "


@dataclass
class RunningServer:
    """A `compass serve` child process."""

    url: str
    """Base URL with a trailing slash, e.g. http://127.0.0.1:41234/."""
    dsn: str
    process: subprocess.Popen[str]
    output: list[str] = field(default_factory=list[str])
    """Everything the process printed (stdout and stderr), line by line."""

    def rpc_url(self, service: str, method: str) -> str:
        return f"{self.url}compass.v1.{service}/{method}"

    def log(self) -> str:
        return "".join(self.output)


@contextlib.contextmanager
def serve(
    dsn: str,
    *,
    port: int = 0,
    env: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    prefix: Sequence[str] = (),
) -> Generator[RunningServer]:
    """Start `compass serve` on `dsn` (on `port`, default a free one); stop it (SIGTERM)
    afterwards. Restarting on the same `port` lets a test take a server away and bring it
    back under its clients. `prefix` runs it under a wrapper command (e.g. `prlimit`)."""
    child_env = {**os.environ, "COMPASS_DATABASE_URL": dsn, **(env or {})}
    child_env.pop("COMPASS_PUBLIC_URL", None)
    process = subprocess.Popen(
        [
            *prefix,
            sys.executable,
            "-m",
            "compass_server.cli",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        env=child_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    server = RunningServer(url="", dsn=dsn, process=process)

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            server.output.append(line)
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + timeout
        while not server.url:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"compass serve did not start:\n{server.log()}")
            try:
                line = lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise RuntimeError(f"compass serve exited early:\n{server.log()}")
            if line.startswith(READY_PREFIX):
                server.url = line[len(READY_PREFIX) :].strip()
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        reader.join(timeout=5)
        if process.stdout is not None:
            process.stdout.close()


@contextlib.asynccontextmanager
async def in_process(app: Starlette, *, shutdown_seconds: float = 15.0) -> AsyncGenerator[str]:
    """`app` on uvicorn in this event loop, on a free port of 127.0.0.1, lifespan included
    (for tests that need the app object itself); yields its base URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", log_level="warning")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        assert not task.done(), "uvicorn did not start"
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, shutdown_seconds)


@dataclass(frozen=True, slots=True, kw_only=True)
class Account:
    account_id: str
    name: str
    token: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SeededWorld:
    """Two workspaces. In `workspace_id`/`channel_id`: `agent`, `human` and `human2`
    participate; `member` is a workspace member who is not a participant; `outsider`
    participates in `other_channel_id` of another workspace and sees nothing here;
    `disabled` participated until its account was disabled."""

    workspace_id: str
    channel_id: str
    other_workspace_id: str
    other_channel_id: str
    agent: Account
    human: Account
    human2: Account
    member: Account
    outsider: Account
    other_agent: Account
    disabled: Account


async def seed_world(dsn: str, *, prefix: str = "") -> SeededWorld:
    """Create a SeededWorld through the store on `dsn`."""
    async with PostgresStore(dsn, pool_min=1, pool_max=2) as store:
        workspace = await store.create_workspace(f"{prefix}acme")
        channel = await store.create_channel(workspace.workspace_id, "general")
        other = await store.create_workspace(f"{prefix}globex")
        other_channel = await store.create_channel(other.workspace_id, "general")

        async def account(kind: AccountKind, name: str) -> Account:
            row, token = await store.create_account(kind, name)
            return Account(account_id=row.account_id, name=row.name, token=token)

        agent = await account(AccountKind.AGENT, "Coding Agent")
        human = await account(AccountKind.HUMAN, "Ada")
        human2 = await account(AccountKind.HUMAN, "Grace")
        member = await account(AccountKind.HUMAN, "Watcher")
        outsider = await account(AccountKind.HUMAN, "Mallory")
        other_agent = await account(AccountKind.AGENT, "Other Agent")
        disabled = await account(AccountKind.HUMAN, "Former")
        for participant in (agent, human, human2, disabled):
            await store.add_participant(channel.channel_id, participant.account_id)
        await store.add_workspace_member(workspace.workspace_id, member.account_id)
        for participant in (outsider, other_agent):
            await store.add_participant(other_channel.channel_id, participant.account_id)
        await store.disable_account(disabled.account_id)
        return SeededWorld(
            workspace_id=workspace.workspace_id,
            channel_id=channel.channel_id,
            other_workspace_id=other.workspace_id,
            other_channel_id=other_channel.channel_id,
            agent=agent,
            human=human,
            human2=human2,
            member=member,
            outsider=outsider,
            other_agent=other_agent,
            disabled=disabled,
        )
