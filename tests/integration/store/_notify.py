"""Listening to the store's change notifications in a test, and proving none was sent."""

from __future__ import annotations

import asyncio

import asyncpg

from compass_server.store import EVENTS_CHANNEL, ChangeEvent


async def listen(database_url: str) -> tuple[asyncpg.Connection, asyncio.Queue[str]]:
    """A connection LISTENing on the store's channel, and the payloads it hears, in order."""
    conn = await asyncpg.connect(database_url)
    queue: asyncio.Queue[str] = asyncio.Queue()
    await conn.add_listener(EVENTS_CHANNEL, lambda *args: queue.put_nowait(args[3]))
    return conn, queue


SENTINEL = ChangeEvent(channel_id="sentinel", revision=0, message_id="sentinel", ask_ids=())
"""Notified by the test itself: notifications arrive in commit order, so when this one is the
next to arrive, nothing was notified before it."""


async def notify_sentinel(conn: asyncpg.Connection) -> None:
    await conn.execute("SELECT pg_notify($1, $2)", EVENTS_CHANNEL, SENTINEL.to_payload())


async def nothing_notified(conn: asyncpg.Connection, queue: asyncio.Queue[str]) -> None:
    """Nothing was notified since the last read (`conn` listens and fills `queue`)."""
    await notify_sentinel(conn)
    assert await asyncio.wait_for(queue.get(), 5) == SENTINEL.to_payload()
    assert queue.empty()
