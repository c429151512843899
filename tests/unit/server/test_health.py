"""health.py: /healthz, and /readyz from its health sources (the database, the change feed on
the memory store, a periodic job's loop). tests/e2e/test_metrics.py and test_fault.py take a
real server's listener and database down."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import TYPE_CHECKING

import pytest

from compass_server.background.periodic import Health, every
from compass_server.domain.errors import UnavailableError
from compass_server.health import (
    DatabaseHealth,
    JobHealth,
    ListenerHealth,
    Readiness,
    State,
    healthz,
)
from compass_server.live.feed import ChangeFeed
from compass_server.live.hub import ChangeHub
from tests.memory_store import MemoryStore

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from starlette.requests import Request

NO_REQUEST: Request = None  # pyright: ignore[reportAssignmentType] - the endpoints never read it


class Fixed:
    def __init__(self, key: str, state: State) -> None:
        self.key = key
        self._state: State = state
        self.asked = 0

    async def state(self) -> State:
        self.asked += 1
        return self._state


async def test_healthz_says_the_process_answers() -> None:
    response = await healthz(NO_REQUEST)
    assert (response.status_code, response.body) == (200, b'{"status":"ok"}')


async def test_readyz_is_200_with_every_source_ok_in_order() -> None:
    readiness = Readiness(
        [Fixed("database", "ok"), Fixed("listener", "ok"), Fixed("webhooks", "ok")]
    )
    response = await readiness.readyz(NO_REQUEST)
    assert response.status_code == 200
    assert response.body == b'{"status":"ok","database":"ok","listener":"ok","webhooks":"ok"}'


@pytest.mark.parametrize(
    ("states", "code"),
    [
        (("ok", "ok", "off"), 200),  # no worker here: not a reason to be unready
        (("down", "ok", "ok"), 503),
        (("ok", "down", "off"), 503),
        (("ok", "ok", "down"), 503),
    ],
)
async def test_readyz_is_503_when_any_source_is_down(
    states: tuple[State, State, State], code: int
) -> None:
    sources = [
        Fixed(k, s) for k, s in zip(("database", "listener", "webhooks"), states, strict=True)
    ]
    response = await Readiness(sources).readyz(NO_REQUEST)
    assert response.status_code == code
    assert json.loads(bytes(response.body)) == {
        "status": "ok" if code == 200 else "unavailable",
        "database": states[0],
        "listener": states[1],
        "webhooks": states[2],
    }
    assert [s.asked for s in sources] == [1, 1, 1]  # each asked, even after one is down


async def test_the_database_is_down_when_the_ping_says_unavailable() -> None:
    async def fine() -> None:
        return None

    async def away() -> None:
        raise UnavailableError("database unavailable")

    assert await DatabaseHealth(fine).state() == "ok"
    assert await DatabaseHealth(away).state() == "down"


async def test_a_bug_in_the_ping_is_not_called_down() -> None:
    async def broken() -> None:
        raise RuntimeError("bug")

    with pytest.raises(RuntimeError):  # a 500, as before: not hidden as "down"
        await DatabaseHealth(broken).state()


@contextlib.asynccontextmanager
async def feeding(feed: ChangeFeed) -> AsyncGenerator[asyncio.Task[None]]:
    task = asyncio.create_task(feed.run())
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_the_listener_gets_a_moment_at_start_then_none_once_it_stood() -> None:
    feed = ChangeFeed(MemoryStore(), ChangeHub())
    source = ListenerHealth(feed, grace=0.2)
    started = time.monotonic()
    assert await source.state() == "down"  # never subscribed: waited its grace, in vain
    assert time.monotonic() - started >= 0.2  # time is under test: the grace
    subscribed: list[None] = []
    feed = ChangeFeed(MemoryStore(), ChangeHub(), on_subscribed=lambda: subscribed.append(None))
    source = ListenerHealth(feed, grace=30)
    async with feeding(feed):
        assert await source.state() == "ok"  # the grace ends as soon as it stands
        assert subscribed == [None]
    assert not feed.up.is_set()  # lost when the feed ended
    started = time.monotonic()
    assert await source.state() == "down"
    assert time.monotonic() - started < 5  # it stood once: no grace any more


async def test_the_feed_wakes_the_hub_to_resync_each_time_it_subscribes() -> None:
    hub = ChangeHub()
    woken: list[None] = []
    feed = ChangeFeed(MemoryStore(), hub)
    hub.resync = lambda: woken.append(None)  # pyright: ignore[reportAttributeAccessIssue] - a spy
    async with feeding(feed):
        await asyncio.wait_for(feed.up.wait(), 5)
    assert woken == [None]


async def test_a_job_is_off_without_one_and_waits_a_moment_for_its_first_round() -> None:
    assert await JobHealth("webhooks", None).state() == "off"
    health = Health()
    source = JobHealth("webhooks", health, grace=30)
    first = asyncio.Event()

    async def job() -> None:
        await first.wait()

    loop = asyncio.create_task(every(3600, job, name="job", logger=_logger(), health=health))
    try:
        asked = asyncio.create_task(source.state())
        await asyncio.sleep(0)
        assert not asked.done()  # waiting for the first round
        first.set()
        assert await asyncio.wait_for(asked, 5) == "ok"
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
    started = time.monotonic()
    assert await source.state() == "down"  # stopped: down, and at once
    assert time.monotonic() - started < 5


async def test_a_job_that_never_ends_its_first_round_is_down_after_the_grace() -> None:
    health = Health()
    never = asyncio.Event()

    async def job() -> None:
        await never.wait()

    loop = asyncio.create_task(every(3600, job, name="job", logger=_logger(), health=health))
    try:
        assert await JobHealth("webhooks", health, grace=0.05).state() == "down"
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop


def _logger() -> logging.Logger:
    return logging.getLogger("tests.health")
