"""Bounded reads (issue 12 F1): a ListMessages page and a replay batch stop at a byte budget
as well as at their count (always at least one message), and paging or replaying through
them still yields every message exactly once, in order."""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING

from hypothesis import HealthCheck, given, settings, strategies as st

from compass_server.store.postgres import PostgresStore
from tests.integration.store._seed import seed, text

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
