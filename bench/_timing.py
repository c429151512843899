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
    import argparse
    from collections.abc import Callable, Coroutine, Mapping, Sequence
    from typing import Any

KEEPALIVE_EXPIRY_SECONDS = 2.0
"""How long the benches' HTTP clients reuse an idle kept-alive connection: well below the
server's keep-alive timeout (COMPASS_KEEPALIVE_TIMEOUT, 5 s). httpx's default is 5 s too, and the
server's clock starts when it queues a response, the client's when it has read it (later on a
busy machine): a client then sent its next request on a connection the server was closing
(`httpx.ReadError`, bench.respond on a busy machine)."""


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


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def latency_table(
    subject: tuple[str, Sequence[float]],
    floor: tuple[str, Sequence[float]],
    *,
    ratio: str,
    parts: Sequence[tuple[str, Sequence[float]]] = (),
) -> list[str]:
    """Latencies (seconds) of a subject and its floor measured on the same events, as lines:
    p50, p99 and max of each in ms (and of the subject's `parts`, between the two), then
    `ratio <ratio>: p50/p50 ..x, p99/p99 ..x`."""
    rows = dict((subject, *parts, floor))
    width = max(len(name) for name in rows)
    lines = [f"  {'':<{width}}  {'p50':>9}  {'p99':>9}  {'max':>9}"]
    for name, values in rows.items():
        p50, p99, top = percentile(values, 0.5), percentile(values, 0.99), max(values)
        lines.append(
            f"  {name:<{width}}  {p50 * 1e3:>6.2f} ms  {p99 * 1e3:>6.2f} ms  {top * 1e3:>6.2f} ms"
        )
    ratios = [
        f"{name} {percentile(subject[1], q) / percentile(floor[1], q):.1f}x"
        if percentile(floor[1], q) > 0
        else f"{name} n/a (floor <= 0)"
        for name, q in (("p50/p50", 0.5), ("p99/p99", 0.99))
    ]
    lines.append(f"  ratio {ratio}: {', '.join(ratios)}")
    return lines


def answer_latency_arguments(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    *,
    asks: int,
    warmup: int,
    think: float,
    per: str = "",
) -> argparse.Namespace:
    """Add the answer-latency benches' --asks, --warmup and --think (defaults given) to
    `parser`, parse `argv` and check them (a usage error otherwise)."""
    parser.add_argument(
        "--asks", type=int, default=asks, help=f"measured asks{per} (default {asks})"
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=warmup,
        help=f"asks before those, not counted (default {warmup})",
    )
    parser.add_argument(
        "--think",
        type=float,
        default=think,
        help=f"seconds between an ask appearing and the answer (default {think:g})",
    )
    args = parser.parse_args(argv)
    if args.asks < 1 or args.warmup < 0 or args.think < 0:
        parser.error("--asks must be >= 1, --warmup and --think >= 0")
    return args


def notifier_bench_main(
    argv: Sequence[str] | None,
    doc: str | None,
    measure: Callable[[str, str, argparse.Namespace], Coroutine[Any, Any, int]],
) -> int:
    """The command line of a bench that times a notifier (push, email) against its floor in
    paced rounds: `--asks`, `--warmup`, `--think`, then `measure(admin DSN, where it came
    from, args)` on a bench database (bench.respond.run_on_database)."""
    import argparse

    from bench.respond import run_on_database  # bench.respond imports this module

    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--asks", type=int, default=100, help="measured asks (default 100)")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured rounds first")
    parser.add_argument(
        "--think",
        type=float,
        default=0.25,
        help="each round starts after a random 0..THINK s (default 0.25: out of step with the "
        "0.1 s polls)",
    )
    args = parser.parse_args(argv)
    if args.asks < 1 or args.warmup < 0:
        parser.error("--asks must be 1 or more, --warmup 0 or more")
    return run_on_database(lambda admin, where: measure(admin, where, args))
