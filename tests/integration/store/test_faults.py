"""Database trouble becomes UnavailableError (never an unmapped exception), and the pool
recovers by itself once the database is back."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

import asyncpg
import pytest

from compass_server.domain.errors import UnavailableError
from compass_server.store.migrate import migrate
from compass_server.store.postgres import PostgresStore
from tests import _pg
from tests._wait import eventually
from tests.integration.store._locks import waiting_backends
from tests.integration.store._seed import World, answer, answer_ask, ask, question, seed, text

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from compass_server.store import ChangeEvent


@contextlib.asynccontextmanager
async def holding_channel_lock(database_url: str, channel_id: str) -> AsyncGenerator[None]:
    conn = await asyncpg.connect(database_url)
    try:
        async with conn.transaction():
            await conn.execute(
                "SELECT 1 FROM channels WHERE channel_id = $1 FOR UPDATE", channel_id
            )
            yield
    finally:
        await conn.close()


async def terminate(database_url: str, pids: list[int] | None = None) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        if pids is None:
            return await conn.fetchval(
                """SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                   WHERE datname = current_database() AND application_name = 'compass'"""
            )
        return await conn.fetchval(
            "SELECT count(pg_terminate_backend(pid)) FROM unnest($1::int[]) AS pid", pids
        )
    finally:
        await conn.close()


async def test_a_connection_killed_mid_write_is_unavailable_and_rolled_back(
    store: PostgresStore, world: World, database_url: str
) -> None:
    async with holding_channel_lock(database_url, world.channel.channel_id):
        write = asyncio.create_task(world.post(store, text("doomed")))
        pids = await eventually(
            lambda: waiting_backends(database_url), "the write waiting for the lock"
        )
        assert len(pids) == 1
        assert await terminate(database_url, pids) == 1
        with pytest.raises(UnavailableError, match=r"^database unavailable$"):
            await write
    # Nothing was stored, and the pool serves the next call on a fresh connection.
    assert (await store.list_messages(world.human, world.channel.channel_id)).messages == ()
    assert (await world.post(store, text("fine"))).revision == 1


async def test_killed_idle_connections_are_replaced(database_url: str) -> None:
    async with PostgresStore(database_url, pool_min=4, pool_max=4, timeout=5.0) as store:
        world = await seed(store)
        for _ in range(3):
            # Make all four connections exist, then kill them all while idle.
            await asyncio.gather(*(store.ping() for _ in range(8)))
            assert await terminate(database_url) >= 1
            failures = 0
            for _ in range(20):
                results = await asyncio.gather(
                    *(store.ping() for _ in range(4)), return_exceptions=True
                )
                unexpected = [
                    r for r in results if r is not None and not isinstance(r, UnavailableError)
                ]
                assert unexpected == []  # anything else would reach clients as INTERNAL
                if all(r is None for r in results):
                    break
                failures += 1
            else:
                pytest.fail("the pool did not recover from killed connections")
            assert failures <= 4  # each dead connection fails at most once, then is replaced
        await world.post(store, text("after"))


async def test_an_unreachable_database_is_unavailable() -> None:
    # Port 1 on loopback: nothing listens, connecting is refused at once.
    with pytest.raises(UnavailableError, match=r"^database unavailable$"):
        async with PostgresStore("postgresql://postgres@127.0.0.1:1/compass", timeout=2.0):
            pass
    async with PostgresStore(
        "postgresql://postgres@127.0.0.1:1/compass", pool_min=0, timeout=2.0
    ) as lazy:
        with pytest.raises(UnavailableError):
            await lazy.ping()


async def test_a_timed_out_command_or_an_exhausted_pool_is_unavailable(database_url: str) -> None:
    async with PostgresStore(database_url, pool_min=1, pool_max=1, timeout=0.5) as store:
        world = await seed(store)
        async with holding_channel_lock(database_url, world.channel.channel_id):
            # The write waits on the lock past its command timeout while holding the pool's
            # only connection, so the ping cannot get one in time either.
            results = await asyncio.gather(
                world.post(store, text("slow")), store.ping(), return_exceptions=True
            )
        assert [type(r) for r in results] == [UnavailableError, UnavailableError]
        assert (await store.list_messages(world.human, world.channel.channel_id)).messages == ()
        await store.ping()


async def test_a_database_restart_is_unavailable_then_recovers() -> None:
    with _pg.controllable_server() as pg:
        admin = await asyncpg.connect(pg.dsn)
        try:
            await admin.execute('CREATE DATABASE "compass_restart"')
        finally:
            await admin.close()
        dsn = _pg.with_database(pg.dsn, "compass_restart")
        conn = await asyncpg.connect(dsn)
        try:
            await migrate(conn)
        finally:
            await conn.close()
        async with PostgresStore(dsn, pool_min=2, pool_max=4, timeout=3.0) as store:
            world = await seed(store)
            message = await world.post(store, ask(question("db", "0", "1")))
            events: list[ChangeEvent] = []
            resynced = asyncio.Event()
            listener = asyncio.create_task(
                store.listen(events.append, resynced.set, retry_delay=0.1, max_retry_delay=0.5)
            )
            try:
                await asyncio.wait_for(resynced.wait(), 10)
                resynced.clear()

                await asyncio.to_thread(pg.stop)
                for call in (
                    store.ping(),
                    world.post(store, text("while down")),
                    store.list_messages(world.human, world.channel.channel_id),
                    answer_ask(store, world.human, message.ask_ids[0], [answer("db", "1")]),
                    store.authenticate(world.human_token),
                ):
                    with pytest.raises(UnavailableError, match=r"^database unavailable$"):
                        await call

                await asyncio.to_thread(pg.start)
                recovered = False
                for _ in range(50):
                    try:
                        await store.ping()
                    except UnavailableError:
                        await asyncio.sleep(0.1)
                        continue
                    recovered = True
                    break
                assert recovered
                answered = await answer_ask(
                    store, world.human, message.ask_ids[0], [answer("db", "1")]
                )
                assert answered.answered
                # The listener re-subscribed on its own and asked watchers to re-read.
                await asyncio.wait_for(resynced.wait(), 10)
                after = await world.post(store, text("back"))
                for _ in range(50):
                    if any(e.message_id == after.message_id for e in events):
                        break
                    await asyncio.sleep(0.1)
                assert any(e.message_id == after.message_id for e in events)
            finally:
                listener.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listener
