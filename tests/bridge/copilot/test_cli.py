"""`compass agent-bridge --protocol copilot` on the command line (compass_bridge/cli.py): the
chooser runs copilot/process.py with the `ask_user` variant asked for, and what it needs
(the CLI's command and a prompt; `--ask-user-variant` only with copilot) is checked before
anything starts."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import pytest

from compass_bridge import cli as agent_cli
from compass_bridge.copilot import process as copilot_process
from compass_server import cli

if TYPE_CHECKING:
    from pathlib import Path


def test_the_protocol_picks_copilot_with_its_ask_user_variant() -> None:
    for variant, expected in ((None, None), ("legacy", "legacy"), ("elicitation", "elicitation")):
        runner = agent_cli._runner("copilot", variant)  # pyright: ignore[reportPrivateUsage] - the chooser itself
        assert isinstance(runner, functools.partial)
        assert runner.func is copilot_process.run
        assert runner.keywords == {"ask_user_variant": expected}


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (
            ["--protocol", "copilot", "--prompt", "hi"],
            "--protocol copilot needs the agent's COMMAND and a prompt (--prompt or --prompt-file)",
        ),
        (
            ["--protocol", "copilot", "--", "copilot"],
            "--protocol copilot needs the agent's COMMAND and a prompt (--prompt or --prompt-file)",
        ),
        (
            ["--protocol", "acp", "--ask-user-variant", "legacy", "--prompt", "hi", "--", "a"],
            "--ask-user-variant needs --protocol copilot",
        ),
    ],
)
def test_what_copilot_needs_is_checked_first(
    args: list[str], problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = tmp_path / "token"
    token.write_text("agt_x")
    common = ["--server", "http://127.0.0.1:9/", "--channel", "ch", "--token-file", str(token)]
    assert cli.main(["agent-bridge", *common, *args]) == 2
    assert capsys.readouterr().err == f"compass agent-bridge: {problem}\n"
