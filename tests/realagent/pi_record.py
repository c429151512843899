"""Record the real pi's RPC conversation for tests/bridge/omp/recorded/pi/ (the fast tests
replay them): `python -m tests.realagent.pi_record [NAME...]` (default: every case).

Each case runs `pi --mode rpc` (pi_agent.py: the pinned pi, Compass's ask_user extension,
the test bed's gate.ts) with a scripted model whose first turn is CALLS and whose second
says "thanks", and a scripted host: it sends what the bridge sends first (`set_ask_dialog`,
then the prompt "go"), answers each dialog with the next of REPLIES (`"abort"`: the
`abort` command, then `cancelled`, as the bridge answers a decline), and closes pi's input
at `agent_end`. Lines are written as `_recorded.py` reads them, leaving out `message_update`
and `agent_end` (large, of no use there).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.realagent.model_server import ScriptedModelServer, ToolCall, Turn
from tests.realagent.pi_agent import ASK_USER_TS, pi_launch, write_pi_config

OUT = Path(__file__).resolve().parents[1] / "bridge" / "omp" / "recorded" / "pi"
GATE_TS = Path(__file__).resolve().parent / "pi" / "gate.ts"

FOUR = {
    "questions": [
        {"id": "db", "question": "Which database?", "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
        {"id": "tests", "question": "Add tests?", "options": [{"label": "Yes"}, {"label": "No"}]},
        {"id": "name", "question": "Service name?", "options": []},
        {"id": "auth", "question": "Auth flows?", "options": [{"label": "Email"}, {"label": "OAuth"}], "multi": True},
    ]
}  # fmt: skip
"""One question of each kind: select, confirm, input, multi-select (select + editor)."""

CASES: dict[str, tuple[list[ToolCall], list[Any]]] = {
    # A pick; Yes; text; a pick, then "Other" and its text (the editor).
    "four": (
        [ToolCall("ask_user", FOUR, "call_ask_1")],
        [
            {"value": "SQLite"},
            {"confirmed": True},
            {"value": "ledger"},
            {"value": "[ ] OAuth"},
            {"value": "Other (type your own)"},
            {"value": "and passkeys"},
        ],
    ),
    # "Other" and its text; No; empty text; two picks, then "Done".
    "other": (
        [ToolCall("ask_user", FOUR, "call_ask_1")],
        [
            {"value": "Other (type your own)"},
            {"value": "CockroachDB"},
            {"confirmed": False},
            {"value": ""},
            {"value": "[ ] OAuth"},
            {"value": "[ ] Email"},
            {"value": "Done"},
        ],
    ),
    # A decline: the run is aborted, then the pending confirm cancelled.
    "decline": (
        [ToolCall("ask_user", {"questions": FOUR["questions"][1:2]}, "call_ask_1")],
        ["abort"],
    ),
    # The gate's confirm before bash: a dialog of no ask call.
    "gate": (
        [ToolCall("bash", {"command": "echo compass-was-here"}, "call_bash_1")],
        [{"confirmed": True}],
    ),
}


def record(name: str) -> Path:
    calls, replies = CASES[name]
    pending = list(replies)
    lines: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        ScriptedModelServer([Turn(tool_calls=tuple(calls)), Turn.say("thanks")]) as model,
    ):
        home, workspace = Path(tmp, "home"), Path(tmp, "workspace")
        workspace.mkdir()
        write_pi_config(home, model.base_url)
        launch = pi_launch(
            home=home,
            workspace=workspace,
            proxy_url=f"http://127.0.0.1:{model.port}",
            extensions=(ASK_USER_TS, GATE_TS),
        )
        process = subprocess.Popen(
            launch.argv,
            env=launch.env,
            cwd=launch.cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert process.stdin is not None
        assert process.stdout is not None

        def send(frame: dict[str, Any]) -> None:
            lines.append({"host": frame})
            assert process.stdin is not None
            process.stdin.write((json.dumps(frame) + "\n").encode())
            process.stdin.flush()

        send({"id": "compass-bridge-ask-dialog", "type": "set_ask_dialog", "enabled": True})
        send({"id": "compass-bridge-prompt", "type": "prompt", "message": "go"})
        for raw in process.stdout:
            frame = json.loads(raw)
            kind = frame.get("type")
            if kind == "agent_end":
                process.stdin.close()
                continue
            if kind != "message_update":
                lines.append({"runtime": frame})
            if kind == "extension_ui_request" and frame.get("method") in {
                "select",
                "confirm",
                "input",
                "editor",
            }:
                reply = pending.pop(0)
                if reply == "abort":
                    send({"id": "compass-bridge-abort", "type": "abort"})
                    reply = {"cancelled": True}
                send({"type": "extension_ui_response", "id": frame["id"], **reply})
        process.wait(timeout=30)
    assert not pending, f"{name}: replies left over: {pending}"
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path


if __name__ == "__main__":
    for case in sys.argv[1:] or sorted(CASES):
        print(record(case))  # noqa: T201 - a script
