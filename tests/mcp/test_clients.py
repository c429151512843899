"""Real MCP clients, as published on npm, against `compass serve`'s /mcp: the TypeScript MCP
SDK's client, Gemini CLI, Claude Code (`claude -p`) and Codex (`codex exec`). The agents run
against scripted model servers on 127.0.0.1 (wire_models.py), every other request of theirs
sent to a proxy that refuses it (proxy.py), HOME in a temp dir; a person answers over
Connect-JSON, and each test asserts what the client (or the agent's next model request)
received.

Installed by scripts/ensure-npm (mcp-sdk, gemini, claude, codex; pinned in
tests/realagent/NAME/), failing loudly when npm cannot install them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
from typing import TYPE_CHECKING, Any

from tests.mcp import _mcp
from tests.mcp._mcp import Person, answer
from tests.realagent.acp_agents import CODEX_MODEL, claude_binary, ensure_npm
from tests.realagent.model_server import ToolCall, Turn
from tests.realagent.proxy import RefusingProxy
from tests.realagent.wire_models import AnthropicModel, GeminiModel, ResponsesModel

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable
    from pathlib import Path

    from tests import _server

CLIENT_SCRIPT = os.path.join(os.path.dirname(__file__), "ts_sdk_client.mjs")  # noqa: PTH118, PTH120 - a path for node

ASK = {
    "questions": [
        {
            "id": "db",
            "question": "Which database should the service use?",
            "options": [{"label": "Postgres"}, {"label": "SQLite"}],
        }
    ]
}


# -- the TypeScript SDK's client ------------------------------------------------------------


@contextlib.asynccontextmanager
async def ts_client(
    server: _server.RunningServer, token: str, *, timeout_ms: int, reset: bool
) -> AsyncGenerator[asyncio.subprocess.Process]:
    sdk = ensure_npm("mcp-sdk").parent / "@modelcontextprotocol" / "sdk"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "MCP_SDK_DIR": str(sdk),
        "MCP_URL": f"{server.url}mcp",
        "MCP_TOKEN": token,
        "MCP_TOOL": "ask",
        "MCP_ARGS": json.dumps({**ASK, "wait_seconds": 60}),
        "MCP_TIMEOUT_MS": str(timeout_ms),
        "MCP_RESET": "1" if reset else "0",
    }
    process = await asyncio.create_subprocess_exec(
        "node", CLIENT_SCRIPT, env=env, stdout=asyncio.subprocess.PIPE
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def _events(process: asyncio.subprocess.Process) -> AsyncGenerator[dict[str, Any]]:
    assert process.stdout is not None
    while line := await asyncio.wait_for(process.stdout.readline(), 60):
        yield json.loads(line)


async def _first(
    events: AsyncGenerator[dict[str, Any]], wanted: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    async for event in events:
        if wanted(event):
            return event
    raise AssertionError("the client ended first")


async def test_the_ts_sdk_client_outlives_its_timeout_because_progress_resets_it(
    server: _server.RunningServer, world: _server.SeededWorld, person: Person
) -> None:
    """The SDK's timeout (60 s by default, 2 s here: `RequestOptions.timeout`) restarts at
    each progress notification when `resetTimeoutOnProgress` is set, so a call waiting
    longer than it survives: the person answers only after 2.5 timeouts of waiting."""
    async with ts_client(server, world.agent.token, timeout_ms=2000, reset=True) as process:
        events = _events(process)
        first = await anext(events)
        assert first == {"event": "tools", "names": ["ask", "ask_wait", "ask_cancel"]}
        ask_id = await person.one_pending_id()
        waited = await _first(events, lambda e: e["event"] != "progress" or e["elapsed"] >= 5)
        assert waited["event"] == "progress", waited
        await person.respond(ask_id, answer("db", "1"))
        event = await _first(events, lambda e: e["event"] != "progress")
    assert event["event"] == "result", event
    assert event["elapsed"] >= 5.0
    result = event["result"]
    assert result["structuredContent"]["status"] == "answered"
    assert result["structuredContent"]["answers"][0]["chosen_labels"] == ["SQLite"]
    assert result["content"][0]["text"].startswith("User selected: SQLite")
    assert (await _mcp.until_delivered(server.dsn, ask_id))["delivery_state"] == "delivered"


async def test_without_the_reset_the_ts_sdk_times_out_and_the_ask_is_withdrawn(
    server: _server.RunningServer, world: _server.SeededWorld, person: Person
) -> None:
    """Its timeout sends `notifications/cancelled` in a POST of its own and stops reading:
    the call ends, and after the grace the ask is WITHDRAWN."""
    async with ts_client(server, world.agent.token, timeout_ms=2000, reset=False) as process:
        events = _events(process)
        await anext(events)
        ask_id = await person.one_pending_id()
        event = await _first(events, lambda e: e["event"] != "progress")
    assert event["event"] == "error", event
    assert event["code"] == -32001  # RequestTimeout
    assert 1.5 <= event["elapsed"] < 5.0
    stored = await _mcp.until_status(server.dsn, ask_id, "withdrawn")
    assert stored["close_reason"] == "agent stopped waiting"


# -- agent CLIs ------------------------------------------------------------------------------


async def _run_agent(
    argv: list[str], env: dict[str, str], cwd: Path, person: Person, choice: str
) -> tuple[str, str]:
    """Run an agent until it exits, answering its one ask with option `choice`."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        ask_id = await person.one_pending_id()
        await person.respond(ask_id, answer("db", choice))
        out, err = await asyncio.wait_for(process.communicate(), 180)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, err.decode()[-3000:]
    return ask_id, out.decode()


