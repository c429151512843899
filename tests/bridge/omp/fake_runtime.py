"""A scripted stand-in for the agent runtime's RPC mode, run as a child of `compass agent-bridge`.

    python tests/bridge/omp/fake_runtime.py SCRIPT.json

A test double of the NEWER `set_ask_dialog` protocol by default: oh-my-pi sources newer than
the published 18.2.3 accept `set_ask_dialog` and then send each ask call as ONE
`extension_ui_request` with `method: "ask"` and all its questions. No published version
does; the published runtime's own protocol (one select per question step, an editor for
"Other") is recorded from the real thing in tests/bridge/omp/recorded/, and a script can replay
it here with `"knows_set_ask_dialog": false`, which makes this double refuse the opt-in the
way 18.2.3 does: `{"type": "response", "command": "set_ask_dialog", "success": false,
"error": "Unknown command: set_ask_dialog"}`, with no `id`.

It behaves like oh-my-pi's RPC mode where the bridge can tell: it prints `ready` first and
then one JSON event per line on stdout, reads commands and replies from stdin on a thread,
answers commands with `response` frames (`set_ask_dialog` as above, `prompt` with success)
once it said `ready` (omp reads stdin only after printing it; pi prints no `ready` and
answers at once: `"ready": "never"`),
and checks every `extension_ui_response` it gets against what the script expects, exactly.
The real runtime sends an ask's first dialog request a few ms BEFORE the call's
`tool_execution_start`; the scripts in the tests keep that order.

The script is a JSON list of steps, or `{"steps": [...], "knows_set_ask_dialog"?: BOOL,
"ready"?: BOOL (false: no automatic `ready` line, commands answered once a step emits one)
or "never" (pi: no `ready` line, commands answered at once), "timeout"?: SECONDS (for every
wait)}`:

- `{"emit": EVENT}`: print EVENT as one line.
- `{"await_command": TYPE}`: wait until a command of that type arrived (the host's opt-in).
- `{"expect_commands": [TYPE, ...] or [COMMAND, ...]}`: the commands received so far are
  exactly these (given by their types, or whole).
- `{"expect_replies": [REPLY, ...]}`: wait for that many `extension_ui_response` lines; each
  must equal the expected reply with the same `id`, exactly (any order: concurrent asks).
- `{"await_eof": true}`: wait until the host closes stdin (as oh-my-pi then exits);
  `{"expect_open": true}`: it has not.
- `{"wait_file": PATH}` / `{"touch": PATH}`: let a test pace the runtime (an outage).
- `{"sleep": SECONDS}`.

Exit codes: 0 when every step passed and no reply arrived unasked; 3 a reply or the commands
differed; 4 a wait timed out; 5 stdin closed early; 6 an unexpected reply arrived. Failures
are explained on stderr.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from pathlib import Path
from typing import Any, NoReturn

TIMEOUT = 120.0
READY = {
    "type": "ready",
    "protocolVersion": 1,
    "supportedProtocolVersions": [1, 2],
    "maxFrameBytes": 1048576,
    "maxReassembledFrameBytes": 67108864,
}
"""oh-my-pi 18.2.3's first line (src/modes/rpc/rpc-mode.ts `runRpcMode`)."""
_stdout_lock = threading.Lock()
_replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
_commands: list[dict[str, Any]] = []
_commands_seen = threading.Condition()
_knows_set_ask_dialog = True
_eof = threading.Event()
_answering = threading.Event()
"""Set once the runtime answers commands (after its `ready` line)."""


def emit(event: object) -> None:
    with _stdout_lock:
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()
    if isinstance(event, dict) and event.get("type") == "ready":
        _answering.set()


def fail(code: int, why: str) -> NoReturn:
    sys.stderr.write(f"fake_runtime: {why}\n")
    sys.stderr.flush()
    raise SystemExit(code)


