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
nothing. The house rules of every agent's config file hold (config_files.py): a file that is
not JSON (a `.jsonc` with comments, too: they would be lost) or whose `plugin` is not a list
is refused and left alone; what is written back reads as it was read; a config that is a
symbolic link is written through the link, its target replaced in one step; a missing file
is created with its folder.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Final

from compass_bridge import config_files
from compass_bridge.config_files import ConfigFileError, NotJsonError, parse_json
from compass_core.jsonvalues import JsonObject, is_array, is_object

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "PLUGIN_FILE",
    "SCHEMA",
    "ask_command",
    "config_path",
    "install",
    "merge",
    "parse",
    "plugin_entry",
    "with_plugin",
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
        ConfigFileError: `config` or its `plugin` are not shaped as OpenCode reads them.
    """
    if not is_object(config):
        raise ConfigFileError("it does not hold a JSON object")
    plugins = config.get("plugin", [])
    if not is_array(plugins):
        raise ConfigFileError('its "plugin" is not a list')
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


def merge(entry: list[object]) -> Callable[[object], JsonObject]:
    """`with_plugin` for `entry`, as config_files merges a file."""
    return lambda config: with_plugin(config, entry)


def install(path: Path, entry: list[object]) -> bool:
    """Write `entry` into the config file at `path` (created if missing, with its folder;
    through it to its target if it is a symbolic link); whether it changed.

    Raises:
        ConfigFileError: the file cannot be read, parsed or written (nothing was written).
    """
    return config_files.install(path, merge(entry), parse=parse)


_COMMENT: Final = re.compile(r'^(?:[^"/]|"(?:[^"\\]|\\.)*")*/[/*]', re.DOTALL)


def parse(text: str) -> object:
    """The config file's JSON (config_files.parse_json), a file with comments refused as such.

    Raises:
        ConfigFileError: it is not JSON (comments included), or holds what would not be
            written back as read.
    """
    try:
        return parse_json(text)
    except NotJsonError:
        if _COMMENT.match(text):
            raise ConfigFileError(
                "it holds comments, which writing it would lose: add the entry by hand "
                "(`compass opencode install --print` shows it)"
            ) from None
        raise
