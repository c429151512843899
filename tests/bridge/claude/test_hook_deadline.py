"""`compass claude-hook` exits before Claude Code's timeout (its `--timeout`) whatever the
server does (issue 33, H4): Claude Code kills a hook that outlives its timeout and throws away
what it printed. Run as Claude Code runs it (a process, the event on stdin) against a server
on loopback that accepts each call and never answers the ones a case names: every network
step is bounded by what is left of the hook's own deadline, and the withdrawal or the receipt
is still attempted."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass

from compass_bridge.claude.questions import read_questions
from gen.compass.v1 import comms_pb2
from tests.bridge.claude._scripted_server import (
    ScriptedServer,
    channel,
    pending_watch,
    stored_ask,
    watch,
)

TIMEOUT = 5.0
"""The hook's --timeout (Claude Code's timeout of the entry), seconds."""
TOOL_INPUT = {
    "questions": [
        {
            "question": "Ship it?",
            "header": "Ship",
            "multiSelect": False,
            "options": [
                {"label": "Yes", "description": "now"},
                {"label": "No", "description": "later"},
            ],
        }
    ]
}
EVENT = json.dumps(
    {"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion", "tool_input": TOOL_INPUT}
).encode()


def answered_ask() -> comms_pb2.Ask:
    ask = comms_pb2.Ask()
    ask.CopyFrom(read_questions(TOOL_INPUT).ask)
    ask.ask_id = "ask_1"
    ask.status = comms_pb2.ASK_STATUS_ANSWERED
    question = ask.questions[0]
    question.chosen_option_ids.append(question.options[1].id)
    return ask


@dataclass(frozen=True)
class Hooked:
    code: int
    elapsed: float
    """Seconds from the spawn to the exit (Claude Code's timer runs from the spawn)."""
    out: str
    err: str


async def run_hook(server: ScriptedServer) -> Hooked:
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "compass_server.cli",
        "claude-hook",
        "--server",
        server.url,
        "--channel",
        "ch-1",
        "--timeout",
        str(TIMEOUT),
        env={**os.environ, "COMPASS_TOKEN": "cmp_tok"},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(EVENT), timeout=60)
    assert process.returncode is not None
    return Hooked(process.returncode, time.monotonic() - started, out.decode(), err.decode())


CHANNEL = channel("ch-1")


async def test_a_server_that_answers_nothing() -> None:
    async with ScriptedServer().running() as server:
        hooked = await run_hook(server)
    assert hooked.elapsed < TIMEOUT, hooked
    assert hooked.code == 1, hooked
    assert hooked.err.splitlines()[-1] == (
        f"compass claude-hook: cannot ask in Compass: the server at {server.url} did not "
        "take the ask before Claude Code's timeout"
    ), hooked
    assert hooked.out == ""


async def test_a_server_that_never_answers_the_append() -> None:
    async with ScriptedServer({"GetChannel": CHANNEL}).running() as server:
        hooked = await run_hook(server)
    assert hooked.elapsed < TIMEOUT, hooked
    assert server.calls[:2] == ["GetChannel", "AppendMessage"]
    assert hooked.code == 1, hooked
    assert hooked.err.splitlines()[-1] == (
        f"compass claude-hook: cannot ask in Compass: the server at {server.url} did not "
        "take the ask before Claude Code's timeout"
    ), hooked


async def test_a_server_that_never_answers_the_withdrawal() -> None:
    replies = {
        "GetChannel": CHANNEL,
        "AppendMessage": stored_ask(),
        "WatchAsk": pending_watch("ask_1"),
    }
    async with ScriptedServer(replies).running() as server:
        hooked = await run_hook(server)
    assert hooked.elapsed < TIMEOUT, hooked
    assert "CloseAsk" in server.calls, (server.calls, hooked)  # the withdrawal was attempted
    assert (hooked.code, hooked.out) == (0, ""), hooked


async def test_a_server_that_never_answers_the_receipt() -> None:
    replies = {
        "GetChannel": CHANNEL,
        "AppendMessage": stored_ask(),
        "WatchAsk": watch(answered_ask()),
    }
    async with ScriptedServer(replies).running() as server:
        hooked = await run_hook(server)
    assert hooked.elapsed < TIMEOUT, hooked
    assert "ReportDelivery" in server.calls, (server.calls, hooked)
    assert hooked.code == 0, hooked
    printed = json.loads(hooked.out)
    assert printed["hookSpecificOutput"]["updatedInput"]["answers"] == {"Ship it?": "No"}
