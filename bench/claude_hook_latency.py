"""Answer-to-model latency of `compass claude-hook` with the real Claude Code: from a
person's RespondToAsk to Claude Code's next model request carrying the AskUserQuestion
result the hook filled in.

Run from the repository root:

    .venv/bin/python -m bench.claude_hook_latency                 # 30 asks
    .venv/bin/python -m bench.claude_hook_latency --asks 100

Where the database comes from: as in bench/respond.py (`COMPASS_BENCH_DATABASE_URL`, else
`COMPASS_TEST_DATABASE_URL`, an admin DSN where a database of its own is created and dropped,
else a temporary local cluster). Claude Code is the pinned binary of tests/realagent/claude
(scripts/ensure-npm claude), launched as the tests launch it (tests/realagent/acp_agents.py:
HOME in a temp dir, telemetry off, every other request refused by a loopback proxy).

Set-up, once: one `compass serve` subprocess on a fresh database and a seeded world; the
hooks written by `compass_bridge.claude.install.install` (what `compass claude-hook
install` writes); ONE `claude -p --permission-prompt-tool stdio` whose scripted model
(tests/realagent/wire_models.AnthropicModel, in this process) calls AskUserQuestion once per
turn, each time with another question, `--warmup` + `--asks` times.

Per ask: the hook posts it; the participant (this process, Connect-JSON over httpx as a
browser) finds it with ListPendingAsks, opens the floor's watcher and waits for its first
state, lets `--think` seconds pass (default 0.5: the hook is waiting on its own WatchAsk by
then, as it is when a person answers), calls RespondToAsk and takes t0 = time.monotonic()
right after the OK arrived.

- subject: the time the scripted model received Claude Code's next main-loop request (the
  one carrying the tool result), as `time.monotonic()` in this process. On the way: the
  hook's WatchAsk wakes, it prints the reply, reports the delivery receipt (one
  ReportDelivery), exits; Claude Code reads the reply, runs the tool, calls the model.
- floor: a plain WatchAsk client in this process (the bridge's AgentClient.watch_ask with the
  agent's token), opened on the same ask before the answer: when it yields the answered
  state. What any watcher of the ask pays and nothing of the hook or Claude Code.

Also printed: answer -> receipt stored (the database's answered_at and
delivery_reported_at), the part of the subject before the hook exits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from bench._receipts import receipt_delays, receipt_line
from bench._timing import answer_latency_arguments, latency_table
from bench.ask_latency import FloorWatcher
from bench.mcp_latency import STEP_TIMEOUT, BenchError, Participant
from bench.respond import run_on_database, served_database
from compass_bridge.claude.questions import question_id
from compass_bridge.client import AgentClient
from tests import _server
from tests.realagent.acp_agents import ensure_npm
from tests.realagent.hooked_claude import hooked_claude
from tests.realagent.model_server import Turn
from tests.realagent.proxy import RefusingProxy
from tests.realagent.wire_models import AnthropicModel

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Generator

    from tests.realagent.wire_models import ScriptedWire


def _question(number: int) -> str:
    return f"Which database for service {number}?"


def script(count: int) -> list[Turn]:
    calls = [
        Turn.call(
            "AskUserQuestion",
            {
                "questions": [
                    {
                        "question": _question(number),
                        "header": "DB",
                        "multiSelect": False,
                        "options": [
                            {"label": "Postgres", "description": "relational"},
                            {"label": "SQLite", "description": "a file"},
                        ],
                    }
                ]
            },
            f"toolu_{number}",
        )
        for number in range(count)
    ]
    return [*calls, Turn.say("All set.")]


@contextlib.contextmanager
def claude_code(
    tmp: Path, server_url: str, world: _server.SeededWorld, model: ScriptedWire
) -> Generator[subprocess.Popen[bytes]]:
    """`claude -p` with the hooks installed, its output in tmp/claude.log."""
    with (
        RefusingProxy() as proxy,
        hooked_claude(
            bin_dir=ensure_npm("claude"),
            tmp=tmp,
            model_url=model.base_url,
            proxy_env=proxy.env(),
            server_url=server_url,
            channel_id=world.channel_id,
            token=world.agent.token,
            args=["--permission-prompt-tool", "stdio"],
            prompt="Ask me.",
        ) as (process, _log),
    ):
        yield process
        if proxy.refused:
            print(f"refused by the proxy: {proxy.refused}", file=sys.stderr)


async def measure(
    server_url: str, dsn: str, *, asks: int, warmup: int, think: float
) -> tuple[list[float], list[float], list[float]]:
    world = await _server.seed_world(dsn, prefix="claude-hook-")
    subject: list[float] = []
    floor: list[float] = []
    measured: list[str] = []
    known: set[str] = set()
    total = warmup + asks
    with (
        tempfile.TemporaryDirectory(prefix="compass-claude-hook-latency-") as tmp,
        AnthropicModel(script(total)) as model,
        claude_code(Path(tmp), server_url, world, model) as process,
    ):
        async with httpx.AsyncClient(base_url=server_url, timeout=30) as http:
            participant = Participant(http, world.human.token)
            agent = AgentClient(server_url, world.agent.token)
            for number in range(total):
                ask_id = await participant.new_ask(known)
                known.add(ask_id)
                watcher = FloorWatcher(agent, ask_id)
                await asyncio.wait_for(watcher.started(), STEP_TIMEOUT)
                await asyncio.sleep(think)  # a person reads the question (time itself)
                t0 = time.monotonic()
                await participant.respond(ask_id, question_id(_question(number)))
                turns = await asyncio.to_thread(model.wait_for_turns, number + 2, STEP_TIMEOUT)
                await asyncio.wait_for(watcher.task, STEP_TIMEOUT)
                read = turns[number + 1].tool_result(f"toolu_{number}")
                if "SQLite" not in read:
                    raise BenchError(f"ask {number}: the model read {read!r}")
                if number >= warmup and watcher.answered_at is not None:
                    subject.append(turns[number + 1].at - t0)
                    floor.append(watcher.answered_at - t0)
                    measured.append(ask_id)
            if process.wait(timeout=STEP_TIMEOUT) != 0:
                raise BenchError(f"claude -p exited with {process.returncode}")
    return subject, floor, await receipt_delays(dsn, ask_ids=measured)


async def run_all(args: argparse.Namespace, admin: str, where: str) -> int:
    async with served_database(admin) as (server, dsn, settings):
        print(f"database: {where}; {settings}")
        print(
            "answer-to-model latency: RespondToAsk sent -> Claude Code's next model request "
            f"carrying the AskUserQuestion result; {args.asks} asks (+{args.warmup} "
            f"warm-up), think {args.think:g} s"
        )
        try:
            subject, floor, receipts = await measure(
                server.url, dsn, asks=args.asks, warmup=args.warmup, think=args.think
            )
        except (BenchError, TimeoutError) as exc:
            print(f"FAILED: {exc!r}")
            return 1
    print(f"claude -p 2.1.318 with compass claude-hook ({len(subject)} asks)")
    for line in latency_table(
        ("model request (tool result)", subject),
        ("floor (WatchAsk client)", floor),
        ratio="hook+Claude Code / floor",
    ):
        print(line)
    print(receipt_line(receipts, len(subject)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.claude_hook_latency", description=(__doc__ or "").split("\n")[0]
    )
    args = answer_latency_arguments(parser, argv, asks=30, warmup=2, think=0.5)
    return run_on_database(functools.partial(run_all, args))


if __name__ == "__main__":
    raise SystemExit(main())
