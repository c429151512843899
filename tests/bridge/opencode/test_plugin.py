"""Compass's OpenCode plugin (compass_bridge/opencode/plugin/compass.js) on its own, under
Node with a fake OpenCode client (plugin/driver.mjs) and a stand-in for its command
(plugin/command.py): what it hands the command, what it sends OpenCode, and what it tells
the person when the command fails. Inside the real OpenCode: tests/realagent/test_opencode.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compass_bridge.opencode.install import PLUGIN_FILE

HERE = Path(__file__).parent / "plugin"
RECORDED = Path(__file__).parent / "recorded"
NODE = shutil.which("node") or "node"  # the UI's tests need it too


def _recorded(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (RECORDED / name).read_text().splitlines() if line]


def _run(
    tmp_path: Path, *, reply: str, events: list[dict[str, Any]], **scenario: Any
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The plugin's calls of the client, and the lines the command got."""
    record = tmp_path / "lines.jsonl"
    command = [
        sys.executable,
        str(HERE / "command.py"),
        str(record),
        reply,
        *scenario.pop("args", []),
    ]
    body = {
        "plugin": PLUGIN_FILE.as_uri(),
        "options": scenario.pop("options", {"command": command}),
        "events": events,
        **scenario,
    }
    done = subprocess.run(
        [NODE, str(HERE / "driver.mjs"), json.dumps(body)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = (
        [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    )
    return json.loads(done.stdout.splitlines()[-1]), lines


def test_a_reply_goes_to_opencode_and_the_session_s_events_to_the_command(tmp_path: Path) -> None:
    events = _recorded("replied.jsonl")
    asked = events[0]
    session = asked["properties"]["sessionID"]
    other = json.loads(json.dumps(events[-1]).replace(session, "ses_other"))
    text_part = {
        "id": "evt_text",
        "type": "message.part.updated",
        "properties": {"sessionID": session, "part": {"type": "text", "sessionID": session}},
    }
    unrelated = {"id": "evt_todo", "type": "todo.updated", "properties": {"sessionID": session}}
    reply = json.dumps({"reply": [["Postgres (Recommended)"], ["Email", "SSO"]]})
    calls, lines = _run(
        tmp_path,
        reply=reply,
        events=[asked, *events[1:], other, text_part, unrelated, asked],  # asked twice: once
        wait_posts=1,
        wait_file=str(tmp_path / "lines.jsonl.done"),
    )
    assert calls["posts"] == [
        {
            "url": "/question/{requestID}/reply",
            "path": {"requestID": asked["properties"]["id"]},
            "body": {"answers": [["Postgres (Recommended)"], ["Email", "SSO"]]},
        }
    ]
    assert lines[0] == asked
    assert lines[1:-1] == events[1:]  # the session's forwarded events, in order; no others
    assert lines[-1] == {"type": "compass.result", "ok": True}
    assert (calls["logs"], calls["toasts"]) == ([], [])


def test_a_rejection_and_what_opencode_said_of_it(tmp_path: Path) -> None:
    asked = _recorded("rejected.jsonl")[0]
    calls, lines = _run(
        tmp_path,
        reply=json.dumps({"reject": True}),
        events=[asked],
        post={
            "error": {"name": "NotFoundError", "data": {"message": "Question not found"}},
            "status": 404,
        },
        wait_posts=1,
        wait_file=str(tmp_path / "lines.jsonl.done"),
    )
    assert calls["posts"] == [
        {
            "url": "/question/{requestID}/reject",
            "path": {"requestID": asked["properties"]["id"]},
            "body": None,
        }
    ]
    assert lines[-1] == {"type": "compass.result", "ok": False, "error": "404: Question not found"}


def test_shutting_down_ends_the_commands_input(tmp_path: Path) -> None:
    asked = _recorded("aborted.jsonl")[0]
    _, lines = _run(
        tmp_path,
        reply="-",
        events=[asked],
        dispose=True,
        wait_file=str(tmp_path / "lines.jsonl.done"),
    )
    assert lines == [asked]


def test_a_failing_command_is_logged_and_shown(tmp_path: Path) -> None:
    asked = _recorded("aborted.jsonl")[0]
    line = "compass opencode ask: cannot ask in Compass: the token is not an agent's"
    calls, _ = _run(tmp_path, reply="fail", args=[line], events=[asked])
    assert calls["logs"] == [{"service": "compass", "level": "error", "message": line}]
    assert calls["toasts"] == [{"title": "Compass", "message": line, "variant": "error"}]
    assert calls["posts"] == []


def test_a_command_that_cannot_start_is_logged(tmp_path: Path) -> None:
    asked = _recorded("aborted.jsonl")[0]
    missing = str(tmp_path / "no-compass")
    calls, _ = _run(tmp_path, reply="-", events=[asked], options={"command": [missing]})
    assert calls["logs"] == [
        {
            "service": "compass",
            "level": "error",
            "message": f"cannot run {missing}: spawn {missing} ENOENT",
        }
    ]


@pytest.mark.parametrize(
    "options", [None, {}, {"command": []}, {"command": "compass opencode ask"}]
)
def test_without_a_command_it_says_so_and_does_nothing(tmp_path: Path, options: Any) -> None:
    asked = _recorded("aborted.jsonl")[0]
    calls, _ = _run(tmp_path, reply="-", events=[asked], options=options)
    assert calls == {
        "posts": [],
        "logs": [
            {
                "service": "compass",
                "level": "error",
                "message": "the plugin's options have no command: run `compass opencode install`",
            }
        ],
        "toasts": [],
        "hooks": [],
    }
