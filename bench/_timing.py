"""A small timing helper for benchmarks that compare a subject with a floor in the same run.

The callables run interleaved: every round times each of them once, in an order that
rotates from round to round, so drift on a shared machine (frequency scaling, a neighbour's
job) hits all of them alike. Each callable is calibrated first so one timed block lasts at
least `min_block_seconds`. The garbage collector stays enabled: collections are part of
what a real caller pays, and a subject that allocates more should pay for it.

Reported per callable: the best and the median events/second over the rounds. Ratios are
given two ways: best against best (noise only ever slows a block down, so the best block is
the least disturbed), and the median of the per-round ratios (each round's blocks ran next to
each other).
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


@dataclass(frozen=True, slots=True, kw_only=True)
class Rate:
    """Throughput of one callable over the rounds."""

    name: str
    rounds: tuple[float, ...]
    """Events per second in each round, in round order."""

    @property
    def best(self) -> float:
        return max(self.rounds)

    @property
    def median(self) -> float:
        return statistics.median(self.rounds)


def measure(
    cases: Mapping[str, Callable[[], object]],
    *,
    events_per_call: int = 1,
    rounds: int = 15,
    min_block_seconds: float = 0.05,
) -> dict[str, Rate]:
    """Time each callable in `cases`, interleaved, and return its rate per name.

    Args:
        cases: Name -> a callable doing `events_per_call` events' worth of work per call.
        events_per_call: How many events one call counts as.
        rounds: How many times each callable is timed.
        min_block_seconds: The shortest timed block (the call count is calibrated to it).

    Returns:
        Name -> Rate, in the order of `cases`.
    """
    if not cases or rounds < 1:
        raise ValueError("need at least one case and one round")
    names = list(cases)
    calls = {name: _calibrate(cases[name], min_block_seconds) for name in names}
    per_round: dict[str, list[float]] = {name: [] for name in names}
    for round_number in range(rounds):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            seconds = _time_block(cases[name], calls[name])
            per_round[name].append(calls[name] * events_per_call / seconds)
    return {name: Rate(name=name, rounds=tuple(per_round[name])) for name in names}


def cost_ratio(subject: Rate, floor: Rate) -> tuple[float, float]:
    """How many times the floor's cost per event the subject pays.

    Returns:
        (best against best, median of the per-round ratios). Above 1.0: the subject is slower.
    """
    best = floor.best / subject.best
    paired = statistics.median(f / s for s, f in zip(subject.rounds, floor.rounds, strict=True))
    return best, paired


def report(rates: Mapping[str, Rate], *, unit: str = "events/s") -> str:
    """The rates as aligned lines: name, best, median."""
    width = max(len(name) for name in rates)
    return "\n".join(
        f"  {name:<{width}}  {rate.best:>12,.0f} {unit} best  {rate.median:>12,.0f} median"
        for name, rate in rates.items()
    )


def _calibrate(fn: Callable[[], object], min_block_seconds: float) -> int:
    calls = 1
    while True:
        if _time_block(fn, calls) >= min_block_seconds:
            return calls
        calls *= 2


def _time_block(fn: Callable[[], object], calls: int) -> float:
    loop = range(calls)
    start = time.perf_counter()
    for _ in loop:
        fn()
    return time.perf_counter() - start


def machine() -> str:
    """One line on what the figures ran on: CPUs and the load average (other processes on a
    shared machine compete with the bench; ratios within one run stay comparable)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"machine: {cpus} CPUs, {load_average()}"


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} (1/5/15 min)"
