"""`compass opencode ask`'s lifecycle (compass_bridge/opencode/relay.py) on the fake
AgentService, fed the events OpenCode 1.18.33 sent the plugin (recorded/*.jsonl, from the
real agent): answered, declined, withdrawn when OpenCode stops waiting, and the receipt of
what OpenCode took. The plugin and OpenCode themselves: tests/realagent/test_opencode.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import stamina

from compass_bridge.opencode.questions import REJECTED_TEXT, read_request
from compass_bridge.opencode.relay import EOF, STOPPED_REASON, Inbox, Stopped, ask, stop_reason
from gen.compass.v1 import comms_pb2
from tests._wait import eventually
from tests.bridge._fake_service import FakeAgentService

if TYPE_CHECKING:
    from collections.abc import Iterator

    from compass_bridge.opencode.questions import QuestionRequest
    from compass_core.jsonvalues import JsonObject

RECORDED = Path(__file__).parent / "recorded"
ANSWERED = (
    'User has answered your questions: "Which database?"="Postgres", "Which auth flows ship?"='
    '"Email, SSO". You can now continue with the user\'s answers in mind.'
)
"""What the model read in the recorded reply (recorded/replied.jsonl)."""


@pytest.fixture(autouse=True)
def _no_waits() -> Iterator[None]:
    with stamina.set_testing(True, attempts=100):  # every backoff wait is 0
        yield


def _events(name: str) -> list[dict[str, Any]]:
    lines = (RECORDED / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


class Plugin:
    """The plugin's side of the lines: what it forwards, and what the command sent."""

    def __init__(self, name: str = "replied.jsonl") -> None:
        self.events = _events(name)
        self.request: QuestionRequest = read_request(self.events[0]["properties"])
        self.inbox: Inbox = asyncio.Queue()
        self.sent: list[JsonObject] = []
        self.gone = False

    def send(self, line: JsonObject) -> bool:
        self.sent.append(line)
        return not self.gone

    def forward(self, *types: str) -> None:
        """The recorded events after the question whose type (or type/tool status) is in
        `types`, in their order."""
        for event in self.events[1:]:
            kind = str(event["type"])
            part: Any = event["properties"].get("part") if kind == "message.part.updated" else None
            if kind in types or (part and f"{kind}/{part['state']['status']}" in types):
                self.inbox.put_nowait(event)

    def result(self, ok: bool = True, error: str = "") -> None:
        line: JsonObject = {"type": "compass.result", "ok": ok}
        if error:
            line["error"] = error
        self.inbox.put_nowait(line)


async def _started(service: FakeAgentService, plugin: Plugin) -> tuple[asyncio.Task[int], str]:
    run = asyncio.create_task(ask(service, "ch", plugin.request, plugin.inbox, send=plugin.send))

    async def posted() -> str | None:
        ids = service.ask_ids()
        return ids[0] if ids and ids[0] in service.watching else None

    return run, await eventually(posted, "the ask posted and watched")


async def test_an_answer_is_replied_and_its_receipt_is_what_the_model_read() -> None:
    service, plugin = FakeAgentService(), Plugin()
    run, ask_id = await _started(service, plugin)
    (message,) = service.messages.values()
    assert [block.HasField("ask") for block in message.blocks] == [True]  # the ask alone
    service.answer(ask_id, {"q1": (["0"], ""), "q2": (["0", "2"], "")})
    await eventually(lambda: plugin.sent, "the reply")
    assert plugin.sent == [{"reply": [["Postgres (Recommended)"], ["Email", "SSO"]]}]
    # OpenCode's events (the recorded reply was ["Postgres"], so its text), then the result.
    plugin.forward("question.replied", "message.part.updated/completed", "session.status")
    plugin.result()
    assert await run == 0
    (receipt,) = service.receipts
    assert (receipt.state, receipt.payload) == (comms_pb2.DELIVERY_STATE_DELIVERED, ANSWERED)


