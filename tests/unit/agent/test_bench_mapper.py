"""bench/mapper.py stays an honest comparison: every side builds the mapper's exact frame.

No timing is asserted here (speed lives in bench/); this only runs the benchmark's own
equality check and a tiny round so that a change to the mapper cannot silently leave the
floor building something else.
"""

from __future__ import annotations

import json

import pytest

from bench import _timing, mapper as bench_mapper
from compass_agent import ConversationUpdated, EventMapper
from tests.unit.agent._events import gallery_args, load_event


@pytest.mark.parametrize("args", [gallery_args(), load_event("ask-start-rich.json")["args"]])
def test_floors_build_the_mappers_frame(args: dict[str, object]) -> None:
    mapper = EventMapper(session="bench")
    mapper.map({"type": "message_start", "message": {"role": "assistant", "content": []}})
    [frame] = mapper.map({"type": "tool_execution_start", "toolName": "ask", "args": args})
    assert isinstance(frame, ConversationUpdated)

    assert bench_mapper.build_floor("bench-1", args) == frame.value
    assert bench_mapper.build_bare("bench-1", bench_mapper.shaped(args)) == frame.value


def test_benchmark_runs_and_reports_ratios(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_mapper.main(["--rounds", "2", "--block", "0.001"]) == 0
    out = capsys.readouterr().out
    assert "mapper/floor" in out
    assert "mapper/bare build" in out
    assert json.loads(bench_mapper.GALLERY.read_text(encoding="utf-8"))["args"] == gallery_args()


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
