"""Qwen Code, OpenCode, GitHub Copilot CLI and Cline as published on npm, as MCP clients of
Compass's /mcp, each run headless for one prompt (`qwen -p`, `opencode run`, `copilot -p`,
`cline "..."`): installed by scripts/ensure-npm (pinned in tests/realagent/NAME/), pointed at
a scripted OpenAI chat-completions model on 127.0.0.1 (wire_models.ChatModel), every other
request sent to the refusing proxy (proxy.py), HOME in a temp dir, the environment built from
scratch (no key or setting of the caller leaks in). Shared by tests/mcp/test_next_agents.py
and bench/next_agents_mcp.py.

The Compass part of each configuration is what docs/agents/NAME.md gives, word for word, in
both of the forms it gives (`launch(..., command=True)`: the agent's own command):

- Qwen Code: `~/.qwen/settings.json` `mcpServers.compass` (`httpUrl`, `headers`, `timeout`),
  or `qwen mcp add`, and `permissions.allow: ["mcp__compass__ask"]` (without it `qwen -p`
  declines the call: "non-interactive mode cannot prompt for confirmation").
- OpenCode: `mcp.compass` (`type: "remote"`, `url`, `headers`) in `OPENCODE_CONFIG_CONTENT`
  or `~/.config/opencode/opencode.json`; `opencode run` allows MCP tools by default.
- Copilot CLI: `mcpServers.compass` (`type: "http"`, `url`, `headers`, `tools`) given with
  `--additional-mcp-config @FILE`, or `copilot mcp add` (~/.copilot/mcp-config.json), and
  `--allow-tool 'compass(ask)'` (without it: "Permission denied because no interactive user
  response was available").
- Cline: `~/.cline/data/settings/cline_mcp_settings.json` `mcpServers.compass`
  (`transport: {type: "streamableHttp", url, headers}`, `timeout` in seconds), or `cline mcp
  add` (no timeout: the defaults); a task runs auto-approved by default.

The rest is this test bed's, not Compass's: the model provider (Qwen: `OPENAI_BASE_URL` and
`security.auth.selectedType: "openai"`; OpenCode: a custom `@ai-sdk/openai-compatible`
provider; Copilot: `COPILOT_OFFLINE=true` and `COPILOT_PROVIDER_BASE_URL`; Cline: `cline auth
-p openai-compatible -b URL`), telemetry and update checks off.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from tests.realagent.acp_agents import ensure_npm

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

__all__ = ["AGENTS", "MODEL", "WAIT_SECONDS", "Launch", "McpAgent", "launch", "model_reads"]

MODEL = "scripted-model"
"""The model id every agent is configured with (wire_models.ChatModel's default)."""
WAIT_SECONDS = "540"
"""`X-Compass-Wait-Seconds`: each configuration's hold (under Qwen Code's and Cline's hard
per-call timeouts of 600 s; OpenCode and Copilot CLI restart theirs at each progress)."""

Name = Literal["qwen", "opencode", "copilot", "cline"]


@dataclass(frozen=True)
class McpAgent:
    """One agent: its ensure-npm folder, its name and version in words, and the name under
    which its model calls Compass's `ask`."""

    name: Name
    title: str
    tool: str


AGENTS: dict[Name, McpAgent] = {
    "qwen": McpAgent("qwen", "Qwen Code 0.24.4", "mcp__compass__ask"),
    "opencode": McpAgent("opencode", "OpenCode 1.18.33", "compass_ask"),
    "copilot": McpAgent("copilot", "Copilot CLI 1.0.102", "compass-ask"),
    "cline": McpAgent("cline", "Cline 3.0.65", "compass__ask"),
}


@dataclass(frozen=True)
class Launch:
    """`subprocess` arguments: the command, its environment (from scratch), its directory."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path


def _compass_headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "X-Compass-Wait-Seconds": WAIT_SECONDS}


def _base_env(bin_dir: Path, home: Path, proxy_env: Mapping[str, str]) -> dict[str, str]:
    return {
        "HOME": str(home),
        "PATH": os.pathsep.join([str(bin_dir), os.environ.get("PATH", "/usr/bin:/bin")]),
        "LANG": "C.UTF-8",
        "SHELL": "/bin/bash",
        "TMPDIR": tempfile.gettempdir(),
        "NO_COLOR": "1",
        **proxy_env,
    }


def launch(
    name: Name,
    tmp: Path,
    *,
    mcp_url: str,
    token: str,
    model_url: str,
    proxy_env: Mapping[str, str],
    prompt: str,
    command: bool = False,
) -> Launch:
    """How to run agent `name` headless for `prompt` with Compass at `mcp_url` (the agent's
    `token`), its model at `model_url`; HOME and the workspace under `tmp`. With `command`,
    Compass is added by the agent's own command as the doc gives it (`qwen mcp add`, `copilot
    mcp add`, `cline mcp add`; for OpenCode its global config file) instead of the JSON the
    doc gives first."""
    home, workspace = tmp / "home", tmp / "workspace"
    home.mkdir(parents=True, exist_ok=True)
    workspace.mkdir(parents=True, exist_ok=True)
    bin_dir = ensure_npm(name)
    env = _base_env(bin_dir, home, proxy_env)
    agent = _Setup(bin_dir, tmp, home, workspace, env, mcp_url, token, command)
    if name == "qwen":
        return _qwen(agent, model_url, prompt)
    if name == "opencode":
        return _opencode(agent, model_url, prompt)
    if name == "copilot":
        return _copilot(agent, model_url, prompt)
    return _cline(agent, model_url, prompt)


@dataclass(frozen=True)
class _Setup:
    bin_dir: Path
    tmp: Path
    home: Path
    workspace: Path
    env: dict[str, str]
    mcp_url: str
    token: str
    command: bool

    def run(self, *argv: str) -> None:
        """Run the agent's own configuration command (in the fresh HOME); it must succeed."""
        done = subprocess.run(
            [str(self.bin_dir / argv[0]), *argv[1:]],
            env=self.env,
            cwd=self.workspace,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{argv[:3]} failed ({done.returncode}):\n{done.stdout}{done.stderr}"
            )


def _qwen(agent: _Setup, model_url: str, prompt: str) -> Launch:
    settings: dict[str, Any] = {
        # docs/agents/qwen-code.md
        "mcpServers": {
            "compass": {
                "httpUrl": agent.mcp_url,
                "headers": _compass_headers(agent.token),
                "timeout": 600000,
            }
        },
        "permissions": {"allow": ["mcp__compass__ask"]},
        # The test bed: the loopback model, and no usage statistics (Qwen Code sends them to
        # Alibaba Cloud's RUM unless told not to).
        "security": {"auth": {"selectedType": "openai"}},
        "privacy": {"usageStatisticsEnabled": False},
    }
    if agent.command:
        del settings["mcpServers"]
    (agent.home / ".qwen").mkdir(exist_ok=True)
    (agent.home / ".qwen" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    if agent.command:
        agent.run(
            *("qwen", "mcp", "add", "--scope", "user", "--transport", "http"),
            *("compass", agent.mcp_url, "--timeout", "600000"),
            *("-H", f"Authorization: Bearer {agent.token}"),
            *("-H", f"X-Compass-Wait-Seconds: {WAIT_SECONDS}"),
        )
    env = agent.env | {
        "OPENAI_BASE_URL": model_url,
        "OPENAI_API_KEY": "compass-test",
        "OPENAI_MODEL": MODEL,
    }
    return Launch([str(agent.bin_dir / "qwen"), "-p", prompt], env, agent.workspace)


def _opencode(agent: _Setup, model_url: str, prompt: str) -> Launch:
    # docs/agents/opencode.md
    compass = {
        "$schema": "https://opencode.ai/config.json",
        "mcp": {
            "compass": {
                "type": "remote",
                "url": agent.mcp_url,
                "headers": _compass_headers(agent.token),
            }
        },
    }
    # The test bed: the loopback model as a custom provider, no update, no sharing.
    config: dict[str, Any] = {
        "provider": {
            "scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted",
                "options": {"baseURL": model_url, "apiKey": "compass-test"},
                "models": {MODEL: {"name": "Scripted model"}},
            }
        },
        "model": f"scripted/{MODEL}",
        "autoupdate": False,
        "share": "disabled",
    }
    if agent.command:
        # The global config file; OpenCode merges it with OPENCODE_CONFIG_CONTENT.
        (agent.home / ".config" / "opencode").mkdir(parents=True, exist_ok=True)
        path = agent.home / ".config" / "opencode" / "opencode.json"
        path.write_text(json.dumps(compass), encoding="utf-8")
    else:
        config |= compass
    env = agent.env | {
        "OPENCODE_CONFIG_CONTENT": json.dumps(config),
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    }
    return Launch([str(agent.bin_dir / "opencode"), "run", prompt], env, agent.workspace)


def _copilot(agent: _Setup, model_url: str, prompt: str) -> Launch:
    argv = [str(agent.bin_dir / "copilot"), "-p", prompt, "--allow-tool", "compass(ask)"]
    env = agent.env | {
        # The test bed: no GitHub at all, the loopback model.
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": model_url,
        "COPILOT_PROVIDER_API_KEY": "compass-test",
        "COPILOT_MODEL": MODEL,
        "COPILOT_AUTO_UPDATE": "false",
        # The package it unpacks on first run (about 240 MB), once per install instead of per
        # HOME (scripts/ensure-npm copilot's check unpacked it there).
        "COPILOT_PKG_CACHE_HOME": str(agent.bin_dir.parent.parent / ".pkg-cache"),
    }
    # docs/agents/copilot-cli.md
    if agent.command:
        # Writes ~/.copilot/mcp-config.json.
        agent.run(
            *("copilot", "mcp", "add", "--transport", "http", "compass", agent.mcp_url),
            *("--header", f"Authorization: Bearer {agent.token}"),
            *("--header", f"X-Compass-Wait-Seconds: {WAIT_SECONDS}"),
        )
        return Launch(argv, env, agent.workspace)
    config = {
        "mcpServers": {
            "compass": {
                "type": "http",
                "url": agent.mcp_url,
                "headers": _compass_headers(agent.token),
                "tools": ["*"],
            }
        }
    }
    path = agent.tmp / "mcp-config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return Launch([*argv, "--additional-mcp-config", f"@{path}"], env, agent.workspace)


def _cline(agent: _Setup, model_url: str, prompt: str) -> Launch:
    settings = agent.home / ".cline" / "data" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    # The test bed: no telemetry (PostHog feature flags at data.cline.bot are still fetched,
    # and refused), no update check, the loopback model set as `cline auth` sets it.
    global_settings = {"telemetryOptOut": True, "autoUpdateEnabled": False}
    (settings / "global-settings.json").write_text(json.dumps(global_settings))
    env = agent.env | {"CLINE_NO_AUTO_UPDATE": "1"}
    setup = dataclasses.replace(agent, env=env)
    setup.run(
        *("cline", "auth", "-p", "openai-compatible"),
        *("-k", "compass-test", "-m", MODEL, "-b", model_url),
    )
    # docs/agents/cline.md
    if agent.command:
        # Cline's own command: no timeout setting, so its 60 s per call and Compass's
        # default 50 s hold (no X-Compass-Wait-Seconds).
        setup.run(
            *("cline", "mcp", "add", "compass", agent.mcp_url, "--transport", "streamable-http"),
            *("--header", f"Authorization: Bearer {agent.token}", "--yes"),
        )
    else:
        servers = {
            "mcpServers": {
                "compass": {
                    "transport": {
                        "type": "streamableHttp",
                        "url": agent.mcp_url,
                        "headers": _compass_headers(agent.token),
                    },
                    "timeout": 600,
                }
            }
        }
        path = settings / "cline_mcp_settings.json"
        path.write_text(json.dumps(servers), encoding="utf-8")
    return Launch([str(agent.bin_dir / "cline"), prompt], env, agent.workspace)


def model_reads(name: Name, structured: Mapping[str, Any], text: str) -> str:
    """The exact tool result each agent hands its model for a result of Compass's `ask`
    (`structuredContent` and its one text block), as read from their code and checked by
    tests/mcp/test_next_agents.py:

    - Qwen Code: the structured content as compact JSON, a newline, the text
      (`transformMcpContentToParts` puts `JSON.stringify(structuredContent)` first);
    - OpenCode: the text block alone;
    - Copilot CLI: the text, a blank line, the structured content as compact JSON;
    - Cline: the whole CallToolResult as compact JSON (`content`, `structuredContent`,
      `isError`).
    """
    compact = json.dumps(structured, separators=(",", ":"), ensure_ascii=False)
    if name == "qwen":
        return f"{compact}\n{text}"
    if name == "opencode":
        return text
    if name == "copilot":
        return f"{text}\n\n{compact}"
    whole = {
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": False,
    }
    return json.dumps(whole, separators=(",", ":"), ensure_ascii=False)
