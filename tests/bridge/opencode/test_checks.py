"""`compass opencode ask` and `install` as processes against a real server: both check the
token and the channel (GetChannel) before they ask or write. `ask` then exits 1 with one line
on stderr, which the plugin writes to OpenCode's log and shows as a toast (OpenCode's own
prompt stays); `install` exits 2 with one line and writes nothing, unless `--no-check`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from tests.bridge._checks import CASES, run_compass, wrong_connection
from tests.bridge._harness import list_messages

if TYPE_CHECKING:
    from pathlib import Path

    import httpx

    from tests._server import RunningServer, SeededWorld

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

EVENT = (
    json.dumps(
        {
            "id": "evt_1",
            "type": "question.asked",
            "properties": {
                "id": "que_1",
                "sessionID": "ses_1",
                "questions": [
                    {
                        "question": "Ship it?",
                        "header": "Ship",
                        "options": [
                            {"label": "Yes", "description": "now"},
                            {"label": "No", "description": "later"},
                        ],
                    }
                ],
            },
        }
    )
    + "\n"
).encode()


@pytest.mark.parametrize("case", CASES)
async def test_ask_fails_loudly_when_it_cannot_post(
    module_server: RunningServer, world: SeededWorld, comms: httpx.AsyncClient, case: str
) -> None:
    token, channel, expected = await wrong_connection(module_server, world, case)
    code, out, err = await run_compass(
        *("opencode", "ask", "--server", module_server.url, "--channel", channel),
        stdin=EVENT,
        token=token,
    )
    assert (code, out) == (1, ""), err
    assert err.splitlines() == [f"compass opencode ask: cannot ask in Compass: {expected}"]
    assert token not in err
    assert await list_messages(comms, world.human.token, world.channel_id) == []


async def test_a_question_compass_cannot_hold_is_one_line_and_exit_1(
    module_server: RunningServer, world: SeededWorld
) -> None:
    bad = b'{"type": "question.asked", "properties": {"id": "q", "sessionID": "s", "questions": "x"}}\n'
    code, out, err = await run_compass(
        *("opencode", "ask", "--server", module_server.url, "--channel", world.channel_id),
        stdin=bad,
        token=world.agent.token,
    )
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "compass opencode ask: cannot ask in Compass: the question is not one Compass can "
        "hold (properties.questions is not an array (got string))"
    ]


@pytest.mark.parametrize("case", CASES)
async def test_install_checks_before_it_writes(
    module_server: RunningServer, world: SeededWorld, tmp_path: Path, case: str
) -> None:
    token, channel, expected = await wrong_connection(module_server, world, case)
    token_file = tmp_path / "agent.token"
    token_file.write_text(token + "\n")
    config = tmp_path / "opencode.json"
    config.write_text('{"theme": "dark"}')
    argv = ["opencode", "install", "--config", str(config)]
    argv += ["--server", module_server.url, "--channel", channel, "--token-file", str(token_file)]
    code, out, err = await run_compass(*argv)
    assert (code, out) == (2, ""), err
    assert err.splitlines() == [
        f"compass opencode install: {expected}; nothing was written "
        "(--no-check writes it all the same)"
    ]
    assert token not in err
    assert config.read_text() == '{"theme": "dark"}'
    code, out, err = await run_compass(*argv, "--no-check")
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["config"], summary["changed"]) == (str(config), True)
    written = json.loads(config.read_text())
    assert written["theme"] == "dark"
    assert written["plugin"] == [summary["plugin"]]
    assert token not in config.read_text()


async def test_install_into_a_fresh_home_with_the_token_of_the_environment(
    module_server: RunningServer, world: SeededWorld, tmp_path: Path
) -> None:
    """Without --token-file the plugin's command reads $COMPASS_TOKEN: install checks the one
    it has, and without one it cannot check."""
    home = tmp_path / "home"
    argv = ["opencode", "install", "--server", module_server.url, "--channel", world.channel_id]
    code, out, err = await run_compass(*argv, home=home)
    assert (code, out) == (2, ""), err
    assert err.splitlines() == [
        "compass opencode install: cannot check the token: give --token-file, or set "
        "$COMPASS_TOKEN here as OpenCode will have it; nothing was written "
        "(--no-check writes it all the same)"
    ]
    code, out, err = await run_compass(*argv, token=world.agent.token, home=home)
    assert code == 0, err
    config = home / ".config" / "opencode" / "opencode.json"
    assert json.loads(out)["config"] == str(config)
    (entry,) = json.loads(config.read_text())["plugin"]
    assert "--token-file" not in entry[1]["command"]
    assert world.agent.token not in config.read_text()
    assert err.splitlines() == [
        "compass opencode install: the plugin's command reads the token from $COMPASS_TOKEN in "
        "OpenCode's environment"
    ]
    # Again: nothing changes.
    code, out, _ = await run_compass(*argv, token=world.agent.token, home=home)
    assert (code, json.loads(out)["changed"]) == (0, False)


async def test_install_refuses_a_config_with_comments_and_prints_the_entry(
    module_server: RunningServer, world: SeededWorld, tmp_path: Path
) -> None:
    config = tmp_path / "opencode.jsonc"
    text = '{\n  // mine\n  "theme": "dark"\n}\n'
    config.write_text(text)
    argv = ["opencode", "install", "--config", str(config)]
    argv += ["--server", module_server.url, "--channel", world.channel_id]
    code, out, err = await run_compass(*argv, token=world.agent.token)
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"compass opencode install: {config}: it holds comments, which writing it would "
        "lose: add the entry by hand (`compass opencode install --print` shows it); nothing "
        "was written"
    ]
    assert config.read_text() == text
    code, out, err = await run_compass(*argv, "--print", token=world.agent.token)
    assert code == 0, err
    path, options = json.loads(out)
    assert path.endswith("compass_bridge/opencode/plugin/compass.js")
    assert options["command"][-4:] == ["--server", module_server.url, "--channel", world.channel_id]
