"""Claude Code's own questions answered in Compass (issue 28): the real Claude Code from npm
(the 2.1.318 binary of tests/realagent/claude, `claude -p`), its hooks running `compass
claude-hook` as `compass claude-hook install` writes them, against `compass serve` (one per
module) and a scripted Anthropic model on 127.0.0.1; everything else it tries goes to a
loopback proxy that refuses it. A person answers over Connect-JSON as the browser does.
Each test asserts the tool result the model read in its next request, and what Compass
stored (the Ask, its outcome, its delivery receipt).

`-p` offers AskUserQuestion only with `--permission-prompt-tool stdio`: without it the
model's call gets "No such tool available". With it, a hook that says nothing leaves the
question to that prompt tool, which here (no SDK host on stdin) fails the call with
"Stream closed": what the model reads when the hook gave up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import mmap
import os
import random
import re
import signal
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest

from compass_bridge.claude.hook import STOPPED_REASON, TIMEOUT_REASON
from compass_bridge.claude.install import hook_command
from compass_bridge.claude.questions import join_labels
from tests._wait import eventually
from tests.realagent.acp_agents import REPO_ROOT, claude_answered, claude_binary, ensure_npm
from tests.realagent.harness import (
    agents_receipt,
    answer,
    decline,
    first_ask,
    messages,
    respond,
    wait_for_status,
)
from tests.realagent.hooked_claude import hooked_claude
from tests.realagent.model_server import Turn
from tests.realagent.wire_models import AnthropicModel

if TYPE_CHECKING:
    from collections.abc import Callable, Generator
    from pathlib import Path

    import httpx

    from tests import _server
    from tests.realagent.proxy import RefusingProxy
    from tests.realagent.wire_models import ModelRequest, ScriptedWire

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

CALL = "toolu_ask_1"
DATABASE = "Which database should the new service use?"
AUTH = "Which auth flows should ship in v1?"
QUESTIONS: list[dict[str, Any]] = [
    {
        "question": DATABASE,
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
        "question": AUTH,
        "header": "Auth",
        "multiSelect": True,
        "options": [
            {"label": "Email, SMS", "description": "codes by message"},
            {"label": "OAuth", "description": "Google, GitHub"},
            {"label": 'SSO "SAML"', "description": "for companies"},
        ],
    },
]
STREAM_CLOSED = "Tool permission request failed: AbortError: Stream closed"
"""What the model reads when the hook said nothing and `-p` has no SDK host to ask."""


class Claude:
    """One `claude -p` run: the process, its model, and where its output goes."""

    def __init__(self, process: subprocess.Popen[bytes], model: ScriptedWire, log: Path):
        self.process = process
        self.model = model
        self.log_path = log

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    async def wait(self, within: float = 90.0) -> int:
        async def ended() -> bool:
            return self.process.poll() is not None

        await eventually(ended, f"claude -p to exit\n{self.log()}", within=within, every=0.05)
        return self.process.returncode

    def read(self) -> str:
        """The tool result the model read in its next request."""
        turns = self.model.wait_for_turns(2)
        return turns[1].tool_result(CALL)

    def second_turn(self) -> ModelRequest:
        return self.model.wait_for_turns(2)[1]


@pytest.fixture
def claude(
    tmp_path: Path,
    proxy: RefusingProxy,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
) -> Callable[..., contextlib.AbstractContextManager[Claude]]:
    """`claude(turns, timeout=..., mcp=False)`: a context manager running `claude -p` with
    the hooks installed for this test's world."""
    bin_dir = ensure_npm("claude")

    @contextlib.contextmanager
    def run(
        turns: list[Turn],
        *,
        timeout: int = 600,
        mcp: bool = False,
        token: str = "",
        extra: tuple[str, ...] = (),
    ) -> Generator[Claude]:
        if mcp:
            config = tmp_path / "mcp.json"
            server = {
                "type": "stdio",
                "command": sys.executable,
                "args": ["-m", "tests.realagent.forms_mcp_server"],
                "env": {"PYTHONPATH": str(REPO_ROOT)},
            }
            config.write_text(json.dumps({"mcpServers": {"forms": server}}))
            args = ["--mcp-config", str(config), "--strict-mcp-config"]
            args += ["--allowedTools", "mcp__forms__deploy"]
        else:
            args = ["--permission-prompt-tool", "stdio"]
        with (
            AnthropicModel(turns) as model,
            hooked_claude(
                bin_dir=bin_dir,
                tmp=tmp_path,
                model_url=model.base_url,
                proxy_env=proxy.env(),
                server_url=module_server.url,
                channel_id=world.channel_id,
                token=token or world.agent.token,
                timeout=timeout,
                args=[*args, *extra],
            ) as (process, log),
        ):
            yield Claude(process, model, log)
        assert proxy.refused == [], proxy.refused

    return run


