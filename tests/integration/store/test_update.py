"""update_message: asks match the stored ones by position; minted ids are immutable, new asks
after them get fresh ids; stored answers always win."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import asyncpg
import pytest

from compass_server.domain.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
)
from compass_server.store.postgres import PostgresStore, new_id
from tests.integration.store._notify import listen, nothing_notified
from tests.integration.store._seed import (
    World,
    answer,
    answer_ask,
    ask,
    decline_ask,
    question,
    seed,
    text,
    update_message,
    with_ask_ids,
)

if TYPE_CHECKING:
    from gen.compass.v1 import comms_pb2

ORIGINAL = (
    text("Let me ask:"),
    ask(question("db", "0", "1")),
    ask(question("auth", "0", "1", multi=True)),
)


async def post_original(store: PostgresStore, world: World) -> tuple[str, tuple[str, ...]]:
    message = await world.post(store, *ORIGINAL, client_message_id="turn-1")
    return message.message_id, message.ask_ids


async def test_update_replaces_blocks_and_bumps_the_revision(
    store: PostgresStore, world: World
) -> None:
    message_id, ids = await post_original(store, world)
    blocks = with_ask_ids([text("Let me ask, edited:"), *ORIGINAL[1:], text("and more")], ids)
    updated = await update_message(store, world.agent, message_id, blocks)
    assert updated.revision == 2
    assert updated.ask_ids == ids
    assert updated.blocks[0].text.text == "Let me ask, edited:"
    assert updated.updated_at >= updated.created_at
    (listed,) = (await store.list_messages(world.human, world.channel.channel_id)).messages
    assert listed == updated
    # Replay after the append's revision yields the message once, as of its latest revision.
    assert await store.messages_after(world.human, world.channel.channel_id, 1) == [updated]


async def test_an_update_that_changes_nothing_keeps_the_revision(
    store: PostgresStore, world: World
) -> None:
    message_id, ids = await post_original(store, world)
    unchanged = await update_message(
        store, world.agent, message_id, with_ask_ids(list(ORIGINAL), ids)
    )
    assert unchanged.revision == 1
    assert (await store.get_channel(world.human, world.channel.channel_id)).revision == 1


async def asks_in_table(database_url: str, message_id: str) -> set[str]:
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch("SELECT ask_id FROM asks WHERE message_id = $1", message_id)
    finally:
        await conn.close()
    return {row["ask_id"] for row in rows}


async def test_an_update_may_add_asks_after_the_minted_ones(
    store: PostgresStore, world: World, database_url: str
) -> None:
    message_id, ids = await post_original(store, world)
    # The i-th ask keeps the id minted for it; the asks after the stored ones come unminted.
    blocks = [
        *with_ask_ids(list(ORIGINAL), ids),
        ask(question("region", "0", "1")),
        text("one more:"),
        ask(question("tier", "0"), question("why")),
    ]
    updated = await update_message(store, world.agent, message_id, blocks)
    assert updated.revision == 2
    assert updated.ask_ids[:2] == ids
    new_ids = updated.ask_ids[2:]
    assert len(new_ids) == 2
    assert all(ask_id.startswith("ask_") for ask_id in new_ids)
    assert len(set(updated.ask_ids)) == 4
    assert [block.WhichOneof("block") for block in updated.blocks] == [
        "text", "ask", "ask", "ask", "text", "ask",
    ]  # fmt: skip
    assert await asks_in_table(database_url, message_id) == set(updated.ask_ids)
    (listed,) = (await store.list_messages(world.human, world.channel.channel_id)).messages
    assert listed == updated
    # The new asks are asks like any other: found by id, answerable, and their answer shows.
    found = await store.get_ask(world.human, new_ids[1])
    assert (found.message_id, [q.question_id for q in found.ask.questions]) == (
        message_id,
        ["tier", "why"],
    )
    answered = await answer_ask(store, world.human, new_ids[0], [answer("region", "1")])
    assert list(answered.ask.questions[0].chosen_option_ids) == ["1"]
    (listed,) = (await store.list_messages(world.human, world.channel.channel_id)).messages
    assert listed.blocks[3].ask == answered.ask
    assert listed.ask_ids == updated.ask_ids
    # A later update must carry every minted id, the new ones included.
    again = with_ask_ids(blocks, updated.ask_ids)
    again[4] = text("edited")
    final = await update_message(store, world.agent, message_id, again)
    assert final.ask_ids == updated.ask_ids
    assert final.blocks[3].ask == answered.ask


async def test_the_runtime_order_text_first_then_one_ask_at_a_time(
    store: PostgresStore, world: World
) -> None:
    # The runtime settles the message's text before its first ask starts, and runs a second
    # ask only after the first was answered: so the message is posted without asks, and each
    # ask arrives in an update of its own.
    posted = await world.post(store, text("Let me ask:"), client_message_id="turn-1")
    assert posted.ask_ids == ()
    first_ask = ask(question("db", "0", "1"))
    first = await update_message(
        store, world.agent, posted.message_id, [text("Let me ask:"), first_ask]
    )
    (db_id,) = first.ask_ids
    assert first.revision == 2
    await answer_ask(store, world.human, db_id, [answer("db", "0")])

    second = await update_message(
        store,
        world.agent,
        posted.message_id,
        [*with_ask_ids([text("Let me ask:"), first_ask], (db_id,)), ask(question("auth", "0"))],
    )
    assert second.ask_ids[0] == db_id
    auth_id = second.ask_ids[1]
    assert auth_id != db_id
    assert second.blocks[1].ask.answered_by_account_id == world.human.account_id
    assert not second.blocks[2].ask.answered_by_account_id
    await answer_ask(store, world.human, auth_id, [answer("auth", custom_text="sso")])
    assert (await store.get_ask(world.human, db_id)).answered
    assert (await store.get_ask(world.human, auth_id)).answered


async def test_a_retried_update_that_added_asks_returns_the_stored_message(
    store: PostgresStore, world: World, database_url: str
) -> None:
    # The response of an update that added asks is lost and the caller sends the very same
    # frame again: the positions it added are minted now, and each carries the same ask as
    # the retry (empty ask_id, same content), so the retry is that update, already stored.
    message_id, ids = await post_original(store, world)
    added = [ask(question("region", "0")), text("and"), ask(question("tier", "0", "1"))]
    frame = [*with_ask_ids([text("edited"), *ORIGINAL[1:]], ids), *added]
    updated = await update_message(store, world.agent, message_id, frame)
    assert updated.revision == 2
    events, heard = await listen(database_url)
    try:
        retried = await update_message(store, world.agent, message_id, frame)
        await nothing_notified(events, heard)
    finally:
        await events.close()
    assert retried == updated  # the same ids, the same revision: nothing was written
    assert (await store.get_channel(world.human, world.channel.channel_id)).revision == 2
    assert await asks_in_table(database_url, message_id) == set(updated.ask_ids)
    # Answered meanwhile, the retry still finds its asks (and the stored answer wins).
    answered = await answer_ask(store, world.human, updated.ask_ids[2], [answer("region", "0")])
    again = await update_message(store, world.agent, message_id, frame)
    assert again.ask_ids == updated.ask_ids
    assert again.blocks[3].ask == answered.ask
    (listed,) = (await store.list_messages(world.human, world.channel.channel_id)).messages
    assert again == listed  # as stored: the retry wrote nothing
    # The idempotent AppendMessage repeat still finds the message as stored.
    repeat = await world.post(
        store, text("edited"), *ORIGINAL[1:], *added, client_message_id="turn-1"
    )
    assert repeat.ask_ids == updated.ask_ids


async def test_a_newer_snapshot_may_repeat_an_added_ask_unminted(
    store: PostgresStore, world: World
) -> None:
    # A newer snapshot replaced a retried update whose response was lost: it still carries
    # the added ask unminted, and other changes with it. The ask is the stored one, the
    # rest is an update like any other.
    message_id, ids = await post_original(store, world)
    region = ask(question("region", "0"))
    updated = await update_message(
        store, world.agent, message_id, [*with_ask_ids(list(ORIGINAL), ids), region]
    )
    newer = [*with_ask_ids([text("Settled:"), *ORIGINAL[1:]], ids), region, ask(question("n"))]
    final = await update_message(store, world.agent, message_id, newer)
    assert final.revision == 3
    assert final.ask_ids[:3] == updated.ask_ids
    assert final.ask_ids[3] not in updated.ask_ids
    assert final.blocks[0].text.text == "Settled:"
    (listed,) = (await store.list_messages(world.human, world.channel.channel_id)).messages
    assert listed == final


async def test_an_unminted_ask_that_differs_from_the_stored_one_is_refused(
    store: PostgresStore, world: World, database_url: str
) -> None:
    message_id, ids = await post_original(store, world)
    region = ask(question("region", "0"))
    updated = await update_message(
        store, world.agent, message_id, [*with_ask_ids(list(ORIGINAL), ids), region]
    )
    for change in ("question", "option", "recommended", "more-questions"):
        differs = ask(question("region", "0"))
        q = differs.ask.questions[0]
        if change == "question":
            q.question = "Which region, really?"
        elif change == "option":
            q.options[0].label = "eu-west-1"
        elif change == "recommended":
            q.recommended = 0
        else:
            differs.ask.questions.append(question("zone", "0"))
        with pytest.raises(InvalidArgumentError) as caught:
            await update_message(
                store, world.agent, message_id, [*with_ask_ids(list(ORIGINAL), ids), differs]
            )
        (violation,) = caught.value.violations
        assert violation.field == "blocks[3].ask.ask_id", change
        assert violation.description == (
            "ask_id is empty: this ask block must carry the ask_id minted for it,"
            f' "{updated.ask_ids[2]}"'
        )
    (listed,) = (await store.list_messages(world.human, world.channel.channel_id)).messages
    assert listed == updated
    assert await asks_in_table(database_url, message_id) == set(updated.ask_ids)


async def test_an_update_that_adds_an_ask_is_never_a_no_op(
    store: PostgresStore, world: World
) -> None:
    message_id, ids = await post_original(store, world)
    # Even a new ask identical to an existing one is a new ask with its own id.
    blocks = [*with_ask_ids(list(ORIGINAL), ids), ask(question("db", "0", "1"))]
    updated = await update_message(store, world.agent, message_id, blocks)
    assert updated.revision == 2
    assert len(set(updated.ask_ids)) == 3


async def test_an_empty_ask_id_is_the_stored_ask_with_the_same_content(
    store: PostgresStore, world: World
) -> None:
    message_id, ids = await post_original(store, world)
    # Every ask as first appended (ids empty): each is the stored ask at its position.
    unchanged = await update_message(store, world.agent, message_id, list(ORIGINAL))
    assert unchanged.ask_ids == ids
    assert unchanged.revision == 1
    blocks = with_ask_ids(list(ORIGINAL), ids)
    blocks[2].ask.ask_id = ""
    blocks[0] = text("edited")
    edited = await update_message(store, world.agent, message_id, blocks)
    assert (edited.ask_ids, edited.revision) == (ids, 2)


async def test_update_rejects_an_empty_ask_id_for_a_minted_ask(
    store: PostgresStore, world: World
) -> None:
    message_id, ids = await post_original(store, world)
    blocks = with_ask_ids(list(ORIGINAL), ids)
    blocks[2].ask.ask_id = ""
    blocks[2].ask.questions[0].header = "not what was asked"
    with pytest.raises(InvalidArgumentError) as caught:
        await update_message(store, world.agent, message_id, blocks)
    (violation,) = caught.value.violations
    assert violation.field == "blocks[2].ask.ask_id"
    assert "must carry the ask_id minted for it" in violation.description
    assert ids[1] in violation.description


@pytest.mark.parametrize(
    ("change", "fields"),
    [
        pytest.param("drop", ["blocks"], id="drop"),
        pytest.param("drop-first", ["blocks[1].ask.ask_id", "blocks"], id="drop-first"),
        pytest.param("alter", ["blocks[1].ask.ask_id"], id="alter"),
        pytest.param("steal", ["blocks[1].ask.ask_id"], id="steal"),
        pytest.param("duplicate", ["blocks[2].ask.ask_id"], id="duplicate"),
        pytest.param("reorder", ["blocks[1].ask.ask_id", "blocks[2].ask.ask_id"], id="reorder"),
        pytest.param("new-with-made-up-id", ["blocks[3].ask.ask_id"], id="new-with-made-up-id"),
        pytest.param("new-with-a-minted-id", ["blocks[3].ask.ask_id"], id="new-with-a-minted-id"),
        pytest.param("new-stolen-id", ["blocks[3].ask.ask_id"], id="new-stolen-id"),
        pytest.param("new-before-minted", ["blocks[1].ask.ask_id", "blocks[2].ask.ask_id", "blocks[3].ask.ask_id"], id="new-before-minted"),
    ],
)  # fmt: skip
async def test_update_rejects_any_change_to_the_minted_ask_ids(
    store: PostgresStore, world: World, database_url: str, change: str, fields: list[str]
) -> None:
    message_id, ids = await post_original(store, world)
    other = await world.post(store, ask(question("x", "0")))
    blocks = with_ask_ids(list(ORIGINAL), ids)
    new = ask(question("new", "0"))
    if change == "drop":
        del blocks[2]
    elif change == "drop-first":
        del blocks[1]
    elif change == "alter":
        blocks[1].ask.ask_id += "x"
    elif change == "steal":
        blocks[1].ask.ask_id = other.ask_ids[0]
    elif change == "duplicate":
        blocks[2].ask.ask_id = ids[0]
    elif change == "reorder":
        blocks[1], blocks[2] = blocks[2], blocks[1]
    elif change == "new-with-made-up-id":
        new.ask.ask_id = "ask_madeup"
        blocks.append(new)
    elif change == "new-with-a-minted-id":
        new.ask.ask_id = ids[0]
        blocks.append(new)
    elif change == "new-stolen-id":
        new.ask.ask_id = other.ask_ids[0]
        blocks.append(new)
    else:  # a new ask placed before the minted ones shifts them: position decides
        blocks.insert(1, new)
    with pytest.raises(InvalidArgumentError) as caught:
        await update_message(store, world.agent, message_id, blocks)
    assert [v.field for v in caught.value.violations] == fields
    # Nothing changed, nothing was minted.
    stored = await store.list_messages(world.human, world.channel.channel_id)
    assert stored.messages[0].ask_ids == ids
    assert stored.messages[0].revision == 1
    assert await asks_in_table(database_url, message_id) == set(ids)


async def test_the_violations_say_what_went_wrong(store: PostgresStore, world: World) -> None:
    message_id, ids = await post_original(store, world)
    blocks = with_ask_ids([text("Let me ask:"), ORIGINAL[2], ORIGINAL[1]], (ids[1], ids[0]))
    blocks.append(ask(question("new", "0"), ask_id="ask_madeup"))
    with pytest.raises(InvalidArgumentError) as caught:
        await update_message(store, world.agent, message_id, blocks)
    descriptions = [v.description for v in caught.value.violations]
    assert len(descriptions) == 3
    assert "cannot be reordered" in descriptions[0]
    assert ids[0] in descriptions[0]
    assert "the agent never mints ask ids" in descriptions[2]

    with pytest.raises(InvalidArgumentError) as dropped:
        await update_message(store, world.agent, message_id, with_ask_ids([ORIGINAL[1]], ids))
    (missing,) = dropped.value.violations
    assert (missing.field, ids[1] in missing.description) == ("blocks", True)


def _with_answer_state(block: comms_pb2.MessageBlock, field: str) -> comms_pb2.MessageBlock:
    q = block.ask.questions[0]
    if field == "chosen_option_ids":
        q.chosen_option_ids.append("0")
    elif field == "custom_text":
        q.custom_text = "typed"
    elif field == "timed_out":
        q.timed_out = True
    elif field == "answered_by_account_id":
        block.ask.answered_by_account_id = "acct_forged"
    elif field == "answered_at":
        block.ask.answered_at.GetCurrentTime()
    else:
        block.ask.answered_by_name = "Forger"
    return block


@pytest.mark.parametrize(
    ("field", "path"),
    [
        ("chosen_option_ids", "blocks[3].ask.questions[0].chosen_option_ids"),
        ("custom_text", "blocks[3].ask.questions[0].custom_text"),
        ("timed_out", "blocks[3].ask.questions[0].timed_out"),
        ("answered_by_account_id", "blocks[3].ask.answered_by_account_id"),
        ("answered_at", "blocks[3].ask.answered_at"),
        ("answered_by_name", "blocks[3].ask.answered_by_name"),
    ],
)
async def test_a_new_ask_must_arrive_unanswered(
    store: PostgresStore, world: World, database_url: str, field: str, path: str
) -> None:
    message_id, ids = await post_original(store, world)
    blocks = [
        *with_ask_ids(list(ORIGINAL), ids),
        _with_answer_state(ask(question("new", "0")), field),
    ]
    with pytest.raises(InvalidArgumentError) as caught:
        await update_message(store, world.agent, message_id, blocks)
    assert [v.field for v in caught.value.violations] == [path]
    assert await asks_in_table(database_url, message_id) == set(ids)


@pytest.mark.parametrize("same", [False, True], ids=["different-asks", "the-same-ask"])
async def test_concurrent_updates_adding_an_ask_cannot_both_mint(
    store: PostgresStore, world: World, database_url: str, same: bool
) -> None:
    message_id, ids = await post_original(store, world)
    base = with_ask_ids(list(ORIGINAL), ids)
    # Two different "next" asks, or the same one twice (a retry racing its lost original).
    frames = [[*base, ask(question("new" if same else f"new{n}", "0"))] for n in range(2)]
    # Hold the channel's lock so that both updates have read the message (with two asks)
    # before either may write: the loser must re-read under the lock and see the winner's ask.
    holder = await asyncpg.connect(database_url)
    monitor = await asyncpg.connect(database_url)  # outside the holder's transaction, whose
    # view of pg_stat_activity is a snapshot taken at its first look
    try:
        transaction = holder.transaction()
        await transaction.start()
        await holder.execute(
            "SELECT 1 FROM channels WHERE channel_id = $1 FOR NO KEY UPDATE",
            world.channel.channel_id,
        )
        tasks = [
            asyncio.create_task(update_message(store, world.agent, message_id, frame))
            for frame in frames
        ]
        waiting = 0
        for _ in range(500):
            waiting = await monitor.fetchval(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            if waiting == 2:
                break
            await asyncio.sleep(0.01)
        assert waiting == 2, "both updates should be waiting for the channel lock"
        await transaction.commit()
        results = await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        await holder.close()
        await monitor.close()
    won = [result for result in results if not isinstance(result, BaseException)]
    lost = [result for result in results if isinstance(result, BaseException)]
    if same:
        # The later one finds its ask stored by the first: it is that ask, nothing to write.
        first, second = won
        assert first == second
        assert first.revision == 2
        assert await asks_in_table(database_url, message_id) == set(first.ask_ids)
        assert len(first.ask_ids) == 3
        (listed,) = (await store.list_messages(world.human, world.channel.channel_id)).messages
        assert listed == first
        return
    assert len(won) == 1
    assert len(lost) == 1
    assert isinstance(lost[0], InvalidArgumentError)
    (violation,) = lost[0].violations
    minted = won[0].ask_ids[2]
    assert violation.field == "blocks[3].ask.ask_id"
    assert minted in violation.description  # "must carry the ask_id minted for it, <id>"
    assert await asks_in_table(database_url, message_id) == {*ids, minted}
    (listed,) = (await store.list_messages(world.human, world.channel.channel_id)).messages
    assert listed == won[0]
    assert listed.revision == 2


def forge(block: comms_pb2.MessageBlock, *, chosen: list[str], custom_text: str) -> None:
    for q in block.ask.questions:
        q.chosen_option_ids[:] = chosen
        q.custom_text = custom_text
        q.timed_out = True
    block.ask.answered_by_account_id = "acct_forger"
    block.ask.answered_by_name = "Forger"
    block.ask.answered_at.GetCurrentTime()


async def test_a_forged_answer_on_a_pending_ask_is_ignored(
    store: PostgresStore, world: World
) -> None:
    message_id, ids = await post_original(store, world)
    blocks = with_ask_ids(list(ORIGINAL), ids)
    forge(blocks[1], chosen=["1"], custom_text="forged")
    updated = await update_message(store, world.agent, message_id, blocks)
    pending = updated.blocks[1].ask
    assert not pending.answered_by_account_id
    assert not pending.HasField("answered_at")
    assert list(pending.questions[0].chosen_option_ids) == []
    assert pending.questions[0].custom_text == ""
    assert not (await store.get_ask(world.human, ids[0])).answered
    # The real answer still goes through.
    answered = await answer_ask(store, world.human, ids[0], [answer("db", "0")])
    assert list(answered.ask.questions[0].chosen_option_ids) == ["0"]


@pytest.mark.parametrize("forged", ["different", "erased"])
async def test_a_forged_answer_cannot_overwrite_or_erase_a_stored_one(
    store: PostgresStore, world: World, forged: str
) -> None:
    message_id, ids = await post_original(store, world)
    real = await answer_ask(store, world.human, ids[0], [answer("db", custom_text="neither")])
    blocks = with_ask_ids([text("edited"), *ORIGINAL[1:]], ids)
    if forged == "different":
        forge(blocks[1], chosen=["1"], custom_text="")
    # "erased": the bridge sends the ask without answer state, as its mapper always does.
    updated = await update_message(store, world.agent, message_id, blocks)
    assert updated.blocks[0].text.text == "edited"
    assert updated.blocks[1].ask == real.ask
    assert (await store.get_ask(world.human, ids[0])).ask == real.ask
    (listed,) = (await store.list_messages(world.human, world.channel.channel_id)).messages
    assert listed.blocks[1].ask == real.ask


async def test_adding_an_ask_keeps_the_stored_answers(store: PostgresStore, world: World) -> None:
    message_id, ids = await post_original(store, world)
    real = await answer_ask(store, world.human, ids[0], [answer("db", "0")])
    blocks = with_ask_ids(list(ORIGINAL), ids)
    forge(blocks[1], chosen=["1"], custom_text="")  # forged over the stored answer
    forge(blocks[2], chosen=["0"], custom_text="")  # forged on a pending minted ask: ignored
    blocks.append(ask(question("new", "0")))
    updated = await update_message(store, world.agent, message_id, blocks)
    assert updated.blocks[1].ask == real.ask
    assert not updated.blocks[2].ask.answered_by_account_id
    assert list(updated.blocks[2].ask.questions[0].chosen_option_ids) == []
    assert (await store.get_ask(world.human, ids[0])).ask == real.ask
    assert not (await store.get_ask(world.human, ids[1])).answered
    assert not (await store.get_ask(world.human, updated.ask_ids[2])).answered


async def test_an_answered_ask_keeps_its_shape_and_its_texts(
    store: PostgresStore, world: World
) -> None:
    # Issue 12 made answered and closed asks immutable: what a person answered stays what
    # was asked (a reworded label would change the meaning of the stored answer).
    message_id, ids = await post_original(store, world)
    real = await answer_ask(store, world.human, ids[0], [answer("db", "1")])
    reworded = with_ask_ids(list(ORIGINAL), ids)
    reworded[1].ask.questions[0].question = "Which database, really?"
    reworded[1].ask.questions[0].options[1].label = "MySQL"
    with pytest.raises(FailedPreconditionError):
        await update_message(store, world.agent, message_id, reworded)
    assert (await store.get_ask(world.human, ids[0])).ask == real.ask

    for reshape in ("question_id", "option", "multi"):
        blocks = with_ask_ids(list(ORIGINAL), ids)
        q = blocks[1].ask.questions[0]
        if reshape == "question_id":
            q.question_id = "database"
        elif reshape == "option":
            del q.options[1]
        else:
            q.allow_multiple = True
        with pytest.raises(InvalidArgumentError) as caught:
            await update_message(store, world.agent, message_id, blocks)
        assert [v.field for v in caught.value.violations] == ["blocks[1].ask.questions"]


async def test_a_pending_ask_may_change_its_questions(store: PostgresStore, world: World) -> None:
    message_id, ids = await post_original(store, world)
    blocks = with_ask_ids(list(ORIGINAL), ids)
    blocks[1].ask.questions[0].question_id = "database"
    await update_message(store, world.agent, message_id, blocks)
    row = await store.get_ask(world.human, ids[0])
    assert [q.question_id for q in row.ask.questions] == ["database"]
    await answer_ask(store, world.human, ids[0], [answer("database", "0")])


async def test_only_the_author_may_update(store: PostgresStore, world: World) -> None:
    message_id, ids = await post_original(store, world)
    blocks = with_ask_ids(list(ORIGINAL), ids)
    with pytest.raises(PermissionDeniedError):
        await update_message(store, world.human, message_id, blocks)
    with pytest.raises(NotFoundError, match=r"^message not found$") as invisible:
        await update_message(store, world.outsider, message_id, blocks)
    with pytest.raises(NotFoundError) as unknown:
        await update_message(store, world.agent, "msg_nope", blocks)
    assert invisible.value.message == unknown.value.message


async def test_minting_a_new_ask_retries_on_collision(database_url: str) -> None:
    # The id factory first repeats an id that already exists: the store must mint again, and
    # the stored blocks must carry the id that was really inserted.
    script: list[str] = []

    def factory(prefix: str) -> str:
        if prefix == "ask" and script:
            return script.pop(0)
        return new_id(prefix)

    async with PostgresStore(database_url, id_factory=factory) as store:
        world = await seed(store)
        message_id, ids = await post_original(store, world)
        script[:] = [ids[0], ids[1]]
        updated = await update_message(
            store, world.agent, message_id, [*with_ask_ids(list(ORIGINAL), ids), ask(question("n"))]
        )
        (listed,) = (await store.list_messages(world.human, world.channel.channel_id)).messages
    assert script == []  # both colliding ids were really tried
    fresh = updated.ask_ids[2]
    assert fresh not in ids
    assert listed == updated
    assert await asks_in_table(database_url, message_id) == {*ids, fresh}


async def test_an_answered_or_closed_ask_can_no_longer_be_rewritten(
    store: PostgresStore, world: World
) -> None:
    """Issue 12: after a person answered, the agent could still change what was asked."""
    message_id, ids = await post_original(store, world)
    await answer_ask(store, world.human, ids[0], [answer("db", "1")])
    await decline_ask(store, world.human, ids[1], "not now")
    before = await store.list_messages(world.human, world.channel.channel_id)
    for index in (0, 1):
        changed = with_ask_ids(list(ORIGINAL), ids)
        changed[1 + index].ask.questions[0].options[0].description = "now it means something else"
        with pytest.raises(FailedPreconditionError) as caught:
            await update_message(store, world.agent, message_id, changed)
        status = "answered" if index == 0 else "declined"
        assert caught.value.message == (
            f"ask {ids[index]} is {status}: its questions and options can no longer change"
        )
    # Nothing was stored; the same questions (and new text around them) still go through,
    # whatever answer state the frame carries (the stored answer wins).
    assert await store.list_messages(world.human, world.channel.channel_id) == before
    frame = with_ask_ids([text("Thanks!"), *ORIGINAL[1:]], ids)
    frame[1].ask.questions[0].custom_text = "forged"
    updated = await update_message(store, world.agent, message_id, frame)
    assert updated.blocks[0].text.text == "Thanks!"
    assert updated.blocks[1].ask.questions[0].chosen_option_ids == ["1"]
    assert updated.blocks[1].ask.questions[0].custom_text == ""
