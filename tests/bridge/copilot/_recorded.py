"""The recorded Copilot CLI conversations (recorded/NAME.jsonl: each line `{"client": MESSAGE}`
or `{"agent": MESSAGE}`, captured from @github/copilot 1.0.102 through `compass agent-bridge
--protocol copilot` by tests/realagent/test_copilot_native.py with COMPASS_COPILOT_RECORD
set; copilot_tee.py leaves out Copilot's system prompt), and a replay of one through
CopilotBridge: the CLI's messages fed in their order, the bridge's requests answered as
the CLI answered them."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compass_bridge.copilot.jsonrpc import Incoming

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from compass_bridge.copilot.bridge import CopilotBridge

RECORDED = Path(__file__).parent / "recorded"
NAMES = ("choice", "free-text", "decline", "form", "form-decline", "signal")


def conversation(name: str) -> list[tuple[str, dict[str, Any]]]:
    """(side, message) of every line, in order."""
    lines = (RECORDED / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [next(iter(json.loads(line).items())) for line in lines]


def events(name: str, kind: str) -> list[dict[str, Any]]:
    """The data of the recorded session events of type `kind`."""
    return [
        message["params"]["event"]["data"]
        for side, message in conversation(name)
        if side == "agent"
        and message.get("method") == "session.event"
        and message["params"]["event"]["type"] == kind
    ]


def client_requests(name: str, method: str) -> list[dict[str, Any]]:
    """The params of the bridge's recorded requests of `method`."""
    return [
        message["params"]
        for side, message in conversation(name)
        if side == "client" and message.get("method") == method
    ]


def session_id(name: str) -> str:
    (created,) = client_requests(name, "session.create")
    return created["sessionId"]


@dataclass
class FakeCli:
    """The bridge's side of the connection: its requests recorded, answered as the recorded
    CLI answered the same method (in order), else `{"success": true}`."""

    answers: dict[str, list[object]] = field(default_factory=dict[str, list[object]])
    calls: list[tuple[str, dict[str, Any]]] = field(
        default_factory=list[tuple[str, dict[str, Any]]]
    )
    refused: list[tuple[int | str, int, str]] = field(
        default_factory=list[tuple[int | str, int, str]]
    )
    called: asyncio.Event = field(default_factory=asyncio.Event)

    async def request(self, method: str, params: dict[str, Any]) -> object:
        self.calls.append((method, params))
        self.called.set()
        queue = self.answers.get(method)
        return queue.pop(0) if queue else {"success": True}

    async def respond_error(self, request_id: int | str, code: int, message: str) -> None:
        self.refused.append((request_id, code, message))

    async def call(self, method: str, within: float = 5.0) -> dict[str, Any]:
        """The params of the bridge's first request of `method`, once it was made."""
        async with asyncio.timeout(within):
            while True:
                for made, params in self.calls:
                    if made == method:
                        return params
                self.called.clear()
                await self.called.wait()


def recorded_answers(name: str) -> dict[str, list[object]]:
    """The recorded CLI's results of the bridge's requests after the handshake, by method."""
    requests: dict[int, str] = {}
    answers: dict[str, list[object]] = {}
    for side, message in conversation(name):
        if side == "client" and "method" in message and "id" in message:
            requests[message["id"]] = message["method"]
        elif side == "agent" and "method" not in message and message.get("id") in requests:
            answers.setdefault(requests[message["id"]], []).append(message.get("result"))
    return answers


async def replay(
    name: str,
    bridge: CopilotBridge,
    cli: FakeCli,
    before_request: Callable[[str], Awaitable[None]],
) -> None:
    """Feed the recorded CLI's messages after `session.send`'s answer to `bridge` in order;
    where the recorded bridge made a request, first `await before_request(method)` (the test
    answers in Compass), then wait until the bridge makes it too."""
    bridge.session_id = session_id(name)
    started = False
    for side, message in conversation(name):
        if not started:
            started = side == "client" and message.get("method") == "session.send"
            continue
        if side == "client":
            if "method" in message and "id" in message:
                await before_request(message["method"])
                await cli.call(message["method"])
            continue
        method = message.get("method")
        if method is None:
            continue  # an answer to the bridge's request: FakeCli gave it
        if "id" in message:
            bridge.on_request(Incoming(message["id"], method, message.get("params") or {}))
        else:
            bridge.on_notification(method, message.get("params") or {})
        await asyncio.sleep(0)
