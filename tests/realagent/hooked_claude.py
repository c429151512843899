"""`claude -p` (the pinned Claude Code binary) with its hooks running `compass claude-hook`
(issue 28), written by `compass_bridge.claude.install.install` as `compass claude-hook
install` writes them; launched as acp_agents.py launches Claude Code (HOME in the temp dir,
telemetry off, the model and the refusing proxy given). Shared by test_claude_hooks.py and
bench/claude_hook_latency.py."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from typing import TYPE_CHECKING

from compass_bridge.claude.install import hook_command, install
from tests.realagent.acp_agents import claude_binary, claude_launch

if TYPE_CHECKING:
    from collections.abc import Generator, Mapping, Sequence
    from pathlib import Path

__all__ = ["hooked_claude"]


@contextlib.contextmanager
def hooked_claude(
    *,
    bin_dir: Path,
    tmp: Path,
    model_url: str,
    proxy_env: Mapping[str, str],
    server_url: str,
    channel_id: str,
    token: str,
    timeout: int = 600,
    args: Sequence[str] = (),
    prompt: str = "Help me set up the new service.",
) -> Generator[tuple[subprocess.Popen[bytes], Path]]:
    """`claude -p PROMPT [args]` with the hooks installed in its settings; yields the process
    and the file its output goes to (killed afterwards if still running)."""
    launch = claude_launch(bin_dir, tmp, model_url, dict(proxy_env))
    token_file = tmp / "agent.token"
    token_file.write_text(token + "\n", encoding="utf-8")
    command = hook_command(
        [sys.executable, "-m", "compass_server.cli"],
        server=server_url,
        channel_id=channel_id,
        token_file=token_file,
        timeout=timeout,
    )
    install(tmp / "home" / ".claude" / "settings.json", command, timeout)
    log = tmp / "claude.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(claude_binary(bin_dir)), "-p", prompt, *args],
            cwd=launch.cwd,
            env=launch.env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield process, log
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
