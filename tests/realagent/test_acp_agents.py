"""Claude Code, Codex and Qwen Code as published on npm (acp_agents.py), over `compass
agent-bridge --protocol acp`, against `compass serve` on a fresh database, answered by a participant
through CommsService over HTTP. Each test asserts the exact tool result the model's next
request carries (the scripted model records it), what Compass shows, and that nothing left
127.0.0.1 but through the refusing proxy.

Codex's `request_user_input` has no multi-select and no previews (its options are mutually
exclusive, label + description): its two-question ask is two single-selects with headers.
Qwen Code's `ask_user_question` arrives as a `session/request_permission` (Submit / Cancel)
whose questions are in `toolCall._meta.qwenQuestions`; its answers go back beside the outcome
(compass_bridge/acp/qwen.py). A cancelled permission (a decline, a rejected command) ends Qwen
Code's turn: the model is asked nothing more until the person writes.

Set COMPASS_ACP_RECORD=DIR to write each run's JSON-RPC conversation to DIR/<test>.jsonl
(acp_tee.py), e.g. to refresh tests/bridge/acp/recorded/.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from compass_bridge.receipts import DECLINE_PAYLOAD
from tests.realagent.acp_agents import (
    AgentLaunch,
    claude_answered,
    claude_launch,
    codex_launch,
    ensure_npm,
    qwen_launch,
)
from tests.realagent.harness import (
    agents_receipt,
    answer,
    bridge_process,
    decline,
    messages,
    respond,
    wait_for_asks,
    wait_for_status,
)
from tests.realagent.model_server import ToolCall, Turn
from tests.realagent.wire_models import AnthropicModel, ChatModel, ResponsesModel, ScriptedWire

if TYPE_CHECKING:
    from collections.abc import Callable, Generator

    import httpx

    from tests import _server
    from tests.realagent.harness import Run
    from tests.realagent.proxy import RefusingProxy

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

ASK_CALL = "call_ask_1"
TOOL_CALL = "call_tool_1"


ALLOWED_HOSTS = {"github.com", "api.github.com", "chatgpt.com"}
"""What Codex 0.166 tries to reach at start (plugins, remote config); refused by the proxy.
Claude Code tries nothing with its nonessential traffic off."""


@dataclass(frozen=True)
class Agent:
    name: str
    launch: Callable[[Path, Path, str, dict[str, str]], AgentLaunch]
    model: Callable[[list[Turn]], ScriptedWire]
    ask_tool: str
    questions: list[dict[str, Any]]
    shell: Callable[[str], ToolCall]


def _claude_shell(command: str) -> ToolCall:
    return ToolCall("Bash", {"command": command, "description": "Make a marker"}, TOOL_CALL)


def _codex_shell(command: str) -> ToolCall:
    args = {
        "cmd": command,
        "sandbox_permissions": "require_escalated",
        "justification": "May I make a marker file?",
    }
    return ToolCall("exec_command", args, TOOL_CALL)


def _qwen_shell(command: str) -> ToolCall:
    return ToolCall("run_shell_command", {"command": command}, TOOL_CALL)


CLAUDE = Agent(
    name="claude",
    launch=claude_launch,
    model=AnthropicModel,
    ask_tool="AskUserQuestion",
    questions=[
        {
            "question": "Which database should the new service use?",
            "header": "Database",
            "multiSelect": False,
            "options": [
                {
                    "label": "Postgres",
                    "description": "Relational",
                    "preview": "CREATE TABLE t (id int);",
                },
                {"label": "SQLite", "description": "Embedded"},
            ],
        },
        {
            "question": "Which auth flows should ship in v1?",
            "header": "Auth",
            "multiSelect": True,
            "options": [
                {"label": "Email + password", "description": "classic"},
                {"label": "OAuth", "description": "Google, GitHub"},
            ],
        },
    ],
    shell=_claude_shell,
)
CODEX = Agent(
    name="codex",
    launch=codex_launch,
    model=ResponsesModel,
    ask_tool="request_user_input",
    questions=[
        {
            "id": "db",
            "header": "Database",
            "question": "Which database should the new service use?",
            "options": [
                {"label": "Postgres (Recommended)", "description": "Relational"},
                {"label": "SQLite", "description": "Embedded"},
            ],
        },
        {
            "id": "region",
            "header": "Region",
            "question": "Where should it run?",
            "options": [
                {"label": "eu", "description": "Frankfurt"},
                {"label": "us", "description": "Virginia"},
            ],
        },
    ],
    shell=_codex_shell,
)
QWEN = Agent(
    name="qwen",
    launch=qwen_launch,
    model=ChatModel,
    ask_tool="ask_user_question",
    questions=[
        {
            "question": "Which database should the new service use?",
            "header": "Database",
            "multiSelect": False,
            "options": [
                {"label": "Postgres", "description": "Relational"},
                {"label": "SQLite", "description": "Embedded"},
            ],
        },
        {
            "question": "Which auth flows should ship in v1?",
            "header": "Auth",
            "multiSelect": True,
            "options": [
                {"label": "Email + password", "description": "classic"},
                {"label": "OAuth", "description": "Google, GitHub"},
            ],
        },
    ],
    shell=_qwen_shell,
)


@pytest.fixture(params=[CLAUDE, CODEX, QWEN], ids=lambda agent: agent.name)
def agent(request: pytest.FixtureRequest) -> Agent:
    return request.param


@pytest.fixture
def start(
    agent: Agent,
    proxy: RefusingProxy,
    tmp_path: Path,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
    request: pytest.FixtureRequest,
) -> Callable[[list[Turn]], contextlib.AbstractContextManager[Run]]:
    """`start(turns)`: a context manager running the agent through the bridge."""
    bin_dir = ensure_npm(agent.name)

    @contextlib.contextmanager
    def run(turns: list[Turn]) -> Generator[Run]:
        with agent.model(turns) as model:
            launch = agent.launch(bin_dir, tmp_path, model.base_url, proxy.env())
            argv = launch.argv
            record = os.environ.get("COMPASS_ACP_RECORD")
            if record:
                out = f"{record}/{re.sub(r'[^A-Za-z0-9_.-]+', '-', request.node.name)}.jsonl"
                argv = [sys.executable, "-m", "tests.realagent.acp_tee", out, "--", *argv]
            with bridge_process(
                agent=argv,
                env=launch.env,
                cwd=launch.cwd,
                tmp_path=tmp_path,
                server_url=module_server.url,
                world=world,
                protocol="acp",
                model=model,
                extra=launch.bridge_args,
            ) as running:
                yield running
        assert proxy.hosts() <= ALLOWED_HOSTS, proxy.refused

    return run


def ask_turns(agent: Agent) -> list[Turn]:
    call = ToolCall(agent.ask_tool, {"questions": agent.questions}, ASK_CALL)
    return [Turn(text="Two quick questions first.", tool_calls=(call,)), Turn.say("Thanks.")]


async def receipt_of(
    comms: httpx.AsyncClient, world: _server.SeededWorld, ask_id: str
) -> dict[str, Any]:
    """The ask's delivery receipt, reported by the agent's account. With
    COMPASS_RECEIPT_LATENCY=FILE, the seconds from the answer to the stored receipt are
    appended to FILE (the issue's latency figure; no assertion on time)."""
    receipt = await agents_receipt(comms, world, ask_id)
    out = os.environ.get("COMPASS_RECEIPT_LATENCY")
    if out:
        (ask,) = [
            a
            for m in await messages(comms, world.human.token, world.channel_id)
            for b in m["blocks"]
            if "ask" in b
            for a in [b["ask"]]
            if a["askId"] == ask_id
        ]
        answered = ask.get("answeredAt") or ask.get("closedAt")
        _append(out, f"{answered} {receipt['reportedAt']}\n")
    return receipt


def _append(path: str, line: str) -> None:
    with Path(path).open("a", encoding="utf-8") as sink:
        sink.write(line)


def result_of(run: Run) -> str:
    """The tool result the model read in its second request."""
    turns = run.model.wait_for_turns(2)
    return turns[1].tool_result(ASK_CALL if ASK_CALL in str(turns[1].body) else TOOL_CALL)


def assert_read(run: Run, expected: dict[str, Any], agent: Agent) -> None:
    """The model read exactly `expected[agent]`: Claude's text, or Codex's JSON (whose key
    order Codex does not keep; compared parsed)."""
    result = result_of(run)
    if agent is CODEX:
        assert json.loads(result) == expected[agent.name], result
    else:
        assert result == expected[agent.name], run.log()


async def test_two_question_ask_reaches_the_model_with_headers_and_previews(
    agent: Agent, start: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    with start(ask_turns(agent)) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        first, second = ask["questions"]
        assert (first["header"], first["question"]) == (
            "Database",
            "Which database should the new service use?",
        )
        if agent is not CODEX:
            assert [o["label"] for o in first["options"]] == ["Postgres", "SQLite"]
            assert [o["description"] for o in first["options"]] == ["Relational", "Embedded"]
            if agent is CLAUDE:
                assert first["options"][0]["preview"] == "CREATE TABLE t (id int);"
            assert (second["header"], second["allowMultiple"]) == ("Auth", True)
            answers = [answer("question_0", "1"), answer("question_1", "0", "1")]
            # The receipt carries what the model read (Claude's rawOutput, the text of
            # Qwen's completed call).
            sent = ""
        else:  # "None of the above" is Compass's own "Other": not an option of its own
            assert [o["label"] for o in first["options"]] == ["Postgres (Recommended)", "SQLite"]
            assert (second["header"], second.get("allowMultiple", False)) == ("Region", False)
            answers = [answer("db", "1"), answer("region", "1")]
            sent = '{"db":"SQLite","region":"us"}'
        # Free text reaches Claude and Codex through the choice's companion field, Qwen as
        # the answer (instead of a pick, or after the picks of a multi-select).
        assert {q["freeText"] for q in ask["questions"]} == {"FREE_TEXT_ACCEPTED"}, ask
        await respond(comms, world.human.token, ask["askId"], *answers)
        assert await run.wait() == 0, run.log()
    expected = {
        "claude": claude_answered(
            '"Which database should the new service use?"="SQLite", '
            '"Which auth flows should ship in v1?"="Email + password, OAuth"'
        ),
        "codex": {"answers": {"db": {"answers": ["SQLite"]}, "region": {"answers": ["us"]}}},
        "qwen": "User has provided the following answers:\n\n"
        "**Database**: SQLite\n**Auth**: Email + password, OAuth",
    }
    assert_read(run, expected, agent)
    receipt = await receipt_of(comms, world, ask["askId"])
    assert (receipt["state"], receipt.get("detail", ""), receipt["payload"]) == (
        "DELIVERY_STATE_DELIVERED",
        "",
        sent or result_of(run),
    )
    found = await messages(comms, world.human.token, world.channel_id)
    # The agent's lead-in is posted before the ask it introduces.
    first_ask = next(i for i, m in enumerate(found) if any("ask" in b for b in m["blocks"]))
    lead = next(
        i
        for i, m in enumerate(found)
        if any(b.get("text", {}).get("text") == "Two quick questions first." for b in m["blocks"])
    )
    assert lead < first_ask, found


async def test_free_text_in_compass_other_reaches_the_model(
    agent: Agent, start: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    with start(ask_turns(agent)) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        first, second = (q["questionId"] for q in ask["questions"])
        await respond(
            comms,
            world.human.token,
            ask["askId"],
            answer(first, custom_text="CockroachDB"),
            # Claude's and Qwen's multi-select take picks and text; Codex's single-select one
            # or the other in Compass (its note could carry both: Compass cannot say that).
            answer(second, custom_text="eu-west-1")
            if agent is CODEX
            else answer(second, "0", custom_text="Passkeys"),
        )
        assert await run.wait() == 0, run.log()
    expected = {
        "claude": claude_answered(
            '"Which database should the new service use?"="CockroachDB", '
            '"Which auth flows should ship in v1?"="Email + password, Passkeys"',
            own_words=True,
        ),
        "codex": {
            "answers": {
                "db": {"answers": ["None of the above", "user_note: CockroachDB"]},
                "region": {"answers": ["None of the above", "user_note: eu-west-1"]},
            }
        },
        "qwen": "User has provided the following answers:\n\n"
        "**Database**: CockroachDB\n**Auth**: Email + password, Passkeys",
    }
    assert_read(run, expected, agent)
    sent = {
        # Claude Code's and Qwen Code's calls end with the text their model read: the
        # receipt carries it.
        "claude": result_of(run),
        "qwen": result_of(run),
        "codex": '{"db":"None of the above","db_note":"CockroachDB",'
        '"region":"None of the above","region_note":"eu-west-1"}',
    }
    receipt = await receipt_of(comms, world, ask["askId"])
    assert (receipt["state"], receipt["payload"]) == ("DELIVERY_STATE_DELIVERED", sent[agent.name])


async def test_a_decline_reaches_the_model_as_no_answer(
    agent: Agent, start: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    with start(ask_turns(agent)) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        await decline(comms, world.human.token, ask["askId"], "not now")
        assert await run.wait() == 0, run.log()
    declined = await wait_for_status(comms, world.human.token, world.channel_id, ask["askId"])
    assert (declined["status"], declined["closeReason"]) == ("ASK_STATUS_DECLINED", "not now")
    receipt = await receipt_of(comms, world, ask["askId"])
    assert (receipt["state"], receipt["payload"]) == ("DELIVERY_STATE_DELIVERED", DECLINE_PAYLOAD)
    if agent is QWEN:
        # Qwen Code's Cancel ends its turn: the model is asked nothing more until the person
        # writes (its next request would carry `Tool "ask_user_question" was canceled by
        # the user.`).
        assert "the prompt turn ended" in run.log(), run.log()
        assert len(run.model.turns) == 1, run.log()
        return
    expected = {
        "claude": "The user did not answer the questions.",
        "codex": {"answers": {}},
    }
    assert_read(run, expected, agent)


@pytest.mark.parametrize("allow", [True, False], ids=["approved", "rejected"])
async def test_a_permission_decided_in_compass(
    allow: bool,
    agent: Agent,
    start: Any,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    command = "touch marker.txt && echo compass-was-here"
    turns = [
        Turn(text="I will make a marker.", tool_calls=(agent.shell(command),)),
        Turn.say("Done."),
    ]
    with start(turns) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        (question,) = ask["questions"]
        assert question["header"] == "Permission"
        assert command in question["question"]
        kinds = [o["description"] for o in question["options"]]
        want = "allow once" if allow else "reject once"
        assert want in kinds, question
        assert question["freeText"] == "FREE_TEXT_REFUSED", question
        option = question["options"][kinds.index(want)]
        await respond(comms, world.human.token, ask["askId"], answer("permission", option["id"]))
        assert await run.wait() == 0, run.log()
    receipt = await receipt_of(comms, world, ask["askId"])
    kind = "allow_once" if allow else "reject_once"
    assert (receipt["state"], receipt["payload"]) == (
        "DELIVERY_STATE_DELIVERED",
        f'{{"kind":"{kind}","option":{json.dumps(option["label"])}}}',
    )
    workspace = run.log_path.parent / "workspace"
    assert (workspace / "marker.txt").exists() is allow
    if agent is not CLAUDE and not allow:
        # Codex's reject ("No, and tell Codex what to do differently") and Qwen's end the
        # turn: the model is asked nothing more until the person writes.
        assert "the prompt turn ended" in run.log(), run.log()
        assert len(run.model.turns) == 1, run.log()
        return
    result = result_of(run)
    if agent is CLAUDE:
        assert result == ("compass-was-here" if allow else "User refused permission to run tool")
    elif agent is QWEN:
        assert re.fullmatch(
            r"Command: touch marker.txt && echo compass-was-here\nDirectory: \(root\)\n"
            r"Output: compass-was-here\nError: \(none\)\nExit Code: 0\nSignal: \(none\)\n"
            r"Process Group PGID: \d+",
            result,
        ), result
    else:
        assert re.fullmatch(
            r"Chunk ID: \w+\nWall time: [0-9.]+ seconds\nProcess exited with code 0\n"
            r"Original token count: \d+\nOutput:\ncompass-was-here\n",
            result,
        ), result


async def test_a_mode_the_agent_does_not_offer_ends_the_run_saying_what_it_offers(
    proxy: RefusingProxy,
    tmp_path: Path,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
) -> None:
    """`--mode manual` (Claude Code's display name, not its id): exit 2 before any prompt."""
    with AnthropicModel([Turn.say("never asked")]) as model:
        launch = claude_launch(ensure_npm("claude"), tmp_path, model.base_url, proxy.env())
        with bridge_process(
            agent=launch.argv,
            env=launch.env,
            cwd=launch.cwd,
            tmp_path=tmp_path,
            server_url=module_server.url,
            world=world,
            protocol="acp",
            model=model,
            extra=["--mode", "manual"],
        ) as run:
            assert await run.wait() == 2, run.log()
        assert model.turns == [], run.log()
    assert (
        "compass agent-bridge: the agent offers no mode 'manual' "
        "(it offers: default, acceptEdits, plan, auto)" in run.log()
    ), run.log()