async def test_gemini_cli_reads_the_answer(
    server: _server.RunningServer, world: _server.SeededWorld, person: Person, tmp_path: Path
) -> None:
    bin_dir = ensure_npm("gemini")
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    (home / ".gemini").mkdir(parents=True)
    workspace.mkdir()
    script = [Turn.call("mcp_compass_ask", ASK, "call_1"), Turn.say("SQLite it is.")]
    with GeminiModel(script) as model, RefusingProxy() as proxy:
        # The settings docs/agents/mcp.md gives for Gemini CLI.
        settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "mcpServers": {
                "compass": {
                    "type": "http",
                    "url": f"{server.url}mcp",
                    "headers": {
                        "Authorization": f"Bearer {world.agent.token}",
                        "X-Compass-Wait-Seconds": "540",
                    },
                    "timeout": 600000,
                    "trust": True,
                }
            },
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
        }
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
        env = {
            "HOME": str(home),
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
            "GEMINI_API_KEY": "compass-test",
            "GOOGLE_GEMINI_BASE_URL": model.base_url,
            "GEMINI_CLI_NO_RELAUNCH": "true",
            "NO_COLOR": "1",
            **proxy.env(),
        }
        argv = [
            str(bin_dir / "gemini"),
            "-p",
            "Ask which database the service should use.",
            "--skip-trust",
            # A model named: no routing classifier (a side call to the model) first.
            "--model",
            "gemini-2.5-pro",
        ]
        ask_id, out = await _run_agent(argv, env, workspace, person, "1")
        turns = model.wait_for_turns(2)
    assert "mcp_compass_ask" in turns[0].tool_names()
    # Gemini CLI hands the model the text block alone, wrapped as untrusted context.
    assert turns[1].tool_result("call_1") == (
        "<untrusted_context>\n"
        "User selected: SQLite\n"
        "(answered by Ada in Compass)\n"
        "</untrusted_context>"
    )
    assert "SQLite it is." in out
    assert (await _mcp.until_delivered(server.dsn, ask_id))["delivery_state"] == "delivered"
    assert not any(r.path.startswith("/v1beta/models/gemini-3") for r in model.requests)


