"""CopilotBridge (compass_bridge/copilot/bridge.py) on the recorded conversations of Copilot
CLI 1.0.102 (recorded/), against the in-process AgentService peer: the CLI's messages are
fed in their recorded order, a participant answers in Compass, and the bridge must hand
Copilot exactly what the real CLI took in the recorded run, then report the receipt with the
text the model read. And every way Copilot stops waiting first."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import pytest

from compass_bridge.bridge_core import Reason
from compass_bridge.client import RpcError
from compass_bridge.copilot.bridge import NOT_TAKEN, CopilotBridge
from compass_bridge.copilot.jsonrpc import METHOD_NOT_FOUND, Incoming
from gen.compass.v1 import comms_pb2
from tests._wait import eventually
from tests.bridge._fake_service import FakeAgentService
from tests.bridge.copilot._recorded import (
    FakeCli,
    client_requests,
    conversation,
    events,
    recorded_answers,
    replay,
    session_id,
)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable

USER_INPUT = "session.ui.handlePendingUserInput"
FORM = "session.ui.handlePendingElicitation"


@contextlib.asynccontextmanager
async def copilot_bridge(
    cli: FakeCli | None = None,
) -> AsyncGenerator[tuple[CopilotBridge, FakeAgentService, FakeCli]]:
    service = FakeAgentService()
    cli = cli or FakeCli()
    bridge = CopilotBridge(
        api=service, channel_id="ch", run_id="run", initial_backoff=0.001, max_backoff=0.005
    )
    bridge.attach(cli.request, cli.respond_error)
    worker = asyncio.create_task(bridge.run_poster())
    try:
        yield bridge, service, cli
    finally:
        await bridge.settle_tasks()
        await bridge.asks.settle(1)
        worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await worker


async def waited_for(service: FakeAgentService) -> str:
    """The one ask, once the bridge waits for its answer (its WatchAsk is open)."""
    await eventually(lambda: bool(service.watching), what="the bridge watches the ask")
    (ask_id,) = service.ask_ids()
    return ask_id


def decline(service: FakeAgentService, ask_id: str, by: str, reason: str) -> None:
    service.decline(ask_id, reason)
    for message in service.messages.values():
        for block in message.blocks:
            if block.HasField("ask") and block.ask.ask_id == ask_id:
                block.ask.closed_by_name = by


def answering(service: FakeAgentService, act: Callable[[str], None]) -> Callable[[str], Any]:
    """before_request for `replay`: when the recorded bridge answered, the person acts."""

    async def before(method: str) -> None:
        if method in {USER_INPUT, FORM}:
            act(await waited_for(service))

    return before


def texts(service: FakeAgentService) -> list[str]:
    return [b.text.text for m in service.messages.values() for b in m.blocks if b.HasField("text")]


async def receipt(service: FakeAgentService) -> Any:
    await eventually(lambda: bool(service.receipts), what="a receipt")
    (found,) = service.receipts
    return found


PERSON: dict[str, Callable[[FakeAgentService], Callable[[str], None]]] = {
    "choice": lambda s: lambda a: s.answer(a, {"answer": (["1"], "")}),
    "free-text": lambda s: lambda a: s.answer(a, {"answer": ([], "CockroachDB")}),
    "decline": lambda s: lambda a: decline(s, a, "Ada", "not now"),
    "form": lambda s: (
        lambda a: s.answer(
            a, {"db": ([], "MariaDB"), "extras": (["0", "1"], ""), "note": ([], "ship it friday")}
        )
    ),
    "form-decline": lambda s: lambda a: decline(s, a, "Ada", "not now"),
}


@pytest.mark.parametrize("name", list(PERSON))
async def test_the_recorded_answer_is_handed_over_and_confirmed_with_what_the_model_read(
    name: str,
) -> None:
    async with copilot_bridge(FakeCli(answers=recorded_answers(name))) as (bridge, service, cli):
        await replay(name, bridge, cli, answering(service, PERSON[name](service)))
        method = FORM if name.startswith("form") else USER_INPUT
        assert [params for made, params in cli.calls if made == method] == client_requests(
            name, method
        )
        found = await receipt(service)
        (completed,) = events(name, "tool.execution_complete")
        assert (found.state, found.detail, found.payload) == (
            comms_pb2.DELIVERY_STATE_DELIVERED,
            "",
            completed["result"]["content"],
        )
        assert bridge.idle.is_set()
        assert service.closes == []
    # The agent's lead-in is posted before the ask it introduces, its last words after.
    (ask_message,) = [
        i
        for i, m in enumerate(service.messages.values())
        if any(b.HasField("ask") for b in m.blocks)
    ]
    shown = texts(service)
    assert shown[0] == "One question first."
    assert shown[-1] == "Thanks."
    assert next(iter(service.messages.values())).blocks[0].text.text == "One question first."
    assert ask_message >= 1


async def test_a_signal_aborts_the_turn_and_withdraws_the_ask() -> None:
    """The recorded run: the bridge got SIGINT while the question was pending."""
    async with copilot_bridge(FakeCli(answers=recorded_answers("signal"))) as (
        bridge,
        service,
        cli,
    ):

        async def before(method: str) -> None:
            assert method == "session.abort"
            await waited_for(service)
            bridge.shutting_down("SIGINT")
            bridge.end_turn()
            await bridge.abort()

        await replay("signal", bridge, cli, before)
        assert cli.calls == [("session.abort", {"sessionId": session_id("signal")})]
        await eventually(lambda: bool(service.closes), what="the ask closed")
    (close,) = service.closes
    assert (close.status, close.reason) == (
        comms_pb2.ASK_STATUS_WITHDRAWN,
        "bridge shut down (SIGINT)",
    )
    assert service.receipts == []


def feed(
    bridge: CopilotBridge, name: str, *, until: str = "", skip: set[str] | None = None
) -> None:
    """Feed the recorded CLI's notifications of `name` after `session.send` (none of the
    bridge's requests are awaited), up to the first event of type `until`."""
    bridge.session_id = session_id(name)
    started = False
    for side, message in conversation(name):
        if not started:
            started = side == "client" and message.get("method") == "session.send"
            continue
        if side != "agent" or message.get("method") != "session.event":
            continue
        kind = message["params"]["event"]["type"]
        if kind == until:
            return
        if kind not in (skip or set()):
            bridge.on_notification("session.event", message["params"])


