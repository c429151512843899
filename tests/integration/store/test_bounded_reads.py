"""Bounded reads (issue 12 F1): a ListMessages page and a replay batch stop at a byte budget
as well as at their count (always at least one message), and paging or replaying through
them still yields every message exactly once, in order."""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING

from hypothesis import HealthCheck, given, settings, strategies as st

from compass_server.store.postgres import PostgresStore
from gen.compass.v1 import comms_pb2
from tests.integration.store._seed import (
    answer,
    answer_ask,
    ask,
    question,
    report_delivery,
    seed,
    text,
)

if TYPE_CHECKING:
    from compass_server.store import MessageRow

BUDGET = 20_000


def _bytes(row: MessageRow) -> int:
    return sum(len(block.text.text) for block in row.blocks)


async def _check(database_url: str, sizes: list[int]) -> None:
    async with PostgresStore(
        database_url, pool_min=1, pool_max=2, page_bytes=BUDGET, replay_bytes=BUDGET
    ) as store:
        world = await seed(store, prefix=f"{uuid.uuid4().hex[:8]}-")
        posted = [
            (await world.post(store, text(str(i % 10) * size))).message_id
            for i, size in enumerate(sizes)
        ]
        paged: list[str] = []
        token = ""
        while True:
            page = await store.list_messages(
                world.human, world.channel.channel_id, page_size=500, page_token=token
            )
            assert page.messages or not posted
            if len(page.messages) > 1:
                assert sum(_bytes(m) for m in page.messages) <= BUDGET
            paged.extend(m.message_id for m in page.messages)
            token = page.next_page_token
            if not token:
                break
        assert paged == posted
        replayed: list[str] = []
        after = 0
        while True:
            batch = await store.messages_after(
                world.human, world.channel.channel_id, after, limit=1000
            )
            if len(batch) > 1:
                assert sum(_bytes(m) for m in batch) <= BUDGET
            replayed.extend(m.message_id for m in batch)
            if not batch.more:
                break
            after = batch[-1].revision
        assert replayed == posted


@settings(
    max_examples=12,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(sizes=st.lists(st.integers(min_value=1, max_value=3 * BUDGET // 2), max_size=12))
def test_pages_and_replays_fit_their_byte_budget_and_miss_nothing(
    database_url: str, sizes: list[int]
) -> None:
    asyncio.run(_check(database_url, sizes))


def _receipt_bytes(row: MessageRow) -> int:
    return sum(
        len(block.ask.delivery.detail) + len(block.ask.delivery.payload)
        for block in row.blocks
        if block.HasField("ask")
    )


async def test_delivery_receipts_count_towards_the_byte_budget(database_url: str) -> None:
    # A receipt's payload (up to 64 KiB per ask) is read with its message: a page or a batch
    # counts it, so small messages with large receipts are not read 500 at a time.
    async with PostgresStore(
        database_url, pool_min=1, pool_max=2, page_bytes=BUDGET, replay_bytes=BUDGET
    ) as store:
        world = await seed(store, prefix=f"{uuid.uuid4().hex[:8]}-")
        posted: list[str] = []
        for index in range(6):
            message = await world.post(store, ask(question("db", "0", "1")))
            (ask_id,) = message.ask_ids
            await answer_ask(store, world.human, ask_id, [answer("db", "0")])
            payload = "p" * (BUDGET * 3 // 4 if index % 2 else 10)
            await report_delivery(
                store, world.agent, ask_id, comms_pb2.DELIVERY_STATE_DELIVERED, "", payload
            )
            posted.append(message.message_id)
        paged: list[list[MessageRow]] = []
        token = ""
        while True:
            page = await store.list_messages(
                world.human, world.channel.channel_id, page_size=500, page_token=token
            )
            paged.append(list(page.messages))
            token = page.next_page_token
            if not token:
                break
        assert [m.message_id for page in paged for m in page] == posted
        batch = await store.messages_after(world.human, world.channel.channel_id, 0, limit=1000)
        for rows in [*paged, list(batch)]:
            if len(rows) > 1:
                assert sum(_receipt_bytes(m) for m in rows) <= BUDGET
        assert len(paged) > 1  # the receipts alone split the channel into pages
        assert batch.more