async def test_without_the_tools_result_the_receipt_is_opencodes_text() -> None:
    service, plugin = FakeAgentService(), Plugin()
    plugin.request = read_request({**plugin.events[0]["properties"], "tool": None})
    run, ask_id = await _started(service, plugin)
    service.answer(ask_id, {"q2": (["1"], "SCIM")})
    await eventually(lambda: plugin.sent, "the reply")
    plugin.result()
    assert await run == 0
    (receipt,) = service.receipts
    assert receipt.state == comms_pb2.DELIVERY_STATE_DELIVERED
    assert receipt.payload == (
        'User has answered your questions: "Which database?"="Unanswered", "Which auth flows '
        'ship?"="OAuth, SCIM". You can now continue with the user\'s answers in mind.'
    )


@pytest.mark.parametrize(
    ("then", "detail"),
    [
        (
            ("refused", "404: Question not found"),
            "OpenCode refused the answer: 404: Question not found",
        ),
        (("eof", ""), "OpenCode ended before it took the answer"),
        (("gone", ""), "the plugin was gone: OpenCode did not get the answer"),
    ],
)
async def test_an_answer_opencode_did_not_take_is_not_delivered(
    then: tuple[str, str], detail: str
) -> None:
    service, plugin = FakeAgentService(), Plugin()
    run, ask_id = await _started(service, plugin)
    what, error = then
    plugin.gone = what == "gone"
    service.answer(ask_id, {"q1": (["1"], "")})
    await eventually(lambda: plugin.sent, "the reply")
    if what == "refused":
        plugin.result(ok=False, error=error)
    elif what == "eof":
        plugin.inbox.put_nowait(EOF)
    assert await run == 0
    (receipt,) = service.receipts
    assert (receipt.state, receipt.detail) == (comms_pb2.DELIVERY_STATE_NOT_DELIVERED, detail)
    assert json.loads(receipt.payload) == {"reply": [["SQLite"], []]}


async def test_a_decline_is_a_rejection_and_its_reason_is_said_lost() -> None:
    service, plugin = FakeAgentService(), Plugin("rejected.jsonl")
    run, ask_id = await _started(service, plugin)
    service.decline(ask_id, "not now")
    await eventually(lambda: plugin.sent, "the rejection")
    assert plugin.sent == [{"reject": True}]
    plugin.forward("question.rejected", "message.part.updated/error")
    plugin.result()
    assert await run == 0
    (receipt,) = service.receipts
    assert (receipt.state, receipt.payload) == (
        comms_pb2.DELIVERY_STATE_DELIVERED_WITH_CHANGES,
        REJECTED_TEXT,
    )
    assert "carries no reason" in receipt.detail


@pytest.mark.parametrize(
    ("recording", "first", "reason"),
    [
        ("aborted.jsonl", "session.error", "the OpenCode session was interrupted"),
        ("aborted.jsonl", "session.status", "the OpenCode session stopped"),
        ("aborted.jsonl", "message.part.updated/error", "OpenCode ended the question's tool call"),
        ("replied.jsonl", "question.replied", "answered in OpenCode"),
        ("rejected.jsonl", "question.rejected", "the question was dismissed in OpenCode"),
    ],
)
async def test_opencode_stopping_first_withdraws_the_ask(
    recording: str, first: str, reason: str
) -> None:
    service, plugin = FakeAgentService(), Plugin(recording)
    run, ask_id = await _started(service, plugin)
    plugin.forward(first)
    assert await run == 0
    assert (service.ask(ask_id).status, service.ask(ask_id).close_reason) == (
        comms_pb2.ASK_STATUS_WITHDRAWN,
        reason,
    )
    assert plugin.sent == []
    assert service.receipts == []


@pytest.mark.parametrize("stop", [EOF, Stopped(STOPPED_REASON)], ids=["end of file", "signal"])
async def test_the_plugin_going_away_withdraws_the_ask(stop: Any) -> None:
    service, plugin = FakeAgentService(), Plugin()
    run, ask_id = await _started(service, plugin)
    plugin.inbox.put_nowait(stop)
    assert await run == 0
    assert service.ask(ask_id).close_reason == STOPPED_REASON


