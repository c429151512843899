"""The round loop every notifier's worker shares: claim due deliveries from its outbox, run an
attempt for each beside those still running, again (docs/webhooks.md, docs/answering/push.md).

A notifier (webhooks/sender.py, push/sender.py; email next) subclasses `OutboxWorker` with
its outbox (its claims: store/postgres/outbox.py) and says how to attempt one delivery (send
it and record what happened); `OutboxWorker` does the rest:

- rounds every `poll_seconds` on `background/periodic.every` (its log policy and `Health`,
  which /readyz and the `*_worker_up` gauges read), at once again while rounds find work;
- at most `max_in_flight` attempts at once and `per_endpoint` per destination in this
  process, counted in the claims (`busy`), so one slow, dead or backlogged destination never
  holds up another's deliveries;
- each claim leased for twice the attempt's timeout and more (no other process attempts a
  delivery still in flight here; one whose process died is attempted again when it ends);
- one attempt's trouble is logged (rate-limited) and counted, never the worker's end.

`retry_time` is the persisted schedule: when a failed attempt is due again (a delivery plan
written to the outbox row, not a retry loop), or None when the schedule is spent.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final, Generic, TypeVar

from compass_server.background.periodic import STALLED_SECONDS, Health, every
from compass_server.domain.errors import CompassError
from compass_server.transport.netguard import RateLimitedLog

if TYPE_CHECKING:
    import logging
    from collections.abc import Awaitable, Callable, Sequence

    from compass_server.store import Claims

MAX_IN_FLIGHT: Final = 20
"""Attempts one process runs at once, per notifier."""
JITTER: Final = 0.2
"""A retry waits its delay and up to this fraction more, so retries do not come in step."""

D = TypeVar("D")


def utc_now() -> datetime:
    return datetime.now(UTC)


def retry_time(schedule: Sequence[float], attempts: int, sent_at: datetime) -> datetime | None:
    """When a delivery whose attempt number `attempts + 1` failed (sent at `sent_at`) is
    due again: after `schedule[attempts]` seconds with jitter; None when the schedule is spent
    (the delivery has failed)."""
    if attempts >= len(schedule):
        return None
    delay = schedule[attempts] * (1 + random.random() * JITTER)  # noqa: S311 - jitter, not secrecy
    return sent_at + timedelta(seconds=delay)


FORGET_EVERY: Final = timedelta(hours=1)
"""How often a worker with `Forget` purges what it keeps for ended asks."""


@dataclass(frozen=True, slots=True)
class Forget:
    """What a notifier keeps for a while after an ask ends (the answer tokens of its pushes,
    the reply tokens of its emails) and forgets: `purge(before)` drops what belongs to asks
    that ended before `before`; a worker calls it every FORGET_EVERY with `now - keep`."""

    purge: Callable[[datetime], Awaitable[object]]
    keep: timedelta


class OutboxWorker(Generic[D]):
    """Runs one notifier's attempts, until cancelled. A notifier subclasses it: `destination`
    (the key its per-destination count is kept by) and `attempt` (one attempt at one
    delivery, recording its outcome); `before_claim` (run first in each round) and `session`
    (open around the rounds) when it needs them."""

    def __init__(
        self,
        outbox: Claims[D],
        *,
        name: str,
        logger: logging.Logger,
        poll_seconds: float,
        timeout_seconds: float,
        per_endpoint: int,
        max_in_flight: int = MAX_IN_FLIGHT,
        clock: Callable[[], datetime] = utc_now,
        on_error: Callable[[], None] | None = None,
        forget: Forget | None = None,
    ) -> None:
        """
        Args:
            outbox: where due deliveries are claimed.
            name: what the deliveries are, for the log ("webhook delivery").
            poll_seconds: the pause after a round that found nothing.
            timeout_seconds: an attempt's deadline (its lease outlasts it).
            per_endpoint: attempts in flight here to one destination, at most.
            on_error: told of each unexpected error of a round or an attempt (a metric).
            forget: what the notifier keeps for ended asks, purged at the start of a round
                every FORGET_EVERY.
        """
        self._outbox = outbox
        self._name = name
        self._logger = logger
        self._poll = poll_seconds
        self._timeout = timeout_seconds
        self._per_endpoint = per_endpoint
        self._max_in_flight = max_in_flight
        self._clock = clock
        self._on_error = on_error
        self._forget = forget
        self._forgotten: datetime | None = None
        self._busy: dict[str, int] = {}
        """Destination -> its attempts in flight in this process."""
        self._attempts: set[asyncio.Task[None]] = set()
        self._errors = RateLimitedLog(logger, interval=60.0)
        self.health = Health(stalled_after=STALLED_SECONDS + poll_seconds)
        """Whether the rounds run (/readyz and the worker's `*_worker_up` gauge)."""
        self.idle = asyncio.Event()
        """Set whenever a round found nothing due and nothing in flight (tests wait on it)."""

    # -- what a notifier says ----------------------------------------------------------------

    def destination(self, delivery: D) -> str:
        """The destination of `delivery` (its attempts in flight are counted by it)."""
        raise NotImplementedError

    async def attempt(self, delivery: D) -> None:
        """One attempt at `delivery`, its outcome recorded. What it raises is logged (a
        `CompassError`: the database went away while recording; the lease will end) and
        counted, never the worker's end."""
        raise NotImplementedError

    async def before_claim(self, now: datetime) -> None:
        """Run first in each round, with the round's time (reminders)."""

    def session(self) -> contextlib.AbstractAsyncContextManager[object]:
        """Opened around the rounds (an HTTP client)."""
        return contextlib.nullcontext()

    # -- the rounds --------------------------------------------------------------------------

    @property
    def first_round(self) -> asyncio.Event:
        """Set once the first round has ended (/readyz waits a moment for it at start)."""
        return self.health.first_round

    def alive(self) -> bool:
        """Whether the worker runs and finished a round lately (for /readyz and /metrics)."""
        return self.health.alive()

    async def run(self) -> None:
        """Rounds (`tick`) until cancelled, in `session`; then the attempts in flight are
        cancelled."""
        async with self.session():
            await self._rounds()

    async def _rounds(self) -> None:
        try:
            await every(
                self._poll,
                self.tick,
                name=f"{self._name} round",
                logger=self._logger,
                health=self.health,
                wait=self._after_round,
                on_unexpected=self._on_error,
            )
        finally:
            for task in self._attempts:
                task.cancel()
            if self._attempts:
                await asyncio.wait(self._attempts)

    async def tick(self) -> bool:
        """One round: `forget` (when due), `before_claim`, then an attempt for each due
        delivery there is room for; True if any were started."""
        now = self._clock()
        forget = self._forget
        if forget is not None and (
            self._forgotten is None or now - self._forgotten >= FORGET_EVERY
        ):
            self._forgotten = now
            await forget.purge(now - forget.keep)
        await self.before_claim(now)
        room = self._max_in_flight - len(self._attempts)
        if room <= 0:
            return False
        # The lease outlasts the whole attempt (which timeout_seconds bounds) and recording
        # it: no other process attempts a delivery still in flight here.
        lease = timedelta(seconds=self._timeout * 2 + 5)
        due = await self._outbox.claim(
            now, lease, room, per_endpoint=self._per_endpoint, busy=self._busy
        )
        if due:
            self.idle.clear()
        for delivery in due:
            key = self.destination(delivery)
            self._busy[key] = self._busy.get(key, 0) + 1
            task = asyncio.create_task(
                self._attempt_safely(delivery, key), name=f"compass-{self._name}"
            )
            self._attempts.add(task)
            task.add_done_callback(self._attempts.discard)
        return bool(due)

    async def _after_round(self, busy: object) -> None:
        """After a round that started attempts, the next one at once; else wait (`busy` is
        None after a failed round)."""
        if busy is True:
            return
        if not self._attempts:
            self.idle.set()
        if self._attempts:  # a poll interval, or less when an attempt ends (its slot is free)
            await asyncio.wait(
                self._attempts, timeout=self._poll, return_when=asyncio.FIRST_COMPLETED
            )
        else:
            await asyncio.sleep(self._poll)

    async def _attempt_safely(self, delivery: D, key: str) -> None:
        try:
            await self.attempt(delivery)
        except CompassError as exc:  # the database went away while recording: the lease ends
            self._logger.warning("%s not recorded: %s", self._name, exc.message)
        except Exception:  # one delivery's trouble is not the worker's
            self._errors.emit(f"a {self._name} attempt failed unexpectedly")
            self._logger.debug("%s attempt failure", self._name, exc_info=True)
            if self._on_error is not None:
                self._on_error()
        finally:
            left = self._busy.get(key, 1) - 1
            if left > 0:
                self._busy[key] = left
            else:
                self._busy.pop(key, None)
