"""GitHub Copilot CLI as published on npm (tests/realagent/copilot/, `scripts/ensure-npm
copilot`), for `compass agent-bridge --protocol copilot`: run headless under the SDK's
JSON-RPC by the bridge, pointed at a scripted OpenAI chat-completions model on 127.0.0.1
(wire_models.ChatModel) through Copilot's own BYOK variables, which the bridge hands its
session (`COPILOT_PROVIDER_BASE_URL`, `COPILOT_PROVIDER_API_KEY`, `COPILOT_MODEL`), with
`COPILOT_OFFLINE=true` (no GitHub at all), every other request sent to the refusing proxy
(proxy.py), HOME in a temp dir, the environment built from scratch. Shared by
test_copilot_native.py and bench/next_agents_copilot.py.

Set COMPASS_COPILOT_RECORD=DIR to write each run's JSON-RPC conversation to DIR/NAME.jsonl
(copilot_tee.py), e.g. to refresh tests/bridge/copilot/recorded/.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tests.realagent.acp_agents import REPO_ROOT, ensure_npm

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

__all__ = ["MODEL", "VERSION", "CopilotLaunch", "copilot_launch"]

MODEL = "scripted-model"
"""The model id Copilot is configured with (wire_models.ChatModel's default)."""
VERSION = "1.0.102"
"""The pinned @github/copilot (tests/realagent/copilot/package.json)."""


@dataclass(frozen=True)
class CopilotLaunch:
    """The agent command for the bridge (the bridge adds the server's flags), the
    environment of the bridge and so of the CLI, the working directory."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path


def copilot_launch(
    tmp: Path,
    model_url: str | None,
    proxy_env: Mapping[str, str],
    *,
    record_as: str = "",
) -> CopilotLaunch:
    """Copilot CLI for the bridge, HOME and the workspace under `tmp`; its model at
    `model_url` (None: no model provider, as a user with no GitHub login and no BYOK).
    With COMPASS_COPILOT_RECORD set, the CLI runs under copilot_tee (`record_as` names the
    file)."""
    bin_dir = ensure_npm("copilot")
    home, workspace = tmp / "home", tmp / "workspace"
    home.mkdir(parents=True, exist_ok=True)
    workspace.mkdir(parents=True, exist_ok=True)
    env = {
        "HOME": str(home),
        "PATH": os.pathsep.join([str(bin_dir), os.environ.get("PATH", "/usr/bin:/bin")]),
        "LANG": "C.UTF-8",
        "SHELL": "/bin/bash",
        "TMPDIR": tempfile.gettempdir(),
        "NO_COLOR": "1",
        "PYTHONPATH": str(REPO_ROOT),
        **proxy_env,
        # The test bed: no GitHub at all.
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
        # The package it unpacks on first run (about 240 MB), once per install instead of per
        # HOME (scripts/ensure-npm copilot's check unpacked it there).
        "COPILOT_PKG_CACHE_HOME": str(bin_dir.parent.parent / ".pkg-cache"),
    }
    if model_url is not None:
        # docs/agents/copilot-cli.md: Copilot's own BYOK variables, read by the bridge.
        env |= {
            "COPILOT_PROVIDER_BASE_URL": model_url,
            "COPILOT_PROVIDER_API_KEY": "compass-test",
            "COPILOT_MODEL": MODEL,
        }
    argv = [str(bin_dir / "copilot")]
    record = os.environ.get("COMPASS_COPILOT_RECORD")
    if record and record_as:
        out = f"{record}/{re.sub(r'[^A-Za-z0-9_.-]+', '-', record_as)}.jsonl"
        argv = [sys.executable, "-m", "tests.realagent.copilot_tee", out, "--", *argv]
    return CopilotLaunch(argv=argv, env=env, cwd=workspace)
