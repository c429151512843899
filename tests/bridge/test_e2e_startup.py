"""The bridge checks its token and channel before it starts the runtime (issue 12): a
person's token, an unknown channel, or a channel the agent is not in stop it at once with
exit code 2 and one line saying which (never the token), and the runtime is never started.
A real server and database; the fake runtime would touch a file if it ever ran."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from tests.bridge._checks import CASES, wrong_connection
from tests.bridge._harness import start_bridge, wait_exit

if TYPE_CHECKING:
    from pathlib import Path

    from tests._server import RunningServer, SeededWorld

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


@pytest.mark.parametrize("case", CASES)
async def test_a_wrong_token_or_channel_stops_the_bridge_before_the_runtime(
    module_server: RunningServer, world: SeededWorld, tmp_path: Path, case: str
) -> None:
    token, channel, expected = await wrong_connection(module_server, world, case)
    ran = tmp_path / "runtime-ran"
    with start_bridge(
        server_url=module_server.url,
        channel_id=channel,
        token=token,
        steps=[{"touch": str(ran)}],
        workdir=tmp_path,
    ) as bridge:
        code = await wait_exit(bridge, 30)
        log = bridge.log()
    assert code == 2, log
    assert f"compass agent-bridge: {expected}" in log, log
    assert token not in log
    await asyncio.sleep(0.2)
    assert not ran.exists(), "the runtime was started"
