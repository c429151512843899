"""`compass opencode install`: Compass's plugin in OpenCode's config.

OpenCode (1.18.33) reads its global config from `$XDG_CONFIG_HOME/opencode/` (else
`~/.config/opencode/`): `config.json`, `opencode.json` and `opencode.jsonc`, merged in that
order; when none exists it creates `opencode.jsonc` holding only `$schema`. A project's is
`opencode.json` or `opencode.jsonc` in its folder (or in `.opencode/`). Plugins are listed in
`plugin`, each a path or package, or `[path, options]`; OpenCode hands the options to the
plugin. The entry written here is

    "plugin": [["/.../compass_bridge/opencode/plugin/compass.js",
                {"command": ["/.../compass", "opencode", "ask", "--server", URL,
                             "--channel", ID, "--token-file", PATH]}]]

(`--token-file` only when given: else the command reads $COMPASS_TOKEN from OpenCode's
environment; the token itself is never written). The plugin is referenced where this Compass
is installed, so it always matches the `compass opencode ask` it runs.

`with_plugin` puts the entry there without touching anything else: an entry of ours (its
path ends in compass_bridge/opencode/plugin/compass.js) is replaced where it stood (or added
at the end), every other entry and setting is kept as it was, so running it again changes
nothing. The house rules of `compass claude-hook install` hold: a file that is not JSON (a
`.jsonc` with comments, too: they would be lost) or whose `plugin` is not a list is refused
and left alone; what is written back reads as it was read (numbers beyond a double, NaN and
Infinity, nesting past the parser's limit are refused; half a surrogate pair stays escaped);
a config that is a symbolic link is written through the link, its target replaced in one
step; a missing file is created with its folder.
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

from compass_core.jsonvalues import JsonObject, is_array, is_object

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "PLUGIN_FILE",
    "SCHEMA",
    "ConfigError",
    "ask_command",
    "compass_argv",
    "config_path",
    "install",
    "plugin_entry",
    "updated_text",
    "with_plugin",
    "write",
]

PLUGIN_FILE: Final = Path(__file__).resolve().parent / "plugin" / "compass.js"
"""The plugin OpenCode loads (shipped in this package)."""
SCHEMA: Final = "https://opencode.ai/config.json"
_OURS: Final = ("compass_bridge", "opencode", "plugin", "compass.js")
_GLOBAL_FILES: Final = ("opencode.jsonc", "opencode.json", "config.json")
"""The global files OpenCode writes to, in its order of preference."""
_PROJECT_FILES: Final = (
    "opencode.json",
    "opencode.jsonc",
    ".opencode/opencode.json",
    ".opencode/opencode.jsonc",
)


class ConfigError(Exception):
    """The config file cannot take the plugin; the message says why."""


def compass_argv() -> list[str]:
    """How to run this `compass` from the plugin: the script it was started as, else this
    Python with `-m compass_server.cli`."""
    program = Path(sys.argv[0])
    if program.name == "compass" and program.is_file():
        return [str(program.absolute())]
    return [sys.executable, "-m", "compass_server.cli"]


def ask_command(
    compass: Sequence[str], *, server: str, channel_id: str, token_file: Path | None
) -> list[str]:
    """The command the plugin runs per question."""
    argv = [*compass, "opencode", "ask", "--server", server, "--channel", channel_id]
    if token_file is not None:
        argv += ["--token-file", str(token_file)]
    return argv


def plugin_entry(command: Sequence[str], plugin: Path = PLUGIN_FILE) -> list[object]:
    """The `plugin` entry: the plugin's path and its options."""
    return [str(plugin), {"command": list(command)}]


def config_path(scope: str, cwd: Path, env: Mapping[str, str]) -> Path:
    """The config file of `scope` ("user" or "project") that OpenCode reads: the first that
    exists, else the one to create."""
    if scope == "user":
        base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
        folder = Path(base) / "opencode"
        found = [folder / name for name in _GLOBAL_FILES if (folder / name).exists()]
        return found[0] if found else folder / "opencode.json"
    found = [cwd / name for name in _PROJECT_FILES if (cwd / name).exists()]
    return found[0] if found else cwd / "opencode.json"


def _is_ours(entry: object) -> bool:
    spec = entry[0] if is_array(entry) and entry else entry
    if not isinstance(spec, str):
        return False
    path = spec.removeprefix("file://")
    return tuple(Path(path).parts[-len(_OURS) :]) == _OURS


def with_plugin(config: object, entry: list[object]) -> JsonObject:
    """`config` (a decoded config file) with `entry` in its `plugin` list.

    Raises:
        ConfigError: `config` or its `plugin` are not shaped as OpenCode reads them.
    """
    if not is_object(config):
        raise ConfigError("it does not hold a JSON object")
    plugins = config.get("plugin", [])
    if not is_array(plugins):
        raise ConfigError('its "plugin" is not a list')
    result: list[object] = []
    placed = False
    for existing in plugins:
        if not _is_ours(existing):
            result.append(existing)
        elif not placed:
            result.append(entry)
            placed = True
    if not placed:
        result.append(entry)
    updated: JsonObject = dict(config) if config else {"$schema": SCHEMA}
    updated["plugin"] = result
    return updated


def install(path: Path, entry: list[object]) -> bool:
    """Write `entry` into the config file at `path` (created if missing, with its folder;
    through it to its target if it is a symbolic link); whether it changed.

    Raises:
        ConfigError: the file cannot be read, parsed or written (nothing was written).
    """
    text = updated_text(path, entry)
    if text is None:
        return False
    write(path, text)
    return True


def updated_text(path: Path, entry: list[object]) -> str | None:
    """What the config file at `path` becomes with `entry`; None when it holds it already.
    Writes nothing.

    Raises:
        ConfigError: the file cannot be read or parsed, or would not read back as it was.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read it ({_why(exc)})") from None
    current: object = _parsed(text) if text.strip() else {}
    updated = with_plugin(current, entry)
    if updated == current and text:
        return None
    written = json.dumps(updated, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    # Half a surrogate pair can only stand in a string: written back as its escape.
    return _LONE_SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", written)


def write(path: Path, text: str) -> None:
    """Replace the config file at `path` with `text` (see `install`).

    Raises:
        ConfigError: it cannot be written (nothing was).
    """
    target = path.resolve()  # through every link; the link itself stays
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(target, text)
    except OSError as exc:
        raise ConfigError(f"cannot write it ({_why(exc)})") from None


_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_COMMENT: Final = re.compile(r'^(?:[^"/]|"(?:[^"\\]|\\.)*")*/[/*]', re.DOTALL)


def _finite(literal: str) -> float:
    number = float(literal)
    if math.isinf(number):
        raise ConfigError(f"it holds a number too large to keep ({literal})")
    return number


def _not_json(literal: str) -> object:
    raise ConfigError(f"it is not JSON ({literal})")


def _parsed(text: str) -> object:
    """The config file's JSON.

    Raises:
        ConfigError: it is not JSON (comments included), or holds what would not be written
            back as read.
    """
    try:
        return json.loads(text, parse_float=_finite, parse_constant=_not_json)
    except ValueError as exc:
        if _COMMENT.match(text):
            raise ConfigError(
                "it holds comments, which writing it would lose: add the entry by hand "
                "(`compass opencode install --print` shows it)"
            ) from None
        raise ConfigError(f"it is not JSON ({exc})") from None
    except RecursionError:
        raise ConfigError("it is nested too deeply") from None


def _why(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return "not UTF-8"


def _write_atomically(path: Path, text: str) -> None:
    """Replace `path` (not a link) in one step, keeping its permissions: OpenCode may read
    the file at any moment."""
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
