"""omp/process.py: `compass agent-bridge --protocol rpc` running the runtime (a child or stdin),
its signals, prompt, drain and exit codes."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
from typing import TYPE_CHECKING

from compass_bridge import process as bridge_process
from compass_bridge.omp import process as bridge_session
from compass_server import cli
from tests._wait import eventually_sync
from tests.bridge import _events as ev

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    import pytest


def run_cli(*args: str) -> int:
    return cli.main(["agent-bridge", *args])


def test_a_runtime_that_cannot_start_exits_127(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = tmp_path / "token"
    token.write_text("agt_x")
    code = run_cli(
        "--server",
        "http://127.0.0.1:9/",
        "--channel",
        "ch",
        "--token-file",
        str(token),
        "--",
        str(tmp_path / "no-such-runtime"),
    )
    assert code == 127
    assert "cannot start" in capsys.readouterr().err


def test_the_command_after_the_double_dash_is_kept_whole() -> None:
    args = cli.build_parser().parse_args(
        [
            "agent-bridge",
            "--server",
            "http://h/",
            "--channel",
            "c",
            "--token-file",
            "t",
            "--",
            sys.executable,
            "-m",
            "runtime",
            "--mode",
            "rpc",
        ]
    )
    assert args.command == [sys.executable, "-m", "runtime", "--mode", "rpc"]
    assert args.ask_dialog is True


def _bridge_process(
    tmp_path: Path, steps: Sequence[Mapping[str, object]], *extra: str
) -> subprocess.Popen[bytes]:
    """The real command, its runtime the fake one, its server a port nobody listens on."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    token = tmp_path / "token"
    token.write_text("agt_x")
    return subprocess.Popen(
        [
            sys.executable, "-m", "compass_server.cli", "agent-bridge",
            "--server", f"http://127.0.0.1:{_closed_port()}/", "--channel", "ch",
            "--token-file", str(token), "--max-backoff", "0.2", *extra,
            "--", sys.executable, str(ev.FAKE_RUNTIME), str(script),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_signal_reaches_the_runtime_and_its_end_is_the_exit_code(tmp_path: Path) -> None:
    started = tmp_path / "started"
    process = _bridge_process(
        tmp_path, [{"touch": str(started)}, {"wait_file": str(tmp_path / "never")}]
    )
    try:
        eventually_sync(started.exists, "the runtime's start", within=30)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()  # also closes the pipe
    assert process.returncode == 128 + signal.SIGTERM, err.decode()


def test_the_drain_timeout_bounds_the_wait_for_an_unreachable_server(tmp_path: Path) -> None:
    steps = [{"emit": event} for event in ev.assistant_message("m-1", "Nobody will see this.")]
    process = _bridge_process(tmp_path, steps, "--drain-timeout", "1")
    try:
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()  # also closes the pipe
    log = err.decode()
    # Issue 12: giving up queued messages is a failure (it exited 0 before), and says how many.
    assert process.returncode == 1, log
    assert "gave up posting 1 queued message(s); they are lost" in log
    assert "agt_x" not in log


def _run_in_process(tmp_path: Path, script: Mapping[str, object], prompt: str | None) -> int:
    """`session.run` with the fake runtime as its child; its server a port nobody listens
    on. Returns the child's exit code: 0 when every step of its script passed."""
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    options = bridge_process.BridgeOptions(
        server=f"http://127.0.0.1:{_closed_port()}/",
        channel_id="ch",
        token="agt_x",
        command=(sys.executable, str(ev.FAKE_RUNTIME), str(path)),
        prompt=prompt,
        max_backoff=0.2,
        drain_timeout=1,
    )
    return asyncio.run(bridge_session.run(options))


READY = {"type": "ready", "protocolVersion": 1, "supportedProtocolVersions": [1, 2]}
OPT_IN = {"id": "compass-bridge-ask-dialog", "type": "set_ask_dialog", "enabled": True}


def test_the_prompt_is_sent_once_the_runtime_is_ready(tmp_path: Path) -> None:
    prompt = "Set up the new accounts service.\nAsk me first."
    script = {
        "ready": False,
        "timeout": 10,
        "steps": [
            {"sleep": 0.3},
            {"expect_commands": [OPT_IN]},  # nothing before `ready` but the opt-in
            {"emit": READY},
            {"await_command": "prompt"},
            {
                "expect_commands": [
                    OPT_IN,
                    {"id": "compass-bridge-prompt", "type": "prompt", "message": prompt},
                ]
            },
        ],
    }
    assert _run_in_process(tmp_path, script, prompt) == 0


def test_a_runtime_without_a_ready_line_is_ready_once_it_answers_a_command(
    tmp_path: Path,
) -> None:
    """pi (`pi --mode rpc`) prints no `ready` line; its answer to the opt-in ("Unknown
    command: set_ask_dialog") says it reads commands, and the prompt follows it."""
    script = {
        "ready": "never",
        "knows_set_ask_dialog": False,
        "timeout": 10,
        "steps": [
            {"await_command": "prompt"},
            {"expect_commands": ["set_ask_dialog", "prompt"]},
        ],
    }
    assert _run_in_process(tmp_path, script, "hello") == 0


def test_without_a_prompt_none_is_sent(tmp_path: Path) -> None:
    script = {"timeout": 10, "steps": [{"sleep": 0.3}, {"expect_commands": ["set_ask_dialog"]}]}
    assert _run_in_process(tmp_path, script, None) == 0


def test_a_prompt_is_not_sent_to_a_runtime_that_never_says_ready(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    script = {"ready": False, "timeout": 10, "steps": [{"sleep": 0.3}]}
    assert _run_in_process(tmp_path, script, "hello") == 0
    assert "the prompt was not sent" in caplog.text


def test_after_the_prompts_run_the_runtimes_input_is_closed_so_it_exits(tmp_path: Path) -> None:
    script = {
        "timeout": 10,
        "steps": [
            {"await_command": "prompt"},
            {"emit": {"type": "agent_start"}},
            # A retry or a queued message continues the run: not the end yet.
            {"emit": {"type": "agent_end", "messages": [], "isTerminal": False}},
            {"sleep": 0.3},
            {"expect_open": True},
            {"emit": {"type": "agent_end", "messages": [], "isTerminal": True}},
            {"await_eof": True},
        ],
    }
    assert _run_in_process(tmp_path, script, "go") == 0


def test_without_a_prompt_the_runtimes_input_stays_open_after_a_run(tmp_path: Path) -> None:
    script = {
        "timeout": 10,
        "steps": [
            {"emit": {"type": "agent_end", "messages": [], "isTerminal": True}},
            {"sleep": 0.3},
            {"expect_open": True},
        ],
    }
    assert _run_in_process(tmp_path, script, None) == 0
