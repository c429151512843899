"""Posting quota per account (without it an agent could post without limit).

A token bucket per account, in this process: `burst` posts at once, refilled at `per_minute`
/ 60 per second. AppendMessage and UpdateMessage each take one; an empty bucket is
RESOURCE_EXHAUSTED (the bridge retries those with backoff). Per process: behind N replicas
an account may post up to N times the rate.

Why hand-written: a bucket is a dozen lines over a monotonic clock; the rate-limit
libraries (e.g. `limits`) bring storage backends and async wrappers this does not need,
and a clock is injected here for tests.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from compass_server.domain.errors import ResourceExhaustedError

if TYPE_CHECKING:
    from collections.abc import Callable

MAX_ACCOUNTS: Final = 100_000
"""Buckets kept; the fullest (idle) ones are dropped beyond this (a full bucket is the
same as none)."""


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


class PostQuota:
    def __init__(
        self, per_minute: int, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._rate = per_minute / 60.0
        self._burst = float(burst)
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def take(self, account_id: str) -> None:
        """Spend one post of `account_id`.

        Raises:
            ResourceExhaustedError: none left; says when the next one is available.
        """
        now = self._clock()
        bucket = self._buckets.get(account_id)
        if bucket is None:
            if len(self._buckets) >= MAX_ACCOUNTS:
                self._forget_full(now)
            bucket = self._buckets[account_id] = _Bucket(self._burst, now)
        bucket.tokens = min(self._burst, bucket.tokens + (now - bucket.at) * self._rate)
        bucket.at = now
        if bucket.tokens < 1.0:
            wait = (1.0 - bucket.tokens) / self._rate
            raise ResourceExhaustedError(
                f"posting too fast for this account; retry in {max(wait, 0.01):.2f} s"
            )
        bucket.tokens -= 1.0

    def _forget_full(self, now: float) -> None:
        for account_id, bucket in list(self._buckets.items()):
            if bucket.tokens + (now - bucket.at) * self._rate >= self._burst:
                del self._buckets[account_id]
