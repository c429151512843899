"""cli.py: the agent commands (`agent-bridge`, `mcp`, `claude-hook`), their registration under
`compass`, the `--protocol` chooser, and the token file."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import pytest

from compass_bridge import cli as agent_cli
from compass_bridge.acp import process as acp_process
from compass_bridge.cli import TokenFileError, read_token
from compass_bridge.omp import process as omp_process
from compass_server import cli

if TYPE_CHECKING:
    from pathlib import Path


def run_cli(*args: str) -> int:
    return cli.main(["agent-bridge", *args])


def test_the_token_is_read_and_stripped(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("  agt_abc123 \n", encoding="ascii")
    assert read_token(path) == "agt_abc123"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (None, "does not exist"),
        (b"", "is empty"),
        (b" \n\n", "is empty"),
        (b"one\ntwo\n", "exactly one token"),
        (b"tok\x00en", "exactly one token"),
        ("tökén".encode(), "not ASCII"),
    ],
)
def test_an_unusable_token_file_is_refused_without_echoing_it(
    tmp_path: Path, content: bytes | None, why: str
) -> None:
    path = tmp_path / "token"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(TokenFileError) as caught:
        read_token(path)
    assert why in str(caught.value)
    assert "two" not in str(caught.value)


def test_a_missing_token_file_exits_2_with_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_cli(
        "--server", "http://127.0.0.1:9/", "--channel", "ch", "--token-file", str(tmp_path / "no")
    )
    assert code == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("server", ["127.0.0.1:8000", "ftp://host/", "http://"])
def test_the_server_must_be_an_http_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server: str
) -> None:
    token = tmp_path / "token"
    token.write_text("agt_x")
    assert run_cli("--server", server, "--channel", "ch", "--token-file", str(token)) == 2
    assert "--server must be an http(s) URL" in capsys.readouterr().err


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # pyright: ignore[reportPrivateUsage] - argparse keeps them there
    return dict(action.choices)  # pyright: ignore[reportUnknownArgumentType] - argparse's own typing


def test_register_adds_the_agent_commands_with_their_handlers() -> None:
    parser = argparse.ArgumentParser(prog="compass")
    agent_cli.register(parser.add_subparsers(dest="command"))
    commands = _subcommands(parser)
    assert list(commands) == ["agent-bridge", "mcp", "claude-hook", "opencode"]
    handlers = {
        name: parser.parse_args([name, *extra]).handler
        for name, extra in (
            ("agent-bridge", ["--server", "s", "--channel", "c", "--token-file", "t"]),
            ("mcp", ["--server", "s", "--channel", "c", "--token-file", "t"]),
            ("claude-hook", []),
            ("opencode", ["ask", "--server", "s", "--channel", "c"]),
        )
    }
    assert handlers == {
        "agent-bridge": agent_cli.main,
        "mcp": agent_cli.mcp_main,
        "claude-hook": agent_cli.claude_hook_main,
        "opencode": agent_cli.opencode_main,
    }


def test_the_commands_register_adds_are_the_ones_compass_has() -> None:
    """compass's own parser offers the agent commands exactly as `register` makes them (their
    help in `compass --help`, their arguments), whichever way it adds them."""
    parser = argparse.ArgumentParser(prog="compass")
    agent_cli.register(parser.add_subparsers(dest="command", metavar="COMMAND"))
    ours = _subcommands(parser)
    compass = _subcommands(cli.build_parser())
    for name, sub in ours.items():
        assert sub.format_help() == compass[name].format_help()
    listed = {
        line.split()[0]: line for line in parser.format_help().splitlines()[4:] if line.strip()
    }
    for line in cli.build_parser().format_help().splitlines():
        words = line.split()
        if words and words[0] in ours:
            assert " ".join(words) == " ".join(listed[words[0]].split())


def test_the_protocol_picks_the_integration_that_runs_the_agent() -> None:
    assert agent_cli._runner("rpc") is omp_process.run  # pyright: ignore[reportPrivateUsage] - the chooser itself
    assert agent_cli._runner("acp") is acp_process.run  # pyright: ignore[reportPrivateUsage] - as above
