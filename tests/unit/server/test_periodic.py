"""background/periodic.py: the one loop of the server's background jobs, its log policy and its
health flag, on a job the test drives round by round."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

import pytest

from compass_server.background import periodic
from compass_server.background.periodic import Health, every
from compass_server.domain.errors import UnavailableError
from tests._wait import eventually

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

LOGGER = "tests.periodic"


class Rounds:
    """A job whose rounds the test hands out one at a time: each does what it is given (raise
    an exception, or return a value)."""

    def __init__(self) -> None:
        self._next: asyncio.Queue[object] = asyncio.Queue()
        self.ran = 0

    async def job(self) -> object:
        outcome = await self._next.get()
        self.ran += 1
        self._next.task_done()
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    async def play(self, *outcomes: object) -> None:
        """Run one round per outcome; back once the loop is past the last one (logged it,
        ended the round: the loop runs on at once after a `task_done`-woken test)."""
        for outcome in outcomes:
            self._next.put_nowait(outcome)
            await self._next.join()
            await asyncio.sleep(0)  # the loop's own step after the round: logging, health


@contextlib.asynccontextmanager
async def looping(
    rounds: Rounds,
    *,
    interval: float = 0,
    health: Health | None = None,
    **kwargs: object,
) -> AsyncGenerator[asyncio.Task[None]]:
    task = asyncio.create_task(
        every(
            interval,
            rounds.job,
            name="job",
            logger=logging.getLogger(LOGGER),
            health=health,
            **kwargs,  # pyright: ignore[reportArgumentType] - wait / on_unexpected, as given
        )
    )
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _lines(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str, bool]]:
    return [
        (r.levelno, r.getMessage(), r.exc_info is not None)
        for r in caplog.records
        if r.name == LOGGER
    ]


async def test_an_error_is_logged_once_with_its_traceback_then_counted_until_it_is_said_again(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    rounds = Rounds()
    async with looping(rounds):
        await rounds.play(RuntimeError("boom"), RuntimeError("boom"), RuntimeError("boom"))
        assert _lines(caplog) == [(logging.ERROR, "job failed (boom); retrying", True)]
        caplog.clear()
        monkeypatch.setattr(periodic, "REPEAT_LOG_SECONDS", 0.0)  # its time has come
        await rounds.play(RuntimeError("boom"))
        assert _lines(caplog) == [
            (logging.WARNING, "job failed (boom); retrying (2 more in the last 0 s)", False)
        ]


async def test_another_error_is_logged_at_once_and_the_store_s_own_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    rounds = Rounds()
    async with looping(rounds):
        await rounds.play(
            RuntimeError("boom"),
            UnavailableError("database unavailable"),
            UnavailableError("database unavailable"),
            RuntimeError("bang"),
        )
    assert _lines(caplog) == [
        (logging.ERROR, "job failed (boom); retrying", True),
        (logging.WARNING, "job failed (database unavailable); retrying", False),
        (logging.ERROR, "job failed (bang); retrying", True),
    ]


async def test_the_first_round_that_works_after_failed_ones_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    rounds = Rounds()
    async with looping(rounds):
        await rounds.play("fine", UnavailableError("database unavailable"))
        caplog.clear()
        await rounds.play("fine", "fine")
        assert _lines(caplog) == [(logging.INFO, "job works again (after 1 failed round)", False)]
        caplog.clear()
        # Back to failing: the same error as before is news again, and said at once.
        await rounds.play(UnavailableError("database unavailable"), RuntimeError(""), "fine")
    assert _lines(caplog) == [
        (logging.WARNING, "job failed (database unavailable); retrying", False),
        (logging.ERROR, "job failed; retrying", True),
        (logging.INFO, "job works again (after 2 failed rounds)", False),
    ]


async def test_wait_is_given_what_each_round_returned_and_unexpected_errors_are_told() -> None:
    rounds = Rounds()
    given: list[object] = []
    unexpected: list[None] = []

    async def wait(result: object) -> None:
        given.append(result)
        await asyncio.sleep(0)

    async with looping(rounds, wait=wait, on_unexpected=lambda: unexpected.append(None)):
        await rounds.play(True, UnavailableError("database unavailable"), RuntimeError("x"), [1])
    assert given == [True, None, None, [1]]
    assert unexpected == [None]  # the store's own failure is not a bug


async def test_the_first_round_runs_at_once_then_one_each_interval() -> None:
    rounds = Rounds()
    health = Health()
    async with looping(rounds, interval=3600, health=health):
        await rounds.play("first")
        assert health.first_round.is_set()
        rounds._next.put_nowait("second")  # pyright: ignore[reportPrivateUsage]
        await asyncio.sleep(0.05)  # time is under test: the interval holds the next round
        assert rounds.ran == 1


async def test_health_says_whether_the_loop_turns() -> None:
    rounds = Rounds()
    health = Health(stalled_after=3600)
    assert not health.alive()
    assert health.starting
    async with looping(rounds, health=health) as task:
        await asyncio.sleep(0)
        assert not health.alive()  # running, but no round ended yet
        assert health.starting
        await rounds.play(RuntimeError("boom"))  # a failed round is a round: the loop turns
        assert health.alive()
        assert not health.starting
        task.cancel()
    assert not health.alive()
    assert not health.starting


async def test_a_loop_stuck_in_a_round_is_not_alive_after_its_allowance() -> None:
    rounds = Rounds()
    health = Health(stalled_after=0.05)
    async with looping(rounds, health=health):
        await rounds.play("fine")  # the next round waits for an outcome that never comes
        assert health.alive()
        await eventually(lambda: not health.alive(), "the stuck loop no longer alive")


async def test_a_loop_that_stops_before_its_first_round_is_no_longer_starting() -> None:
    rounds = Rounds()
    health = Health()
    async with looping(rounds, health=health) as task:
        await asyncio.sleep(0)
        task.cancel()
    assert not health.starting
    assert not health.first_round.is_set()


@pytest.mark.parametrize("where", ["in a round", "between rounds"])
async def test_cancelling_ends_the_loop_cleanly(
    where: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    rounds = Rounds()
    health = Health()
    async with looping(
        rounds, interval=0 if where == "in a round" else 3600, health=health
    ) as task:
        await rounds.play("fine")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert task.cancelled()
    assert not health.alive()
    assert _lines(caplog) == []  # cancellation is not a failed round
