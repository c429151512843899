"""The bridges (omp's `Bridge`, ACP's `AcpBridge`) wired to the in-process AgentService peer,
for unit tests."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import TYPE_CHECKING, Any

from compass_bridge.acp.bridge import AcpBridge
from compass_bridge.acp.calls import CALL_END_SECONDS
from compass_bridge.held import HOLD_SECONDS
from compass_bridge.omp.bridge import Bridge
from tests.bridge import _events as ev
from tests.bridge._fake_service import Call, FakeAgentService, ListSink

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

Q1 = ev.gallery_questions()
Q2 = ev.deploy_questions()

GALLERY_ANSWER = {"db": (["0"], ""), "features": (["0", "1"], "Passkeys too")}
GALLERY_REPLY = [
    {"id": "db", "selectedOptions": ["Postgres"]},
    {
        "id": "features",
        "selectedOptions": ["Email + password", "OAuth (Google, GitHub)"],
        "customInput": "Passkeys too",
    },
]


class Harness:
    def __init__(self, bridge: Bridge, service: FakeAgentService, sink: ListSink) -> None:
        self.bridge = bridge
        self.service = service
        self.sink = sink

    def feed(self, *events: dict[str, Any]) -> None:
        for event in events:
            self.bridge.feed(json.dumps(event).encode())

    async def settle(self) -> None:
        """Wait until every queued frame is posted."""
        async with asyncio.timeout(5):
            await self.bridge.poster.drain()

    async def replies(self, count: int) -> list[dict[str, Any]]:
        async with asyncio.timeout(5):
            while len(self.sink.lines) < count:
                self.sink.arrived.clear()
                await self.sink.arrived.wait()
        return [json.loads(line) for line in self.sink.lines]

    def appends(self) -> list[Call]:
        return [c for c in self.service.calls if c.method == "AppendMessage"]

    def updates(self) -> list[Call]:
        return [c for c in self.service.calls if c.method == "UpdateMessage"]


@contextlib.asynccontextmanager
async def harness(*, hold_seconds: float = 0.05) -> AsyncGenerator[Harness]:
    service = FakeAgentService()
    sink = ListSink()
    bridge = Bridge(
        api=service,
        channel_id="ch",
        sink=sink,
        run_id="run",
        initial_backoff=0.001,
        max_backoff=0.005,
        hold_seconds=hold_seconds,
    )
    worker = asyncio.create_task(bridge.run_poster())
    try:
        yield Harness(bridge, service, sink)
    finally:
        await bridge.stop_waiting()
        await bridge.asks.settle(1)
        worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await worker


def blocks_kinds(frame: Any) -> list[str]:
    """`text:<text>` / `ask:<first question id>` per block."""
    return [
        f"ask:{b.ask.questions[0].question_id}" if b.HasField("ask") else f"text:{b.text.text}"
        for b in frame.blocks
    ]


def ask_ids(frame: Any) -> list[str]:
    return [b.ask.ask_id for b in frame.blocks if b.HasField("ask")]


@contextlib.asynccontextmanager
async def acp_bridge(
    *, hold_seconds: float = HOLD_SECONDS, call_end_seconds: float = CALL_END_SECONDS
) -> AsyncGenerator[tuple[AcpBridge, FakeAgentService]]:
    """An AcpBridge on the fake AgentService, its poster running."""
    service = FakeAgentService()
    bridge = AcpBridge(
        api=service,
        channel_id="ch",
        run_id="run",
        hold_seconds=hold_seconds,
        call_end_seconds=call_end_seconds,
        initial_backoff=0.001,
        max_backoff=0.005,
    )
    worker = asyncio.create_task(bridge.run_poster())
    try:
        yield bridge, service
    finally:
        await bridge.asks.settle(1)
        worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await worker
