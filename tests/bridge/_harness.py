"""Driving `compass agent-bridge` end to end: the bridge as a real process running the fake
runtime, and a participant answering through CommsService over Connect-JSON (as a browser)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tests.bridge._events import FAKE_RUNTIME

if TYPE_CHECKING:
    from collections.abc import Generator
    from pathlib import Path

    import httpx

COMMS = "compass.v1.CommsService"


@dataclass
class BridgeProcess:
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the bridge did not exit in {timeout}s:\n{self.log()}") from None


@contextlib.contextmanager
def start_bridge(
    *,
    server_url: str,
    channel_id: str,
    token: str,
    steps: list[dict[str, Any]] | dict[str, Any],
    workdir: Path,
    extra: tuple[str, ...] = (),
) -> Generator[BridgeProcess]:
    """`compass agent-bridge ... -- python fake_runtime.py script.json`, killed afterwards."""
    script = workdir / "script.json"
    script.write_text(json.dumps(steps), encoding="utf-8")
    token_file = workdir / "agent.token"
    token_file.write_text(token + "\n", encoding="utf-8")
    log_path = workdir / "bridge.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "compass_server.cli",
                "agent-bridge",
                "--server",
                server_url,
                "--channel",
                channel_id,
                "--token-file",
                str(token_file),
                *extra,
                "--",
                sys.executable,
                str(FAKE_RUNTIME),
                str(script),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    bridge = BridgeProcess(process=process, log_path=log_path)
    try:
        yield bridge
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


async def call(
    http: httpx.AsyncClient, method: str, body: dict[str, Any], token: str
) -> tuple[int, dict[str, Any]]:
    """One unary CommsService call in Connect-JSON; (HTTP status, JSON body)."""
    response = await http.post(
        f"/{COMMS}/{method}",
        content=json.dumps(body).encode(),
        headers={"content-type": "application/json", "authorization": f"Bearer {token}"},
    )
    return response.status_code, response.json() if response.content else {}


async def list_messages(
    http: httpx.AsyncClient, token: str, channel_id: str
) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    page = ""
    while True:
        status, body = await call(
            http, "ListMessages", {"channelId": channel_id, "pageToken": page}, token
        )
        assert status == 200, body
        messages.extend(body.get("messages", []))
        page = body.get("nextPageToken", "")
        if not page:
            return messages


def asks_of(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [block["ask"] for m in messages for block in m.get("blocks", []) if "ask" in block]


async def wait_for_asks(
    http: httpx.AsyncClient, token: str, channel_id: str, count: int, seconds: float = 30.0
) -> list[dict[str, Any]]:
    """Poll ListMessages until the channel shows `count` asks (a participant waiting)."""
    deadline = time.monotonic() + seconds
    while True:
        asks = asks_of(await list_messages(http, token, channel_id))
        if len(asks) >= count:
            return asks
        if time.monotonic() > deadline:
            raise AssertionError(f"only {len(asks)} of {count} asks appeared in {seconds}s")
        await asyncio.sleep(0.1)


async def respond(
    http: httpx.AsyncClient, token: str, ask_id: str, answers: list[dict[str, Any]]
) -> None:
    status, body = await call(http, "RespondToAsk", {"askId": ask_id, "answers": answers}, token)
    assert status == 200, body


async def wait_exit(bridge: BridgeProcess, seconds: float = 60.0) -> int:
    deadline = time.monotonic() + seconds
    while bridge.process.poll() is None:
        if time.monotonic() > deadline:
            raise AssertionError(f"the bridge did not exit in {seconds}s:\n{bridge.log()}")
        await asyncio.sleep(0.1)
    return bridge.process.returncode
