"""`--protocol acp` answers every request an ACP agent sends: forms of no ask tool call and
permission requests become typed Asks answered in Compass; file and terminal requests are
declined with "method not found". Driven by a double of an ACP agent (fake_acp_agent.py);
the real oh-my-pi runs in tests/realagent/."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.bridge._harness import call, list_messages

if TYPE_CHECKING:
    import httpx

    from tests import _server

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

FAKE_AGENT = Path(__file__).with_name("fake_acp_agent.py")


async def run_agent(
    script: list[dict[str, Any]],
    answer: Any,
    *,
    tmp_path: Path,
    server: _server.RunningServer,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """Run the bridge on the double; `answer(ask) -> answers` answers each ask that appears.

    Returns the double's record, the asks as stored at the end, and the bridge's log."""
    (tmp_path / "script.json").write_text(json.dumps(script))
    token = tmp_path / "agent.token"
    token.write_text(world.agent.token)
    out = tmp_path / "out.json"
    log_path = tmp_path / "bridge.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(  # noqa: ASYNC220 - started once; the loop below polls it
            [
                sys.executable, "-m", "compass_server.cli", "agent-bridge", "--protocol", "acp",
                "--server", server.url, "--channel", world.channel_id, "--token-file", str(token),
                "--prompt", "go", "--", sys.executable, str(FAKE_AGENT),
                str(tmp_path / "script.json"), str(out),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    answered: set[str] = set()
    try:
        deadline = time.monotonic() + 60
        while process.poll() is None:
            assert time.monotonic() < deadline, log_path.read_text()
            for message in await list_messages(comms, world.human.token, world.channel_id):
                for block in message["blocks"]:
                    ask = block.get("ask")
                    if ask and ask["askId"] not in answered:
                        answered.add(ask["askId"])
                        status, body = await call(
                            comms,
                            "RespondToAsk",
                            {"askId": ask["askId"], "answers": answer(ask)},
                            world.human.token,
                        )
                        assert status == 200, body
            await asyncio.sleep(0.05)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
    log_text = log_path.read_text()
    assert process.returncode == 0, log_text
    stored = [
        block["ask"]
        for message in await list_messages(comms, world.human.token, world.channel_id)
        for block in message["blocks"]
        if "ask" in block
    ]
    return json.loads(out.read_text()), stored, log_text


def choose(**picks: list[str] | str) -> Any:
    """Answer each question by id: a list of option ids, or a free text."""

    def answers(ask: dict[str, Any]) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = []
        for question in ask["questions"]:
            pick = picks.get(question["questionId"], [])
            if isinstance(pick, str):
                result.append({"questionId": question["questionId"], "customText": pick})
            else:
                result.append({"questionId": question["questionId"], "chosenOptionIds": pick})
        return result

    return answers


async def test_forms_permissions_and_declined_requests(
    tmp_path: Path,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    script = [
        {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Deploy settings",
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "region": {"type": "string", "title": "Region", "enum": ["eu", "us"]},
                        "replicas": {"type": "integer", "title": "Replicas", "minimum": 1},
                        "confirm": {"type": "boolean", "title": "Go ahead?"},
                    },
                    "required": ["region", "replicas"],
                },
            },
        },
        {
            "method": "session/request_permission",
            "params": {
                "toolCall": {"toolCallId": "t1", "title": "rm -rf build/"},
                "options": [
                    {"optionId": "yes", "name": "Allow once", "kind": "allow_once"},
                    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
                ],
            },
        },
        {"method": "fs/read_text_file", "params": {"path": "/etc/hostname"}},
        {"method": "terminal/create", "params": {"command": "ls"}},
    ]
    record, stored, _log = await run_agent(
        script,
        choose(region=["1"], replicas=" 3", confirm=["0"], permission=["0"]),
        tmp_path=tmp_path,
        server=module_server,
        world=world,
        comms=comms,
    )
    form, permission, fs, terminal = record["replies"]
    assert form["result"] == {
        "action": "accept",
        "content": {"region": "us", "replicas": 3, "confirm": True},
    }
    assert permission["result"] == {"outcome": {"outcome": "selected", "optionId": "yes"}}
    assert fs["error"]["code"] == -32601
    assert terminal["error"]["code"] == -32601
    capabilities = record["initialize"]["clientCapabilities"]
    assert capabilities["elicitation"] == {"form": {}}
    assert capabilities.get("terminal", False) is False  # absent means not offered
    assert not capabilities.get("fs", {}).get("readTextFile")
    assert not capabilities.get("fs", {}).get("writeTextFile")
    deploy, allow = stored
    assert [q["questionId"] for q in deploy["questions"]] == ["region", "replicas", "confirm"]
    assert [o["label"] for o in allow["questions"][0]["options"]] == ["Allow once", "Reject"]


async def test_an_answer_the_schema_cannot_take_is_left_out_and_said(
    tmp_path: Path,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    script = [
        {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "How many?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"n": {"type": "integer", "maximum": 5}},
                    "required": ["n"],
                },
            },
        },
        {
            "method": "session/request_permission",
            "params": {
                "toolCall": {"toolCallId": "t1", "title": "deploy"},
                "options": [
                    {"optionId": "ok", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "nope", "name": "Reject", "kind": "reject_once"},
                ],
            },
        },
    ]
    record, _stored, log = await run_agent(
        script,
        choose(n="forty", permission=[]),
        tmp_path=tmp_path,
        server=module_server,
        world=world,
        comms=comms,
    )
    form, permission = record["replies"]
    # Never a whole-form decline: what the schema can take is sent, and the receipt says
    # what was left out.
    assert form["result"] == {"action": "accept", "content": {}}
    assert "requires n, left without an answer; sent without it" in log
    assert "is not an integer" in log
    assert "receipt delivered_with_changes" in log
    # Free text cannot reach a permission request (Compass refuses it up front); a skip is
    # rejected once, and said.
    assert permission["result"] == {"outcome": {"outcome": "selected", "optionId": "nope"}}
    assert "rejected once" in log


async def test_a_form_the_bridge_cannot_present_is_cancelled(
    tmp_path: Path,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    script = [
        {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Nothing to ask",
                "requestedSchema": {"type": "object", "properties": {}},
            },
        },
        {"method": "elicitation/create", "params": {"mode": "bogus", "message": "?"}},
    ]
    record, stored, _log = await run_agent(
        script, choose(), tmp_path=tmp_path, server=module_server, world=world, comms=comms
    )
    empty, bogus = record["replies"]
    assert empty["result"] == {"action": "cancel"}
    assert bogus["error"]["code"] == -32602  # invalid params: the library refuses the mode
    assert stored == []


QWEN_QUESTIONS = [
    {
        "question": "Which database?",
        "header": "Database",
        "multiSelect": False,
        "options": [
            {"label": "Postgres", "description": "Relational"},
            {"label": "SQLite", "description": "Embedded"},
        ],
    },
    {
        "question": "Which auth flows?",
        "header": "Auth",
        "multiSelect": True,
        "options": [
            {"label": "Email", "description": "classic"},
            {"label": "OAuth", "description": "Google, GitHub"},
        ],
    },
]
SUBMIT_OR_CANCEL = [
    {"optionId": "proceed_once", "name": "Submit", "kind": "allow_once"},
    {"optionId": "cancel", "name": "Cancel", "kind": "reject_once"},
]


async def test_questions_behind_a_permission_are_answered_in_full_or_refused(
    tmp_path: Path,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    """Qwen Code's shape (its `_meta` marks the questions) gets its answers beside the
    outcome, over the real ACP connection; another agent's permission carrying questions
    Compass cannot hand back is cancelled without asking anyone, never submitted empty."""
    script = [
        {
            "method": "session/request_permission",
            "params": {
                "toolCall": {
                    "toolCallId": "q1",
                    "title": "Ask user 2 questions",
                    "rawInput": {"questions": QWEN_QUESTIONS},
                    "_meta": {
                        "toolName": "ask_user_question",
                        "qwenInteractionKind": "user_question",
                        "qwenQuestions": QWEN_QUESTIONS,
                    },
                },
                "options": SUBMIT_OR_CANCEL,
            },
        },
        {
            "method": "session/request_permission",
            "params": {
                "toolCall": {
                    "toolCallId": "x1",
                    "title": "Ask the user",
                    "rawInput": {"questions": QWEN_QUESTIONS},
                },
                "options": SUBMIT_OR_CANCEL,
            },
        },
    ]
    record, stored, log = await run_agent(
        script,
        choose(question_0="MariaDB", question_1=["0", "1"]),
        tmp_path=tmp_path,
        server=module_server,
        world=world,
        comms=comms,
    )
    qwen, other = record["replies"]
    assert qwen["result"] == {
        "outcome": {"outcome": "selected", "optionId": "proceed_once"},
        "answers": {"0": "MariaDB", "1": "Email, OAuth"},
    }
    assert other["result"] == {"outcome": {"outcome": "cancelled"}}
    assert "expects answers Compass cannot give" in log
    (ask,) = stored
    assert [(q["header"], q.get("allowMultiple", False)) for q in ask["questions"]] == [
        ("Database", False),
        ("Auth", True),
    ]
