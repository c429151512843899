"""The MCP front door's store methods on PostgreSQL (migrations/0007_mcp_asks.sql): asks named
by their call key (rejoined, never doubled, under the channel lock), waiting calls, and the
leave sweep withdrawing an abandoned ask exactly once across processes."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import asyncpg
import pytest

from compass_server.domain.errors import NotFoundError, PermissionDeniedError
from compass_server.store.postgres import PostgresStore
from gen.compass.v1 import comms_pb2
from tests.integration.store._seed import (
    answer,
    answer_ask,
    ask,
    question,
    report_delivery,
    text,
)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from tests.integration.store._seed import World

KEY = "a" * 64
OTHER_KEY = "b" * 64
REASON = "agent stopped waiting"


def _blocks() -> list[comms_pb2.MessageBlock]:
    return [text("context"), ask(question("db", "0", "1"))]


@pytest.fixture
async def second_process(database_url: str) -> AsyncGenerator[PostgresStore]:
    """Another server process's store on the same database (a pool of its own)."""
    async with PostgresStore(database_url, pool_min=1, pool_max=4) as other:
        yield other


async def _status(database_url: str, ask_id: str) -> tuple[str, str]:
    conn = await asyncpg.connect(database_url)
    try:
        row = await conn.fetchrow("SELECT status, close_reason FROM asks WHERE ask_id = $1", ask_id)
    finally:
        await conn.close()
    assert row is not None
    return str(row["status"]), str(row["close_reason"])


async def test_a_call_key_rejoins_its_ask_until_it_is_delivered(
    store: PostgresStore, world: World
) -> None:
    channel = world.channel.channel_id
    first, created = await store.open_mcp_ask(
        world.agent, channel, _blocks(), call_key=KEY, waiter_id="w1", seconds=30
    )
    again, created_again = await store.open_mcp_ask(
        world.agent, channel, _blocks(), call_key=KEY, waiter_id="w1", seconds=30
    )
    other, _ = await store.open_mcp_ask(
        world.agent, channel, _blocks(), call_key=OTHER_KEY, waiter_id="w1", seconds=30
    )
    assert (created, created_again) == (True, False)
    assert again.ask.ask_id == first.ask.ask_id
    assert other.ask.ask_id != first.ask.ask_id
    # Answered but not delivered: still its ask. Delivered: the same call asks anew.
    await answer_ask(store, world.human, first.ask.ask_id, [answer("db", "1")])
    answered, created = await store.open_mcp_ask(
        world.agent, channel, _blocks(), call_key=KEY, waiter_id="w1", seconds=30
    )
    assert (answered.ask.ask_id, created) == (first.ask.ask_id, False)
    assert answered.ask.status == comms_pb2.ASK_STATUS_ANSWERED
    await report_delivery(store, world.agent, first.ask.ask_id, comms_pb2.DELIVERY_STATE_DELIVERED)
    fresh, created = await store.open_mcp_ask(
        world.agent, channel, _blocks(), call_key=KEY, waiter_id="w1", seconds=30
    )
    assert created
    assert fresh.ask.ask_id != first.ask.ask_id


async def test_identical_calls_at_once_make_one_ask(
    store: PostgresStore, second_process: PostgresStore, world: World
) -> None:
    channel = world.channel.channel_id
    opened = await asyncio.gather(
        *(
            target.open_mcp_ask(
                world.agent, channel, _blocks(), call_key=KEY, waiter_id="w1", seconds=30
            )
            for target in (store, second_process) * 4
        )
    )
    assert len({row.ask.ask_id for row, _ in opened}) == 1
    assert sum(created for _, created in opened) == 1


async def test_only_participants_open_and_nothing_is_stored_otherwise(
    store: PostgresStore, world: World
) -> None:
    with pytest.raises(NotFoundError):
        await store.open_mcp_ask(
            world.agent, "ch_nope", _blocks(), call_key=KEY, waiter_id="w1", seconds=30
        )
    with pytest.raises(NotFoundError):  # not in that workspace: as if it did not exist
        await store.open_mcp_ask(
            world.agent,
            world.other_channel.channel_id,
            _blocks(),
            call_key=KEY,
            waiter_id="w1",
            seconds=30,
        )
    with pytest.raises(PermissionDeniedError):
        await store.open_mcp_ask(
            world.member,
            world.channel.channel_id,
            _blocks(),
            call_key=KEY,
            waiter_id="w1",
            seconds=30,
        )
    page = await store.list_messages(world.human, world.channel.channel_id)
    assert page.messages == ()


