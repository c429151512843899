"""`compass agent-bridge --protocol acp -- PROGRAM` where PROGRAM is not an ACP agent (issue 33
N6): the person gets one line saying that PROGRAM did not answer the ACP initialize request,
and why, and exit status 1 (the agent stopped the bridge: compass_bridge/process.py), never a
library traceback. Before the fix `-- ls /` printed 398 lines (27 tracebacks), `-- yes` an
endless stream of them, and `-- sleep 1000` waited forever.

Each program here writes nothing to stderr itself, so every stderr line is the bridge's.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pathlib import Path

    from tests import _server

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

INITIALIZE_SECONDS_HERE = 2.0
"""The initialize deadline this test gives the bridge (the product's is INITIALIZE_SECONDS)."""

# `compass` with a short initialize deadline: the silent program's case would otherwise take
# the product's full minute.
_COMPASS = (
    "import sys; import compass_bridge.acp.process as p; "
    f"p.INITIALIZE_SECONDS = {INITIALIZE_SECONDS_HERE}; "
    "from compass_server.cli import entry; sys.argv[0] = 'compass'; entry()"
)


def _bridge(
    server: _server.RunningServer, world: _server.SeededWorld, tmp_path: Path, *agent: str
) -> tuple[int, list[str], float]:
    token = tmp_path / "agent.token"
    token.write_text(world.agent.token + "\n")
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable, "-c", _COMPASS, "agent-bridge", "--protocol", "acp",
            "--server", server.url, "--channel", world.channel_id, "--token-file", str(token),
            "--prompt", "hello", "--", *agent,
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )  # fmt: skip
    return done.returncode, done.stderr.splitlines(), time.monotonic() - started


@pytest.mark.parametrize(
    ("agent", "why"),
    [
        # Echoes the initialize request back: an agent never sends `initialize`.
        (["cat"], "it answered with an error: Method not found"),
        # Valid JSON, not a JSON-RPC message (the library called `.get` on an int).
        ([sys.executable, "-c", "print(1)"], "it wrote '1', which is not an ACP message"),
        # Lines of text, then exit.
        (
            [sys.executable, "-c", "for i in range(30): print('file', i)"],
            "it wrote 'file 0', which is not an ACP message",
        ),
        # Text without end (`yes`): stopped at its first line.
        (
            [sys.executable, "-c", "while True: print('y', flush=True)"],
            "it wrote 'y', which is not an ACP message",
        ),
        # Exits at once, having read nothing.
        (["true"], "it exited (exit code 0) without answering"),
        # Reads its input and never answers.
        (["sleep", "1000"], f"no answer within {INITIALIZE_SECONDS_HERE:g} s"),
    ],
    ids=["cat", "print-1", "text-then-exit", "endless-text", "true", "silent"],
)
def test_a_program_that_is_not_an_acp_agent_gets_one_line(
    agent: list[str],
    why: str,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
    tmp_path: Path,
) -> None:
    code, stderr, seconds = _bridge(module_server, world, tmp_path, *agent)
    print(f"-- {' '.join(agent)}: exit {code}, {len(stderr)} stderr line(s), {seconds:.1f} s")  # noqa: T201 - the figure, with -s
    assert code == 1, stderr
    assert len(stderr) == 1, "\n".join(stderr)
    assert stderr[0].startswith(f"compass agent-bridge: {shlex.join(agent)[:40]}"), stderr
    assert "did not answer the ACP initialize request: " in stderr[0], stderr
    assert why in stderr[0], stderr
