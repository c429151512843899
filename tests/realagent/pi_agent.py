"""pi (`@mariozechner/pi-coding-agent`, pinned in tests/realagent/pi/, installed by
scripts/ensure-npm pi) in its RPC mode, with Compass's question extension
(compass_bridge/omp/pi_extension/ask_user.ts), for `compass agent-bridge --protocol rpc --
pi --mode rpc`: shared by test_roundtrip_pi.py, pi_record.py and bench/ask_latency.py.

What is Compass's here is what docs/agents/pi.md gives: `pi --mode rpc -e ask_user.ts` (or
the file in `~/.pi/agent/extensions/`). The rest is this test bed's: the model is a custom
provider in `~/.pi/agent/models.json` (`api: "openai-completions"` at the scripted
chat-completions server, model_server.ScriptedModelServer), `--offline` (no startup network
operations: pi's version check and package updates), `--no-session`, HOME in a temp dir,
the environment built from scratch with every proxy variable at the refusing proxy (or at
the scripted server, which records and refuses proxy-form requests too).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tests.realagent.acp_agents import REPO_ROOT, ensure_npm
from tests.realagent.harness import bridge_process
from tests.realagent.model_server import ScriptedModelServer

if TYPE_CHECKING:
    from collections.abc import Generator, Sequence
    from pathlib import Path

    from tests import _server
    from tests.realagent.harness import Run
    from tests.realagent.model_server import Turn

__all__ = [
    "ASK_USER_TS",
    "MODEL",
    "PROVIDER",
    "PiLaunch",
    "pi_bridge_run",
    "pi_launch",
    "write_pi_config",
]

ASK_USER_TS = REPO_ROOT / "compass_bridge" / "omp" / "pi_extension" / "ask_user.ts"
"""Compass's question extension for pi, as shipped."""
PROVIDER = "scripted"
MODEL = "scripted-model"
VERSION = "0.73.1"
"""The pinned version (tests/realagent/pi/package.json)."""


def write_pi_config(home: Path, base_url: str) -> Path:
    """`~/.pi/agent/models.json`: one `openai-completions` provider at `base_url`; returns
    the agent directory."""
    agent_dir = home / ".pi" / "agent"
    agent_dir.mkdir(parents=True, exist_ok=True)
    models = {
        "providers": {
            PROVIDER: {
                "baseUrl": base_url,
                "api": "openai-completions",
                "apiKey": "compass-test-key",
                "models": [
                    {
                        "id": MODEL,
                        "name": "Scripted model",
                        "reasoning": False,
                        "input": ["text"],
                        "contextWindow": 128000,
                        "maxTokens": 4096,
                    }
                ],
            }
        }
    }
    (agent_dir / "models.json").write_text(json.dumps(models, indent=2) + "\n")
    return agent_dir


@dataclass(frozen=True)
class PiLaunch:
    """`subprocess` arguments for pi: its command, its environment (from scratch), its cwd."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path


def pi_launch(
    *,
    home: Path,
    workspace: Path,
    proxy_url: str,
    extensions: Sequence[Path] = (ASK_USER_TS,),
    bin_dir: Path | None = None,
) -> PiLaunch:
    """`pi --mode rpc` with HOME at `home`, cwd `workspace`, each of `extensions` loaded
    with `-e`, every proxy variable at `proxy_url` (loopback excepted)."""
    bin_dir = bin_dir or ensure_npm("pi")
    loopback = "127.0.0.1,localhost,::1"
    env = {
        "HOME": str(home),
        "PATH": os.pathsep.join([str(bin_dir), os.environ.get("PATH", "/usr/bin:/bin")]),
        "LANG": "C.UTF-8",
        "SHELL": "/bin/bash",
        "TMPDIR": tempfile.gettempdir(),
        "NO_COLOR": "1",
        "PI_OFFLINE": "1",
        "NO_PROXY": loopback,
        "no_proxy": loopback,
    }
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = proxy_url
        env[name.lower()] = proxy_url
    argv = [
        str(bin_dir / "pi"),
        "--mode",
        "rpc",
        "--offline",
        "--no-session",
        "--provider",
        PROVIDER,
        "--model",
        MODEL,
    ]
    for extension in extensions:
        argv += ["-e", str(extension)]
    return PiLaunch(argv=argv, env=env, cwd=workspace)


@contextlib.contextmanager
def pi_bridge_run(
    *,
    tmp_path: Path,
    server_url: str,
    world: _server.SeededWorld,
    turns: Sequence[Turn],
    extensions: Sequence[Path] = (ASK_USER_TS,),
    installed: Sequence[Path] = (),
    runtime_prefix: Sequence[str] = (),
) -> Generator[Run]:
    """Start the scripted model (`turns`), then `compass agent-bridge --protocol rpc --prompt
    ... -- pi --mode rpc -e ...` (`extensions` given with `-e`, `installed` copied into
    `~/.pi/agent/extensions/` as docs/agents/pi.md says; `runtime_prefix` before pi's
    command: a wrapper such as bench/_stdin_tap.py). Afterwards pi must have reached nothing
    but the model."""
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    with ScriptedModelServer(turns) as model:
        agent_dir = write_pi_config(home, model.base_url)
        for extension in installed:
            (agent_dir / "extensions").mkdir(exist_ok=True)
            shutil.copy(extension, agent_dir / "extensions" / extension.name)
        launch = pi_launch(
            home=home,
            workspace=workspace,
            proxy_url=f"http://127.0.0.1:{model.port}",
            extensions=extensions,
        )
        with bridge_process(
            agent=[*runtime_prefix, *launch.argv],
            env=launch.env,
            cwd=launch.cwd,
            tmp_path=tmp_path,
            server_url=server_url,
            world=world,
            protocol="rpc",
            model=model,
        ) as run:
            yield run
        if model.outbound:
            raise AssertionError(f"pi reached past the model: {model.outbound}")