async def test_claude_code_reads_the_answer(
    server: _server.RunningServer, world: _server.SeededWorld, person: Person, tmp_path: Path
) -> None:
    claude = claude_binary(ensure_npm("claude"))
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    (home / ".claude").mkdir(parents=True)
    workspace.mkdir()
    script = [Turn.call("mcp__compass__ask", ASK, "toolu_1"), Turn.say("Postgres it is.")]
    with AnthropicModel(script) as model, RefusingProxy() as proxy:
        # The configuration docs/agents/mcp.md gives for Claude Code.
        config = tmp_path / "mcp.json"
        config.write_text(
            json.dumps(
                {
                    "mcpServers": {
                        "compass": {
                            "type": "http",
                            "url": f"{server.url}mcp",
                            "headers": {"Authorization": f"Bearer {world.agent.token}"},
                        }
                    }
                }
            )
        )
        env = {
            "HOME": str(home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "ANTHROPIC_BASE_URL": model.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-compass-test",
            "MCP_TOOL_TIMEOUT": "600000",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            **proxy.env(),
        }
        argv = [
            str(claude),
            "-p",
            "Ask which database the service should use.",
            "--mcp-config",
            str(config),
            "--strict-mcp-config",
            "--allowedTools",
            "mcp__compass__ask",
        ]
        ask_id, out = await _run_agent(argv, env, workspace, person, "0")
        turns = model.wait_for_turns(2)
    # Claude Code 2.1.318 defers MCP tools behind its ToolSearch tool: the model is told
    # their names in the request rather than sent their schemas.
    assert "ToolSearch" in turns[0].tool_names()
    assert "mcp__compass__ask" in json.dumps(turns[0].body)
    # Claude Code hands the model the structured content (JSON) when a result has it.
    read = json.loads(turns[1].tool_result("toolu_1"))
    assert read["status"] == "answered"
    assert read["ask_id"] == ask_id
    assert read["answers"][0]["chosen_labels"] == ["Postgres"]
    assert read["answered_by"] == "Ada"
    assert "Postgres it is." in out
    assert (await _mcp.until_delivered(server.dsn, ask_id))["delivery_state"] == "delivered"


# Codex 0.166.0 defers every MCP tool behind its client-side tool search (the feature
# `tool_search_always_defer_mcp_tools` is "removed, true": no setting brings them back): its
# request offers `{"type": "tool_search", "execution": "client"}` whose description names the
# MCP servers, the model calls it (`tool_search_call`), Codex answers with the matching tools
# in a namespace `mcp__<server>` (`tool_search_output`), and the model then calls `ask` in that
# namespace. That is what this script does.
CODEX_SCRIPT = [
    Turn.call("tool_search", {"query": "compass ask a person"}, "search_1"),
    Turn(tool_calls=(ToolCall("ask", ASK, "call_1", namespace="mcp__compass"),)),
    Turn.say("SQLite it is."),
]
CODEX_HOSTS = {"github.com", "api.github.com", "chatgpt.com"}
"""What Codex 0.166 tries to reach at start (plugins, remote config); refused by the proxy."""


def _codex(
    tmp_path: Path, mcp_url: str, token: str, model_url: str, proxy: RefusingProxy, *, approve: bool
) -> tuple[list[str], dict[str, str], Path]:
    """`codex exec` with the configuration docs/agents/mcp.md gives for
    Codex (`approve`: with its `default_tools_approval_mode = "approve"`), its model a
    loopback `responses` provider; argv, environment (from scratch), working directory."""
    bin_dir = ensure_npm("codex")
    home, codex_home, workspace = tmp_path / "home", tmp_path / "codex-home", tmp_path / "ws"
    for directory in (home, codex_home, workspace):
        directory.mkdir()
    (codex_home / "config.toml").write_text(
        f'model = "{CODEX_MODEL}"\n'
        'model_provider = "scripted"\n'
        "check_for_update_on_startup = false\n"
        "[model_providers.scripted]\n"
        'name = "scripted"\n'
        f'base_url = "{model_url}/v1"\n'
        'wire_api = "responses"\n'
        "requires_openai_auth = false\n"
        "[analytics]\n"
        "enabled = false\n"
        "[mcp_servers.compass]\n"
        f'url = "{mcp_url}"\n'
        'bearer_token_env_var = "COMPASS_TOKEN"\n'
        'http_headers = { "X-Compass-Wait-Seconds" = "240" }\n'
        "tool_timeout_sec = 300\n"
        + ('default_tools_approval_mode = "approve"\n' if approve else ""),
        encoding="utf-8",
    )
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "CODEX_HOME": str(codex_home),
        "COMPASS_TOKEN": token,
        "NO_COLOR": "1",
        **proxy.env(),
    }
    argv = [
        str(bin_dir / "codex"),
        "exec",
        "--json",
        "--skip-git-repo-check",
        "Ask which database the service should use.",
    ]
    return argv, env, workspace


