"""`compass claude-hook install`: the hook entries merged into Claude Code's settings
(compass_bridge/claude/install.py) without clobbering anything else."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, strategies as st

from compass_bridge.claude.install import (
    hook_command,
    install,
    settings_path,
    with_hooks,
)
from compass_bridge.config_files import ConfigFileError

COMMAND = hook_command(
    ["/opt/compass/bin/compass"],
    server="https://compass.example/",
    channel_id="ch-1",
    token_file=None,
    timeout=3600,
)
OURS = {"type": "command", "command": COMMAND, "timeout": 3600}
PRE = {"matcher": "AskUserQuestion", "hooks": [OURS]}
ELICIT = {"hooks": [OURS]}
LINT = {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}


def test_the_command_names_the_server_channel_token_and_timeout(tmp_path: Path) -> None:
    token = tmp_path / "my token"
    assert hook_command(
        ["/usr/bin/python3", "-m", "compass_server.cli"],
        server="http://127.0.0.1:8000/",
        channel_id="ch 1",
        token_file=token,
        timeout=60,
    ) == (
        "/usr/bin/python3 -m compass_server.cli claude-hook --server http://127.0.0.1:8000/ "
        f"--channel 'ch 1' --token-file '{token}' --timeout 60"
    )


def test_empty_settings_get_both_hooks() -> None:
    assert with_hooks({}, COMMAND, 3600) == {
        "hooks": {"PreToolUse": [PRE], "Elicitation": [ELICIT]}
    }


def test_other_hooks_and_settings_are_kept_in_their_order() -> None:
    notify = {"hooks": [{"type": "command", "command": "notify-send done"}]}
    settings = {
        "model": "opus",
        "hooks": {"PreToolUse": [LINT], "Stop": [notify]},
        "permissions": {"allow": ["Bash(ls)"]},
    }
    merged = with_hooks(settings, COMMAND, 3600)
    assert merged == {
        "model": "opus",
        "hooks": {"PreToolUse": [LINT, PRE], "Stop": [notify], "Elicitation": [ELICIT]},
        "permissions": {"allow": ["Bash(ls)"]},
    }
    assert list(merged) == ["model", "hooks", "permissions"]


def test_an_older_entry_of_ours_is_replaced_where_it_stood() -> None:
    old = {"type": "command", "command": "compass claude-hook --server http://old/", "timeout": 60}
    settings = {"hooks": {"PreToolUse": [{"matcher": "AskUserQuestion", "hooks": [old]}, LINT]}}
    merged: Any = with_hooks(settings, COMMAND, 3600)
    assert merged["hooks"]["PreToolUse"] == [PRE, LINT]


def test_ours_is_taken_out_of_a_group_it_shares() -> None:
    other = {"type": "command", "command": "audit.sh"}
    shared = {"matcher": "AskUserQuestion", "hooks": [other, OURS]}
    merged: Any = with_hooks({"hooks": {"PreToolUse": [shared]}}, COMMAND, 3600)
    assert merged["hooks"]["PreToolUse"] == [{"matcher": "AskUserQuestion", "hooks": [other]}, PRE]


def test_running_it_twice_changes_nothing_more() -> None:
    once = with_hooks({"hooks": {"PreToolUse": [LINT]}}, COMMAND, 3600)
    assert with_hooks(once, COMMAND, 3600) == once


@pytest.mark.parametrize(
    ("settings", "why"),
    [
        ([], "it does not hold a JSON object"),
        ({"hooks": []}, 'its "hooks" is not an object'),
        ({"hooks": {"PreToolUse": {}}}, 'its "hooks.PreToolUse" is not a list'),
        ({"hooks": {"Elicitation": "x"}}, 'its "hooks.Elicitation" is not a list'),
    ],
)
def test_settings_of_another_shape_are_refused(settings: object, why: str) -> None:
    with pytest.raises(ConfigFileError, match=why.replace(".", r"\.")):
        with_hooks(settings, COMMAND, 3600)


JSON_LEAF = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
HANDLER = st.fixed_dictionaries(
    {"type": st.sampled_from(["command", "http"]), "command": st.text(max_size=30)},
    optional={"timeout": st.integers(1, 100)},
)
GROUP = st.fixed_dictionaries(
    {"hooks": st.lists(HANDLER, max_size=3)},
    optional={"matcher": st.sampled_from(["AskUserQuestion", "Bash", "*", ""])},
)
SETTINGS = st.fixed_dictionaries(
    {},
    optional={
        "hooks": st.dictionaries(
            st.sampled_from(["PreToolUse", "Elicitation", "Stop", "PostToolUse"]),
            st.lists(GROUP | JSON_LEAF, max_size=3),
            max_size=3,
        ),
        "model": st.text(max_size=5),
        "env": st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
    },
)


def _handlers(settings: dict[str, Any]) -> list[tuple[str, str]]:
    """Every handler but ours, with its event, in order."""
    return [
        (event, json.dumps(handler, sort_keys=True))
        for event, groups in settings.get("hooks", {}).items()
        for group in groups
        if isinstance(group, dict)
        for handler in group["hooks"]
        if handler != OURS
    ]


@given(SETTINGS)
def test_any_settings_keep_every_other_handler_and_settle_at_once(settings: dict[str, Any]) -> None:
    merged: Any = with_hooks(settings, COMMAND, 3600)
    assert with_hooks(merged, COMMAND, 3600) == merged
    assert {k: v for k, v in merged.items() if k != "hooks"} == {
        k: v for k, v in settings.items() if k != "hooks"
    }
    # (The generated commands never name claude-hook: none of them is taken for ours.)
    assert _handlers(merged) == _handlers(settings)
    for event in ("PreToolUse", "Elicitation"):
        groups = merged["hooks"][event]
        assert sum(1 for g in groups if isinstance(g, dict) and OURS in g["hooks"]) == 1
    for event, groups in settings.get("hooks", {}).items():
        if event not in {"PreToolUse", "Elicitation"}:
            assert merged["hooks"][event] == groups


# -- files ---------------------------------------------------------------------------------


def test_a_missing_file_is_created_with_its_folder(tmp_path: Path) -> None:
    path = tmp_path / "project" / ".claude" / "settings.local.json"
    assert install(path, COMMAND, 3600) is True
    assert json.loads(path.read_text()) == {"hooks": {"PreToolUse": [PRE], "Elicitation": [ELICIT]}}
    assert path.read_text().endswith("}\n")


def test_an_existing_file_keeps_its_hooks_and_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"hooks": {"PreToolUse": [LINT]}, "theme": "dark"}))
    path.chmod(0o600)
    assert install(path, COMMAND, 3600) is True
    assert json.loads(path.read_text()) == {
        "hooks": {"PreToolUse": [LINT, PRE], "Elicitation": [ELICIT]},
        "theme": "dark",
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    before = path.stat().st_mtime_ns
    assert install(path, COMMAND, 3600) is False
    assert path.stat().st_mtime_ns == before
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]  # no temp file left


@pytest.mark.parametrize(
    ("text", "why"),
    [("{not json", "it is not JSON"), ('{"hooks": []}', '"hooks" is not an object')],
)
def test_a_file_that_cannot_take_them_is_left_alone(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text(text)
    with pytest.raises(ConfigFileError, match=why):
        install(path, COMMAND, 3600)
    assert path.read_text() == text


def test_scopes_are_where_claude_code_reads_them(tmp_path: Path) -> None:
    home = {"HOME": str(tmp_path / "home")}
    assert settings_path("user", tmp_path, home) == tmp_path / "home" / ".claude" / "settings.json"
    config = {**home, "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    assert settings_path("user", tmp_path, config) == tmp_path / "cfg" / "settings.json"
    assert settings_path("project", tmp_path, home) == tmp_path / ".claude" / "settings.json"
    assert settings_path("local", tmp_path, home) == tmp_path / ".claude" / "settings.local.json"
    assert os.fspath(settings_path("user", tmp_path, {})).endswith(".claude/settings.json")


# -- what Claude Code could no longer read (issue 33, H6), a linked file (H7) -----------------


@pytest.mark.parametrize(
    ("text", "why"),
    [
        # Python reads 1e999 as inf and would write `Infinity`, which is not JSON.
        ('{"cleanupPeriodDays": 1e999}', "it holds a number too large to keep (1e999)"),
        ('{"x": -1E400}', "it holds a number too large to keep (-1E400)"),
        ('{"x": NaN}', "it is not JSON (NaN)"),
        ('{"x": -Infinity}', "it is not JSON (-Infinity)"),
        ("[" * 100_000 + "]" * 100_000, "it is nested too deeply"),
    ],
)
def test_a_file_claude_code_could_not_read_back_is_refused(
    tmp_path: Path, text: str, why: str
) -> None:
    path = tmp_path / "settings.json"
    path.write_text(text)
    with pytest.raises(ConfigFileError) as refused:
        install(path, COMMAND, 3600)
    assert str(refused.value) == why
    assert path.read_text() == text


def test_a_lone_surrogate_escape_is_kept_as_it_was(tmp_path: Path) -> None:
    """JSON may escape half a surrogate pair (JavaScript strings hold one); UTF-8 cannot
    carry it, so it is written back as the same escape (issue 33, H6: a traceback)."""
    path = tmp_path / "settings.json"
    path.write_text('{"statusLine": "\\ud800 and \\udfff", "theme": "é"}')
    assert install(path, COMMAND, 3600) is True
    written = path.read_text(encoding="utf-8")
    assert '"statusLine": "\\ud800 and \\udfff"' in written
    assert '"theme": "é"' in written
    assert json.loads(written) == {
        "statusLine": "\ud800 and \udfff",
        "theme": "é",
        "hooks": {"PreToolUse": [PRE], "Elicitation": [ELICIT]},
    }
    assert install(path, COMMAND, 3600) is False


def test_a_linked_settings_file_is_written_through_its_link(tmp_path: Path) -> None:
    """A dotfile manager's link stays a link; its target gets the hooks (issue 33, H7),
    replaced in one step beside itself, keeping its mode."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "claude-settings.json"
    target.write_text('{"theme": "dark"}')
    target.chmod(0o600)
    claude = tmp_path / ".claude"
    claude.mkdir()
    (claude / "relative").symlink_to(Path("..") / "dotfiles" / "claude-settings.json")
    link = claude / "settings.json"
    link.symlink_to(claude / "relative")  # a chain of two links
    assert install(link, COMMAND, 3600) is True
    assert link.is_symlink()
    assert (claude / "relative").is_symlink()
    assert json.loads(target.read_text()) == {
        "theme": "dark",
        "hooks": {"PreToolUse": [PRE], "Elicitation": [ELICIT]},
    }
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in dotfiles.iterdir()) == ["claude-settings.json"]
    assert sorted(p.name for p in claude.iterdir()) == ["relative", "settings.json"]
    assert install(link, COMMAND, 3600) is False


def test_a_dangling_link_gets_its_target_created(tmp_path: Path) -> None:
    link = tmp_path / "settings.json"
    link.symlink_to(tmp_path / "store" / "settings.json")
    assert install(link, COMMAND, 3600) is True
    assert link.is_symlink()
    assert json.loads((tmp_path / "store" / "settings.json").read_text())["hooks"]
