"""`compass claude-hook` and its `install` check the token and the channel with the server
(GetChannel, as `agent-bridge` and `compass mcp` do) before they ask or write (issue 33, N2:
a person's token, an unknown channel or a bad token made the hook exit 0 with a log line, so
Claude Code showed nothing; install wrote such a hook without a word).

The hook then exits 1 with one line on stderr: Claude Code shows it to its user as
"PreToolUse:AskUserQuestion hook error" and asks in the terminal (hook.py's docstring says
why not 2); install exits 2 with one line and writes nothing, unless `--no-check`. A real
server and database; the hook and install run as processes, as Claude Code and a person run
them. What Claude Code itself shows: tests/realagent/test_claude_hooks.py."""

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

EVENT = json.dumps(
    {
        "hook_event_name": "PreToolUse",
        "tool_name": "AskUserQuestion",
        "tool_input": {
            "questions": [
                {
                    "question": "Ship it?",
                    "header": "Ship",
                    "multiSelect": False,
                    "options": [
                        {"label": "Yes", "description": "now"},
                        {"label": "No", "description": "later"},
                    ],
                }
            ]
        },
    }
).encode()
FORM = json.dumps(
    {
        "hook_event_name": "Elicitation",
        "mcp_server_name": "forms",
        "mode": "form",
        "message": "Deploy settings",
        "requested_schema": {
            "type": "object",
            "properties": {"env": {"type": "string", "title": "Environment"}},
        },
    }
).encode()


@pytest.mark.parametrize(
    ("case", "event"),
    [*((case, EVENT) for case in CASES), ("bad token", FORM)],
    ids=[*CASES, "bad token, a form"],
)
async def test_the_hook_fails_loudly_when_it_cannot_post(
    module_server: RunningServer,
    world: SeededWorld,
    comms: httpx.AsyncClient,
    case: str,
    event: bytes,
) -> None:
    token, channel, expected = await wrong_connection(module_server, world, case)
    code, out, err = await run_compass(
        "claude-hook",
        "--server",
        module_server.url,
        "--channel",
        channel,
        "--timeout",
        "60",
        stdin=event,
        token=token,
    )
    assert (code, out) == (1, ""), err
    assert err.splitlines() == [f"compass claude-hook: cannot ask in Compass: {expected}"]
    assert token not in err
    assert await list_messages(comms, world.human.token, world.channel_id) == []


@pytest.mark.parametrize("case", CASES)
async def test_install_checks_before_it_writes(
    module_server: RunningServer, world: SeededWorld, tmp_path: Path, case: str
) -> None:
    token, channel, expected = await wrong_connection(module_server, world, case)
    token_file = tmp_path / "agent.token"
    token_file.write_text(token + "\n")
    settings = tmp_path / "settings.json"
    settings.write_text('{"theme": "dark"}')
    argv = ["claude-hook", "install", "--settings", str(settings)]
    argv += ["--server", module_server.url, "--channel", channel, "--token-file", str(token_file)]
    code, out, err = await run_compass(*argv)
    assert (code, out) == (2, ""), err
    assert err.splitlines() == [
        f"compass claude-hook install: {expected}; nothing was written "
        "(--no-check writes it all the same)"
    ]
    assert token not in err
    assert settings.read_text() == '{"theme": "dark"}'
    # --no-check: written without asking the server.
    code, out, err = await run_compass(*argv, "--no-check")
    assert code == 0, err
    assert json.loads(out)["changed"] is True
    assert "claude-hook" in settings.read_text()


async def test_install_checks_the_token_of_the_environment(
    module_server: RunningServer, world: SeededWorld, tmp_path: Path
) -> None:
    """Without --token-file the hook reads $COMPASS_TOKEN: install checks the one it has, and
    without one it cannot check."""
    settings = tmp_path / "settings.json"
    argv = ["claude-hook", "install", "--settings", str(settings)]
    argv += ["--server", module_server.url, "--channel", world.channel_id]
    code, out, err = await run_compass(*argv)
    assert (code, out) == (2, ""), err
    assert err.splitlines() == [
        "compass claude-hook install: cannot check the token: give --token-file, or set "
        "$COMPASS_TOKEN here as Claude Code will have it; nothing was written "
        "(--no-check writes it all the same)"
    ]
    assert not settings.exists()
    code, out, err = await run_compass(*argv, token=world.human.token)
    assert code == 2, err
    assert "the token is not an agent's" in err
    assert not settings.exists()
    code, out, err = await run_compass(*argv, token=world.agent.token)
    assert code == 0, err
    assert json.loads(out)["changed"] is True
    assert err.splitlines() == [
        "compass claude-hook install: the hook reads the token from $COMPASS_TOKEN in "
        "Claude Code's environment"
    ]