def _codex_events(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def _mcp_output(text: str) -> str:
    """What Codex handed the model for an MCP call, without its `Wall time: <s> seconds`
    line (the one part that varies)."""
    match = re.fullmatch(r"Wall time: \d+(?:\.\d+)? seconds\nOutput:\n?(.*)", text, re.DOTALL)
    assert match, text
    return match.group(1)


async def test_codex_finds_the_ask_tool_by_its_tool_search_and_reads_the_answer(
    server: _server.RunningServer, world: _server.SeededWorld, person: Person, tmp_path: Path
) -> None:
    with ResponsesModel(CODEX_SCRIPT, model=CODEX_MODEL) as model, RefusingProxy() as proxy:
        argv, env, cwd = _codex(
            tmp_path, f"{server.url}mcp", world.agent.token, model.base_url, proxy, approve=True
        )
        ask_id, out = await _run_agent(argv, env, cwd, person, "1")
        turns = model.wait_for_turns(3)
    # The MCP tools are not offered: the tool search is, and the model is told the server's
    # instructions: in the search's description up to Codex 0.166 ("- compass: ..."), in a
    # `<tools>` developer message ("Deferred tool namespaces:\n- mcp__compass: ...") from 0.171.
    [search] = [tool for tool in turns[0].body["tools"] if tool["type"] == "tool_search"]
    assert search["execution"] == "client"
    instructions = "Compass puts your questions to the people"
    assert f"- compass: {instructions}" in search[
        "description"
    ] or f"- mcp__compass: {instructions}" in json.dumps(turns[0].body["input"]), (
        search["description"],
        turns[0].body["input"],
    )
    assert not {"ask", "mcp__compass__ask"} & set(turns[0].tool_names())
    # The search hands the model Compass's tools in the namespace it calls `ask` in.
    [found] = turns[1].tool_search_output("search_1")
    assert (found["type"], found["name"]) == ("namespace", "mcp__compass")
    assert {tool["name"] for tool in found["tools"]} == {"ask", "ask_wait", "ask_cancel"}
    # Codex hands the model the structured content (compact JSON, in the server's key
    # order) after its wall-time line.
    expected = {
        "status": "answered",
        "ask_id": ask_id,
        "answers": [
            {
                "question_id": "db",
                "chosen_labels": ["SQLite"],
                "chosen_option_ids": ["1"],
                "custom_text": "",
                "skipped": False,
                "timed_out": False,
            }
        ],
        "answered_by": "Ada",
        "link": f"{server.url}#/ask/{ask_id}",
    }
    read = _mcp_output(turns[2].tool_result("call_1"))
    assert read == json.dumps(expected, separators=(",", ":"))
    events = _codex_events(out)
    [call] = [
        e["item"]
        for e in events
        if e["type"] == "item.completed" and e["item"]["type"] == "mcp_tool_call"
    ]
    assert (call["server"], call["tool"], call["status"]) == ("compass", "ask", "completed")
    messages = [
        e["item"]["text"]
        for e in events
        if e["type"] == "item.completed" and e["item"]["type"] == "agent_message"
    ]
    assert messages == ["SQLite it is."]
    assert (await _mcp.until_delivered(server.dsn, ask_id))["delivery_state"] == "delivered"
    assert proxy.hosts() <= CODEX_HOSTS, proxy.refused


async def test_codex_exec_refuses_the_call_without_the_approval_setting(
    server: _server.RunningServer, world: _server.SeededWorld, tmp_path: Path
) -> None:
    """`codex exec` runs with approval policy "never", and Codex wants an approval for `ask`
    (not read-only, open-world in its annotations): without `default_tools_approval_mode =
    "approve"` the call fails in Codex and never reaches Compass."""
    with ResponsesModel(CODEX_SCRIPT, model=CODEX_MODEL) as model, RefusingProxy() as proxy:
        argv, env, cwd = _codex(
            tmp_path, f"{server.url}mcp", world.agent.token, model.base_url, proxy, approve=False
        )
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(process.communicate(), 180)
        assert process.returncode == 0, err.decode()[-3000:]
        turns = model.wait_for_turns(3)
    assert _mcp_output(turns[2].tool_result("call_1")) == (
        "MCP tool call requires approval, but approval policy is never"
    )
    asks = await _mcp.rows(
        server.dsn, "SELECT ask_id FROM asks WHERE channel_id = $1", world.channel_id
    )
    assert asks == []
