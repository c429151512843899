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

import contextlib
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from bench import _answer_to_model
from bench._answer_to_model import answer_each, header, report
from bench._receipts import receipt_delays
from bench.mcp_latency import STEP_TIMEOUT, BenchError
from bench.respond import served_database
from compass_bridge.claude.questions import question_id
from tests import _server
from tests.realagent.acp_agents import ensure_npm
from tests.realagent.hooked_claude import hooked_claude
from tests.realagent.model_server import Turn
from tests.realagent.proxy import RefusingProxy
from tests.realagent.wire_models import AnthropicModel

if TYPE_CHECKING:
    import argparse
    import subprocess
    from collections.abc import Generator

    from bench._answer_to_model import Answered, Answers
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


def _answers(number: int) -> Answers:
    """The question's second option, SQLite."""
    return [{"questionId": question_id(_question(number)), "chosenOptionIds": ["1"]}]


async def measure(
    server_url: str, dsn: str, *, asks: int, warmup: int, think: float
) -> tuple[Answered, list[float]]:
    world = await _server.seed_world(dsn, prefix="claude-hook-")
    total = warmup + asks
    with (
        tempfile.TemporaryDirectory(prefix="compass-claude-hook-latency-") as tmp,
        AnthropicModel(script(total)) as model,
        claude_code(Path(tmp), server_url, world, model) as process,
    ):
        async with httpx.AsyncClient(base_url=server_url, timeout=30) as http:
            measured = await answer_each(
                http,
                server_url,
                world,
                model,
                total=total,
                warmup=warmup,
                think=think,
                answers=_answers,
                read_ok=lambda _, read: "SQLite" in read,
                call_id=lambda number: f"toolu_{number}",
            )
            if process.wait(timeout=STEP_TIMEOUT) != 0:
                raise BenchError(f"claude -p exited with {process.returncode}")
    return measured, await receipt_delays(dsn, ask_ids=measured.ask_ids)


async def run_all(args: argparse.Namespace, admin: str, where: str) -> int:
    async with served_database(admin) as (server, dsn, settings):
        print(f"database: {where}; {settings}")
        print(header("Claude Code's next model request carrying the AskUserQuestion result", args))
        try:
            measured, receipts = await measure(
                server.url, dsn, asks=args.asks, warmup=args.warmup, think=args.think
            )
        except (BenchError, TimeoutError) as exc:
            print(f"FAILED: {exc!r}")
            return 1
    title = f"claude -p 2.1.318 with compass claude-hook ({len(measured.subject)} asks)"
    for line in report(title, measured, receipts, ratio="hook+Claude Code / floor"):
        print(line)
    return 0


def main(argv: list[str] | None = None) -> int:
    return _answer_to_model.main("claude_hook_latency", __doc__, argv, run_all, asks=30)


if __name__ == "__main__":
    raise SystemExit(main())
