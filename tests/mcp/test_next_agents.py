"""The next agents people use, as published on npm, against `compass serve`'s /mcp (issue 34):
Qwen Code (`qwen -p`), OpenCode (`opencode run`), GitHub Copilot CLI (`copilot -p`) and Cline
(`cline "..."`), each configured as docs/agents/NAME.md says (tests/realagent/mcp_agents.py),
its model a scripted chat-completions server on 127.0.0.1 (wire_models.ChatModel), every other
request refused by a loopback proxy, HOME in a temp dir.

The model calls the agent's name for Compass's `ask` with a two-question ask (the second a
multi-select); a person answers (or declines) over Connect-JSON as the browser does; the test
asserts the exact tool result the agent handed its model on its next request, and the
delivery receipt Compass stored (DELIVERED, with what the client was handed).

Installed by scripts/ensure-npm (qwen, opencode, copilot, cline), failing loudly when npm
cannot install them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import TYPE_CHECKING, Any

import pytest

from tests import _procs
from tests.mcp import _mcp
from tests.mcp._mcp import Person, answer
from tests.realagent.mcp_agents import AGENTS, launch, model_reads
from tests.realagent.model_server import Turn
from tests.realagent.proxy import RefusingProxy
from tests.realagent.wire_models import ChatModel

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator
    from pathlib import Path

    from tests import _server
    from tests.realagent.mcp_agents import Name
    from tests.realagent.wire_models import ModelRequest

PROMPT = "Ask which database the service should use and which auth flows ship."

REFUSED_HOSTS: dict[str, set[str]] = {
    "qwen": set(),
    # OpenCode installs its plugin SDK (@opencode-ai/plugin) into its config directory in
    # the background at every start; offline that fails, harmlessly ("background dependency
    # install failed").
    "opencode": {"registry.npmjs.org"},
    "copilot": set(),
    # Cline fetches PostHog feature flags even with telemetry opted out.
    "cline": {"data.cline.bot"},
}
"""What each agent tried to reach outside 127.0.0.1 (refused), with telemetry off."""

AGENT_START_SECONDS = 120.0
"""How long an agent may take to start and make its first model request before it asks: a
Node.js agent's start-up alone took over 20 s on a loaded 2-core machine (a wait fails at
once if the agent exits first)."""
DECLINED = "Ada declined to answer (not now). Do not ask the same again; carry on without it."
ANSWERED = "User answers:\ndb: Postgres\nfeatures: [Email, SSO]\n(answered by Ada in Compass)"


def _answered(ask_id: str, link: str) -> dict[str, Any]:
    """The structuredContent of the answer the tests give: Postgres; Email and SSO."""
    return {
        "status": "answered",
        "ask_id": ask_id,
        "answers": [
            {
                "question_id": "db",
                "chosen_labels": ["Postgres"],
                "chosen_option_ids": ["0"],
                "custom_text": "",
                "skipped": False,
                "timed_out": False,
            },
            {
                "question_id": "features",
                "chosen_labels": ["Email", "SSO"],
                "chosen_option_ids": ["0", "2"],
                "custom_text": "",
                "skipped": False,
                "timed_out": False,
            },
        ],
        "answered_by": "Ada",
        "link": link,
    }


def _declined(ask_id: str, link: str) -> dict[str, Any]:
    return {
        "status": "declined",
        "ask_id": ask_id,
        "answers": [],
        "answered_by": "Ada",
        "link": link,
        "close_reason": "not now",
    }


@contextlib.asynccontextmanager
async def _agent_run(
    name: Name,
    server: _server.RunningServer,
    world: _server.SeededWorld,
    tmp_path: Path,
    *,
    command: bool = False,
) -> AsyncGenerator[tuple[asyncio.subprocess.Process, ChatModel, RefusingProxy]]:
    """The agent running PROMPT, its model scripted to call `ask` with _mcp.TWO then say
    "All set."; killed afterwards if still running."""
    script = [Turn.call(AGENTS[name].tool, _mcp.TWO, "call_1"), Turn.say("All set.")]
    with ChatModel(script) as model, RefusingProxy() as proxy:
        run = launch(
            name,
            tmp_path,
            mcp_url=f"{server.url}mcp",
            token=world.agent.token,
            model_url=model.base_url,
            proxy_env=proxy.env(),
            prompt=PROMPT,
            command=command,
        )
        process = await asyncio.create_subprocess_exec(
            *run.argv,
            cwd=run.cwd,
            env=run.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            yield process, model, proxy
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
            _procs.stop_strays(tmp_path)  # Cline's hub daemon outlives the run otherwise


async def _finish(process: asyncio.subprocess.Process) -> str:
    out, err = await asyncio.wait_for(process.communicate(), 180)
    assert process.returncode == 0, (out + err).decode()[-3000:]
    return out.decode()


def _read(model: ChatModel, name: Name) -> ModelRequest:
    """The model request after the ask (the second main-loop request), once the first one is
    seen to offer Compass's `ask`."""
    turns = model.wait_for_turns(2)
    tool = AGENTS[name].tool
    if name == "qwen":
        # Qwen Code defers MCP tools behind its `tool_search`: the request names them in
        # the system prompt instead of sending their schemas (the call works all the same).
        assert "tool_search" in turns[0].tool_names()
        assert tool in json.dumps(turns[0].body)
    else:
        assert tool in turns[0].tool_names()
    return turns[1]


