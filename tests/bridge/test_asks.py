"""asks.AgentAsks, the one agent-side ask lifecycle (the bridges, `compass claude-hook` and
`compass mcp` all post, follow, withdraw and report through it), on the fake AgentService:
each call retried, and what came of it logged once."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import pytest
import stamina

from compass_bridge.asks import AgentAsks, Closed
from compass_bridge.client import FatalServerError, GaveUpError, RpcError
from compass_bridge.receipts import delivered, not_delivered
from gen.compass.v1 import comms_pb2
from tests._wait import eventually
from tests.bridge._fake_service import FakeAgentService

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Iterator

WITHDRAWN = comms_pb2.ASK_STATUS_WITHDRAWN
TIMED_OUT = comms_pb2.ASK_STATUS_TIMED_OUT


@pytest.fixture(autouse=True)
def _no_waits() -> Iterator[None]:
    with stamina.set_testing(True, attempts=100):  # every backoff wait is 0
        yield


def _blocks() -> list[comms_pb2.MessageBlock]:
    question = comms_pb2.AskQuestion(
        question_id="db",
        question="Which database?",
        options=[comms_pb2.AskOption(label="Postgres"), comms_pb2.AskOption(label="SQLite")],
    )
    return [
        comms_pb2.MessageBlock(text=comms_pb2.TextBlock(text="One question:")),
        comms_pb2.MessageBlock(ask=comms_pb2.Ask(questions=[question])),
    ]


def _said(caplog: pytest.LogCaptureFixture, words: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if words in r.getMessage()]


async def _posted(service: FakeAgentService, asks: AgentAsks) -> str:
    message = await asks.post("ch", _blocks(), prefix="test")
    return next(b.ask.ask_id for b in message.blocks if b.HasField("ask"))


# -- post ------------------------------------------------------------------------------------


async def test_a_post_retried_after_a_lost_response_is_stored_once() -> None:
    service = FakeAgentService(plan=["lost", "down", "lost"])
    asks = AgentAsks(service)
    message = await asks.post("ch", _blocks(), prefix="hook")
    assert [call.ok for call in service.calls] == [False, False, False, True]
    assert len({call.frame.client_message_id for call in service.calls}) == 1
    assert message.client_message_id.startswith("hook-")
    assert len(service.messages) == 1
    assert service.minted == 1
    assert service.ask_ids() == [message.blocks[1].ask.ask_id]


async def test_each_post_is_a_message_of_its_own() -> None:
    service = FakeAgentService()
    asks = AgentAsks(service)
    first = await asks.post("ch", _blocks(), prefix="mcp")
    second = await asks.post("ch", _blocks(), prefix="mcp")
    assert first.client_message_id != second.client_message_id
    assert len(service.messages) == 2


@pytest.mark.parametrize(
    ("code", "raised"),
    [("invalid_argument", GaveUpError), ("permission_denied", FatalServerError)],
)
async def test_a_post_refused_is_said_once_and_raised(
    code: str, raised: type[Exception], caplog: pytest.LogCaptureFixture
) -> None:
    service = FakeAgentService(failures={"AppendMessage": [RpcError(code, "no")]})
    with pytest.raises(raised):
        await AgentAsks(service).post("ch", _blocks(), prefix="mcp")
    assert len(_said(caplog, "cannot post the ask in Compass")) == 1
    assert service.messages == {}


# -- follow ----------------------------------------------------------------------------------


class _EndingEarly:
    """The fake service, whose second WatchAsk stream ends after the first state (a server
    restarting, say; the first fails as the test scripts it)."""

    def __init__(self, service: FakeAgentService) -> None:
        self.service = service
        self.streams = 0

    async def watch_ask(self, ask_id: str) -> AsyncGenerator[comms_pb2.Ask]:
        self.streams += 1
        async for ask in self.service.watch_ask(ask_id):
            yield ask
            if self.streams == 2:
                return


async def test_following_goes_on_through_a_failed_and_an_ended_stream(
    caplog: pytest.LogCaptureFixture,
) -> None:
    service = FakeAgentService()
    ask_id = await _posted(service, AgentAsks(service))
    service.failures["WatchAsk"] = [RpcError("unavailable", "restarting")]
    peer = _EndingEarly(service)
    # The peer stands in for the AgentService client: only watch_ask is called here.
    asks = AgentAsks(peer)  # pyright: ignore[reportArgumentType]
    follow = asyncio.create_task(asks.until_final(ask_id))
    await eventually(lambda: ask_id in service.watching, "the third stream to wait")
    assert not follow.done()
    service.answer(ask_id, {"db": (["0"], "")})
    async with asyncio.timeout(10):
        final = await follow
    assert final.status == comms_pb2.ASK_STATUS_ANSWERED
    assert list(final.questions[0].chosen_option_ids) == ["0"]
    assert peer.streams == 3
    # One backoff for both reconnects (no stream lived long): its first attempt is said,
    # then every tenth.
    (said,) = _said(caplog, f"WatchAsk {ask_id}")
    assert said.startswith(f"WatchAsk {ask_id}: unavailable: restarting; reconnecting in")


async def test_states_end_after_the_first_final_state() -> None:
    service = FakeAgentService()
    asks = AgentAsks(service)
    ask_id = await _posted(service, asks)
    service.decline(ask_id, "not now")
    states = [ask.status async for ask in asks.states(ask_id)]
    assert states == [comms_pb2.ASK_STATUS_DECLINED]


# -- withdraw --------------------------------------------------------------------------------


async def test_withdrawing_closes_the_ask_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="compass_bridge")
    service = FakeAgentService(failures={"CloseAsk": [RpcError("unavailable", "down")]})
    asks = AgentAsks(service)
    ask_id = await _posted(service, asks)
    assert await asks.withdraw(ask_id, "turn ended") is Closed.CLOSED
    assert [(c.ask_id, c.status, c.reason) for c in service.closes] == [
        (ask_id, WITHDRAWN, "turn ended")
    ] * 2  # the first attempt failed and was retried
    assert service.ask(ask_id).status == WITHDRAWN
    assert _said(caplog, "closed in Compass") == [
        f"ask {ask_id} is closed in Compass as WITHDRAWN: turn ended"
    ]


async def test_a_runtime_timeout_closes_the_ask_as_timed_out_with_its_picks() -> None:
    service = FakeAgentService()
    asks = AgentAsks(service)
    ask_id = await _posted(service, asks)
    picks = [comms_pb2.AskQuestionAnswer(question_id="db", chosen_option_ids=["1"])]
    assert await asks.withdraw(ask_id, "runtime timeout", timed_out=picks) is Closed.CLOSED
    (close,) = service.closes
    assert (close.status, list(close.answers)) == (TIMED_OUT, picks)
    assert service.ask(ask_id).questions[0].timed_out


async def test_withdrawing_an_ask_already_final_is_no_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="compass_bridge")
    service = FakeAgentService()
    asks = AgentAsks(service)
    ask_id = await _posted(service, asks)
    service.answer(ask_id, {"db": (["0"], "")})
    assert await asks.withdraw(ask_id, "tool call ended") is Closed.ALREADY_FINAL
    assert len(service.closes) == 1  # not retried: it cannot succeed
    assert service.ask(ask_id).status == comms_pb2.ASK_STATUS_ANSWERED
    (said,) = _said(caplog, "already has its outcome")
    assert said.startswith(f"ask {ask_id} already has its outcome (failed_precondition:")
    assert not _said(caplog, "left answerable")
    assert not _said(caplog, "closed in Compass")


async def test_a_close_that_fails_leaves_the_ask_answerable_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    service = FakeAgentService(legacy=True)  # no CloseAsk
    asks = AgentAsks(service)
    ask_id = await _posted(service, asks)
    assert await asks.withdraw(ask_id, "tool call aborted") is Closed.FAILED
    (said,) = _said(caplog, "left answerable")
    assert said.startswith(
        f"ask {ask_id} is left answerable in Compass: tool call aborted, and closing it failed "
        "(CloseAsk failed: unimplemented"
    )


async def test_a_close_bounded_in_time_gives_up_when_the_time_is_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    service = FakeAgentService()
    asks = AgentAsks(service)
    ask_id = await _posted(service, asks)
    service.failures["CloseAsk"] = [RpcError("unavailable", "down")] * 1000
    with stamina.set_testing(False):
        closed = await asks.withdraw(ask_id, "stopped", within=0.05)
    assert closed is Closed.FAILED
    (said,) = _said(caplog, "left answerable")
    assert "(CloseAsk timed out)" in said
    assert service.ask(ask_id).status != WITHDRAWN


async def test_the_bare_close_raises_what_the_server_said() -> None:
    service = FakeAgentService()
    asks = AgentAsks(service)
    ask_id = await _posted(service, asks)
    service.decline(ask_id)
    with pytest.raises(GaveUpError) as caught:
        await asks.close_ask(ask_id, WITHDRAWN, "agent cancelled the ask")
    assert caught.value.error.code == "failed_precondition"


# -- report ----------------------------------------------------------------------------------


async def test_a_receipt_is_retried_and_recorded(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="compass_bridge")
    service = FakeAgentService(failures={"ReportDelivery": [RpcError("unavailable", "down")]})
    asks = AgentAsks(service)
    ask_id = await _posted(service, asks)
    service.answer(ask_id, {"db": (["0"], "")})
    assert await asks.report(ask_id, delivered((), '{"db":"Postgres"}'))
    assert len(service.receipts) == 2
    assert service.ask(ask_id).delivery.payload == '{"db":"Postgres"}'
    assert _said(caplog, "receipt") == [f"ask {ask_id}: receipt delivered"]


async def test_a_server_without_receipts_is_said_once_and_not_asked_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    service = FakeAgentService(legacy=True)
    asks = AgentAsks(service)
    first, second = await _posted(service, asks), await _posted(service, asks)
    for ask_id in (first, second):
        service.answer(ask_id, {"db": (["0"], "")})
    results = await asyncio.gather(
        asks.report(first, delivered((), "a")), asks.report(first, delivered((), "a"))
    )
    assert results == [False, False]
    assert not await asks.report(second, not_delivered("the runtime's input is closed"))
    assert len(service.receipts) == 2  # the two in flight together; the third not tried
    assert len(_said(caplog, "no delivery receipts")) == 1
    assert _said(caplog, "not delivered to the runtime") == [
        f"ask {second}: not delivered to the runtime: the runtime's input is closed"
    ]


async def test_a_receipt_refused_is_said_once(caplog: pytest.LogCaptureFixture) -> None:
    service = FakeAgentService()
    asks = AgentAsks(service)
    ask_id = await _posted(service, asks)  # still pending: nothing to deliver yet
    assert not await asks.report(ask_id, delivered((), "x"))
    assert len(service.receipts) == 1
    (said,) = _said(caplog, "was not recorded")
    assert said.startswith(f"ask {ask_id}: the delivery receipt was not recorded (failed_")


# -- in the background -----------------------------------------------------------------------


async def test_a_receipt_is_reported_in_the_background_once_per_ask() -> None:
    service = FakeAgentService()
    asks = AgentAsks(service)
    ask_id = await _posted(service, asks)
    service.answer(ask_id, {"db": (["0"], "")})
    asks.report_soon(ask_id, delivered((), "first"))
    asks.report_soon(ask_id, delivered((), "second"))
    asks.report_soon("", delivered((), "no ask"))
    await asks.settle()
    assert [r.payload for r in service.receipts] == ["first"]
    assert asks.receipts[ask_id].payload == "first"


async def test_settling_cancels_what_is_not_done_in_time(caplog: pytest.LogCaptureFixture) -> None:
    asks = AgentAsks(FakeAgentService())
    never = asyncio.Event()
    asks.spawn(never.wait(), name="stuck")
    await asks.settle(0.01)
    (said,) = _said(caplog, "gave up closing or reporting")
    assert said.startswith("gave up closing or reporting on 1 ask(s)")
    await asks.settle(0.01)  # nothing left
    assert len(_said(caplog, "gave up closing or reporting")) == 1