async def test_copilot_interrupting_the_call_withdraws_the_ask() -> None:
    """`abort` and `agent.interrupted` naming the ask's call (as in the recorded run), not the
    bridge's doing: the ask is closed as the tool call aborted."""
    async with copilot_bridge() as (bridge, service, _cli):
        feed(bridge, "signal", until="session.idle")
        await eventually(lambda: bool(service.closes), what="the ask closed")
        (close,) = service.closes
        assert (close.status, close.reason) == (
            comms_pb2.ASK_STATUS_WITHDRAWN,
            Reason.TOOL_CALL_ABORTED,
        )


async def test_the_turn_ending_first_withdraws_the_ask() -> None:
    async with copilot_bridge() as (bridge, service, _cli):
        feed(bridge, "signal", until="abort")
        await waited_for(service)
        bridge.on_notification(
            "session.event",
            {"sessionId": bridge.session_id, "event": {"type": "session.idle", "data": {}}},
        )
        await eventually(lambda: bool(service.closes), what="the ask closed")
        (close,) = service.closes
        assert close.reason == Reason.TURN_ENDED


async def test_the_cli_exiting_withdraws_the_ask() -> None:
    async with copilot_bridge() as (bridge, service, _cli):
        feed(bridge, "choice", until="user_input.completed")
        await waited_for(service)
        bridge.end_turn(Reason.RUNTIME_EXITED)
        await eventually(lambda: bool(service.closes), what="the ask closed")
        (close,) = service.closes
        assert close.reason == Reason.RUNTIME_EXITED


async def test_a_question_resolved_another_way_withdraws_the_ask() -> None:
    async with copilot_bridge() as (bridge, service, _cli):
        feed(bridge, "choice", until="user_input.completed")
        await waited_for(service)
        (completed,) = events("choice", "user_input.completed")
        bridge.on_notification(
            "session.event",
            {
                "sessionId": bridge.session_id,
                "event": {"type": "user_input.completed", "data": completed},
            },
        )
        await eventually(lambda: bool(service.closes), what="the ask closed")
        assert service.closes[0].reason == Reason.TOOL_CALL_ENDED


async def test_an_answer_copilot_no_longer_takes_is_not_delivered() -> None:
    cli = FakeCli(answers={USER_INPUT: [{"success": False}]})
    async with copilot_bridge(cli) as (bridge, service, _cli):
        feed(bridge, "choice", until="user_input.completed")
        service.answer(await waited_for(service), {"answer": (["0"], "")})
        found = await receipt(service)
        assert (found.state, found.detail, found.payload) == (
            comms_pb2.DELIVERY_STATE_NOT_DELIVERED,
            NOT_TAKEN,
            "Postgres",
        )
        assert bridge.delivered == 0


async def test_a_failed_tool_call_after_the_answer_is_not_delivered() -> None:
    async with copilot_bridge() as (bridge, service, cli):
        feed(bridge, "choice", until="user_input.completed")
        service.answer(await waited_for(service), {"answer": (["0"], "")})
        await cli.call(USER_INPUT)
        bridge.on_notification(
            "session.event",
            {
                "sessionId": bridge.session_id,
                "event": {
                    "type": "tool.execution_complete",
                    "data": {
                        "toolCallId": "call_ask_1",
                        "success": False,
                        "error": {"message": "cancelled", "code": "aborted"},
                    },
                },
            },
        )
        found = await receipt(service)
        assert found.state == comms_pb2.DELIVERY_STATE_NOT_DELIVERED
        assert (
            found.detail
            == "Copilot's tool call failed after the answer was handed to it: cancelled"
        )


async def test_a_question_compass_cannot_store_is_answered_saying_so() -> None:
    async with copilot_bridge() as (bridge, service, cli):
        # Refused for good: the lead-in's message, then the ask's.
        service.failures["AppendMessage"] = [RpcError("invalid_argument", "too long")] * 2
        feed(bridge, "choice", until="user_input.completed")
        params = await cli.call(USER_INPUT)
        assert params["response"] == {
            "answer": "The question could not be asked in Compass (it was not stored); "
            "nobody will answer it.",
            "wasFreeform": True,
        }


async def test_the_clis_own_question_request_is_left_to_the_event_others_refused() -> None:
    async with copilot_bridge() as (bridge, _service, cli):
        bridge.on_request(Incoming(1, "userInput.request", {"question": "Q?"}))
        bridge.on_request(Incoming(2, "exitPlanMode.request", {"summary": "s"}))
        await eventually(lambda: bool(cli.refused), what="a refusal")
        assert cli.refused == [(2, METHOD_NOT_FOUND, "exitPlanMode.request")]


async def test_another_sessions_events_are_not_ours() -> None:
    async with copilot_bridge() as (bridge, service, _cli):
        bridge.session_id = "another"
        for side, message in conversation("choice"):
            if side == "agent" and message.get("method") == "session.event":
                bridge.on_notification("session.event", message["params"])
        await asyncio.sleep(0.05)  # time itself is under test: nothing may happen in it
        assert service.messages == {}
