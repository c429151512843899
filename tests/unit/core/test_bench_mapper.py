"""bench/mapper.py stays honest: it times the mapper on the gallery ask and posts the frame
the mapper makes of it; its figures and verdict come out as documented.

No timing is asserted here (speed lives in bench/), and nothing here starts a server: the
round trip side needs `compass serve` and runs only in the bench itself.
"""

from __future__ import annotations

import pytest

from bench import _timing, mapper as bench_mapper
from compass_core import ConversationUpdated, EventMapper
from tests.unit.core._events import gallery_args


def test_the_bench_maps_the_runtimes_gallery_ask() -> None:
    event = bench_mapper.gallery_event()
    assert event["args"] == gallery_args()
    mapper = EventMapper(session="bench")
    [frame] = mapper.map(bench_mapper.ASSISTANT_START) + mapper.map(event)
    assert isinstance(frame, ConversationUpdated)

    posted = bench_mapper.mapped_frame(event)
    assert posted == frame.value
    assert [q.question_id for q in posted.blocks[0].ask.questions] == ["db", "features"]
    assert posted.blocks[0].ask.ask_id == ""  # AppendMessage requires it empty


def test_a_malformed_bench_event_stops_the_bench() -> None:
    with pytest.raises(SystemExit, match="does not map"):
        bench_mapper.mapped_frame(bench_mapper.ask_event({"questions": []}))


def test_time_mapping_times_each_call() -> None:
    samples = bench_mapper.time_mapping(bench_mapper.gallery_event(), 5)
    assert len(samples) == 5
    assert all(seconds > 0 for seconds in samples)


def test_percentiles_ratio_and_verdict() -> None:
    latency = bench_mapper.Latency(name="x", samples=tuple(float(n) for n in range(1, 101)))
    assert (latency.percentile(0.5), latency.percentile(0.99), latency.percentile(1.0)) == (
        50.0,
        99.0,
        100.0,
    )
    fast = bench_mapper.Result(
        mapping=bench_mapper.Latency(name="mapping", samples=(40e-6,)),
        round_trip=bench_mapper.Latency(name="round trip", samples=(2e-3,)),
    )
    assert fast.ratio == pytest.approx(0.02)
    assert fast.met
    assert "2.00% at p50" in fast.report()
    assert "target <= 5% at p50: met" in fast.report()
    slow = bench_mapper.Result(
        mapping=bench_mapper.Latency(name="mapping", samples=(200e-6,)),
        round_trip=bench_mapper.Latency(name="round trip", samples=(2e-3,)),
    )
    assert not slow.met
    assert "NOT met" in slow.report()


def test_timing_interleaves_and_computes_cost_ratios() -> None:
    calls: list[str] = []
    rates = _timing.measure(
        {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
        rounds=3,
        min_block_seconds=0.0,
    )
    assert set(rates) == {"a", "b"}
    assert all(len(rate.rounds) == 3 for rate in rates.values())
    slow = _timing.Rate(name="slow", rounds=(50.0, 100.0))
    fast = _timing.Rate(name="fast", rounds=(100.0, 150.0))
    assert _timing.cost_ratio(slow, fast) == (1.5, 1.75)
    with pytest.raises(ValueError, match="at least one"):
        _timing.measure({}, rounds=1)
