"""One loop for the server's background jobs: a job run in rounds until cancelled.

The deadline sweep (`background/sweeper.py`), the token re-check of live streams
(`live/revocation.py`), the MCP leave sweep (`mcp/http.py`) and the webhook worker's rounds
(`webhooks/sender.py`) each keep their own round; `every` runs it, with one policy for what
goes wrong and one flag for whether the loop still turns:

- A failed round never ends the loop: the next round tries again. A `CompassError` (the
  store's own failures: the database is away, a statement timed out) is logged as a WARNING
  with its message; anything else is a bug, logged as an ERROR with its traceback. Either is
  logged once: the same error again (same class, same text) within `REPEAT_LOG_SECONDS` is
  counted, not logged, and the next line about it says how many were left out (without the
  traceback again). Another error is logged at once. The first round that works after failed
  ones is logged as the job working again.
- `Health` says whether the loop runs and ended a round (a failed one too) within
  `stalled_after` seconds: a loop that died, or hangs inside a round, is not alive. /readyz
  and `compass_webhook_worker_up` read the webhook worker's.

`running` runs the app's jobs as tasks for the length of its lifespan.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Final

from compass_server.domain.errors import CompassError

if TYPE_CHECKING:
    import logging
    from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Mapping

REPEAT_LOG_SECONDS: Final = 60.0
"""The same error again within this long is counted, not logged."""
STALLED_SECONDS: Final = 60.0
"""A loop whose last round ended longer ago than this (plus its pause between rounds) is not
alive: `Health`'s default allowance."""


class Health:
    """Whether one periodic job's loop runs and ended a round lately."""

    def __init__(self, *, stalled_after: float = STALLED_SECONDS) -> None:
        """
        Args:
            stalled_after: seconds after the end of its last round that the loop still counts
                as alive (allow for its longest pause between rounds).
        """
        self._stalled_after = stalled_after
        self._running = False
        self._ended = False
        self._round_ended: float | None = None
        self.first_round = asyncio.Event()
        """Set once the loop's first round has ended (/readyz waits a moment for it)."""

    def alive(self) -> bool:
        """Whether the loop runs and ended a round within `stalled_after` seconds."""
        ended = self._round_ended
        return (
            self._running and ended is not None and time.monotonic() - ended < self._stalled_after
        )

    @property
    def starting(self) -> bool:
        """Whether the loop may still end its first round: it has not ended one, and it has
        not stopped (a readiness probe just after start-up may wait for it)."""
        return not self.first_round.is_set() and not self._ended

    # -- told by `every` ------------------------------------------------------------------

    def loop_started(self) -> None:
        self._running = True
        self._ended = False

    def round_ended(self) -> None:
        self._round_ended = time.monotonic()
        self.first_round.set()

    def loop_stopped(self) -> None:
        self._running = False
        self._ended = True


async def every(
    interval: float,
    job: Callable[[], Awaitable[object]],
    *,
    name: str,
    logger: logging.Logger,
    health: Health | None = None,
    wait: Callable[[object], Awaitable[None]] | None = None,
    on_unexpected: Callable[[], None] | None = None,
) -> None:
    """Run `job` in rounds until cancelled: a round, then `interval` seconds' sleep, again.

    Args:
        interval: seconds to sleep after each round (unless `wait` says otherwise).
        job: one round; what it returns is handed to `wait`.
        name: what the job is, for the log ("ask sweep": "ask sweep failed (...); retrying").
        logger: where its lines go (the job's own module logger).
        health: told when the loop starts, ends a round and stops.
        wait: instead of the sleep, how to wait before the next round, given what the round
            returned (None after a failed round); it may return at once.
        on_unexpected: told of each failed round that was not a `CompassError` (a metric).
    """
    errors = _ErrorLog(name, logger)
    if health is not None:
        health.loop_started()
    try:
        while True:
            result: object = None
            try:
                result = await job()
            except CompassError as exc:
                errors.failed(exc, exc.message, unexpected=False)
            except Exception as exc:  # noqa: BLE001 - the loop must outlive any one round's bug
                errors.failed(exc, str(exc), unexpected=True)
                if on_unexpected is not None:
                    on_unexpected()
            else:
                errors.worked()
            if health is not None:
                health.round_ended()
            if wait is None:
                await asyncio.sleep(interval)
            else:
                await wait(result)
    finally:
        if health is not None:
            health.loop_stopped()


@contextlib.asynccontextmanager
async def running(
    jobs: Mapping[str, Callable[[], Coroutine[object, object, None]]],
) -> AsyncGenerator[None]:
    """Run each of `jobs` (by its task's name) as a task for as long as the block runs; then
    cancel them all and wait for each to end (for the app's lifespan)."""
    tasks = [asyncio.create_task(job(), name=name) for name, job in jobs.items()]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


class _ErrorLog:
    """The log policy of one loop: each error once, its repeats counted, the recovery said."""

    def __init__(self, name: str, logger: logging.Logger) -> None:
        self._name = name
        self._logger = logger
        self._failures = 0
        """Failed rounds since the last round that worked."""
        self._last: tuple[type[BaseException], str] | None = None
        """The last error logged (its class and text)."""
        self._logged_at = 0.0
        self._left_out = 0
        """Repeats of `_last` not logged since it was."""

    def failed(self, exc: Exception, text: str, *, unexpected: bool) -> None:
        self._failures += 1
        key = (type(exc), text)
        now = time.monotonic()
        shown = f" ({text})" if text else ""
        if key == self._last:
            if now - self._logged_at < REPEAT_LOG_SECONDS:
                self._left_out += 1
                return
            more = (
                f" ({self._left_out} more in the last {now - self._logged_at:.0f} s)"
                if self._left_out
                else ""
            )
            self._logger.warning("%s failed%s; retrying%s", self._name, shown, more)
        elif unexpected:
            self._logger.error("%s failed%s; retrying", self._name, shown, exc_info=exc)
        else:
            self._logger.warning("%s failed%s; retrying", self._name, shown)
        self._last = key
        self._logged_at = now
        self._left_out = 0

    def worked(self) -> None:
        if self._failures:
            self._logger.info(
                "%s works again (after %d failed %s)",
                self._name,
                self._failures,
                "round" if self._failures == 1 else "rounds",
            )
        self._failures = 0
        self._last = None
        self._left_out = 0
