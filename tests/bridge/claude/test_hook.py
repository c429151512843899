"""`compass claude-hook` where it has nothing to ask, or cannot run: it says so on stderr,
prints nothing (Claude Code then asks its own way) and never exits 2 (which would block the
tool call and hand stderr to the model). The asking itself runs against the real Claude
Code in tests/realagent/test_claude_hooks.py."""

from __future__ import annotations

import json
import logging
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


def test_install_refuses_a_settings_file_it_cannot_take(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text('{"hooks": []}')
    argv = ["claude-hook", "install", "--settings", str(settings), "--server", "http://h/"]
    assert main([*argv, "--channel", "ch-1"]) == 1
    err = capsys.readouterr().err
    assert f'{settings}: its "hooks" is not an object; nothing was written' in err
    assert settings.read_text() == '{"hooks": []}'


def test_the_process_start_is_a_moment_ago() -> None:
    now = time.time()
    started = started_at()
    assert now - 60 <= started <= now
