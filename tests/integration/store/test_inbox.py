"""The store side of the inbox (issue 13): `list_pending_asks` orders by when each ask was
first stored (migration 0003), also for an ask added to an older message later, and asks
stored before version 3 get their message's creation time."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg

from compass_server.store.migrate import migrate
from compass_server.store.postgres import PostgresStore
from tests.integration.store._seed import ask, question, seed, text, update_message

if TYPE_CHECKING:
    from gen.compass.v1 import comms_pb2

REPO_MIGRATIONS = Path(__file__).resolve().parents[3] / "compass_server" / "store" / "migrations"


def _ids(asks: tuple[object, ...]) -> list[str]:
    return [row.ask.ask.ask_id for row in asks]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]


async def test_an_ask_added_to_an_older_message_is_as_old_as_its_own_storing(
    store: PostgresStore,
) -> None:
    world = await seed(store)
    first = await world.post(store, text("progress"))
    second = await world.post(store, ask(question("a", "0", "1")))
    # The agent adds an ask to its first (older) message: it is the newest ask, not the oldest.
    blocks: list[comms_pb2.MessageBlock] = [*first.blocks, ask(question("b", "0"))]
    updated = await update_message(store, world.agent, first.message_id, blocks)
    page = await store.list_pending_asks(world.human)
    assert _ids(page.asks) == [*second.ask_ids, *updated.ask_ids]
    assert page.asks[0].author_name == "Coding Agent"
    assert page.asks[0].channel_name == "general"
    assert page.asks[0].asked_at <= page.asks[1].asked_at
    assert (await store.list_pending_asks(world.outsider)).asks == ()


async def test_asks_stored_before_version_3_take_their_messages_creation_time(
    empty_database: str, tmp_path: Path
) -> None:
    v2 = tmp_path / "v2"
    v2.mkdir()
    for name in ("0001_init.sql", "0002_ask_outcomes.sql"):
        shutil.copy(REPO_MIGRATIONS / name, v2)
    long_ago = datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC)
    conn = await asyncpg.connect(empty_database)
    try:
        assert await migrate(conn, v2) == [1, 2]
        async with PostgresStore(empty_database) as old:
            world = await seed(old)
        await conn.execute(
            """INSERT INTO messages (message_id, channel_id, author_account_id, blocks,
                                     created_revision, revision, created_at, updated_at)
               VALUES ('msg_old', $1, $2, $3::jsonb, 1, 1, $4, $4)""",
            world.channel.channel_id,
            world.agent.account_id,
            '[{"ask": {"ask_id": "ask_old", "questions": [{"question_id": "db", "question": "q",'
            ' "header": "", "allow_multiple": false, "options": []}]}}]',
            long_ago,
        )
        await conn.execute(
            "INSERT INTO asks (ask_id, message_id, channel_id) VALUES ('ask_old', 'msg_old', $1)",
            world.channel.channel_id,
        )
        await conn.execute(
            "UPDATE channels SET revision = 1 WHERE channel_id = $1", world.channel.channel_id
        )
        applied = await migrate(conn, REPO_MIGRATIONS)
        assert applied[0] == 3
    finally:
        await conn.close()
    async with PostgresStore(empty_database) as new:
        newer = await world.post(new, ask(question("x", "0")))
        page = await new.list_pending_asks(world.human)
    assert _ids(page.asks) == ["ask_old", *newer.ask_ids]
    assert page.asks[0].asked_at == long_ago
    assert page.asks[0].ask.ask.questions[0].question_id == "db"
