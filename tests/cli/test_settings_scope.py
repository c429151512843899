"""Only the server's own commands read the server's COMPASS_* settings."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


def _compass(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compass_server.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_bad_server_setting_fails_server_commands_but_not_the_bridge(tmp_path: Path) -> None:
    env = {**os.environ, "COMPASS_PORT": "not-a-port"}
    migrate = _compass("migrate", env=env)
    assert migrate.returncode == 1
    assert "COMPASS_PORT must be an integer" in migrate.stderr

    # The bridge gets as far as its own arguments: a missing token file (its exit 2).
    missing = tmp_path / "no-such-token"
    bridge = _compass(
        "agent-bridge",
        "--server",
        "http://127.0.0.1:9",
        "--channel",
        "ch_x",
        "--token-file",
        str(missing),
        env=env,
    )
    assert bridge.returncode == 2, bridge.stderr
    assert "COMPASS_PORT" not in bridge.stderr
    assert "token" in bridge.stderr.lower()
