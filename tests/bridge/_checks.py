"""The start-up check's cases (startup.start_problem: GetChannel before an agent command asks
or writes), shared by the tests of every command that makes it (`agent-bridge`, `claude-hook`
and its `install`, `opencode ask` and `install`), and running `compass` as a process."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TYPE_CHECKING

from compass_server.store.postgres import PostgresStore

if TYPE_CHECKING:
    from pathlib import Path

    from tests._server import RunningServer, SeededWorld

CASES = ["human token", "unknown channel", "not a participant", "bad token"]


async def wrong_connection(
    server: RunningServer, world: SeededWorld, case: str
) -> tuple[str, str, str]:
    """(token, channel, the line saying what is wrong) for `case`, one of CASES."""
    if case == "human token":
        return (
            world.human.token,
            world.channel_id,
            "the token is not an agent's: use an agent account's token",
        )
    if case == "unknown channel":
        return (
            world.agent.token,
            "ch_doesnotexist",
            "channel 'ch_doesnotexist' does not exist or is not visible to this agent",
        )
    if case == "not a participant":
        async with PostgresStore(server.dsn, pool_min=1, pool_max=1) as store:
            channel = (await store.create_channel(world.workspace_id, "elsewhere")).channel_id
        return (
            world.agent.token,
            channel,
            f"this agent does not participate in channel {channel!r}",
        )
    return (
        "cmp_" + "x" * 43,
        world.channel_id,
        "the server did not accept the token (unknown, or its account is disabled)",
    )


async def run_compass(
    *args: str, stdin: bytes = b"", token: str = "", home: Path | None = None
) -> tuple[int, str, str]:
    """`compass ARGS` with `stdin`: (exit code, stdout, stderr). $COMPASS_TOKEN is `token`
    (unset without one), $XDG_CONFIG_HOME unset, $HOME `home` when given."""
    env = {k: v for k, v in os.environ.items() if k not in {"COMPASS_TOKEN", "XDG_CONFIG_HOME"}}
    if token:
        env["COMPASS_TOKEN"] = token
    if home is not None:
        env["HOME"] = str(home)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "compass_server.cli",
        *args,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin), timeout=60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()
