"""update_message: minted ask ids required and immutable; stored answers always win."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from compass_server.errors import InvalidArgumentError, NotFoundError, PermissionDeniedError
from tests.integration.store._seed import World, answer, ask, question, text, with_ask_ids

if TYPE_CHECKING:
    from compass_server.store.postgres import PostgresStore
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
    updated = await store.update_message(world.agent, message_id, blocks)
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
    unchanged = await store.update_message(
        world.agent, message_id, with_ask_ids(list(ORIGINAL), ids)
    )
    assert unchanged.revision == 1
    assert (await store.get_channel(world.human, world.channel.channel_id)).revision == 1


async def test_update_may_reorder_asks(store: PostgresStore, world: World) -> None:
    message_id, ids = await post_original(store, world)
    blocks = with_ask_ids([ORIGINAL[2], ORIGINAL[1]], (ids[1], ids[0]))
    updated = await store.update_message(world.agent, message_id, blocks)
    assert updated.ask_ids == (ids[1], ids[0])


async def test_update_rejects_an_empty_ask_id(store: PostgresStore, world: World) -> None:
    message_id, ids = await post_original(store, world)
    blocks = with_ask_ids(list(ORIGINAL), ids)
    blocks[2].ask.ask_id = ""
    with pytest.raises(InvalidArgumentError) as caught:
        await store.update_message(world.agent, message_id, blocks)
    assert [v.field for v in caught.value.violations] == ["blocks[2].ask.ask_id"]


@pytest.mark.parametrize("change", ["drop", "add", "alter", "steal", "duplicate"])
async def test_update_rejects_any_change_to_the_set_of_ask_ids(
    store: PostgresStore, world: World, change: str
) -> None:
    message_id, ids = await post_original(store, world)
    other = await world.post(store, ask(question("x", "0")))
    blocks = with_ask_ids(list(ORIGINAL), ids)
    if change == "drop":
        del blocks[2]
    elif change == "add":
        blocks.append(ask(question("new", "0"), ask_id="ask_madeup"))
    elif change == "alter":
        blocks[1].ask.ask_id += "x"
    elif change == "steal":
        blocks[1].ask.ask_id = other.ask_ids[0]
    else:
        blocks[2].ask.ask_id = ids[0]
    with pytest.raises(InvalidArgumentError) as caught:
        await store.update_message(world.agent, message_id, blocks)
    assert caught.value.violations
    # Nothing changed.
    stored = await store.list_messages(world.human, world.channel.channel_id)
    assert stored.messages[0].ask_ids == ids
    assert stored.messages[0].revision == 1


async def test_update_runs_the_block_invariants(store: PostgresStore, world: World) -> None:
    message_id, ids = await post_original(store, world)
    blocks = with_ask_ids(list(ORIGINAL), ids)
    blocks[1].ask.questions.append(question("db", "9"))
    with pytest.raises(InvalidArgumentError) as caught:
        await store.update_message(world.agent, message_id, blocks)
    assert [v.field for v in caught.value.violations] == ["blocks[1].ask.questions[1].question_id"]


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
    updated = await store.update_message(world.agent, message_id, blocks)
    pending = updated.blocks[1].ask
    assert not pending.answered_by_account_id
    assert not pending.HasField("answered_at")
    assert list(pending.questions[0].chosen_option_ids) == []
    assert pending.questions[0].custom_text == ""
    assert not (await store.get_ask(world.human, ids[0])).answered
    # The real answer still goes through.
    answered = await store.answer_ask(world.human, ids[0], [answer("db", "0")])
    assert list(answered.ask.questions[0].chosen_option_ids) == ["0"]


@pytest.mark.parametrize("forged", ["different", "erased"])
async def test_a_forged_answer_cannot_overwrite_or_erase_a_stored_one(
    store: PostgresStore, world: World, forged: str
) -> None:
    message_id, ids = await post_original(store, world)
    real = await store.answer_ask(world.human, ids[0], [answer("db", custom_text="neither")])
    blocks = with_ask_ids([text("edited"), *ORIGINAL[1:]], ids)
    if forged == "different":
        forge(blocks[1], chosen=["1"], custom_text="")
    # "erased": the bridge sends the ask without answer state, as its mapper always does.
    updated = await store.update_message(world.agent, message_id, blocks)
    assert updated.blocks[0].text.text == "edited"
    assert updated.blocks[1].ask == real.ask
    assert (await store.get_ask(world.human, ids[0])).ask == real.ask
    (listed,) = (await store.list_messages(world.human, world.channel.channel_id)).messages
    assert listed.blocks[1].ask == real.ask


async def test_an_answered_ask_keeps_its_shape_but_may_change_texts(
    store: PostgresStore, world: World
) -> None:
    message_id, ids = await post_original(store, world)
    real = await store.answer_ask(world.human, ids[0], [answer("db", "1")])
    reworded = with_ask_ids(list(ORIGINAL), ids)
    reworded[1].ask.questions[0].question = "Which database, really?"
    reworded[1].ask.questions[0].options[1].label = "MySQL"
    updated = await store.update_message(world.agent, message_id, reworded)
    assert updated.blocks[1].ask.questions[0].question == "Which database, really?"
    assert list(updated.blocks[1].ask.questions[0].chosen_option_ids) == ["1"]
    assert updated.blocks[1].ask.answered_at == real.ask.answered_at

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
            await store.update_message(world.agent, message_id, blocks)
        assert [v.field for v in caught.value.violations] == ["blocks[1].ask.questions"]


async def test_a_pending_ask_may_change_its_questions(store: PostgresStore, world: World) -> None:
    message_id, ids = await post_original(store, world)
    blocks = with_ask_ids(list(ORIGINAL), ids)
    blocks[1].ask.questions[0].question_id = "database"
    await store.update_message(world.agent, message_id, blocks)
    row = await store.get_ask(world.human, ids[0])
    assert [q.question_id for q in row.ask.questions] == ["database"]
    await store.answer_ask(world.human, ids[0], [answer("database", "0")])


async def test_only_the_author_may_update(store: PostgresStore, world: World) -> None:
    message_id, ids = await post_original(store, world)
    blocks = with_ask_ids(list(ORIGINAL), ids)
    with pytest.raises(PermissionDeniedError):
        await store.update_message(world.human, message_id, blocks)
    with pytest.raises(NotFoundError, match=r"^message not found$") as invisible:
        await store.update_message(world.outsider, message_id, blocks)
    with pytest.raises(NotFoundError) as unknown:
        await store.update_message(world.agent, "msg_nope", blocks)
    assert invisible.value.message == unknown.value.message
