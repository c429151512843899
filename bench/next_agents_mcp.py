"""Answer-to-model latency of the next agents over Compass's MCP front door: from a person's
RespondToAsk to the agent's next model request carrying the `ask` tool's result, for Qwen
Code, OpenCode, Copilot CLI and Cline (issue 34), each against the WatchAsk floor of the same
run.

Run from the repository root:

    .venv/bin/python -m bench.next_agents_mcp                        # all four, 20 asks each
    .venv/bin/python -m bench.next_agents_mcp --agents qwen,cline --asks 50

Where the database comes from: as in bench/respond.py (`COMPASS_BENCH_DATABASE_URL`, else
`COMPASS_TEST_DATABASE_URL`, an admin DSN where a database of its own is created and dropped,
else a temporary local cluster). The agents are the pinned packages of tests/realagent/NAME
(scripts/ensure-npm), launched as tests/mcp/test_next_agents.py launches them
(tests/realagent/mcp_agents.py: the configuration docs/agents/NAME.md gives, HOME in a temp
dir, every other request refused by a loopback proxy).

Set-up, once: one `compass serve` subprocess on a fresh database. Per agent: a seeded world;
a scripted chat-completions model (tests/realagent/wire_models.ChatModel, in this process)
whose turns 1..N each call the agent's name for `ask` with a two-question ask (the second a
multi-select; the question text numbered, so no call rejoins an earlier ask) and whose turn
N+1 is plain text; and ONE headless run of the agent (`qwen -p`, `opencode run`, `copilot
-p`, `cline "..."`) making all N calls in one prompt.

Per ask: the participant (this process, Connect-JSON over httpx as a browser) finds it with
ListPendingAsks, opens the floor's watcher and waits for its first state, lets `--think`
seconds pass (default 0.5: the agent's call is waiting on /mcp by then, as it is when a person
answers), calls RespondToAsk (db: SQLite; features: Email and SSO) and takes t0 =
time.monotonic() right after the OK arrived.

- subject: the time the scripted model received the agent's next main-loop request (the one
  carrying the tool result; checked: it names SQLite), as `time.monotonic()` in this process.
  On the way: the server's change notification wakes the call's wait on /mcp, the result goes
  out on the call's SSE stream, the agent's MCP client parses it, the agent formats it for
  its model and sends the next request.
- floor: a plain WatchAsk client in this process (the bridge's AgentClient.watch_ask with the
  agent's token), opened on the same ask before the answer: when it yields the answered state.
  What any watcher of the ask pays and nothing of MCP or the agent.

Reported per agent: p50, p99 and max of both, the ratios subject/floor at p50 and p99, and
answer -> receipt stored (the database's answered_at and delivery_reported_at: /mcp writes
the receipt once the result has gone out whole). An agent that does not get through its asks
fails with a message, the others still run, and the exit code is 1.
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
from typing import TYPE_CHECKING, Any

import httpx

from bench._receipts import receipt_delays, receipt_line
from bench._timing import answer_latency_arguments, latency_table, machine
from bench.ask_latency import FloorWatcher
from bench.mcp_latency import COMMS, STEP_TIMEOUT, BenchError, Participant
from bench.respond import run_on_database, served_database
from compass_bridge.client import AgentClient
from tests import _server
from tests.realagent.mcp_agents import AGENTS, launch
from tests.realagent.model_server import Turn
from tests.realagent.proxy import RefusingProxy
from tests.realagent.wire_models import ChatModel

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from tests.realagent.mcp_agents import Name

PROMPT = "Ask the questions you need answered."


def _ask(number: int) -> dict[str, Any]:
    return {
        "questions": [
            {
                "id": "db",
                "question": f"Which database for service {number}?",
                "options": [{"label": "Postgres"}, {"label": "SQLite"}],
            },
            {
                "id": "features",
                "question": "Which auth flows ship in v1?",
                "options": [{"label": "Email"}, {"label": "OAuth"}, {"label": "SSO"}],
                "multi": True,
            },
        ]
    }


def script(name: Name, count: int) -> list[Turn]:
    calls = [Turn.call(AGENTS[name].tool, _ask(n), f"call_{n}") for n in range(count)]
    return [*calls, Turn.say("All set.")]


async def respond(http: httpx.AsyncClient, token: str, ask_id: str) -> None:
    """db: SQLite; features: Email and SSO."""
    answers = [
        {"questionId": "db", "chosenOptionIds": ["1"]},
        {"questionId": "features", "chosenOptionIds": ["0", "2"]},
    ]
    reply = await http.post(
        f"{COMMS}/RespondToAsk",
        json={"askId": ask_id, "answers": answers},
        headers={"authorization": f"Bearer {token}", "content-type": "application/json"},
    )
    reply.raise_for_status()


@contextlib.asynccontextmanager
async def agent_process(
    name: Name, tmp: Path, server_url: str, token: str, model: ChatModel
) -> AsyncGenerator[asyncio.subprocess.Process]:
    """The agent running PROMPT, its output in tmp/agent.log; killed afterwards if still
    running."""
    with RefusingProxy() as proxy:
        run = launch(
            name,
            tmp,
            mcp_url=f"{server_url}mcp",
            token=token,
            model_url=model.base_url,
            proxy_env=proxy.env(),
            prompt=PROMPT,
        )
        with (tmp / "agent.log").open("wb") as log:
            process = await asyncio.create_subprocess_exec(
                *run.argv,
                cwd=run.cwd,
                env=run.env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
            )
        try:
            yield process
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()


def _log_tail(tmp: Path) -> str:
    log = tmp / "agent.log"
    return log.read_text(errors="replace")[-2000:] if log.exists() else ""


async def measure(
    name: Name, server_url: str, dsn: str, *, asks: int, warmup: int, think: float
) -> tuple[list[float], list[float], list[float]]:
    world = await _server.seed_world(dsn, prefix=f"{name}-")
    subject: list[float] = []
    floor: list[float] = []
    measured: list[str] = []
    known: set[str] = set()
    total = warmup + asks
    with (
        tempfile.TemporaryDirectory(prefix=f"compass-next-agents-{name}-") as tmp,
        ChatModel(script(name, total)) as model,
    ):
        async with (
            httpx.AsyncClient(base_url=server_url, timeout=30) as http,
            agent_process(name, Path(tmp), server_url, world.agent.token, model) as process,
        ):
            participant = Participant(http, world.human.token)
            agent = AgentClient(server_url, world.agent.token)
            try:
                for number in range(total):
                    ask_id = await participant.new_ask(known)
                    known.add(ask_id)
                    watcher = FloorWatcher(agent, ask_id)
                    await asyncio.wait_for(watcher.started(), STEP_TIMEOUT)
                    await asyncio.sleep(think)  # a person reads the question (time itself)
                    t0 = time.monotonic()
                    await respond(http, world.human.token, ask_id)
                    turns = await asyncio.to_thread(model.wait_for_turns, number + 2, STEP_TIMEOUT)
                    await asyncio.wait_for(watcher.task, STEP_TIMEOUT)
                    read = turns[number + 1].tool_result(f"call_{number}")
                    if "SQLite" not in read or "SSO" not in read:
                        raise BenchError(f"ask {number}: the model read {read!r}")
                    if number >= warmup and watcher.answered_at is not None:
                        subject.append(turns[number + 1].at - t0)
                        floor.append(watcher.answered_at - t0)
                        measured.append(ask_id)
                code = await asyncio.wait_for(process.wait(), STEP_TIMEOUT)
            except (BenchError, TimeoutError) as exc:
                raise BenchError(f"{exc!r}; the agent's output:\n{_log_tail(Path(tmp))}") from exc
            if code != 0:
                raise BenchError(f"exited with {code}:\n{_log_tail(Path(tmp))}")
    return subject, floor, await receipt_delays(dsn, ask_ids=measured)


def report(name: Name, subject: list[float], floor: list[float], receipts: list[float]) -> str:
    title = f"{name}: {AGENTS[name].title} over /mcp ({len(subject)} asks)"
    table = latency_table(
        ("model request (tool result)", subject),
        ("floor (WatchAsk client)", floor),
        ratio=f"{name} over MCP / floor",
    )
    return "\n".join([title, *table, receipt_line(receipts, len(subject))])


async def run_all(args: argparse.Namespace, admin: str, where: str) -> int:
    failed: list[str] = []
    async with served_database(admin) as (server, dsn, settings):
        print(f"database: {where}; {settings}")
        print(machine())
        print(
            "answer-to-model latency: RespondToAsk sent -> the agent's next model request "
            f"carrying the `ask` result; {args.asks} asks per agent (+{args.warmup} warm-up), "
            f"think {args.think:g} s"
        )
        for name in args.agents:
            try:
                subject, floor, receipts = await measure(
                    name, server.url, dsn, asks=args.asks, warmup=args.warmup, think=args.think
                )
            except BenchError as exc:
                failed.append(name)
                print(f"{name}: FAILED: {exc}")
                continue
            print(report(name, subject, floor, receipts), flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _agents(value: str) -> list[str]:
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in AGENTS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(AGENTS)} (got {value!r})")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.next_agents_mcp", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument(
        "--agents",
        type=_agents,
        default=list(AGENTS),
        help=f"comma-separated, from {', '.join(AGENTS)} (default all)",
    )
    args = answer_latency_arguments(parser, argv, asks=20, warmup=2, think=0.5, per=" per agent")
    # SIGTERM ends the run like Ctrl-C: every child is stopped.
    return run_on_database(functools.partial(run_all, args))


if __name__ == "__main__":
    raise SystemExit(main())