def ask_turns(*questions: dict[str, Any]) -> list[Turn]:
    return [Turn.call("AskUserQuestion", {"questions": list(questions)}, CALL), Turn.say("Ok.")]


async def the_ask(
    comms: httpx.AsyncClient, world: _server.SeededWorld, run: Claude
) -> dict[str, Any]:
    """The one ask the hook posted, once it is there (fails early if Claude Code exits)."""
    return await first_ask(
        comms, world, run.process, run.log, who="claude -p", what="the hook's ask"
    )


async def test_one_pick_is_the_answer_the_model_reads(
    claude: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    with claude(ask_turns(QUESTIONS[0])) as run:
        ask = await the_ask(comms, world, run)
        (question,) = ask["questions"]
        # Header, options with descriptions and previews; free text taken; a deadline.
        assert (question["header"], question["question"]) == ("Database", DATABASE)
        assert [
            (o["label"], o.get("description"), o.get("preview")) for o in question["options"]
        ] == [
            ("Postgres", "Relational", "CREATE TABLE t (id int);"),
            ("SQLite", "Embedded", None),
        ]
        assert question["freeText"] == "FREE_TEXT_ACCEPTED"
        assert ask["deadline"], ask
        assert ask["onTimeout"] == "ASK_TIMEOUT_POLICY_FAIL", ask
        await respond(comms, world.human.token, ask["askId"], answer(question["questionId"], "1"))
        assert await run.wait() == 0, run.log()
    assert run.read() == claude_answered(f'"{DATABASE}"="SQLite"')
    found = await agents_receipt(comms, world, ask["askId"])
    printed = json.loads(found["payload"])
    assert found["state"] == "DELIVERY_STATE_DELIVERED"
    assert printed["hookSpecificOutput"]["updatedInput"] == {
        "questions": [QUESTIONS[0]],
        "answers": {DATABASE: "SQLite"},
    }
    # One message holding the ask alone: nothing else was posted.
    (message,) = await messages(comms, world.human.token, world.channel_id)
    assert [list(block) for block in message["blocks"]] == [["ask"]]


async def test_two_picks_on_a_multi_select_with_commas_and_quotes_in_labels(
    claude: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    """The first question skipped (left out), two picks whose labels hold ", " and '"':
    Claude Code splits the joined answer back into the offered labels, so the model reads
    the "answered" wording, not the one for the person's own words."""
    with claude(ask_turns(*QUESTIONS)) as run:
        ask = await the_ask(comms, world, run)
        first, second = ask["questions"]
        assert (second["header"], second["allowMultiple"]) == ("Auth", True)
        await respond(
            comms,
            world.human.token,
            ask["askId"],
            answer(first["questionId"]),
            answer(second["questionId"], "0", "2"),
        )
        assert await run.wait() == 0, run.log()
    assert run.read() == claude_answered(f'"{AUTH}"=""Email, SMS", "SSO \\"SAML\\"""')
    found = await agents_receipt(comms, world, ask["askId"])
    assert found["state"] == "DELIVERY_STATE_DELIVERED"
    assert json.loads(found["payload"])["hookSpecificOutput"]["updatedInput"]["answers"] == {
        AUTH: '"Email, SMS", "SSO \\"SAML\\""'
    }


async def test_free_text_reaches_the_model_as_the_answer_or_a_note(
    claude: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    with claude(ask_turns(*QUESTIONS)) as run:
        ask = await the_ask(comms, world, run)
        first, second = (q["questionId"] for q in ask["questions"])
        await respond(
            comms,
            world.human.token,
            ask["askId"],
            answer(first, custom_text="DuckDB, embedded"),
            answer(second, "1", custom_text="SCIM later"),
        )
        assert await run.wait() == 0, run.log()
    assert run.read() == claude_answered(
        f'"{DATABASE}"="DuckDB, embedded", "{AUTH}"="OAuth" notes: SCIM later', own_words=True
    )
    found = await agents_receipt(comms, world, ask["askId"])
    assert found["state"] == "DELIVERY_STATE_DELIVERED"


async def test_a_decline_is_denied_with_the_persons_reason(
    claude: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    with claude(ask_turns(*QUESTIONS)) as run:
        ask = await the_ask(comms, world, run)
        await decline(comms, world.human.token, ask["askId"], "ask me after lunch")
        assert await run.wait() == 0, run.log()
    reason = "Ada declined to answer in Compass: ask me after lunch"
    assert run.read() == f"PreToolUse:AskUserQuestion hook error: {reason}"
    (result,) = [
        part
        for part in run.second_turn().body["messages"][-1]["content"]
        if part.get("type") == "tool_result"
    ]
    assert result["is_error"] is True
    found = await agents_receipt(comms, world, ask["askId"])
    assert (found["state"], json.loads(found["payload"])) == (
        "DELIVERY_STATE_DELIVERED",
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        },
    )


async def test_the_hooks_timeout_withdraws_the_ask(
    claude: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    """Nobody answers within the hook's timeout (6 s here): the hook withdraws the ask just
    before Claude Code's own timeout and says nothing, so Claude Code asks its own way."""
    with claude(ask_turns(QUESTIONS[0]), timeout=6) as run:
        ask = await the_ask(comms, world, run)
        closed = await wait_for_status(
            comms, world.human.token, world.channel_id, ask["askId"], within=20
        )
        assert await run.wait() == 0, run.log()
    assert (closed["status"], closed["closeReason"]) == ("ASK_STATUS_WITHDRAWN", TIMEOUT_REASON)
    assert run.read() == STREAM_CLOSED


async def test_claude_code_stopped_mid_wait_withdraws_the_ask(
    claude: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    with claude(ask_turns(QUESTIONS[0])) as run:
        ask = await the_ask(comms, world, run)
        run.process.send_signal(signal.SIGTERM)
        closed = await wait_for_status(
            comms, world.human.token, world.channel_id, ask["askId"], within=20
        )
        await run.wait()
    assert (closed["status"], closed["closeReason"]) == ("ASK_STATUS_WITHDRAWN", STOPPED_REASON)
    assert len(run.model.turns) == 1, run.log()  # the model was asked nothing more


HOOK_EVENTS = ("--output-format", "stream-json", "--verbose", "--include-hook-events")
"""`claude -p` printing what an SDK host is sent, the hooks' runs among it."""
BAD_TOKEN_LINE = (
    "compass claude-hook: cannot ask in Compass: the server did not accept the token "
    "(unknown, or its account is disabled)\n"
)


def hook_responses(log: str) -> list[dict[str, Any]]:
    """The `hook_response` messages `claude -p` printed (HOOK_EVENTS)."""
    found: list[dict[str, Any]] = []
    for line in log.splitlines():
        with contextlib.suppress(ValueError):
            message = json.loads(line)
            if isinstance(message, dict) and message.get("subtype") == "hook_response":
                found.append(message)
    return found


async def test_a_wrong_token_is_shown_and_claude_code_asks_its_own_way(
    claude: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    """Issue 33, N2: the hook exited 0 and Claude Code showed nothing. Now it checks the token
    first and exits 1 with one line, which Claude Code hands its host (at the terminal: "
    PreToolUse:AskUserQuestion hook error" and the line, then the question asked there), and
    the call is neither answered nor denied: it goes to Claude Code's own prompt, which `-p`
    without an SDK host fails (exit 2 would deny it, the line read by the model as an error)."""
    with claude(ask_turns(QUESTIONS[0]), token="cmp_" + "x" * 43, extra=HOOK_EVENTS) as run:
        assert await run.wait() == 0, run.log()
    (response,) = hook_responses(run.log())
    assert (
        response["hook_name"],
        response["exit_code"],
        response["outcome"],
        response["stdout"],
        response["stderr"],
    ) == ("PreToolUse:AskUserQuestion", 1, "error", "", BAD_TOKEN_LINE), response
    assert run.read() == STREAM_CLOSED
    assert await messages(comms, world.human.token, world.channel_id) == []


def deploy_turns() -> list[Turn]:
    return [Turn.call("mcp__forms__deploy", {}, CALL), Turn.say("Deployed.")]


async def test_an_mcp_form_accepted_in_compass(
    claude: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    with claude(deploy_turns(), mcp=True) as run:
        ask = await the_ask(comms, world, run)
        env, replicas, notify = ask["questions"]
        assert (env["header"], env["question"]) == ("Environment", "Where should it deploy?")
        assert [o["label"] for o in env["options"]] == ["Staging", "Production"]
        assert replicas["question"] == "Replicas"
        assert "options" not in replicas
        assert [o["label"] for o in notify["options"]] == ["Yes", "No"]
        (message,) = await messages(comms, world.human.token, world.channel_id)
        assert message["blocks"][0] == {"text": {"text": "Deploy settings"}}
        await respond(
            comms,
            world.human.token,
            ask["askId"],
            answer("env", "1"),
            answer("replicas", custom_text="3"),
            answer("notify", "0"),
        )
        assert await run.wait() == 0, run.log()
    assert run.read() == 'accept {"env": "prod", "notify": true, "replicas": 3}'
    found = await agents_receipt(comms, world, ask["askId"])
    assert (found["state"], json.loads(found["payload"])) == (
        "DELIVERY_STATE_DELIVERED",
        {
            "hookSpecificOutput": {
                "hookEventName": "Elicitation",
                "action": "accept",
                "content": {"env": "prod", "replicas": 3, "notify": True},
            }
        },
    )


async def test_an_mcp_form_declined_in_compass(
    claude: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    with claude(deploy_turns(), mcp=True) as run:
        ask = await the_ask(comms, world, run)
        await decline(comms, world.human.token, ask["askId"], "not today")
        assert await run.wait() == 0, run.log()
    assert run.read() == "decline"
    found = await agents_receipt(comms, world, ask["askId"])
    assert found["state"] == "DELIVERY_STATE_DELIVERED"
    assert json.loads(found["payload"])["hookSpecificOutput"]["action"] == "decline"


async def test_a_wrong_token_leaves_an_mcp_form_to_claude_code(
    claude: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    """The form is not declined on the person's behalf (what exit 2 does to an Elicitation):
    Claude Code handles it its own way, which `-p` without an SDK host cancels."""
    with claude(deploy_turns(), mcp=True, token="cmp_" + "x" * 43, extra=HOOK_EVENTS) as run:
        assert await run.wait() == 0, run.log()
    assert run.read() == "cancel"
    assert await messages(comms, world.human.token, world.channel_id) == []


async def test_install_writes_hooks_claude_code_runs(tmp_path: Path) -> None:
    """`compass claude-hook install --settings F` as a person runs it: its command line is
    the one the tests above run (through `hook_command`), and a second run changes nothing."""
    settings = tmp_path / "settings.json"
    settings.write_text('{"model": "opus", "hooks": {"Stop": [{"hooks": []}]}}')
    token_file = tmp_path / "agent.token"
    token_file.write_text("tok-123\n")
    argv = [
        sys.executable,
        "-m",
        "compass_server.cli",
        "claude-hook",
        "install",
        "--settings",
        str(settings),
        "--server",
        "http://127.0.0.1:9/",
        "--channel",
        "ch-1",
        "--token-file",
        str(token_file),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}

    async def install_once() -> dict[str, Any]:
        process = await asyncio.create_subprocess_exec(
            *argv, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await process.communicate()
        assert process.returncode == 0, err.decode()
        return json.loads(out)

    first = await install_once()
    written = json.loads(settings.read_text())
    second = await install_once()
    assert (first["changed"], second["changed"]) == (True, False)
    assert json.loads(settings.read_text()) == written
    assert written["model"] == "opus"
    assert written["hooks"]["Stop"] == [{"hooks": []}]
    expected = hook_command(
        [sys.executable, "-m", "compass_server.cli"],
        server="http://127.0.0.1:9/",
        channel_id="ch-1",
        token_file=token_file,
        timeout=3600,
    )
    handler = {"type": "command", "command": expected, "timeout": 3600}
    assert written["hooks"]["PreToolUse"] == [{"matcher": "AskUserQuestion", "hooks": [handler]}]
    assert written["hooks"]["Elicitation"] == [{"hooks": [handler]}]


_LABELS_CHECK = re.compile(
    rb"let ([\w$]+)=([\w$]+)\(([\w$]+)\);return \1!==null&&\1\.length>=1&&([\w$]+)\(\1\)===\3&&"
)
"""Where AskUserQuestion checks that an answer is labels it offered, naming its splitting and
joining functions (`let g=W(y);return g!==null&&g.length>=1&&aVt(g)===y&&` in 2.1.318; the
minified names change with each build)."""


def _bundled_functions(binary: Path) -> dict[str, tuple[str, str]]:
    """Claude Code's own `join` and `split` of picked labels, each (its minified name, its
    source), cut out of the JavaScript bundled into the binary (its AskUserQuestion module)."""
    with binary.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        anchor = data.find(b"Your questions have been answered: ${")
        assert anchor > 0, "Claude Code's AskUserQuestion tool is not in the binary"
        window = max(0, anchor - 200_000)
        checks = list(_LABELS_CHECK.finditer(data[window:anchor]))
        assert checks, "AskUserQuestion's check of picked labels not found: a new pin?"
        check = checks[-1]
        names = {"split": check.group(2).decode(), "join": check.group(4).decode()}
        found: dict[str, tuple[str, str]] = {}
        for role, name in names.items():
            start = data.rfind(f"function {name}(e){{".encode(), window, anchor)
            assert start > 0, f"function {name} ({role}) of AskUserQuestion's module not found"
            depth = 0
            for end in range(data.find(b"{", start), anchor):
                depth += {ord("{"): 1, ord("}"): -1}.get(data[end], 0)
                if depth == 0:
                    found[role] = (name, data[start : end + 1].decode())
                    break
            else:
                raise AssertionError(f"function {name} does not end")
        return found


def test_the_encoding_is_claude_codes_own_joining() -> None:
    """`join_labels` against the real thing: Claude Code's own joining and splitting (`aVt` and
    `W` in 2.1.318), cut out of the binary and run by Node, on labels made of commas, quotes,
    escapes and other Unicode."""
    binary = claude_binary(ensure_npm("claude"))
    functions = _bundled_functions(binary)
    (join_name, join), (split_name, split) = functions["join"], functions["split"]
    pieces = [*"ab ,\"\\'\n\t\x01\x1f\x7f\u2028é😀", ", ", '", "', '"', ",,", "\\u0041"]
    rng = random.Random(28)  # noqa: S311 - a reproducible corpus, not a secret
    corpus = [
        ["Email, SMS", 'SSO "SAML"', "OAuth"],
        ['"', '""', ", ", ","],
        *(
            [
                ("".join(rng.choice(pieces) for _ in range(rng.randint(1, 6))))
                for _ in range(rng.randint(1, 4))
            ]
            for _ in range(300)
        ),
    ]
    script = (
        f"const _ = JSON.stringify;\n{join}\n{split}\n"
        f"const corpus = {json.dumps(corpus)};\n"
        "process.stdout.write(JSON.stringify(corpus.map((labels) => "
        f"[{join_name}(labels), {split_name}({join_name}(labels))])));\n"
    )
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for labels, (joined, parsed) in zip(corpus, json.loads(done.stdout), strict=True):
        assert join_labels(labels) == joined, labels
        assert parsed == labels, labels
