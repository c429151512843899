"""Pooled connections go back to the pool without session state.

The store's pool skips asyncpg's reset query on release (a round trip per call), which is safe
only while no store call leaves session state behind: advisory locks, LISTEN, cursors, SQL
prepared statements, temporary tables, SET values, an open transaction. These tests run every
kind of store call, successful and refused, on a pool of one connection and then look.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import asyncpg

from compass_server.domain.errors import CompassError
from compass_server.store import AccountKind
from compass_server.store.postgres import PostgresStore
from gen.compass.v1 import comms_pb2
from tests._wait import eventually
from tests.integration.store._locks import waiting_backends
from tests.integration.store._seed import (
    answer,
    answer_ask,
    ask,
    close_ask,
    decline_ask,
    question,
    report_delivery,
    seed,
    text,
    update_message,
    with_ask_ids,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable


async def lock_channel(database_url: str, channel_id: str) -> asyncpg.Connection:
    """A connection of its own, in a transaction holding `channel_id`'s row lock."""
    conn = await asyncpg.connect(database_url)
    await conn.execute("BEGIN")
    await conn.execute("SELECT 1 FROM channels WHERE channel_id = $1 FOR NO KEY UPDATE", channel_id)
    return conn


async def session_state(store: PostgresStore) -> dict[str, object]:
    # The store's own acquisition path: the very connection the calls above were served on.
    # (pg_cursors lists this query's own portal as '', hence the filter.)
    async with store._connection() as conn:  # pyright: ignore[reportPrivateUsage] - see above
        row = await conn.fetchrow(
            """SELECT
                 (SELECT array_agg(c) FROM pg_listening_channels() AS c) AS listening,
                 (SELECT count(*) FROM pg_locks
                  WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS advisory_locks,
                 (SELECT array_agg(name) FROM pg_cursors WHERE name <> '') AS cursors,
                 (SELECT array_agg(name) FROM pg_prepared_statements WHERE from_sql)
                   AS sql_prepared,
                 (SELECT count(*) FROM pg_class
                  WHERE relnamespace = pg_my_temp_schema()) AS temp_relations,
                 (SELECT array_agg(name) FROM pg_settings WHERE source = 'session')
                   AS session_settings,
                 current_setting('application_name') AS application_name,
                 txid_current_if_assigned() AS open_transaction,
                 pg_backend_pid() AS pid"""
        )
        assert row is not None
        state: dict[str, object] = dict(row.items())
        state["in_transaction"] = conn.is_in_transaction()
        return state


async def test_store_calls_leave_no_session_state_on_their_connection(database_url: str) -> None:
    async with PostgresStore(database_url, pool_min=1, pool_max=1) as store:
        before = await session_state(store)
        world = await seed(store)
        message = await world.post(store, text("hi"), ask(question("db", "0", "1")))
        await world.post(store, text("hi"), ask(question("db", "0", "1")), client_message_id="k")
        await world.post(store, text("hi"), ask(question("db", "0", "1")), client_message_id="k")
        await update_message(
            store,
            world.agent,
            message.message_id,
            with_ask_ids([text("edited"), *message.blocks[1:]], message.ask_ids),
        )
        ask_id = message.ask_ids[0]
        refused: list[Awaitable[object]] = [
            answer_ask(store, world.human, ask_id, [answer("db", "9")]),  # invalid
            answer_ask(store, world.member, ask_id, [answer("db", "0")]),  # not a participant
            answer_ask(store, world.outsider, ask_id, [answer("db", "0")]),  # not visible
            store.get_channel(world.outsider, world.channel.channel_id),
            update_message(store, world.human, message.message_id, [text("not yours")]),
            store.create_workspace(world.workspace.name),  # already exists
            store.list_messages(world.human, world.channel.channel_id, page_token="bogus"),
        ]
        for call in refused:
            with contextlib.suppress(CompassError):
                await call
        # The outcome writes, and a sweep (its advisory lock ends with its transaction).
        other = await world.post(store, ask(question("db", "0")), ask(question("db", "0")))
        declined, closed = other.ask_ids
        await decline_ask(store, world.human, declined, "no")
        await close_ask(store, world.agent, closed, comms_pb2.ASK_STATUS_WITHDRAWN, "gone")
        await store.expire_due(datetime.now(UTC), timedelta(seconds=60))
        await answer_ask(store, world.human, ask_id, [answer("db", "0")])
        await answer_ask(store, world.human, ask_id, [answer("db", "0")])  # identical retry
        with contextlib.suppress(CompassError):
            await answer_ask(store, world.human2, ask_id, [answer("db", "1")])  # answered
        # A delivery receipt, its identical repeat, and a refused one.
        delivered = comms_pb2.DELIVERY_STATE_DELIVERED
        await report_delivery(store, world.agent, ask_id, delivered)
        await report_delivery(store, world.agent, ask_id, delivered)
        with contextlib.suppress(CompassError):
            await report_delivery(store, world.agent, closed, delivered)  # withdrawn
        await store.get_ask(world.human, ask_id)
        await store.list_channels(world.human)
        await store.list_messages(world.human, world.channel.channel_id, page_size=1)
        await store.messages_after(world.human, world.channel.channel_id, 0)
        assert await store.authenticate(world.human_token) == world.human
        assert await store.authenticate("cmp_unknown") is None
        account, _ = await store.create_account(AccountKind.HUMAN, "Temp")
        await store.disable_account(account.account_id)
        await store.get_account(account.account_id)
        assert await store.has_accounts()
        await store.ping()
        after = await session_state(store)
    assert before["pid"] == after["pid"]  # one connection served every call
    assert after == before
    assert after | {"pid": None} == {
        "listening": None,
        "advisory_locks": 0,
        "cursors": None,
        "sql_prepared": None,
        "temp_relations": 0,
        "session_settings": None,
        "application_name": "compass",
        "open_transaction": None,
        "pid": None,
        "in_transaction": False,
    }


async def test_a_call_cancelled_inside_its_transaction_leaves_none_open(
    database_url: str,
) -> None:
    async with PostgresStore(database_url, pool_min=1, pool_max=1) as store:
        world = await seed(store)
        message = await world.post(store, ask(question("db", "0", "1")))
        # The pool's only connection waits for a lock inside answer_ask's transaction...
        holder = await lock_channel(database_url, world.channel.channel_id)
        try:
            answering = asyncio.ensure_future(
                answer_ask(store, world.human, message.ask_ids[0], [answer("db", "0")])
            )
            await eventually(
                lambda: waiting_backends(database_url), "answer_ask waiting for the lock"
            )
            answering.cancel()  # ...and its caller gives up (a client that went away)
            with contextlib.suppress(asyncio.CancelledError):
                await answering
        finally:
            await holder.close()
        state = await session_state(store)
        assert (state["open_transaction"], state["in_transaction"]) == (None, False)
        assert not (await store.get_ask(world.human, message.ask_ids[0])).answered
        await answer_ask(store, world.human, message.ask_ids[0], [answer("db", "1")])
