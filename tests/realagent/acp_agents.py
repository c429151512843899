"""Claude Code, Codex and Qwen Code as published on npm, over ACP, for `compass agent-bridge --protocol
acp`: installed (scripts/ensure-npm, pinned in tests/realagent/claude/ and codex/), pointed at
a scripted model on 127.0.0.1 (wire_models.py), every other request sent to a refusing
proxy (proxy.py), telemetry, update checks and auto-updates off, HOME and config dirs in a
temp dir, the environment built from scratch (no key or setting of the caller leaks in).

- Claude Code: `claude-agent-acp` (the adapter; it runs the Claude Code binary of
  `@anthropic-ai/claude-agent-sdk-linux-x64`), `ANTHROPIC_BASE_URL` at the model and a
  dummy `ANTHROPIC_API_KEY`. `IS_SANDBOX` is never set: as root with it set, the adapter
  offers bypassPermissions and Claude Code refuses the flag that comes with it as root. It
  starts in `auto` (a classifier decides permissions, nothing reaches the client): the
  bridge runs it with `--mode default` (Manual).
- Codex: `codex-acp` (it runs the codex binary of `@openai/codex`'s linux-x64 package) with
  `$CODEX_HOME/config.toml` naming a loopback `responses` provider, and
  `default_mode_request_user_input` on so `request_user_input` is offered outside plan
  mode; the bridge runs it with `--mode read-only`, so approvals reach the client.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tests.realagent.installs import REPO_ROOT, ensure_npm

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "AgentLaunch",
    "claude_answered",
    "claude_binary",
    "claude_launch",
    "codex_launch",
    "ensure_npm",
    "qwen_launch",
]

QWEN_MODEL = "scripted-model"
"""The model id Qwen Code is configured with (wire_models.ChatModel's default)."""
CODEX_MODEL = "gpt-5.5"
"""A model Codex 0.166 has metadata for (another name makes it warn in the conversation)."""


@dataclass(frozen=True)
class AgentLaunch:
    """The agent command for the bridge, its environment, its working directory, and the
    bridge's own options it needs (`--mode ...`)."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    bridge_args: list[str]


def _base_env(bin_dir: Path, home: Path, proxy_env: dict[str, str]) -> dict[str, str]:
    path = os.pathsep.join([str(bin_dir), os.environ.get("PATH", "/usr/bin:/bin")])
    return {
        "HOME": str(home),
        "PATH": path,
        "LANG": "C.UTF-8",
        "SHELL": "/bin/bash",
        "TMPDIR": tempfile.gettempdir(),
        "NO_COLOR": "1",
        "PYTHONPATH": str(REPO_ROOT),
        **proxy_env,
    }


def claude_launch(
    bin_dir: Path, tmp: Path, model_url: str, proxy_env: dict[str, str]
) -> AgentLaunch:
    home = tmp / "home"
    workspace = tmp / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    env = {
        **_base_env(bin_dir, home, proxy_env),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": model_url,
        "ANTHROPIC_API_KEY": "sk-ant-compass-test",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    return AgentLaunch(
        argv=[str(bin_dir / "claude-agent-acp")],
        env=env,
        cwd=workspace,
        bridge_args=["--mode", "default"],
    )


def claude_binary(bin_dir: Path) -> Path:
    """The Claude Code binary itself (for `claude -p`), from the SDK's linux-x64 package
    installed beside the adapter in `bin_dir`'s node_modules."""
    return bin_dir.parent / "@anthropic-ai" / "claude-agent-sdk-linux-x64" / "claude"


def claude_answered(pairs: str, *, own_words: bool = False) -> str:
    """Claude Code 2.1.318's AskUserQuestion result: one wording when every answer is an
    offered label, another when one is the person's own text (or carries a note)."""
    if own_words:
        return (
            f"The user answered: {pairs}. Read the answers carefully \u2014 they may request "
            "clarification, changes, or that you not proceed \u2014 and follow what they "
            "actually say."
        )
    return (
        f"Your questions have been answered: {pairs}. "
        "You can now continue with these answers in mind."
    )


def codex_launch(
    bin_dir: Path, tmp: Path, model_url: str, proxy_env: dict[str, str]
) -> AgentLaunch:
    home = tmp / "home"
    codex_home = tmp / "codex-home"
    workspace = tmp / "workspace"
    for directory in (home, codex_home, workspace):
        directory.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f'model = "{CODEX_MODEL}"\n'
        'model_provider = "scripted"\n'
        "check_for_update_on_startup = false\n"
        "[model_providers.scripted]\n"
        'name = "scripted"\n'
        f'base_url = "{model_url}/v1"\n'
        'wire_api = "responses"\n'
        "requires_openai_auth = false\n"
        "[features]\n"
        "default_mode_request_user_input = true\n"
        "[analytics]\n"
        "enabled = false\n",
        encoding="utf-8",
    )
    env = {
        **_base_env(bin_dir, home, proxy_env),
        "CODEX_HOME": str(codex_home),
        "NO_BROWSER": "1",
    }
    return AgentLaunch(
        argv=[str(bin_dir / "codex-acp")],
        env=env,
        cwd=workspace,
        bridge_args=["--mode", "read-only"],
    )


def qwen_launch(bin_dir: Path, tmp: Path, model_url: str, proxy_env: dict[str, str]) -> AgentLaunch:
    home = tmp / "home"
    workspace = tmp / "workspace"
    for directory in (home / ".qwen", workspace):
        directory.mkdir(parents=True, exist_ok=True)
    settings = {
        "security": {"auth": {"selectedType": "openai"}},
        # Qwen Code sends usage statistics to Alibaba Cloud's RUM unless told not to.
        "privacy": {"usageStatisticsEnabled": False},
    }
    (home / ".qwen" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    env = {
        **_base_env(bin_dir, home, proxy_env),
        "OPENAI_BASE_URL": model_url,
        "OPENAI_API_KEY": "compass-test",
        "OPENAI_MODEL": QWEN_MODEL,
    }
    return AgentLaunch(
        argv=[str(bin_dir / "qwen"), "--acp"],
        env=env,
        cwd=workspace,
        # Qwen Code starts in `auto` (a classifier decides permissions); in `default` every
        # shell command is asked. Its ask_user_question is asked in every mode.
        bridge_args=["--mode", "default"],
    )