def _variants() -> list[Any]:
    return [pytest.param(name, id=name) for name in AGENTS]


@pytest.mark.parametrize("name", _variants())
async def test_the_model_reads_every_answer(
    name: Name,
    server: _server.RunningServer,
    world: _server.SeededWorld,
    person: Person,
    tmp_path: Path,
) -> None:
    async with _agent_run(name, server, world, tmp_path) as (process, model, proxy):
        ask_id = await person.one_pending_id(within=AGENT_START_SECONDS, agent=process)
        await person.respond(ask_id, answer("db", "0"), answer("features", "0", "2"))
        out = await _finish(process)
        read = _read(model, name).tool_result("call_1")
    link = f"{server.url}#/ask/{ask_id}"
    structured = _answered(ask_id, link)
    assert read == model_reads(name, structured, ANSWERED)
    assert "All set." in out
    stored = await _mcp.until_delivered(server.dsn, ask_id)
    assert stored["status"] == "answered"
    assert stored["delivery_state"] == "delivered"
    assert json.loads(stored["delivery_payload"]) == {
        "structuredContent": structured,
        "content": [{"type": "text", "text": ANSWERED}],
    }
    assert proxy.hosts() <= REFUSED_HOSTS[name], proxy.refused


@pytest.mark.parametrize("name", _variants())
async def test_the_model_reads_the_decline(
    name: Name,
    server: _server.RunningServer,
    world: _server.SeededWorld,
    person: Person,
    tmp_path: Path,
) -> None:
    # Configured the other way each doc gives (`qwen mcp add`, OpenCode's global config
    # file, `copilot mcp add`, `cline mcp add`), so both are verified.
    async with _agent_run(name, server, world, tmp_path, command=True) as (process, model, _):
        ask_id = await person.one_pending_id(within=AGENT_START_SECONDS, agent=process)
        await person.decline(ask_id, "not now")
        await _finish(process)
        read = _read(model, name).tool_result("call_1")
    link = f"{server.url}#/ask/{ask_id}"
    assert read == model_reads(name, _declined(ask_id, link), DECLINED)
    stored = await _mcp.until_delivered(server.dsn, ask_id)
    assert (stored["status"], stored["delivery_state"]) == ("declined", "delivered")
    assert json.loads(stored["delivery_payload"])["content"][0]["text"] == DECLINED


async def test_a_call_held_past_the_watch_keepalive_still_returns_the_answer(
    server: _server.RunningServer, world: _server.SeededWorld, person: Person
) -> None:
    """Measured with all four agents holding 300 s and a person answering after 130 s: each
    model read "No answer yet (ask_id ). ... call ask_wait with {"ask_id": ""}" after 30 s.
    Shown here with the mcp SDK's own client: the person answers 32 s in."""
    async with _mcp.agent(server, world.agent.token) as client:
        call = asyncio.create_task(
            client.call_tool(
                "ask", {**_mcp.one_question("Held past the keepalive?"), "wait_seconds": 60}
            )
        )
        ask_id = await person.one_pending_id()
        # Time itself is under test: the answer comes after the server's 30 s re-check (the
        # call returning before it is the failure).
        await asyncio.wait({call}, timeout=32)
        if not call.done():
            await person.respond(ask_id, answer("go", "0"))
        result = await asyncio.wait_for(call, 60)
    assert result.structured_content is not None
    assert result.structured_content["status"] == "answered", result.structured_content
    assert result.structured_content["ask_id"] == ask_id
