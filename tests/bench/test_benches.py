"""Every benchmark in bench/ runs here at toy size, as `python -m bench.NAME` on the session's
PostgreSQL (`COMPASS_BENCH_DATABASE_URL`: each makes a database of its own and drops it), so a
change that breaks one fails the suite instead of rotting unnoticed until someone measures
(bench.respond crashed at its first reset for weeks, issue 25).

What is checked: the bench exits 0 and prints its figures, each a number, including the ratio
against its floor. Never how fast anything was: at toy size, on a shared machine, the numbers
mean nothing (speed is for the benches themselves, run at size).

Every bench runs beside two busy-loop processes (`busy_machine`), the `stress`-like load under
which bench.respond once crashed with `httpx.ReadError` (the server closed a kept-alive
connection as a request arrived: tests/unit/server/test_netguard_idle_close.py): a bench must
complete on a busy machine, not only on a quiet one.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[2]
NUMBER = r"-?\d+(?:\.\d+)?"

BENCHES: dict[str, tuple[list[str], list[str]]] = {
    "mapper": (
        ["--rounds", "2", "--calls", "10", "--maps", "50"],
        [rf"mapping/round trip\s+{NUMBER}% at p50 \({NUMBER}% at p99\)"],
    ),
    "respond": (
        [
            *("--clients", "2", "--asks", "300", "--rounds", "1", "--seconds", "0.2"),
            *("--warmup", "0.1", "--workers", "2"),
        ],
        [
            rf"ratio respond / composed floor: {NUMBER} best-against-best, {NUMBER} median",
            rf"ratio 2 workers / 1 worker: {NUMBER} best-against-best, {NUMBER} median",
            rf"ratio 2 workers / 1 worker \(server CPU per answer\): {NUMBER}",
            rf"database round trips per answer .*: respond {NUMBER} \(token lookup included\)",
        ],
    ),
    "fanout": (
        ["--watchers", "20", "--changes", "2", "--rounds", "2", "--warmup", "1"],
        [
            rf"ratio 20/1: p50 {NUMBER}x\s+p99 {NUMBER}x",
            rf"ratio 20 watchers / 20 raw sockets: p50 {NUMBER}x\s+p99 {NUMBER}x",
            rf"20 raw sockets, median of 2 per-round ratios .*: p50 {NUMBER}x\s+p99 {NUMBER}x",
            rf"1 watcher / 20 raw sockets: p50 {NUMBER}x\s+p99 {NUMBER}x; 20 watchers / "
            rf"\(1 watcher \+ 20 raw sockets\): p50 {NUMBER}x\s+p99 {NUMBER}x",
            rf"server CPU/change {NUMBER} ms",
        ],
    ),
    "mail_reading": (
        ["--rounds", "1", "--kib", "32", "--scale", "4"],
        [
            rf"html: ratio cost per KiB large/small: {NUMBER}x",
            rf"lines: ratio read / parse \(32 KiB\): {NUMBER} best, {NUMBER} median",
        ],
    ),
    "memory": (
        ["--messages", "4", "--message-bytes", "100000", "--readers", "2", "--stall", "0.5"],
        [rf"\({NUMBER}x the response\)", rf"{NUMBER} MiB per reader"],
    ),
    "workload": (
        ["--agents", "2", "--think", "0.02", "--rounds", "1", "--seconds", "1", "--warmup", "0.5"],
        [
            rf"1 worker\s+{NUMBER} asks/s\s+p50\s+{NUMBER} ms\s+p99\s+{NUMBER} ms\s+server CPU/ask\s+{NUMBER} ms",
            rf"machine busy {NUMBER}% of",
            rf"ratio 2 workers / 1 worker \(asks/s\): {NUMBER} median",
            rf"ratio 2 processes / 1 worker \(asks/s\): {NUMBER} median",
            rf"ratio 2 workers / 1 worker \(server CPU per ask\): {NUMBER}",
        ],
    ),
    "mcp_latency": (
        ["--asks", "1", "--warmup", "0", "--think", "0"],
        [
            rf"(?s)http: .*ratio MCP / floor: p50/p50 {NUMBER}x, p99/p99 {NUMBER}x",
            rf"(?s)stdio: .*ratio MCP / floor: p50/p50 {NUMBER}x, p99/p99 {NUMBER}x",
        ],
    ),
    "claude_hook_latency": (
        ["--asks", "1", "--warmup", "0", "--think", "0"],
        [
            rf"ratio hook\+Claude Code / floor: p50/p50 {NUMBER}x, p99/p99 {NUMBER}x",
            rf"answer -> receipt stored: p50 {NUMBER} ms, p99 {NUMBER} ms",
        ],
    ),
    "opencode_question_latency": (
        ["--asks", "1", "--warmup", "0", "--think", "0"],
        [
            rf"ratio plugin\+OpenCode / floor: p50/p50 {NUMBER}x, p99/p99 {NUMBER}x",
            rf"question -> ask in Compass: p50 {NUMBER} ms, max {NUMBER} ms",
            rf"answer -> receipt stored: p50 {NUMBER} ms, p99 {NUMBER} ms",
        ],
    ),
    "next_agents_mcp": (
        ["--asks", "1", "--warmup", "0", "--think", "0"],
        [
            *(
                rf"(?s){name}: .*ratio {name} over MCP / floor: p50/p50 {NUMBER}x, "
                rf"p99/p99 {NUMBER}x\n  answer -> receipt stored: p50 {NUMBER} ms"
                for name in ("qwen", "opencode", "copilot", "cline")
            ),
        ],
    ),
    "next_agents_acp": (
        ["--asks", "1", "--warmup", "0", "--think", "0"],
        [
            rf"(?s)qwen: .*ratio qwen over ACP / floor: p50/p50 {NUMBER}x, p99/p99 {NUMBER}x\n"
            rf"  answer -> receipt stored: p50 {NUMBER} ms"
        ],
    ),
    "next_agents_copilot": (
        ["--asks", "1", "--warmup", "0", "--think", "0"],
        [
            rf"(?s)copilot: .*ratio copilot's ask_user / floor: p50/p50 {NUMBER}x, "
            rf"p99/p99 {NUMBER}x\n  answer -> receipt stored: p50 {NUMBER} ms"
        ],
    ),
    "webhooks": (
        ["--rounds", "1", "--body-mib", "8"],
        [
            rf"beside one answering at 1 byte/s \({NUMBER}x\)",
            rf"8 MiB body: peak \+{NUMBER} MiB",
        ],
    ),
    "push": (
        ["--asks", "2", "--warmup", "0", "--think", "0"],
        [
            rf"ratio push / webhook: p50/p50 {NUMBER}x, p99/p99 {NUMBER}x",
            rf"ratio tap / RespondToAsk: p50/p50 {NUMBER}x, p99/p99 {NUMBER}x",
        ],
    ),
    "email": (
        ["--asks", "2", "--warmup", "0", "--think", "0"],
        [
            rf"ratio email / bare send: p50/p50 {NUMBER}x, p99/p99 {NUMBER}x",
            rf"ratio reply / RespondToAsk: p50/p50 {NUMBER}x, p99/p99 {NUMBER}x",
        ],
    ),
    "h2_abuse": (
        [
            *("--resets", "200", "--attack-connections", "20", "--floor-calls", "20"),
            *("--connections", "1", "--streams", "5", "--body-bytes", "10000"),
            *("--hold", "1", "--hostile", "5"),
        ],
        [
            rf"= p99 {NUMBER}x the loaded floor \({NUMBER}x at rest\)",
            rf"RSS floor {NUMBER} MiB; peak \+{NUMBER} MiB",
        ],
    ),
    "ask_latency": (
        ["--asks", "1", "--warmup", "0", "--think", "0", "--protocol", "all"],
        [
            rf"(?s)acp: .*Compass's part above the floor: p50 {NUMBER} ms, p99 {NUMBER} ms",
            rf"(?s)rpc: .*Compass's part above the floor: p50 {NUMBER} ms, p99 {NUMBER} ms",
            r"runtime \(reply -> model request\)",
            rf"(?s)rpc: .*answer -> receipt stored: p50 {NUMBER} ms, p99 {NUMBER} ms",
            rf"(?s)pi: .*Compass's part above the floor: p50 {NUMBER} ms, p99 {NUMBER} ms",
            rf"(?s)pi: .*answer -> receipt stored: p50 {NUMBER} ms, p99 {NUMBER} ms",
        ],
    ),
}


BUSY_LOOPS = 2


@pytest.fixture
def busy_machine() -> Iterator[None]:
    """Two processes spinning on the CPU for as long as the test runs (then stopped by pid)."""
    loops = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(BUSY_LOOPS)
    ]
    try:
        yield
    finally:
        for loop in loops:
            loop.send_signal(signal.SIGKILL)
            loop.wait()


@pytest.mark.parametrize("name", list(BENCHES))
@pytest.mark.usefixtures("busy_machine")
def test_the_bench_runs_and_prints_its_ratio_on_a_busy_machine(
    name: str, pg_admin_dsn: str
) -> None:
    argv, patterns = BENCHES[name]
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPASS_")}
    env["COMPASS_BENCH_DATABASE_URL"] = pg_admin_dsn
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{name}", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    for pattern in patterns:
        assert re.search(pattern, done.stdout), f"no {pattern!r} in:\n{done.stdout[-3000:]}"
