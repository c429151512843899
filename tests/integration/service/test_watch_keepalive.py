"""WatchChannel says when it has caught up, and keeps saying so while the channel is quiet.

The handlers run over the application API on a real store (PostgreSQL) with a short re-check interval; the change hub is
fed by hand, so the test decides when a notification arrives.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, TypeVar

import pytest

from compass_server.live.hub import ChangeHub
from compass_server.service.asks import Asks
from compass_server.service.handlers import CommsHandlers
from compass_server.store import AccountRow, ChangeEvent
from compass_server.store.postgres import PostgresStore
from compass_server.transport.auth import AuthContext
from gen.compass.v1 import comms_pb2
from tests.integration.store._seed import seed, text
from tests.memory_push import push_use_cases

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


T = TypeVar("T")


async def _next(stream: AsyncIterator[T], within: float = 5.0) -> T:
    async with asyncio.timeout(within):
        return await anext(stream)


async def test_caught_up_after_replay_then_as_keepalive(database_url: str) -> None:
    async with PostgresStore(database_url) as store:
        world = await seed(store)
        first = await world.post(store, text("one"))
        auth: AuthContext[AccountRow] = AuthContext()
        hub = ChangeHub()
        asks = Asks(store, hub, recheck_seconds=0.2)
        handlers = CommsHandlers(asks, auth, push=push_use_cases(store, asks))
        request = comms_pb2.WatchChannelRequest(channel_id=world.channel.channel_id)
        with auth.bound(world.human):
            stream = handlers.watch_channel(request, None)  # type: ignore[arg-type] # the handler never reads ctx
            assert isinstance(stream, AsyncGenerator)  # an async generator function's result
            try:
                replayed = await _next(stream)
                assert replayed.message.message_id == first.message_id
                assert not replayed.caught_up

                announced = await _next(stream)
                assert announced.caught_up
                assert not announced.HasField("message")

                # Nothing changes: a keepalive per re-check.
                for _ in range(2):
                    keepalive = await _next(stream, within=2.0)
                    assert keepalive.caught_up
                    assert not keepalive.HasField("message")

                # A change arrives as a message, not as a keepalive.
                second = await world.post(store, text("two"))
                hub.publish(
                    ChangeEvent(
                        channel_id=world.channel.channel_id,
                        revision=second.revision,
                        message_id=second.message_id,
                        ask_ids=(),
                    )
                )
                live = await _next(stream)
                while live.caught_up:  # a re-check may have fired just before the post
                    live = await _next(stream)
                assert live.message.message_id == second.message_id
            finally:
                await stream.aclose()


async def test_watch_ask_sends_keepalives_while_the_ask_waits(database_url: str) -> None:
    """Issue 24 T: WatchAsk sent nothing while a person took their time, so the bridge's read
    timeout (90 s) ended the stream with a WARNING every 90 s."""
    from compass_server.service.handlers import AgentHandlers
    from gen.compass.v1 import agent_pb2
    from tests.integration.store._seed import answer, answer_ask, ask, question

    async with PostgresStore(database_url) as store:
        world = await seed(store)
        message = await world.post(store, ask(question("db", "0", "1")))
        (ask_id,) = message.ask_ids
        auth: AuthContext[AccountRow] = AuthContext()
        hub = ChangeHub()
        handlers = AgentHandlers(Asks(store, hub, recheck_seconds=0.2), auth)
        with auth.bound(world.agent):
            stream = handlers.watch_ask(agent_pb2.WatchAskRequest(ask_id=ask_id), None)  # type: ignore[arg-type] # the handler never reads ctx
            assert isinstance(stream, AsyncGenerator)
            try:
                first = await _next(stream)
                assert first.ask.ask_id == ask_id
                assert not first.keepalive
                for _ in range(2):  # unchanged: a keepalive per re-check, with no ask
                    keepalive = await _next(stream, within=2.0)
                    assert keepalive.keepalive
                    assert not keepalive.HasField("ask")
                await answer_ask(store, world.human, ask_id, [answer("db", "1")])
                final = await _next(stream)
                while final.keepalive:  # a re-check may have fired before the answer
                    final = await _next(stream)
                assert final.ask.answered_by_account_id == world.human.account_id
                with pytest.raises(StopAsyncIteration):
                    await _next(stream)
            finally:
                await stream.aclose()
