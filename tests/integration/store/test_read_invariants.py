"""Rows written behind the store's back: a stale or corrupt ask fails loudly on every read path."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import asyncpg
import pytest

from compass_server.domain.errors import CorruptDataError
from tests.integration.store._seed import World, answer, answer_ask, ask, question, text

if TYPE_CHECKING:
    from compass_server.store.postgres import PostgresStore

STALE_ASK = {
    "ask": {
        "ask_id": "ask_stale",
        "question": "Which database?",
        "options": [{"id": "pg", "label": "PostgreSQL"}, {"id": "my", "label": "MySQL"}],
        "allow_multiple": False,
    }
}


def q(**override: object) -> dict[str, object]:
    base: dict[str, object] = {
        "question_id": "db",
        "question": "Which?",
        "header": "",
        "allow_multiple": False,
        "options": [{"id": "0", "label": "pg", "description": "", "preview": ""}],
    }
    base.update(override)
    return base


def stored_ask(*questions: dict[str, object]) -> dict[str, object]:
    return {"ask": {"ask_id": "ask_stale", "questions": list(questions)}}


OPTION = {"id": "0", "label": "", "description": "", "preview": ""}

CORRUPT_BLOCKS = [
    pytest.param([STALE_ASK], "no questions", id="stale-pre-reshape-ask"),
    pytest.param(
        [{"question": "Which database?", "options": [], "ask_id": "ask_stale"}],
        "pre-reshape",
        id="stale-bare-block",
    ),
    pytest.param([stored_ask()], "no questions", id="zero-questions"),
    pytest.param([stored_ask(q(question_id=""))], "question_id is empty", id="empty-question-id"),
    pytest.param([stored_ask(q(), q())], "also used by", id="duplicate-question-id"),
    pytest.param(
        [stored_ask(q(options=[{**OPTION, "id": ""}]))], "option id is empty", id="empty-option-id"
    ),
    pytest.param(
        [stored_ask(q(options=[OPTION, OPTION]))], "also used by", id="duplicate-option-id"
    ),
    pytest.param([{"text": {"text": "x"}, **stored_ask(q())}], "exactly one kind", id="two-kinds"),
    pytest.param([{}], "exactly one kind", id="no-kind"),
]


async def insert_raw(
    conn: asyncpg.Connection, world: World, blocks: object, *, with_ask: bool = True
) -> str:
    revision = await conn.fetchval(
        "UPDATE channels SET revision = revision + 1 WHERE channel_id = $1 RETURNING revision",
        world.channel.channel_id,
    )
    message_id = "msg_stale"
    await conn.execute(
        """INSERT INTO messages (message_id, channel_id, author_account_id, blocks,
                                 created_revision, revision)
           VALUES ($1, $2, $3, $4::jsonb, $5, $5)""",
        message_id,
        world.channel.channel_id,
        world.agent.account_id,
        json.dumps(blocks),
        revision,
    )
    if with_ask:
        await conn.execute(
            "INSERT INTO asks (ask_id, message_id, channel_id) VALUES ('ask_stale', $1, $2)",
            message_id,
            world.channel.channel_id,
        )
    return message_id


@pytest.mark.parametrize(("blocks", "reason"), CORRUPT_BLOCKS)
async def test_every_read_path_fails_loudly_on_a_corrupt_stored_ask(
    store: PostgresStore, world: World, database_url: str, blocks: object, reason: str
) -> None:
    await world.post(store, text("a healthy message"))
    conn = await asyncpg.connect(database_url)
    try:
        message_id = await insert_raw(conn, world, blocks)
    finally:
        await conn.close()
    channel_id = world.channel.channel_id
    expected = f"stored message {message_id} is corrupt: .*{reason}"
    with pytest.raises(CorruptDataError, match=expected):
        await store.list_messages(world.human, channel_id)
    with pytest.raises(CorruptDataError, match=expected):
        await store.messages_after(world.human, channel_id, 0)
    with pytest.raises(CorruptDataError, match=expected):
        await store.get_ask(world.human, "ask_stale")
    with pytest.raises(CorruptDataError, match=expected):
        await answer_ask(store, world.human, "ask_stale", [answer("db", "0")])
    # The healthy message before it still reads (the failure is not a silent drop of it).
    (healthy,) = await store.messages_after(world.human, channel_id, 0, limit=1)
    assert healthy.blocks[0].text.text == "a healthy message"


async def test_a_stale_ask_is_never_an_empty_pending_ask(
    store: PostgresStore, world: World, database_url: str
) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await insert_raw(conn, world, [STALE_ASK])
    finally:
        await conn.close()
    with pytest.raises(CorruptDataError) as caught:
        await store.get_ask(world.human, "ask_stale")
    assert "msg_stale" in caught.value.message
    assert "stale pre-reshape ask" in caught.value.message


async def test_a_corrupt_stored_answer_fails_loudly(
    store: PostgresStore, world: World, database_url: str
) -> None:
    message = await world.post(store, ask(question("db", "0", "1")))
    ask_id = message.ask_ids[0]
    await answer_ask(store, world.human, ask_id, [answer("db", "1")])
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(
            """UPDATE asks SET answers = '[{"question_id": "gone", "chosen_option_ids": [],
                                           "custom_text": "", "timed_out": false}]'::jsonb
               WHERE ask_id = $1""",
            ask_id,
        )
    finally:
        await conn.close()
    with pytest.raises(CorruptDataError, match=ask_id):
        await store.get_ask(world.human, ask_id)
    with pytest.raises(CorruptDataError, match=ask_id):
        await store.list_messages(world.human, world.channel.channel_id)
