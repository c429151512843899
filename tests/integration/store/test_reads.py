"""list_messages pagination and messages_after replay."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

import pytest

from compass_server.domain.errors import InvalidArgumentError
from compass_server.store import MAX_PAGE_SIZE
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
    from compass_server.store.postgres import PostgresStore


async def post_many(store: PostgresStore, world: World, count: int) -> list[str]:
    return [(await world.post(store, text(f"m{i}"))).message_id for i in range(count)]


async def test_pages_walk_the_channel_oldest_first(store: PostgresStore, world: World) -> None:
    ids = await post_many(store, world, 7)
    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        page = await store.list_messages(
            world.human, world.channel.channel_id, page_size=3, page_token=token
        )
        seen.extend(m.message_id for m in page.messages)
        pages += 1
        token = page.next_page_token
        if not token:
            break
    assert seen == ids
    assert pages == 3


async def test_an_exact_last_page_has_no_next_token(store: PostgresStore, world: World) -> None:
    await post_many(store, world, 4)
    first = await store.list_messages(world.human, world.channel.channel_id, page_size=2)
    second = await store.list_messages(
        world.human, world.channel.channel_id, page_size=2, page_token=first.next_page_token
    )
    assert len(second.messages) == 2
    assert second.next_page_token == ""


async def test_pages_keep_creation_order_when_messages_are_updated(
    store: PostgresStore, world: World
) -> None:
    first = await world.post(store, ask(question("db", "0")))
    await post_many(store, world, 2)
    await update_message(
        store,
        world.agent,
        first.message_id,
        with_ask_ids([text("x"), *first.blocks], first.ask_ids),
    )
    page = await store.list_messages(world.human, world.channel.channel_id)
    assert page.messages[0].message_id == first.message_id
    assert [m.revision for m in page.messages] == [4, 2, 3]


async def test_default_and_capped_page_sizes(store: PostgresStore, world: World) -> None:
    await post_many(store, world, 3)
    page = await store.list_messages(world.member, world.channel.channel_id, page_size=0)
    assert len(page.messages) == 3
    big = await store.list_messages(
        world.member, world.channel.channel_id, page_size=MAX_PAGE_SIZE * 10
    )
    assert len(big.messages) == 3


@pytest.mark.parametrize(
    "token",
    [
        "garbage!!",
        base64.urlsafe_b64encode(b"p1:abc:ch_x").decode(),
        base64.urlsafe_b64encode(b"p1:-3:CHANNEL").decode(),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        "other-channel",
    ],
)
async def test_bad_page_tokens_are_invalid_argument(
    store: PostgresStore, world: World, token: str
) -> None:
    await post_many(store, world, 3)
    if token == "other-channel":
        for _ in range(3):
            await store.append_message(world.outsider, world.other_channel.channel_id, [text("x")])
        other = await store.list_messages(
            world.outsider, world.other_channel.channel_id, page_size=1
        )
        token = other.next_page_token
    token = token.replace(
        base64.urlsafe_b64encode(b"p1:-3:CHANNEL").decode(),
        base64.urlsafe_b64encode(f"p1:-3:{world.channel.channel_id}".encode()).decode(),
    )
    with pytest.raises(InvalidArgumentError) as caught:
        await store.list_messages(
            world.human, world.channel.channel_id, page_size=1, page_token=token
        )
    assert [v.field for v in caught.value.violations] == ["page_token"]


async def test_a_negative_page_size_is_a_callers_bug(store: PostgresStore, world: World) -> None:
    # The service refuses it first (tests/unit/server/service); the store does not guess.
    with pytest.raises(ValueError, match="negative"):
        await store.list_messages(world.human, world.channel.channel_id, page_size=-1)


async def test_messages_after_replays_changes_in_revision_order(
    store: PostgresStore, world: World
) -> None:
    a = await world.post(store, ask(question("db", "0", "1")))  # rev 1
    b = await world.post(store, text("b"))  # rev 2
    c = await world.post(store, text("c"))  # rev 3
    await answer_ask(store, world.human, a.ask_ids[0], [answer("db", "1")])  # rev 4: a changes
    channel_id = world.channel.channel_id
    replay = await store.messages_after(world.member, channel_id, 0)
    assert [(m.message_id, m.revision) for m in replay] == [
        (b.message_id, 2),
        (c.message_id, 3),
        (a.message_id, 4),
    ]
    assert replay[2].blocks[0].ask.answered_by_account_id == world.human.account_id
    assert [m.message_id for m in await store.messages_after(world.member, channel_id, 2)] == [
        c.message_id,
        a.message_id,
    ]
    assert await store.messages_after(world.member, channel_id, 4) == []
    limited = await store.messages_after(world.member, channel_id, 0, limit=2)
    assert [m.revision for m in limited] == [2, 3]


@pytest.mark.parametrize(("after", "limit"), [(-1, 10), (0, 0), (0, 1001)])
async def test_messages_after_refuses_arguments_out_of_range(
    store: PostgresStore, world: World, after: int, limit: int
) -> None:
    # A caller's bug (the service checks after_revision; the limit is its own constant).
    with pytest.raises(ValueError, match="out of range"):
        await store.messages_after(world.human, world.channel.channel_id, after, limit=limit)


@pytest.mark.parametrize("revision", [2**63 - 1, 2**63, 2**64, 10**40, -(2**63)])
async def test_a_page_token_revision_outside_bigint_is_invalid_or_an_empty_page(
    store: PostgresStore, world: World, revision: int
) -> None:
    """Issue 12 F5: a revision >= 2^63 reached the database and came back INTERNAL."""
    await post_many(store, world, 2)
    raw = f"p1:{revision}:{world.channel.channel_id}".encode()
    token = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    if 0 <= revision < 2**63:
        page = await store.list_messages(world.human, world.channel.channel_id, page_token=token)
        assert page.messages == ()
        return
    with pytest.raises(InvalidArgumentError) as caught:
        await store.list_messages(world.human, world.channel.channel_id, page_token=token)
    assert [v.field for v in caught.value.violations] == ["page_token"]