async def test_an_abandoned_ask_is_withdrawn_once_across_processes(
    store: PostgresStore, second_process: PostgresStore, world: World, database_url: str
) -> None:
    channel = world.channel.channel_id
    left, _ = await store.open_mcp_ask(
        world.agent, channel, _blocks(), call_key=KEY, waiter_id="w1", seconds=30
    )
    rejoined, _ = await store.open_mcp_ask(
        world.agent, channel, _blocks(), call_key=OTHER_KEY, waiter_id="w1", seconds=30
    )
    returned, _ = await store.open_mcp_ask(
        world.agent, channel, _blocks(), call_key="c" * 64, waiter_id="w1", seconds=30
    )
    for row in (left, rejoined, returned):
        await store.hold_mcp_wait(world.agent, row.ask.ask_id, "w1", 30)
    # `left`: its only call went away, with no grace left. `rejoined`: it went away too, but
    # another call waits now. `returned`: its call returned a result (pending).
    await store.release_mcp_wait(world.agent, left.ask.ask_id, "w1", grace=0)
    await store.release_mcp_wait(world.agent, rejoined.ask.ask_id, "w1", grace=0)
    await store.hold_mcp_wait(world.agent, rejoined.ask.ask_id, "w2", 30)
    await store.release_mcp_wait(world.agent, returned.ask.ask_id, "w1", grace=None)
    revision = (await store.get_channel(world.human, channel)).revision

    async def sweep(target: PostgresStore) -> list[str]:
        # Both processes sweep until one got the sweeper lock and found the ask.
        withdrawn: list[str] = []
        for _ in range(50):
            withdrawn += await target.withdraw_abandoned(REASON)
            if await _status(database_url, left.ask.ask_id) != ("pending", ""):
                return withdrawn
            await asyncio.sleep(0.01)
        return withdrawn

    swept = await asyncio.gather(sweep(store), sweep(second_process))
    assert sorted(swept[0] + swept[1]) == [left.ask.ask_id]
    assert await _status(database_url, left.ask.ask_id) == ("withdrawn", REASON)
    assert await _status(database_url, rejoined.ask.ask_id) == ("pending", "")
    assert await _status(database_url, returned.ask.ask_id) == ("pending", "")
    closed = await store.get_ask(world.human, left.ask.ask_id)
    assert closed.ask.closed_by_account_id == world.agent.account_id
    # One write: one new revision, and nothing more to sweep.
    assert (await store.get_channel(world.human, channel)).revision == revision + 1
    assert await store.withdraw_abandoned(REASON) == []


async def test_a_wait_on_an_ask_it_did_not_make_holds_nothing(
    store: PostgresStore, world: World, database_url: str
) -> None:
    message = await world.post(store, ask(question("db", "0")))
    (ask_id,) = message.ask_ids
    await store.hold_mcp_wait(world.agent, ask_id, "w1", 0)
    await store.release_mcp_wait(world.agent, ask_id, "w1", grace=0)
    assert await store.withdraw_abandoned(REASON) == []
    assert await _status(database_url, ask_id) == ("pending", "")


async def test_an_ask_whose_call_went_away_before_it_first_held_is_left(
    store: PostgresStore, world: World, database_url: str
) -> None:
    """The call that made it holds it from the moment it exists: a call that dies between
    the commit and its first hold still leaves the ask to the sweep."""
    made, _ = await store.open_mcp_ask(
        world.agent, world.channel.channel_id, _blocks(), call_key=KEY, waiter_id="w1", seconds=0
    )
    assert await store.withdraw_abandoned(REASON) == [made.ask.ask_id]
    assert await _status(database_url, made.ask.ask_id) == ("withdrawn", REASON)


async def test_whether_its_agent_waits_is_read_as_withdraw_at_and_told_to_watchers(
    store: PostgresStore, world: World
) -> None:
    """A pending MCP ask none of whose calls waits now carries when the leave sweep withdraws
    it (`Ask.withdraw_at`, its last hold's end); while a call waits, nothing. Each change of
    that is a write people see (a new channel revision, its message touched); renewing a
    waiting call's hold is not (issue 33, N7)."""
    channel = world.channel.channel_id

    async def seen() -> tuple[bool, int]:
        row = await store.get_ask(world.human, made.ask.ask_id)
        page = await store.list_messages(world.human, channel)
        [message] = [m for m in page.messages if made.ask.ask_id in m.ask_ids]
        [block] = [b for b in message.blocks if b.HasField("ask")]
        assert block.ask.HasField("withdraw_at") is row.ask.HasField("withdraw_at")
        revision = (await store.get_channel(world.human, channel)).revision
        return row.ask.HasField("withdraw_at"), revision

    made, _ = await store.open_mcp_ask(
        world.agent, channel, _blocks(), call_key=KEY, waiter_id="w1", seconds=30
    )
    waiting, revision = await seen()
    assert not waiting
    await store.hold_mcp_wait(world.agent, made.ask.ask_id, "w1", 30)  # a renewal
    assert await seen() == (False, revision)
    await store.hold_mcp_wait(world.agent, made.ask.ask_id, "w2", 30)  # a second call
    assert await seen() == (False, revision)
    await store.release_mcp_wait(world.agent, made.ask.ask_id, "w1", grace=60)
    assert await seen() == (False, revision)  # w2 still waits
    await store.release_mcp_wait(world.agent, made.ask.ask_id, "w2", grace=60)
    assert await seen() == (True, revision + 1)
    row = await store.get_ask(world.human, made.ask.ask_id)
    left_for = row.ask.withdraw_at.ToDatetime(UTC) - datetime.now(UTC)
    assert timedelta(seconds=50) < left_for <= timedelta(seconds=60)
    # The agent comes back (ask_wait): waited for again; so does the identical ask.
    await store.hold_mcp_wait(world.agent, made.ask.ask_id, "w3", 30)
    assert await seen() == (False, revision + 2)
    await store.release_mcp_wait(world.agent, made.ask.ask_id, "w3", grace=60)
    assert await seen() == (True, revision + 3)
    again, created = await store.open_mcp_ask(
        world.agent, channel, _blocks(), call_key=KEY, waiter_id="w4", seconds=30
    )
    assert (again.ask.ask_id, created, again.ask.HasField("withdraw_at")) == (
        made.ask.ask_id,
        False,
        False,
    )
    assert await seen() == (False, revision + 4)
    # Final: nothing to say, whoever waits or left.
    await answer_ask(store, world.human, made.ask.ask_id, [answer("db", "1")])
    await store.release_mcp_wait(world.agent, made.ask.ask_id, "w4", grace=60)
    assert await seen() == (False, revision + 5)
