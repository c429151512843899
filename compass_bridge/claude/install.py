"""`compass claude-hook install`: the hook entries in Claude Code's settings.

Claude Code reads hooks from its settings files (`~/.claude/settings.json`, or
`$CLAUDE_CONFIG_DIR/settings.json`, for the user; `.claude/settings.json` and
`.claude/settings.local.json` in a project), each event a list of matcher groups:

    {"hooks": {"PreToolUse": [{"matcher": "AskUserQuestion",
                               "hooks": [{"type": "command", "command": "...", "timeout": 3600}]}],
               "Elicitation": [{"hooks": [{"type": "command", "command": "...", "timeout": 3600}]}]}}

`with_hooks` puts `compass claude-hook` there without touching anything else: a handler of
its own (a command naming `claude-hook`) is replaced where it stood (or added at the end),
every other handler, group, event and setting is kept as it was, so running it again
changes nothing. A file that is not JSON, or whose `hooks` is not shaped as above, is
refused and left alone.

What is written back reads as it was read, and a settings file that is a symbolic link is
written through the link (the house rules of every agent's config file: config_files.py).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Final

from compass_bridge import config_files
from compass_bridge.claude.questions import ELICITATION_EVENT, PRE_TOOL_USE_EVENT, QUESTION_TOOL
from compass_bridge.config_files import ConfigFileError
from compass_core.jsonvalues import JsonObject, is_array, is_object

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "DEFAULT_INSTALL_TIMEOUT",
    "SCOPES",
    "hook_command",
    "install",
    "merge",
    "settings_path",
    "with_hooks",
]

DEFAULT_INSTALL_TIMEOUT: Final = 3600
"""Seconds a person has to answer before Claude Code asks in the terminal instead."""
SCOPES: Final = ("user", "project", "local")
_MARK: Final = "claude-hook"


def hook_command(
    compass: Sequence[str],
    *,
    server: str,
    channel_id: str,
    token_file: Path | None,
    timeout: int,
) -> str:
    """The shell command of both hook entries (Claude Code runs it with a shell)."""
    argv = [*compass, _MARK, "--server", server, "--channel", channel_id]
    if token_file is not None:
        argv += ["--token-file", str(token_file)]
    argv += ["--timeout", str(timeout)]
    return shlex.join(argv)


def settings_path(scope: str, cwd: Path, env: Mapping[str, str]) -> Path:
    """The settings file of `scope` (one of SCOPES) as Claude Code finds it."""
    if scope == "user":
        config = env.get("CLAUDE_CONFIG_DIR")
        base = Path(config) if config else Path(env.get("HOME") or Path.home()) / ".claude"
        return base / "settings.json"
    name = "settings.local.json" if scope == "local" else "settings.json"
    return cwd / ".claude" / name


def _is_ours(handler: object) -> bool:
    if not is_object(handler) or handler.get("type") != "command":
        return False
    command = handler.get("command")
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return _MARK in words and "install" not in words


def _merged(groups: list[object], group: JsonObject, matcher: str | None) -> list[object]:
    """`groups` with our handlers taken out and `group` in place of the first group that held
    only ours under the same matcher (else at the end)."""
    result: list[object] = []
    placed = False
    for existing in groups:
        handlers = existing.get("hooks") if is_object(existing) else None
        if not is_object(existing) or not is_array(handlers):
            result.append(existing)
            continue
        others = [handler for handler in handlers if not _is_ours(handler)]
        if len(others) == len(handlers):
            result.append(existing)
        elif others:
            result.append({**existing, "hooks": others})
        elif not placed and existing.get("matcher") == matcher:
            result.append(group)
            placed = True
    if not placed:
        result.append(group)
    return result


def with_hooks(settings: object, command: str, timeout: int) -> JsonObject:
    """`settings` (a decoded settings file) with the two hook entries running `command`.

    Raises:
        ConfigFileError: `settings` or its `hooks` are not shaped as Claude Code reads them.
    """
    if not is_object(settings):
        raise ConfigFileError("it does not hold a JSON object")
    hooks = settings.get("hooks", {})
    if not is_object(hooks):
        raise ConfigFileError('its "hooks" is not an object')
    updated: JsonObject = dict(hooks)
    handler: JsonObject = {"type": "command", "command": command, "timeout": timeout}
    for event, matcher in ((PRE_TOOL_USE_EVENT, QUESTION_TOOL), (ELICITATION_EVENT, None)):
        groups = hooks.get(event, [])
        if not is_array(groups):
            raise ConfigFileError(f'its "hooks.{event}" is not a list')
        group: JsonObject = {"hooks": [handler]}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        updated[event] = _merged(groups, group, matcher)
    return {**settings, "hooks": updated}


def merge(command: str, timeout: int) -> Callable[[object], JsonObject]:
    """`with_hooks` for `command` and `timeout`, as config_files merges a file."""
    return lambda settings: with_hooks(settings, command, timeout)


def install(path: Path, command: str, timeout: int) -> bool:
    """Write the hook entries into the settings file at `path` (created if missing, with its
    folder; through it to its target if it is a symbolic link); whether it changed.

    Raises:
        ConfigFileError: the file cannot be read, parsed or written (nothing was written).
    """
    return config_files.install(path, merge(command, timeout))
