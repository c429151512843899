"""An agent's own config file, written by `compass claude-hook install` (Claude Code's
settings: claude/install.py) and `compass opencode install` (OpenCode's config:
opencode/install.py), by one set of house rules.

Each integration says how its entry is merged into the decoded file (a function of the file's
JSON, raising ConfigFileError when the file is not shaped as its agent reads it); the rest is
here:

- A missing file is created with its folder; a file that is not JSON is refused and left
  alone.
- What is written back must read as it was read: Python reads some JSON that it
  cannot write back as JSON. A number beyond a double (`1e999`, read as infinity, would be
  written `Infinity`) and nesting deeper than the parser's recursion limit are refused; so are
  `NaN` and `Infinity`, which Python reads but are not JSON. Half a surrogate pair escaped in
  a string (`"\\ud800"`: JSON allows it, JavaScript's strings hold it, UTF-8 cannot carry it)
  is written back as the same escape.
- A file that is a symbolic link (a dotfile manager's) is written through the link, its target
  replaced in one step beside itself, keeping its permissions (H7): the agent may read the
  file at any moment.
- The command (`install_checked`) merges first, then checks the token and the channel with
  the server (unless --no-check), then writes: any problem is one message, and nothing
  written.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

    from compass_core.jsonvalues import JsonObject

__all__ = [
    "ConfigFileError",
    "NotJsonError",
    "compass_argv",
    "install",
    "install_checked",
    "parse_json",
    "server_check",
    "updated_text",
    "write",
]

_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_UNCHECKED: Final = " (--no-check writes it all the same)"


class ConfigFileError(Exception):
    """The config file cannot take the entry; the message says why."""


class NotJsonError(ConfigFileError):
    """The config file is not JSON at all (its parser's complaint is the message)."""


def compass_argv() -> list[str]:
    """How to run this `compass` from an agent's config: the script it was started as, else
    this Python with `-m compass_server.cli`."""
    program = Path(sys.argv[0])
    if program.name == "compass" and program.is_file():
        return [str(program.absolute())]
    return [sys.executable, "-m", "compass_server.cli"]


def parse_json(text: str) -> object:
    """The file's JSON.

    Raises:
        NotJsonError: it is not JSON.
        ConfigFileError: it holds what would not be written back as read.
    """
    try:
        return json.loads(text, parse_float=_finite, parse_constant=_not_json)
    except ValueError as exc:
        raise NotJsonError(f"it is not JSON ({exc})") from None
    except RecursionError:
        raise ConfigFileError("it is nested too deeply") from None


def install(
    path: Path,
    update: Callable[[object], JsonObject],
    *,
    parse: Callable[[str], object] = parse_json,
) -> bool:
    """Write the file at `path` merged by `update` (created if missing, with its folder;
    through it to its target if it is a symbolic link); whether it changed.

    Raises:
        ConfigFileError: the file cannot be read, parsed or written (nothing was written).
    """
    text = updated_text(path, update, parse=parse)
    if text is None:
        return False
    write(path, text)
    return True


def install_checked(
    path: Path,
    update: Callable[[object], JsonObject],
    *,
    parse: Callable[[str], object] = parse_json,
    check: Callable[[], str | None] | None,
) -> bool:
    """`install`, as the install commands run it: the file is read and merged first, then
    `check` (None: --no-check) says what is wrong with the token or the channel, if anything,
    then the file is written; whether it changed.

    Raises:
        ConfigFileError: the one line to say, ending "nothing was written".
    """
    try:
        text = updated_text(path, update, parse=parse)
    except ConfigFileError as exc:
        raise ConfigFileError(f"{path}: {exc}; nothing was written") from None
    problem = check() if check is not None else None
    if problem is not None:
        raise ConfigFileError(f"{problem}; nothing was written{_UNCHECKED}")
    if text is None:
        return False
    try:
        write(path, text)
    except ConfigFileError as exc:
        raise ConfigFileError(f"{path}: {exc}; nothing was written") from None
    return True


def server_check(
    server: str, channel_id: str, token: str | None, *, token_env: str, agent: str
) -> str | None:
    """What is wrong with `token` and the channel (startup.start_problem), if anything, for an
    install command; without a token (none given, and `token_env` unset here), that it cannot
    check the token that `agent` will have."""
    if token is None:
        return (
            f"cannot check the token: give --token-file, or set ${token_env} here as {agent} "
            "will have it"
        )
    import asyncio

    from compass_bridge.startup import start_problem

    return asyncio.run(start_problem(server, token, channel_id))


def updated_text(
    path: Path,
    update: Callable[[object], JsonObject],
    *,
    parse: Callable[[str], object] = parse_json,
) -> str | None:
    """What the file at `path` becomes, merged by `update`; None when that changes nothing.
    Writes nothing.

    Raises:
        ConfigFileError: the file cannot be read or parsed, or would not read back as it was.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"cannot read it ({_why(exc)})") from None
    current: object = parse(text) if text.strip() else {}
    updated = update(current)
    if updated == current and text:
        return None
    written = json.dumps(updated, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    # Half a surrogate pair can only stand in a string: written back as its escape.
    return _LONE_SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", written)


def write(path: Path, text: str) -> None:
    """Replace the file at `path` with `text` (see `install`).

    Raises:
        ConfigFileError: it cannot be written (nothing was).
    """
    target = path.resolve()  # through every link; the link itself stays
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(target, text)
    except OSError as exc:
        raise ConfigFileError(f"cannot write it ({_why(exc)})") from None


def _finite(literal: str) -> float:
    number = float(literal)
    if math.isinf(number):
        raise ConfigFileError(f"it holds a number too large to keep ({literal})")
    return number


def _not_json(literal: str) -> object:
    raise ConfigFileError(f"it is not JSON ({literal})")


def _why(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return "not UTF-8"


def _write_atomically(path: Path, text: str) -> None:
    """Replace `path` (not a link) in one step, keeping its permissions: the agent may read
    the file at any moment (Claude Code watches its settings)."""
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
