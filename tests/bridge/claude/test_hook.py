"""`compass claude-hook` where it has nothing to ask, or cannot run: it says so on stderr,
prints nothing (Claude Code then asks its own way) and never exits 2 (which would block the
tool call and hand stderr to the model). The asking itself runs against the real Claude
Code in tests/realagent/test_claude_hooks.py."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest

from compass_bridge.claude.hook import HookOptions, run, started_at
from compass_server.cli import main

if TYPE_CHECKING:
    from pathlib import Path

OPTIONS = HookOptions(server="http://127.0.0.1:9/", channel_id="ch-1", token="tok")


@pytest.mark.parametrize(
    ("event", "logged"),
    [
        (b"not json", "stdin is not a JSON hook event"),
        (b"[]", "stdin is not a JSON hook event"),
        # Deeper than the parser's recursion limit (issue 33, H5: a traceback).
        (b"[" * 100_000 + b"]" * 100_000, "stdin is not a JSON hook event (nested too deeply)"),
        (
            json.dumps(
                {
                    "hook_event_name": "PreToolUse",
                    "tool_name": "AskUserQuestion",
                    "tool_input": {"questions": [], "x": json.loads("[" * 500 + "]" * 500)},
                }
            ).encode(),
            "stdin is not a JSON hook event (nested too deeply)",
        ),
        (
            json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash"}).encode(),
            "nothing to ask for hook event 'PreToolUse' (tool 'Bash')",
        ),
        (
            json.dumps(
                {
                    "hook_event_name": "PreToolUse",
                    "tool_name": "AskUserQuestion",
                    "tool_input": {"questions": [{"question": "Go?", "options": "yes"}]},
                }
            ).encode(),
            "cannot ask this AskUserQuestion in Compass: questions[0].options is not an array",
        ),
        (
            json.dumps(
                {"hook_event_name": "Elicitation", "mode": "url", "message": "Sign in"}
            ).encode(),
            "cannot ask this form in Compass: a 'url' elicitation is not a form",
        ),
    ],
)
def test_nothing_to_ask_prints_nothing(
    event: bytes, logged: str, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    assert run(OPTIONS, event, time.time()) == 0
    assert capsys.readouterr().out == ""
    assert logged in caplog.text


def test_malformed_input_ends_in_one_line_from_the_command(tmp_path: Path) -> None:
    """As Claude Code runs it (a process): 100,000-deep JSON on stdin is one line on stderr
    and exit 0, as every other input with nothing to ask (issue 33, H5: a RecursionError
    traceback, exit 1)."""
    command = ["claude-hook", "--server", "http://127.0.0.1:9/", "--channel", "ch-1"]
    done = subprocess.run(
        [sys.executable, "-m", "compass_server.cli", *command],
        input=b"[" * 100_000,
        capture_output=True,
        env={**os.environ, "COMPASS_TOKEN": "cmp_tok"},
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert (done.returncode, done.stdout) == (0, b""), done
    assert done.stderr.decode().splitlines() == [
        "ERROR compass_bridge.claude.hook: stdin is not a JSON hook event (nested too deeply)"
    ]


def test_a_hook_that_cannot_run_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("COMPASS_TOKEN", raising=False)
    base = ["claude-hook", "--server", "http://127.0.0.1:9/", "--channel", "ch-1"]
    assert main(base) == 1
    assert "compass claude-hook: give --token-file or set COMPASS_TOKEN" in capsys.readouterr().err
    assert main([*base, "--token-file", str(tmp_path / "none")]) == 1
    assert "does not exist" in capsys.readouterr().err
    monkeypatch.setenv("COMPASS_TOKEN", "two words")
    assert main(base) == 1
    assert "$COMPASS_TOKEN must hold exactly one token" in capsys.readouterr().err
    assert main(["claude-hook", "--channel", "ch-1"]) == 1
    with pytest.raises(SystemExit) as usage:
        main([*base, "--no-such-option"])
    assert usage.value.code == 1
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err


def test_a_usage_error_of_install_is_2_as_its_other_refusals(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`claude-hook install` is run by a person, not by Claude Code: its usage errors are the
    usual 2, like every other refusal of install (only the hook itself maps them to 1)."""
    with pytest.raises(SystemExit) as usage:
        main(
            [
                "claude-hook",
                "install",
                "--server",
                "http://127.0.0.1:9/",
                "--channel",
                "c",
                "--no-such-option",
            ]
        )
    assert usage.value.code == 2
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"hooks": []}', 'its "hooks" is not an object'),
        # Issue 33, H6: written back as `Infinity` (not JSON); a RecursionError traceback.
        ('{"x": 1e999}', "it holds a number too large to keep (1e999)"),
        ("[" * 100_000, "it is nested too deeply"),
    ],
)
def test_install_refuses_a_settings_file_it_cannot_take(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, why: str
) -> None:
    """One line, exit 2 (a person's command: nothing of Claude Code's contract applies), the
    file as it was. The settings are judged before the server is asked anything."""
    settings = tmp_path / "settings.json"
    settings.write_text(text)
    argv = ["claude-hook", "install", "--settings", str(settings), "--server", "http://h/"]
    assert main([*argv, "--channel", "ch-1"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"compass claude-hook install: {settings}: {why}; nothing was written"
    ]
    assert settings.read_text() == text


def test_the_process_start_is_a_moment_ago() -> None:
    now = time.time()
    started = started_at()
    assert now - 60 <= started <= now
