"""The RPCs' guard order and outcomes through the handlers, on the in-memory store double.

Fast companions of the end-to-end guard tests (tests/e2e/test_guards.py, real HTTP and
PostgreSQL): here each guard is reached in milliseconds, and the handler's own order (checks,
then store, then judge) is visible in the store's call log.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from compass_server.domain.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
)
from gen.compass.v1 import agent_pb2, comms_pb2
from tests.integration.store._seed import answer, ask, question, text, with_ask_ids
from tests.unit.server.service.conftest import CTX

if TYPE_CHECKING:
    from tests.unit.server.service.conftest import Service

S = comms_pb2
VALID = [answer("db", "1")]


async def _ask(service: Service) -> str:
    message = await service.post(text("hi"), ask(question("db", "0", "1")))
    return message.blocks[1].ask.ask_id


async def test_respond_guards_run_in_spec_order(service: Service) -> None:
    world = service.world
    ask_id = await _ask(service)
    # Step 3 before 4 before 6: an outsider's unfit answer is NOT_FOUND, a member's is
    # PERMISSION_DENIED; the same answer from a participant is INVALID_ARGUMENT.
    with pytest.raises(NotFoundError, match=r"^ask not found$"):
        await service.respond(world.outsider, ask_id, [answer("nope")])
    with pytest.raises(PermissionDeniedError):
        await service.respond(world.member, ask_id, [answer("nope")])
    with pytest.raises(InvalidArgumentError) as caught:
        await service.respond(world.human, ask_id, [answer("nope")])
    assert {v.question_id for v in caught.value.violations} >= {"db"}
    # Step 7, then step 5 before 6: once answered, an unfit answer is FAILED_PRECONDITION.
    await service.respond(world.human, ask_id, VALID)
    with pytest.raises(FailedPreconditionError, match="answered"):
        await service.respond(world.human2, ask_id, [answer("nope")])
    await service.respond(world.human, ask_id, VALID)  # an identical retry succeeds
    with pytest.raises(FailedPreconditionError):
        await service.respond(world.human2, ask_id, VALID)  # identical, another account
    got = await service.get_ask(world.human, ask_id)
    assert got.status == S.ASK_STATUS_ANSWERED
    assert got.answered_by_account_id == world.human.account_id
    assert list(got.questions[0].chosen_option_ids) == ["1"]


async def test_exactly_one_of_concurrent_answers_wins(service: Service) -> None:
    world = service.world
    ask_id = await _ask(service)
    results = await asyncio.gather(
        service.respond(world.human, ask_id, [answer("db", "0")]),
        service.respond(world.human2, ask_id, [answer("db", "1")]),
        return_exceptions=True,
    )
    assert sorted(type(r).__name__ for r in results) == ["FailedPreconditionError", "NoneType"]


async def test_decline_and_close_follow_their_guards(service: Service) -> None:
    world = service.world
    declined = await _ask(service)
    with pytest.raises(PermissionDeniedError, match=r"may decline it$"):
        await service.decline(world.member, declined, "no")
    await service.decline(world.human, declined, "not mine")
    await service.decline(world.human, declined, "not mine")  # identical retry
    with pytest.raises(FailedPreconditionError, match="declined"):
        await service.respond(world.human, declined, VALID)

    timed_out = await _ask(service)
    with pytest.raises(InvalidArgumentError):  # the runtime's answers must fit too
        await service.close(timed_out, S.ASK_STATUS_TIMED_OUT, "", [answer("db", "9")])
    closed = await service.close(timed_out, S.ASK_STATUS_TIMED_OUT, "", [answer("db", "0")])
    assert closed.status == S.ASK_STATUS_TIMED_OUT
    assert closed.questions[0].timed_out
    # Only the asking agent may close: to anyone else the ask is absent.
    with pytest.raises(NotFoundError), service.auth.bound(world.human):
        await service.agent.close_ask(
            agent_pb2.CloseAskRequest(ask_id=declined, status=S.ASK_STATUS_WITHDRAWN), CTX
        )


async def test_update_keeps_stored_asks_in_place_and_mints_new_ones(service: Service) -> None:
    original = [text("t"), ask(question("db", "0", "1"))]
    message = await service.post(*original)
    (first,) = (b.ask.ask_id for b in message.blocks if b.HasField("ask"))
    grown = await service.update(
        message.message_id, [*with_ask_ids(original, (first,)), ask(question("auth", "0"))]
    )
    ids = [b.ask.ask_id for b in grown.blocks if b.HasField("ask")]
    assert ids[0] == first
    assert ids[1].startswith("ask_")
    assert grown.revision == message.revision + 1
    with pytest.raises(InvalidArgumentError):  # dropping a stored ask
        await service.update(message.message_id, [text("t")])


async def test_watch_ask_ends_with_the_answer(service: Service) -> None:
    world = service.world
    ask_id = await _ask(service)
    stream = aiter(service.agent.watch_ask(agent_pb2.WatchAskRequest(ask_id=ask_id), CTX))
    # A generator handler runs in the context of each `anext`: the agent's, as in a request.
    with service.auth.bound(world.agent):
        async with asyncio.timeout(5):
            first = await anext(stream)  # the current state, at once
            await service.respond(world.human, ask_id, VALID)
            second = await anext(stream)  # woken by the change the store told the hub of
            with pytest.raises(StopAsyncIteration):  # final: the stream ends
                await anext(stream)
    assert [first.ask.status, second.ask.status] == [S.ASK_STATUS_PENDING, S.ASK_STATUS_ANSWERED]


def _refusing() -> comms_pb2.MessageBlock:
    block = ask(question("db", "0", "1"), question("features", "a", "b", multi=True))
    for q in block.ask.questions:
        q.free_text = S.FREE_TEXT_REFUSED
    return block


async def test_free_text_is_refused_where_the_agent_cannot_receive_it(service: Service) -> None:
    world = service.world
    message = await service.post(_refusing())
    ask_id = message.blocks[0].ask.ask_id
    assert [q.free_text for q in message.blocks[0].ask.questions] == [S.FREE_TEXT_REFUSED] * 2
    with pytest.raises(InvalidArgumentError) as caught:
        await service.respond(
            world.human, ask_id, [answer("db", custom_text="neither"), answer("features", "a")]
        )
    ((field, qid),) = [(v.field, v.question_id) for v in caught.value.violations]
    assert (field, qid) == ("answers[0].custom_text", "db")
    # Nothing was stored: the ask is still pending, and a fitting answer goes through.
    assert (await service.get_ask(world.human, ask_id)).status == S.ASK_STATUS_PENDING
    await service.respond(world.human, ask_id, [answer("db", "1"), answer("features", "a")])
    got = await service.get_ask(world.human, ask_id)
    assert got.status == S.ASK_STATUS_ANSWERED
    assert [q.free_text for q in got.questions] == [S.FREE_TEXT_REFUSED] * 2


async def test_the_runtime_auto_answer_follows_the_same_free_text_rule(service: Service) -> None:
    message = await service.post(_refusing())
    ask_id = message.blocks[0].ask.ask_id
    with pytest.raises(InvalidArgumentError) as caught:
        await service.close(
            ask_id,
            S.ASK_STATUS_TIMED_OUT,
            "",
            [answer("db", "0"), answer("features", "a", custom_text="typed")],
        )
    assert [(v.field, v.question_id) for v in caught.value.violations] == [
        ("answers[1].custom_text", "features")
    ]
    assert (await service.get_ask(service.world.human, ask_id)).status == S.ASK_STATUS_PENDING
