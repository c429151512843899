"""append_message: ask-id minting, write invariants, idempotency, participation, revisions."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from compass_server.domain.errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
)
from compass_server.store.postgres import PostgresStore, new_id
from gen.compass.v1 import comms_pb2
from tests.integration.store._seed import World, answer_ask, ask, question, seed, text


async def test_each_ask_block_gets_its_own_minted_ask_id(
    store: PostgresStore, world: World
) -> None:
    message = await world.post(
        store,
        text("Before we start:"),
        ask(question("db", "0", "1")),
        ask(question("auth", "0", "1", multi=True), question("why")),
        ask(question("db", "0")),  # question ids are per ask: reuse across asks is fine
    )
    ids = message.ask_ids
    assert len(ids) == 3
    assert len(set(ids)) == 3
    assert all(ask_id.startswith("ask_") and len(ask_id) > len("ask_") for ask_id in ids)
    assert message.message_id.startswith("msg_")
    # Each id finds its own ask, with the questions in the agent's order.
    found = [await store.get_ask(world.human, ask_id) for ask_id in ids]
    assert [[q.question_id for q in row.ask.questions] for row in found] == [
        ["db"],
        ["auth", "why"],
        ["db"],
    ]
    assert {row.message_id for row in found} == {message.message_id}
    # The stored message reads back exactly as returned.
    page = await store.list_messages(world.human, world.channel.channel_id)
    assert page.messages == (message,)


async def test_a_thousand_concurrent_appends_never_collide(
    store: PostgresStore, world: World
) -> None:
    async def worker(count: int) -> list[tuple[str, int, tuple[str, ...]]]:
        made = []
        for i in range(count):
            row = await world.post(store, ask(question(f"q{i}", "0")), ask(question("x")))
            made.append((row.message_id, row.revision, row.ask_ids))
        return made

    results = await asyncio.gather(*(worker(125) for _ in range(8)))
    rows = [row for batch in results for row in batch]
    assert len(rows) == 1000
    ask_ids = [ask_id for _, _, ids in rows for ask_id in ids]
    assert len(ask_ids) == 2000
    assert len(set(ask_ids)) == 2000
    assert "" not in ask_ids
    assert len({message_id for message_id, _, _ in rows}) == 1000
    # One revision per append, none shared, none skipped.
    assert sorted(revision for _, revision, _ in rows) == list(range(1, 1001))
    channel = await store.get_channel(world.human, world.channel.channel_id)
    assert channel.revision == 1000


async def test_revisions_increase_strictly_per_channel(store: PostgresStore, world: World) -> None:
    revisions = [(await world.post(store, text(str(i)))).revision for i in range(5)]
    assert revisions == [1, 2, 3, 4, 5]
    other = await store.append_message(world.outsider, world.other_channel.channel_id, [text("x")])
    assert other.revision == 1  # per channel, not global


@pytest.mark.parametrize("bad", ["nul \x00", "surrogate \udc80"])
async def test_names_postgres_cannot_store_are_invalid_argument(
    store: PostgresStore, bad: str
) -> None:
    # (A client_message_id is checked before the store: tests/unit/server/service.)
    with pytest.raises(InvalidArgumentError):
        await store.create_workspace(bad)


async def test_append_is_idempotent_on_client_message_id(
    store: PostgresStore, world: World
) -> None:
    blocks = (text("hi"), ask(question("db", "0", "1")))
    first = await world.post(store, *blocks, client_message_id="turn-1")
    again = await world.post(store, *blocks, client_message_id="turn-1")
    assert again == first  # same message id, same ask ids, same revision
    page = await store.list_messages(world.human, world.channel.channel_id)
    assert len(page.messages) == 1
    assert (await store.get_channel(world.human, world.channel.channel_id)).revision == 1


async def test_idempotent_repeat_after_the_ask_was_answered_returns_the_answer(
    store: PostgresStore, world: World
) -> None:
    from tests.integration.store._seed import answer

    blocks = (ask(question("db", "0", "1")),)
    first = await world.post(store, *blocks, client_message_id="turn-1")
    await answer_ask(store, world.human, first.ask_ids[0], [answer("db", "1")])
    again = await world.post(store, *blocks, client_message_id="turn-1")
    assert again.ask_ids == first.ask_ids
    assert list(again.blocks[0].ask.questions[0].chosen_option_ids) == ["1"]


@pytest.mark.parametrize(
    "other",
    [
        pytest.param((text("hi"), ask(question("db", "0", "2"))), id="different-option"),
        pytest.param((text("hello"), ask(question("db", "0", "1"))), id="different-text"),
        pytest.param((ask(question("db", "0", "1")), text("hi")), id="different-order"),
        pytest.param((text("hi"),), id="fewer-blocks"),
    ],
)
async def test_same_client_message_id_with_different_blocks_already_exists(
    store: PostgresStore, world: World, other: tuple[comms_pb2.MessageBlock, ...]
) -> None:
    first = await world.post(
        store, text("hi"), ask(question("db", "0", "1")), client_message_id="k"
    )
    with pytest.raises(AlreadyExistsError, match="client_message_id"):
        await world.post(store, *other, client_message_id="k")
    page = await store.list_messages(world.human, world.channel.channel_id)
    assert page.messages == (first,)


async def test_same_client_message_id_from_another_author_already_exists(
    store: PostgresStore, world: World
) -> None:
    await world.post(store, text("hi"), client_message_id="k")
    with pytest.raises(AlreadyExistsError):
        await store.append_message(
            world.human, world.channel.channel_id, [text("hi")], client_message_id="k"
        )


async def test_client_message_id_is_per_channel(store: PostgresStore, world: World) -> None:
    await world.post(store, text("hi"), client_message_id="k")
    other = await store.append_message(
        world.outsider, world.other_channel.channel_id, [text("hi")], client_message_id="k"
    )
    assert other.client_message_id == "k"


async def test_without_client_message_id_every_append_is_new(
    store: PostgresStore, world: World
) -> None:
    first = await world.post(store, text("hi"))
    second = await world.post(store, text("hi"))
    assert first.message_id != second.message_id
    assert first.client_message_id == second.client_message_id == ""


async def test_concurrent_idempotent_appends_store_one_message(
    store: PostgresStore, world: World
) -> None:
    blocks = (ask(question("db", "0")),)
    rows = await asyncio.gather(
        *(world.post(store, *blocks, client_message_id="same") for _ in range(10))
    )
    assert len({row.message_id for row in rows}) == 1
    assert len({row.ask_ids for row in rows}) == 1


async def test_visibility_and_participation(store: PostgresStore, world: World) -> None:
    with pytest.raises(NotFoundError, match=r"^channel not found$") as unknown:
        await store.append_message(world.agent, "ch_nope", [text("x")])
    with pytest.raises(NotFoundError) as invisible:
        await store.append_message(world.outsider, world.channel.channel_id, [text("x")])
    assert invisible.value.message == unknown.value.message  # no existence leak
    with pytest.raises(PermissionDeniedError):
        await store.append_message(world.member, world.channel.channel_id, [text("x")])


async def test_minting_retries_on_collision(database_url: str) -> None:
    # The id factory first repeats ids that already exist: the store must mint again.
    script: dict[str, list[str]] = {"ask": [], "msg": []}

    def factory(prefix: str) -> str:
        queue = script.get(prefix)
        if queue:
            return queue.pop(0)
        return new_id(prefix)

    async with PostgresStore(database_url, id_factory=factory) as store:
        world = await seed(store)
        first = await world.post(store, ask(question("a", "0")), ask(question("b", "0")))
        taken_ask = first.ask_ids[0]
        script["msg"] = [first.message_id, first.message_id]
        script["ask"] = [taken_ask, taken_ask, "ask_fresh", taken_ask]
        second = await world.post(store, ask(question("c", "0")), ask(question("d", "0")))
    assert second.message_id not in {first.message_id, ""}
    assert taken_ask not in second.ask_ids
    assert len(set(second.ask_ids)) == 2
    assert script == {"ask": [], "msg": []}  # the colliding ids were really tried
    # The stored blocks carry the re-minted ids (not the colliding ones).
    conn = await asyncpg.connect(database_url)
    try:
        stored = await conn.fetchval(
            "SELECT blocks::text FROM messages WHERE message_id = $1", second.message_id
        )
        asks = await conn.fetch("SELECT ask_id FROM asks WHERE message_id = $1", second.message_id)
    finally:
        await conn.close()
    assert taken_ask not in stored
    assert {row["ask_id"] for row in asks} == set(second.ask_ids)


async def test_free_text_is_stored_per_question_and_part_of_an_idempotent_repeat(
    store: PostgresStore, world: World
) -> None:
    def block(refused: comms_pb2.FreeText) -> comms_pb2.MessageBlock:
        made = ask(question("db", "0", "1"), question("why"), question("x", "a", multi=True))
        made.ask.questions[0].free_text = refused
        made.ask.questions[2].free_text = comms_pb2.FREE_TEXT_INSTEAD_OF_PICKS
        return made

    message = await world.post(store, block(comms_pb2.FREE_TEXT_REFUSED), client_message_id="k")
    stored = (await store.get_ask(world.human, message.ask_ids[0])).ask
    assert [q.free_text for q in stored.questions] == [
        comms_pb2.FREE_TEXT_REFUSED,
        comms_pb2.FREE_TEXT_UNSPECIFIED,
        comms_pb2.FREE_TEXT_INSTEAD_OF_PICKS,
    ]
    page = await store.list_messages(world.human, world.channel.channel_id)
    assert page.messages == (message,)
    repeat = await world.post(store, block(comms_pb2.FREE_TEXT_REFUSED), client_message_id="k")
    assert repeat.ask_ids == message.ask_ids
    with pytest.raises(AlreadyExistsError):
        await world.post(store, block(comms_pb2.FREE_TEXT_ACCEPTED), client_message_id="k")
