"""Driving `compass agent-bridge` with the REAL omp (see conftest.py), shared by the tests
in this folder and bench/ask_latency.py."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tests._wait import eventually
from tests.bridge._harness import call, list_messages
from tests.realagent.model_server import ScriptedModelServer, omp_launch, write_omp_config

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Mapping, Sequence
    from pathlib import Path

    import httpx

    from tests import _server
    from tests.realagent.model_server import Turn


@dataclass
class Run:
    """One `compass agent-bridge` process running the real omp."""

    process: subprocess.Popen[bytes]
    log_path: Path
    model: Any
    """The scripted model server (model_server.ScriptedModelServer, or one of
    wire_models.py)."""

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    async def wait(self, within: float = 60.0) -> int:
        deadline = time.monotonic() + within
        while self.process.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"the bridge did not exit in {within}s:\n{self.log()}")
            await asyncio.sleep(0.05)
        return self.process.returncode


@contextlib.contextmanager
def bridge_process(
    *,
    agent: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    tmp_path: Path,
    server_url: str,
    world: _server.SeededWorld,
    protocol: str,
    model: Any,
    prompt: str = "Help me set up the new service.",
    extra: Sequence[str] = (),
) -> Generator[Run]:
    """`compass agent-bridge --protocol P --prompt ... [extra] -- AGENT...` as a real process
    (killed afterwards if still running); its output goes to tmp_path/bridge.log."""
    token_file = tmp_path / "agent.token"
    token_file.write_text(world.agent.token + "\n", encoding="utf-8")
    log_path = tmp_path / "bridge.log"
    argv = [
        sys.executable,
        "-m",
        "compass_server.cli",
        "agent-bridge",
        "--protocol",
        protocol,
        "--server",
        server_url,
        "--channel",
        world.channel_id,
        "--token-file",
        str(token_file),
        "--prompt",
        prompt,
        *extra,
        "--",
        *agent,
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env={**env, "PYTHONUNBUFFERED": "1"},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    run = Run(process=process, log_path=log_path, model=model)
    try:
        yield run
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@contextlib.contextmanager
def bridge_run(
    *,
    omp_bin: Path,
    tmp_path: Path,
    server_url: str,
    world: _server.SeededWorld,
    protocol: str,
    turns: Sequence[Turn],
    prompt: str = "Help me set up the new service.",
    ask_timeout: float = 0,
    extra: Sequence[str] = (),
    runtime_prefix: Sequence[str] = (),
) -> Generator[Run]:
    """Start the model, then `compass agent-bridge --protocol P --prompt ... -- omp ...`
    (`runtime_prefix` goes before omp's command: a wrapper such as bench/_stdin_tap.py)."""
    home = tmp_path / "home"
    workspace = tmp_path / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    with ScriptedModelServer(turns) as model:
        write_omp_config(home, model.base_url, ask_timeout=ask_timeout)
        launch = omp_launch(
            omp_bin,
            "acp" if protocol == "acp" else "rpc-ui",
            home=home,
            workspace=workspace,
            proxy_port=model.port,
        )
        with bridge_process(
            agent=[*runtime_prefix, *launch.argv],
            env=launch.env,
            cwd=launch.cwd,
            tmp_path=tmp_path,
            server_url=server_url,
            world=world,
            protocol=protocol,
            model=model,
            prompt=prompt,
            extra=extra,
        ) as run:
            yield run


async def messages(http: httpx.AsyncClient, token: str, channel_id: str) -> list[dict[str, Any]]:
    """Every message of the channel, oldest first."""
    return await list_messages(http, token, channel_id)


def asks_of(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [block["ask"] for message in found for block in message["blocks"] if "ask" in block]


async def wait_for_asks(
    http: httpx.AsyncClient, token: str, channel_id: str, count: int, run: Run, within: float = 60
) -> list[dict[str, Any]]:
    """The channel's asks once there are `count` of them (fails early if the bridge exits)."""
    deadline = time.monotonic() + within
    while True:
        found = asks_of(await messages(http, token, channel_id))
        if len(found) >= count:
            return found
        if run.process.poll() is not None:
            raise AssertionError(f"the bridge exited with {run.process.returncode}:\n{run.log()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{len(found)} of {count} asks after {within}s:\n{run.log()}")
        await asyncio.sleep(0.05)


async def first_ask(
    http: httpx.AsyncClient,
    world: _server.SeededWorld,
    process: subprocess.Popen[bytes],
    log: Callable[[], str],
    *,
    who: str,
    what: str,
) -> dict[str, Any]:
    """The channel's first ask (`what`), once the agent side posted it; fails at once if
    the agent (`who`, its `process`) exits first, with its `log()`."""

    async def posted() -> dict[str, Any] | None:
        if process.poll() is not None:
            raise AssertionError(f"{who} exited first:\n{log()}")
        found = asks_of(await messages(http, world.human.token, world.channel_id))
        return found[0] if found else None

    return await eventually(posted, what, within=60, every=0.05)


async def respond(
    http: httpx.AsyncClient, token: str, ask_id: str, *answers: dict[str, Any]
) -> None:
    status, body = await call(
        http, "RespondToAsk", {"askId": ask_id, "answers": list(answers)}, token
    )
    assert status == 200, body


async def decline(http: httpx.AsyncClient, token: str, ask_id: str, reason: str = "") -> None:
    """A participant declines the ask (CommsService.DeclineAsk, Connect-JSON)."""
    status, body = await call(http, "DeclineAsk", {"askId": ask_id, "reason": reason}, token)
    assert status == 200, body


async def wait_for_status(
    http: httpx.AsyncClient, token: str, channel_id: str, ask_id: str, within: float = 30
) -> dict[str, Any]:
    """The ask as ListMessages shows it once it is no longer pending."""
    deadline = time.monotonic() + within
    while True:
        (ask,) = [
            a for a in asks_of(await messages(http, token, channel_id)) if a["askId"] == ask_id
        ]
        if ask.get("status", "ASK_STATUS_PENDING") != "ASK_STATUS_PENDING":
            return ask
        if time.monotonic() > deadline:
            raise AssertionError(f"ask {ask_id} still pending after {within}s: {ask}")
        await asyncio.sleep(0.05)


async def wait_for_receipt(
    http: httpx.AsyncClient, token: str, channel_id: str, ask_id: str, within: float = 30
) -> dict[str, Any]:
    """The ask's delivery receipt (`Ask.delivery`, JSON) once the agent side reported it."""
    deadline = time.monotonic() + within
    while True:
        (ask,) = [
            a for a in asks_of(await messages(http, token, channel_id)) if a["askId"] == ask_id
        ]
        receipt = ask.get("delivery")
        if receipt:
            return receipt
        if time.monotonic() > deadline:
            raise AssertionError(f"ask {ask_id} has no delivery receipt after {within}s: {ask}")
        await asyncio.sleep(0.05)


async def agents_receipt(
    http: httpx.AsyncClient, world: _server.SeededWorld, ask_id: str
) -> dict[str, Any]:
    """The ask's delivery receipt (`wait_for_receipt`), reported by the agent's account."""
    receipt = await wait_for_receipt(http, world.human.token, world.channel_id, ask_id)
    assert receipt["reportedByAccountId"] == world.agent.account_id, receipt
    return receipt


def answer(question_id: str, *chosen: str, custom_text: str = "") -> dict[str, Any]:
    entry: dict[str, Any] = {"questionId": question_id, "chosenOptionIds": list(chosen)}
    if custom_text:
        entry["customText"] = custom_text
    return entry
