"""`compass agent-bridge --protocol copilot -- PROGRAM` where PROGRAM is not Copilot CLI's
server, or not one the bridge can speak to (compass_bridge/copilot/process.py): one line
saying that PROGRAM did not answer the SDK's `connect` request, and why, exit 1; a program
that cannot be started, 127; a BYOK variable Copilot would refuse, 2. No Compass server is
reached on any of these paths (nothing is asked)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pytest

from compass_bridge.copilot import process
from compass_bridge.copilot.jsonrpc import frame
from compass_bridge.process import BridgeOptions

if TYPE_CHECKING:
    from collections.abc import Sequence

# A server that answers `connect` as Copilot does, but with another protocol version.
_OTHER_VERSION = (
    "import sys\n"
    "sys.stdin.buffer.readline(); sys.stdin.buffer.readline(); sys.stdin.buffer.read(49)\n"
    f"sys.stdout.buffer.write({frame({'jsonrpc': '2.0', 'id': 1, 'result': {'ok': True, 'protocolVersion': 4}})!r})\n"
    "sys.stdout.flush(); sys.stdin.buffer.read()\n"
)


def options(command: Sequence[str]) -> BridgeOptions:
    return BridgeOptions(
        server="http://127.0.0.1:9/",
        channel_id="ch",
        token="t",
        command=tuple(command),
        prompt="hello",
        stop_drain_seconds=0,
    )


@pytest.mark.parametrize(
    ("program", "why"),
    [
        (
            [sys.executable, "-c", "print('Usage: copilot [options]')"],
            "it wrote 'Usage: copilot [options]', which is not a JSON-RPC frame",
        ),
        ([sys.executable, "-c", "print(1)"], "it wrote '1', which is not a JSON-RPC frame"),
        (["true"], "it exited (exit code 0) without answering"),
        (
            [sys.executable, "-c", _OTHER_VERSION],
            "it speaks protocol version 4; the bridge speaks 3",
        ),
        ([sys.executable, "-c", "import time; time.sleep(1000)"], "no answer within 0.5 s"),
    ],
)
async def test_a_program_that_is_not_copilots_server_ends_the_run_in_one_line(
    program: list[str],
    why: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(process, "CONNECT_SECONDS", 0.5)
    monkeypatch.delenv("COPILOT_PROVIDER_BASE_URL", raising=False)
    assert await process.run(options(program)) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("compass agent-bridge: "), line
    assert line.endswith(f"did not answer the Copilot SDK's connect request: {why}"), line


async def test_a_program_that_cannot_be_found_is_127(capsys: pytest.CaptureFixture[str]) -> None:
    assert await process.run(options(["/nonexistent/copilot"])) == 127
    assert capsys.readouterr().err == (
        "compass agent-bridge: cannot start '/nonexistent/copilot': not found\n"
    )


async def test_a_byok_variable_copilot_would_refuse_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COPILOT_PROVIDER_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("COPILOT_PROVIDER_MAX_PROMPT_TOKENS", "lots")
    assert await process.run(options(["true"])) == 2
    assert capsys.readouterr().err == (
        "compass agent-bridge: COPILOT_PROVIDER_MAX_PROMPT_TOKENS must be a whole number, "
        "got 'lots'\n"
    )
