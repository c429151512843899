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

What is written back must read as it was read (issue 33, H6): Python reads some JSON that it
cannot write back as JSON. A number beyond a double (`1e999`, read as infinity, would be
written `Infinity`) and nesting deeper than the parser's recursion limit are refused; so are
`NaN` and `Infinity`, which Python reads but are not JSON. Half a surrogate pair escaped in a
string (`"\\ud800"`: JSON allows it, JavaScript's strings hold it, UTF-8 cannot carry it) is
written back as the same escape. A settings file that is a symbolic link (a dotfile manager's)
is written through the link, its target replaced in one step beside itself (H7).
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Final

from compass_bridge.claude.questions import ELICITATION_EVENT, PRE_TOOL_USE_EVENT, QUESTION_TOOL
from compass_core.jsonvalues import JsonObject, is_array, is_object

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "DEFAULT_INSTALL_TIMEOUT",
    "SCOPES",
    "SettingsError",
    "compass_argv",
    "hook_command",
    "install",
    "settings_path",
    "updated_text",
    "with_hooks",
    "write",
]

DEFAULT_INSTALL_TIMEOUT: Final = 3600
"""Seconds a person has to answer before Claude Code asks in the terminal instead."""
SCOPES: Final = ("user", "project", "local")
_MARK: Final = "claude-hook"


class SettingsError(Exception):
    """The settings file cannot take the hooks; the message says why."""


def compass_argv() -> list[str]:
    """How to run this `compass` from a hook: the script it was started as, else this
    Python with `-m compass_server.cli`."""
    program = Path(sys.argv[0])
    if program.name == "compass" and program.is_file():
        return [str(program.absolute())]
    return [sys.executable, "-m", "compass_server.cli"]


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
        SettingsError: `settings` or its `hooks` are not shaped as Claude Code reads them.
    """
    if not is_object(settings):
        raise SettingsError("it does not hold a JSON object")
    hooks = settings.get("hooks", {})
    if not is_object(hooks):
        raise SettingsError('its "hooks" is not an object')
    updated: JsonObject = dict(hooks)
    handler: JsonObject = {"type": "command", "command": command, "timeout": timeout}
    for event, matcher in ((PRE_TOOL_USE_EVENT, QUESTION_TOOL), (ELICITATION_EVENT, None)):
        groups = hooks.get(event, [])
        if not is_array(groups):
            raise SettingsError(f'its "hooks.{event}" is not a list')
        group: JsonObject = {"hooks": [handler]}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        updated[event] = _merged(groups, group, matcher)
    return {**settings, "hooks": updated}


def install(path: Path, command: str, timeout: int) -> bool:
    """Write the hook entries into the settings file at `path` (created if missing, with its
    folder; through it to its target if it is a symbolic link); whether it changed.

    Raises:
        SettingsError: the file cannot be read, parsed or written (nothing was written).
    """
    text = updated_text(path, command, timeout)
    if text is None:
        return False
    write(path, text)
    return True


def updated_text(path: Path, command: str, timeout: int) -> str | None:
    """What the settings file at `path` becomes with the hook entries; None when it holds
    them already. Writes nothing.

    Raises:
        SettingsError: the file cannot be read or parsed, or would not read back as it was.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read it ({_why(exc)})") from None
    current: object = _parsed(text) if text.strip() else {}
    updated = with_hooks(current, command, timeout)
    if updated == current and text:
        return None
    written = json.dumps(updated, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    # Half a surrogate pair can only stand in a string: written back as its escape.
    return _LONE_SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", written)


def write(path: Path, text: str) -> None:
    """Replace the settings file at `path` with `text` (see `install`).

    Raises:
        SettingsError: it cannot be written (nothing was).
    """
    target = path.resolve()  # through every link; the link itself stays
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(target, text)
    except OSError as exc:
        raise SettingsError(f"cannot write it ({_why(exc)})") from None


_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _finite(literal: str) -> float:
    number = float(literal)
    if math.isinf(number):
        raise SettingsError(f"it holds a number too large to keep ({literal})")
    return number


def _not_json(literal: str) -> object:
    raise SettingsError(f"it is not JSON ({literal})")


def _parsed(text: str) -> object:
    """The settings file's JSON.

    Raises:
        SettingsError: it is not JSON, or holds what would not be written back as read.
    """
    try:
        return json.loads(text, parse_float=_finite, parse_constant=_not_json)
    except ValueError as exc:
        raise SettingsError(f"it is not JSON ({exc})") from None
    except RecursionError:
        raise SettingsError("it is nested too deeply") from None


def _why(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return "not UTF-8"


def _write_atomically(path: Path, text: str) -> None:
    """Replace `path` (not a link) in one step, keeping its permissions: Claude Code may
    read the file at any moment (it watches its settings)."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        Path(temp).chmod(mode)
        Path(temp).replace(path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
