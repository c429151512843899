"""background/outbox.py: a notifier's worker forgets what it keeps for ended asks (the push
answer tokens, the email reply tokens) at the start of a round, once every FORGET_EVERY."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from compass_server.background.outbox import FORGET_EVERY, Forget, OutboxWorker

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

START = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
KEEP = timedelta(days=7)


class Nothing:
    """An outbox with nothing due (the test is about what a round does before claiming)."""

    def __init__(self) -> None:
        self.claims = 0

    async def claim(
        self,
        now: datetime,
        lease: timedelta,
        limit: int,
        *,
        per_endpoint: int,
        busy: Mapping[str, int] | None = None,
    ) -> Sequence[str]:
        self.claims += 1
        return []


def worker_of(
    outbox: Nothing, clock: Callable[[], datetime], forget: Forget | None = None
) -> OutboxWorker[str]:
    return OutboxWorker(
        outbox,
        name="test",
        logger=logging.getLogger("tests.outbox"),
        poll_seconds=1.0,
        timeout_seconds=1.0,
        per_endpoint=1,
        clock=clock,
        forget=forget,
    )


async def test_a_round_forgets_what_ended_asks_left_once_every_hour() -> None:
    now = [START]
    purged: list[datetime] = []

    async def purge(before: datetime) -> None:
        purged.append(before)

    outbox = Nothing()
    worker = worker_of(outbox, lambda: now[0], Forget(purge, KEEP))

    await worker.tick()  # the first round forgets at once
    now[0] = START + FORGET_EVERY - timedelta(seconds=1)
    await worker.tick()  # not yet again
    now[0] = START + FORGET_EVERY
    await worker.tick()

    assert purged == [START - KEEP, START + FORGET_EVERY - KEEP]
    assert outbox.claims == 3  # every round still claims


async def test_a_worker_without_forget_only_claims() -> None:
    outbox = Nothing()
    worker = worker_of(outbox, lambda: START)
    assert await worker.tick() is False
    assert outbox.claims == 1
