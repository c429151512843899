"""Change notifications: one NOTIFY per revision-bumping write, and the store's listener."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import TYPE_CHECKING

import asyncpg

from compass_server.domain.errors import InvalidArgumentError
from compass_server.store import EVENTS_CHANNEL, ChangeEvent
from tests.integration.store._notify import SENTINEL, listen, nothing_notified, notify_sentinel
from tests.integration.store._seed import (
    World,
    answer,
    answer_ask,
    ask,
    question,
    text,
    update_message,
    with_ask_ids,
)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from compass_server.store.postgres import PostgresStore


async def test_every_write_notifies_with_its_revision(
    store: PostgresStore, world: World, database_url: str
) -> None:
    conn, queue = await listen(database_url)
    try:
        channel_id = world.channel.channel_id
        message = await world.post(store, text("hi"), ask(question("db", "0")), ask(question("x")))
        appended = json.loads(await asyncio.wait_for(queue.get(), 5))
        assert appended == {
            "channel_id": channel_id,
            "revision": 1,
            "message_id": message.message_id,
            "ask_ids": list(message.ask_ids),
        }
        await update_message(
            store,
            world.agent,
            message.message_id,
            with_ask_ids([text("edited"), *message.blocks[1:]], message.ask_ids),
        )
        updated = json.loads(await asyncio.wait_for(queue.get(), 5))
        assert updated["revision"] == 2
        assert updated["ask_ids"] == list(message.ask_ids)
        await answer_ask(store, world.human, message.ask_ids[0], [answer("db", "0")])
        answered = ChangeEvent.from_payload(await asyncio.wait_for(queue.get(), 5))
        assert answered == ChangeEvent(
            channel_id=channel_id,
            revision=3,
            message_id=message.message_id,
            ask_ids=(message.ask_ids[0],),
        )
        # Writes that change nothing notify nothing.
        await world.post(store, text("dup"), client_message_id="k")
        assert json.loads(await asyncio.wait_for(queue.get(), 5))["revision"] == 4
        await world.post(store, text("dup"), client_message_id="k")
        await answer_ask(
            store, world.human, message.ask_ids[0], [answer("db", "0")]
        )  # identical retry
        await nothing_notified(conn, queue)
    finally:
        await conn.close()


async def test_an_answer_notifies_the_exact_payload_text_of_its_event(
    store: PostgresStore, world: World, database_url: str
) -> None:
    # The answer's statement builds the payload in the database around the revision it
    # assigns; it must be the very text ChangeEvent.to_payload makes.
    conn, queue = await listen(database_url)
    try:
        message = await world.post(store, ask(question("db", "0")))
        await asyncio.wait_for(queue.get(), 5)
        await answer_ask(store, world.human, message.ask_ids[0], [answer("db", "0")])
        expected = ChangeEvent(
            channel_id=world.channel.channel_id,
            revision=2,
            message_id=message.message_id,
            ask_ids=(message.ask_ids[0],),
        )
        assert await asyncio.wait_for(queue.get(), 5) == expected.to_payload()
    finally:
        await conn.close()


async def test_a_failed_write_notifies_nothing(
    store: PostgresStore, world: World, database_url: str
) -> None:
    conn, queue = await listen(database_url)
    try:
        message = await world.post(store, ask(question("db", "0")))
        await asyncio.wait_for(queue.get(), 5)
        with contextlib.suppress(InvalidArgumentError):  # the rejection is tested elsewhere
            await answer_ask(store, world.human, message.ask_ids[0], [answer("db", "nope")])
        await nothing_notified(conn, queue)
    finally:
        await conn.close()


async def test_an_update_adding_asks_notifies_every_ask_of_the_message(
    store: PostgresStore, world: World, database_url: str
) -> None:
    conn, queue = await listen(database_url)
    try:
        message = await world.post(store, text("Let me ask:"), ask(question("db", "0")))
        await asyncio.wait_for(queue.get(), 5)
        updated = await update_message(
            store,
            world.agent,
            message.message_id,
            [*with_ask_ids(message.blocks, message.ask_ids), ask(question("auth", "0"))],
        )
        event = ChangeEvent.from_payload(await asyncio.wait_for(queue.get(), 5))
        assert len(updated.ask_ids) == 2
        assert event == ChangeEvent(
            channel_id=world.channel.channel_id,
            revision=2,
            message_id=message.message_id,
            ask_ids=updated.ask_ids,  # the minted one and the new one, in block order
        )
        # A rejected update (here: dropping the new ask) notifies nothing.
        with contextlib.suppress(InvalidArgumentError):
            await update_message(store, world.agent, message.message_id, message.blocks)
        await nothing_notified(conn, queue)
    finally:
        await conn.close()


class Recorder:
    def __init__(self) -> None:
        self.events: asyncio.Queue[ChangeEvent] = asyncio.Queue()
        self.resyncs = 0
        self.resynced = asyncio.Event()

    def on_change(self, event: ChangeEvent) -> None:
        self.events.put_nowait(event)

    def on_resync(self) -> None:
        self.resyncs += 1
        self.resynced.set()

    async def wait_resync(self) -> None:
        await asyncio.wait_for(self.resynced.wait(), 10)
        self.resynced.clear()


@contextlib.asynccontextmanager
async def _listener(store: PostgresStore, recorder: Recorder) -> AsyncGenerator[asyncio.Task[None]]:
    task = asyncio.create_task(store.listen(recorder.on_change, recorder.on_resync))
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_the_store_listener_delivers_and_survives_a_lost_connection(
    store: PostgresStore, world: World, database_url: str
) -> None:
    recorder = Recorder()
    async with _listener(store, recorder):
        await recorder.wait_resync()  # subscribed
        message = await world.post(store, text("one"))
        event = await asyncio.wait_for(recorder.events.get(), 5)
        assert (event.message_id, event.revision) == (message.message_id, 1)

        # Kill the listener's connection, as a database restart would.
        conn = await asyncpg.connect(database_url)
        try:
            killed = await conn.fetchval(
                """SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                   WHERE datname = current_database() AND application_name = 'compass-listener'"""
            )
        finally:
            await conn.close()
        assert killed == 1
        await recorder.wait_resync()  # re-subscribed, and told watchers to re-read
        assert recorder.resyncs == 2
        second = await world.post(store, text("two"))
        event = await asyncio.wait_for(recorder.events.get(), 5)
        assert (event.message_id, event.revision) == (second.message_id, 2)


async def test_an_unreadable_payload_triggers_a_resync(
    store: PostgresStore, database_url: str
) -> None:
    recorder = Recorder()
    async with _listener(store, recorder):
        await recorder.wait_resync()
        conn = await asyncpg.connect(database_url)
        try:
            await conn.execute("SELECT pg_notify($1, 'not json at all')", EVENTS_CHANNEL)
            await conn.execute("SELECT pg_notify($1, '{\"channel_id\": 1}')", EVENTS_CHANNEL)
        finally:
            await conn.close()
        await recorder.wait_resync()
        conn = await asyncpg.connect(database_url)
        try:
            await notify_sentinel(conn)
        finally:
            await conn.close()
        # The next event is the sentinel: nothing else was delivered, no further resync.
        assert await asyncio.wait_for(recorder.events.get(), 5) == SENTINEL
        assert recorder.resyncs == 3
        assert recorder.events.empty()