def read_stdin() -> None:
    for raw in sys.stdin:
        line = raw.strip()
        if not line:
            continue
        try:
            frame = json.loads(line)
        except ValueError:
            sys.stderr.write(f"fake_runtime: not JSON on stdin: {line[:200]!r}\n")
            continue
        if not isinstance(frame, dict):
            continue
        kind = frame.get("type")
        if kind == "extension_ui_response":
            _replies.put(frame)
            continue
        with _commands_seen:
            _commands.append(frame)
            _commands_seen.notify_all()
        _answering.wait()
        if kind == "set_ask_dialog" and _knows_set_ask_dialog:
            emit(
                {
                    "id": frame.get("id"),
                    "type": "response",
                    "command": "set_ask_dialog",
                    "success": True,
                    "data": {"enabled": frame.get("enabled") is True},
                }
            )
        elif kind == "set_ask_dialog":  # 18.2.3: an unknown command, answered without its id
            emit(
                {
                    "type": "response",
                    "command": kind,
                    "success": False,
                    "error": f"Unknown command: {kind}",
                }
            )
        elif kind == "prompt":
            emit({"id": frame.get("id"), "type": "response", "command": kind, "success": True})
        else:
            emit(
                {
                    "id": frame.get("id"),
                    "type": "response",
                    "command": kind,
                    "success": False,
                    "error": f"Unknown command: {kind}",
                }
            )
    _eof.set()
    _replies.put(None)


def await_command(kind: str) -> None:
    with _commands_seen:
        if not _commands_seen.wait_for(
            lambda: any(c.get("type") == kind for c in _commands), timeout=TIMEOUT
        ):
            fail(4, f"the host never sent {kind!r}")


def expect_replies(expected: list[dict[str, Any]]) -> None:
    wanted = {reply["id"]: reply for reply in expected}
    deadline = time.monotonic() + TIMEOUT
    while wanted:
        try:
            reply = _replies.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            fail(4, f"no reply for {sorted(wanted)} within {TIMEOUT}s")
        if reply is None:
            fail(5, f"stdin closed while waiting for {sorted(wanted)}")
        want = wanted.pop(reply.get("id"), None)
        if want is None:
            fail(6, f"unexpected reply {json.dumps(reply)}")
        if reply != want:
            fail(3, f"reply differs:\n got      {json.dumps(reply)}\n expected {json.dumps(want)}")
        sys.stderr.write(f"fake_runtime: got the expected reply for {reply['id']}\n")


def expect_commands(expected: list[Any]) -> None:
    with _commands_seen:
        commands = list(_commands)
    by_type = not any(isinstance(e, dict) for e in expected)
    seen = [c.get("type") for c in commands] if by_type else commands
    if seen != expected:
        fail(3, f"commands differ:\n got      {seen}\n expected {expected}")


def main() -> None:
    global _knows_set_ask_dialog, TIMEOUT  # noqa: PLW0603 - set once, before the reader starts
    script = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    steps = script
    ready = True
    if isinstance(script, dict):
        _knows_set_ask_dialog = script.get("knows_set_ask_dialog", True) is not False
        ready = script.get("ready", True)
        if ready == "never":
            _answering.set()
        TIMEOUT = float(script.get("timeout", TIMEOUT))
        steps = script["steps"]
    threading.Thread(target=read_stdin, daemon=True).start()
    if ready is True:
        emit(READY)
    for step in steps:
        if "emit" in step:
            emit(step["emit"])
        elif "await_command" in step:
            await_command(step["await_command"])
        elif "expect_commands" in step:
            expect_commands(step["expect_commands"])
        elif "await_eof" in step:
            if not _eof.wait(TIMEOUT):
                fail(4, "the host never closed stdin")
        elif "expect_open" in step:
            if _eof.is_set():
                fail(3, "the host closed stdin too early")
        elif "expect_replies" in step:
            expect_replies(step["expect_replies"])
        elif "wait_file" in step:
            deadline = time.monotonic() + TIMEOUT
            while not Path(step["wait_file"]).exists():
                if time.monotonic() > deadline:
                    fail(4, f"{step['wait_file']} never appeared")
                time.sleep(0.05)
        elif "touch" in step:
            Path(step["touch"]).touch()
        elif "sleep" in step:
            time.sleep(step["sleep"])
        else:
            fail(2, f"unknown step {step!r}")
    # A reply sent after the last expected one would be a duplicate. Once the host closed
    # stdin every reply it sent is queued; a host that keeps stdin open gets 0.3 s to send one.
    _eof.wait(0.3)
    try:
        extra = _replies.get_nowait()
    except queue.Empty:
        extra = None
    if extra is not None:
        fail(6, f"unexpected reply {json.dumps(extra)}")


if __name__ == "__main__":
    main()
