"""The posting quota's token bucket (issue 12), on an injected clock."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from compass_server.domain.errors import ResourceExhaustedError
from compass_server.quota import PostQuota


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_then_the_rate_and_accounts_apart() -> None:
    clock = Clock()
    quota = PostQuota(per_minute=60, burst=3, clock=clock)
    for _ in range(3):
        quota.take("a")
    with pytest.raises(ResourceExhaustedError, match=r"retry in 1\.00 s"):
        quota.take("a")
    quota.take("b")  # another account has its own bucket
    clock.now += 1.0  # one post per second comes back
    quota.take("a")
    with pytest.raises(ResourceExhaustedError):
        quota.take("a")
    clock.now += 3600  # never more than the burst
    for _ in range(3):
        quota.take("a")
    with pytest.raises(ResourceExhaustedError):
        quota.take("a")


@given(
    gaps=st.lists(st.floats(min_value=0, max_value=5), min_size=1, max_size=200),
    per_minute=st.integers(min_value=1, max_value=600),
    burst=st.integers(min_value=1, max_value=20),
)
def test_never_more_than_burst_plus_rate_times_time(
    gaps: list[float], per_minute: int, burst: int
) -> None:
    clock = Clock()
    quota = PostQuota(per_minute=per_minute, burst=burst, clock=clock)
    start, taken = clock.now, 0
    for gap in gaps:
        clock.now += gap
        try:
            quota.take("a")
        except ResourceExhaustedError:
            continue
        taken += 1
    assert taken <= burst + (clock.now - start) * per_minute / 60 + 1e-9