async def test_stopped_while_posting_withdraws_what_was_stored() -> None:
    service, plugin = FakeAgentService(plan=["lost"]), Plugin("aborted.jsonl")
    plugin.forward("session.error")
    assert plugin.inbox.qsize() == 1
    assert await ask(service, "ch", plugin.request, plugin.inbox, send=plugin.send) == 0
    (ask_id,) = service.ask_ids()
    assert service.ask(ask_id).status == comms_pb2.ASK_STATUS_WITHDRAWN


async def test_an_answer_meeting_the_stop_is_reported_not_delivered() -> None:
    service, plugin = FakeAgentService(), Plugin("aborted.jsonl")
    run, ask_id = await _started(service, plugin)
    # Answered in Compass just as OpenCode stopped waiting: the watch has not seen it yet,
    # so the withdrawal finds the ask final, and the answer was never handed over.
    stored = service._stored_ask(ask_id)  # pyright: ignore[reportPrivateUsage]
    stored.status = comms_pb2.ASK_STATUS_ANSWERED
    stored.answered_by_account_id = "acc_human"
    plugin.forward("session.error")
    assert await run == 0
    assert plugin.sent == []
    (receipt,) = service.receipts
    assert (receipt.state, receipt.detail) == (
        comms_pb2.DELIVERY_STATE_NOT_DELIVERED,
        "the OpenCode session was interrupted before the answer was handed over",
    )


def test_events_of_other_questions_and_sessions_are_not_a_stop() -> None:
    plugin = Plugin("aborted.jsonl")
    request = plugin.request
    for event in plugin.events[1:]:
        other = json.loads(json.dumps(event).replace(request.session_id, "ses_other"))
        assert stop_reason(other, request) is None, other
    assert (
        stop_reason({"type": "question.replied", "properties": {"requestID": "que_x"}}, request)
        is None
    )
    assert (
        stop_reason(
            {
                "type": "session.status",
                "properties": {"sessionID": request.session_id, "status": {"type": "busy"}},
            },
            request,
        )
        is None
    )
    assert stop_reason({"type": "message.part.updated", "properties": {}}, request) is None
    assert stop_reason({"type": 1}, request) is None


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (
            {"type": "session.error", "properties": {"error": {"name": "APIError"}}},
            "the OpenCode session failed (APIError)",
        ),
        ({"type": "session.error", "properties": {}}, "the OpenCode session failed (an error)"),
        ({"type": "session.idle", "properties": {}}, "the OpenCode session stopped"),
        ({"type": "session.deleted", "properties": {}}, "the OpenCode session was deleted"),
    ],
)
def test_what_each_stop_says(event: dict[str, Any], reason: str) -> None:
    request = Plugin().request
    event["properties"]["sessionID"] = request.session_id
    assert stop_reason(event, request) == reason


def test_a_session_named_by_its_info_is_the_question_s_too() -> None:
    request = Plugin().request
    deleted = {"type": "session.deleted", "properties": {"info": {"id": request.session_id}}}
    assert stop_reason(deleted, request) == "the OpenCode session was deleted"
    deleted["properties"]["info"]["id"] = "ses_other"
    assert stop_reason(deleted, request) is None


async def test_an_ask_that_ended_otherwise_sends_nothing() -> None:
    service, plugin = FakeAgentService(), Plugin()
    run, ask_id = await _started(service, plugin)
    stored = service._stored_ask(ask_id)  # pyright: ignore[reportPrivateUsage]
    stored.status = comms_pb2.ASK_STATUS_EXPIRED
    service._changed[ask_id].set()  # pyright: ignore[reportPrivateUsage]
    assert await run == 0
    assert (plugin.sent, service.receipts) == ([], [])
