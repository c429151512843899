"""`compass mcp`'s backend (compass_bridge.mcp_stdio.ClientBackend) on a fake AgentService:
what it withdraws when calls go away, including an ask whose append was still in flight."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from compass_bridge.mcp_stdio import ClientBackend, McpOptions
from compass_mcp import tools
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Sequence


class FakeAgentService:
    """AppendMessage held until `release`d; CloseAsk and ReportDelivery recorded."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.entered = asyncio.Event()
        self.appended = 0
        self.closed: list[tuple[str, int, str]] = []

    async def append_message(
        self, channel_id: str, frame: comms_pb2.MessageUpdated
    ) -> comms_pb2.Message:
        del channel_id
        self.entered.set()
        await self.release.wait()
        self.appended += 1
        message = comms_pb2.Message(message_id=f"msg_{self.appended}")
        for block in frame.blocks:
            stored = message.blocks.add()
            stored.CopyFrom(block)
            if stored.HasField("ask"):
                stored.ask.ask_id = f"ask_{self.appended}"
                stored.ask.status = comms_pb2.ASK_STATUS_PENDING
        return message

    async def update_message(self, frame: comms_pb2.MessageUpdated) -> comms_pb2.Message:
        raise NotImplementedError

    async def watch_ask(self, ask_id: str) -> AsyncGenerator[comms_pb2.Ask]:
        yield comms_pb2.Ask(ask_id=ask_id, status=comms_pb2.ASK_STATUS_PENDING)
        await asyncio.Event().wait()

    async def close_ask(
        self,
        ask_id: str,
        status: comms_pb2.AskStatus,
        reason: str,
        answers: Sequence[comms_pb2.AskQuestionAnswer] = (),
    ) -> comms_pb2.Ask:
        del answers
        self.closed.append((ask_id, status, reason))
        return comms_pb2.Ask(ask_id=ask_id, status=status, close_reason=reason)

    async def report_delivery(
        self, ask_id: str, state: comms_pb2.DeliveryState, detail: str, payload: str
    ) -> comms_pb2.Ask:
        raise NotImplementedError


def _backend(service: FakeAgentService, grace: float = 3600.0) -> ClientBackend:
    options = McpOptions(
        server="http://compass/", channel_id="ch_1", token="t", grace_seconds=grace
    )
    return ClientBackend(service, options, "general")


def _blocks() -> list[comms_pb2.MessageBlock]:
    ask = comms_pb2.Ask(questions=[comms_pb2.AskQuestion(question_id="q", question="?")])
    return [comms_pb2.MessageBlock(ask=ask)]


async def test_an_append_cancelled_in_flight_is_withdrawn_when_the_client_leaves() -> None:
    service = FakeAgentService()
    backend = _backend(service)
    opening = asyncio.create_task(backend.open_ask("ch_1", _blocks(), "k" * 64, "w1", 30))
    await service.entered.wait()  # the append is in flight (held by the fake)
    opening.cancel()  # the client went away (stdin closed): the call ends, cancelled
    with contextlib.suppress(asyncio.CancelledError):
        await opening
    service.release.set()  # the server stores it anyway
    await backend.shutdown()
    assert service.closed == [("ask_1", comms_pb2.ASK_STATUS_WITHDRAWN, tools.STOPPED_WAITING)]


async def test_an_opened_ask_is_held_from_the_start_and_left_on_shutdown() -> None:
    service = FakeAgentService()
    service.release.set()
    backend = _backend(service)
    ask = await backend.open_ask("ch_1", _blocks(), "k" * 64, "w1", 30)
    rejoined = await backend.open_ask("ch_1", _blocks(), "k" * 64, "w2", 30)
    assert rejoined.ask_id == ask.ask_id == "ask_1"
    await backend.shutdown()
    assert service.closed == [("ask_1", comms_pb2.ASK_STATUS_WITHDRAWN, tools.STOPPED_WAITING)]


async def test_a_returned_call_leaves_nothing_to_withdraw() -> None:
    service = FakeAgentService()
    service.release.set()
    backend = _backend(service, grace=0)
    ask = await backend.open_ask("ch_1", _blocks(), "k" * 64, "w1", 30)
    await backend.release(ask.ask_id, "w1", left=False)
    await backend.shutdown()
    assert service.closed == []
