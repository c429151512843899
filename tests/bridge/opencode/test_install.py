"""`compass opencode install`: Compass's plugin entry merged into OpenCode's config
(compass_bridge/opencode/install.py) without clobbering anything else, where OpenCode reads
it. That OpenCode loads what was written: tests/realagent/test_opencode.py."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, strategies as st

from compass_bridge.config_files import ConfigFileError
from compass_bridge.opencode.install import (
    PLUGIN_FILE,
    SCHEMA,
    ask_command,
    config_path,
    install,
    plugin_entry,
    with_plugin,
)

COMMAND = ask_command(
    ["/opt/compass/bin/compass"],
    server="https://compass.example/",
    channel_id="ch-1",
    token_file=Path("/home/ada/agent.token"),
)
OURS = plugin_entry(COMMAND)
OLD = ["file:///old/venv/lib/compass_bridge/opencode/plugin/compass.js", {"command": ["x"]}]
OTHER = ["opencode-helicone-session", ["@my-org/custom-plugin", {"level": 2}], "./local.js"]


def test_the_entry_is_the_shipped_plugin_and_its_command() -> None:
    assert PLUGIN_FILE.is_file()
    assert [
        str(PLUGIN_FILE),
        {
            "command": [
                "/opt/compass/bin/compass",
                *("opencode", "ask", "--server", "https://compass.example/"),
                *("--channel", "ch-1", "--token-file", "/home/ada/agent.token"),
            ]
        },
    ] == OURS
    assert "--token-file" not in ask_command(["c"], server="s", channel_id="c", token_file=None)


def test_an_empty_config_gets_the_schema_and_the_entry() -> None:
    assert with_plugin({}, OURS) == {"$schema": SCHEMA, "plugin": [OURS]}


def test_other_plugins_and_settings_are_kept_in_their_order() -> None:
    config = {"$schema": SCHEMA, "model": "a/b", "plugin": OTHER, "mcp": {"x": {}}}
    merged = with_plugin(config, OURS)
    assert merged == {**config, "plugin": [*OTHER, OURS]}
    assert list(merged) == ["$schema", "model", "plugin", "mcp"]


def test_an_older_entry_of_ours_is_replaced_where_it_stood_and_twins_dropped() -> None:
    config = {
        "plugin": [OTHER[0], OLD, OTHER[1], "/other/compass_bridge/opencode/plugin/compass.js"]
    }
    assert with_plugin(config, OURS)["plugin"] == [OTHER[0], OURS, OTHER[1]]


@pytest.mark.parametrize(
    ("config", "why"),
    [
        ([], "it does not hold a JSON object"),
        ({"plugin": "compass"}, 'its "plugin" is not a list'),
        ({"plugin": {"a": 1}}, 'its "plugin" is not a list'),
    ],
)
def test_configs_of_another_shape_are_refused(config: object, why: str) -> None:
    with pytest.raises(ConfigFileError, match=re.escape(why)):
        with_plugin(config, OURS)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
_PLUGIN = st.text(max_size=8) | st.tuples(
    st.text(max_size=8), st.dictionaries(st.text(max_size=3), _JSON, max_size=2)
).map(list)


@given(
    config=st.dictionaries(st.text(max_size=6).filter(lambda k: k != "plugin"), _JSON, max_size=4),
    plugins=st.lists(_PLUGIN | st.just(OLD), max_size=5),
)
def test_any_config_keeps_every_other_entry_and_settles_at_once(
    config: dict[str, Any], plugins: list[Any]
) -> None:
    merged = with_plugin({**config, "plugin": plugins}, OURS)
    listed: Any = merged["plugin"]
    others = [p for p in plugins if p != OLD]
    assert [p for p in listed if p != OURS] == others
    assert listed.count(OURS) == 1
    assert {k: v for k, v in merged.items() if k != "plugin"} == config
    assert with_plugin(merged, OURS) == merged


def test_a_missing_file_is_created_with_its_folder(tmp_path: Path) -> None:
    path = tmp_path / ".config" / "opencode" / "opencode.json"
    assert install(path, OURS) is True
    assert json.loads(path.read_text()) == {"$schema": SCHEMA, "plugin": [OURS]}
    assert install(path, OURS) is False


def test_an_existing_file_keeps_its_mode_and_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "opencode.jsonc"  # OpenCode's own first file: JSON without comments
    path.write_text(
        '{\n  "$schema": "https://opencode.ai/config.json",\n  "theme": "tokyonight"\n}\n'
    )
    path.chmod(0o600)
    assert install(path, OURS) is True
    assert json.loads(path.read_text()) == {
        "$schema": SCHEMA,
        "theme": "tokyonight",
        "plugin": [OURS],
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{not json", "it is not JSON"),
        ('{\n  // my model\n  "model": "a/b"\n}', "it holds comments, which writing it would lose"),
        ('{"model": "a/b" /* old */}', "it holds comments"),
        ('{"n": 1e999}', "it holds a number too large to keep (1e999)"),
        ('{"n": NaN}', "it is not JSON (NaN)"),
        ("[" * 100_000 + "]" * 100_000, "it is nested too deeply"),
        ('{"plugin": "x"}', 'its "plugin" is not a list'),
    ],
)
def test_a_file_that_cannot_take_it_is_left_alone(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "opencode.json"
    path.write_text(text)
    with pytest.raises(ConfigFileError, match=re.escape(why)):
        install(path, OURS)
    assert path.read_text() == text


def test_a_url_in_a_string_is_no_comment(tmp_path: Path) -> None:
    path = tmp_path / "opencode.json"
    path.write_text('{"instructions": ["https://example.com/a.md"], "x": "/* */"}')
    assert install(path, OURS) is True


def test_a_lone_surrogate_escape_is_kept_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "opencode.json"
    path.write_text('{"name": "a\\ud800b"}')
    install(path, OURS)
    assert '"a\\ud800b"' in path.read_text()
    assert json.loads(path.read_text())["name"] == "a\ud800b"


def test_a_linked_config_is_written_through_its_link(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "opencode.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"theme": "x"}')
    link = tmp_path / ".config" / "opencode" / "opencode.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)
    assert install(link, OURS) is True
    assert link.is_symlink()
    assert json.loads(dotfiles.read_text())["plugin"] == [OURS]


def test_a_dangling_link_gets_its_target_created(tmp_path: Path) -> None:
    target = tmp_path / "dotfiles" / "opencode.json"
    link = tmp_path / "opencode.json"
    link.symlink_to(target)
    assert install(link, OURS) is True
    assert link.is_symlink()
    assert json.loads(target.read_text())["plugin"] == [OURS]


def test_the_files_are_where_opencode_reads_them(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    env = {"HOME": str(home)}
    folder = home / ".config" / "opencode"
    assert config_path("user", project, env) == folder / "opencode.json"
    xdg = {"HOME": str(home), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert config_path("user", project, xdg) == tmp_path / "xdg" / "opencode" / "opencode.json"
    # An existing file is used, in OpenCode's own order of preference.
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    assert config_path("user", project, env) == folder / "config.json"
    (folder / "opencode.jsonc").write_text("{}")
    assert config_path("user", project, env) == folder / "opencode.jsonc"
    assert config_path("project", project, env) == project / "opencode.json"
    (project / ".opencode").mkdir(parents=True)
    (project / ".opencode" / "opencode.jsonc").write_text("{}")
    assert config_path("project", project, env) == project / ".opencode" / "opencode.jsonc"
