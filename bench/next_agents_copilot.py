"""Answer-to-model latency of GitHub Copilot CLI's own `ask_user` over `compass agent-bridge
--protocol copilot`: from a person's RespondToAsk to Copilot's next model request carrying the
tool's result, against the WatchAsk floor of the same run (issue 34).

Run from the repository root:

    .venv/bin/python -m bench.next_agents_copilot                  # 20 asks
    .venv/bin/python -m bench.next_agents_copilot --asks 50 --think 0

Where the database comes from: as in bench/respond.py (`COMPASS_BENCH_DATABASE_URL`, else
`COMPASS_TEST_DATABASE_URL`, an admin DSN where a database of its own is created and dropped,
else a temporary local cluster). The agent is the pinned package of tests/realagent/copilot
(scripts/ensure-npm), launched as tests/realagent/test_copilot_native.py launches it
(tests/realagent/copilot_native.copilot_launch: HOME in a temp dir, offline, its BYOK
variables at the scripted model, every other request refused by a loopback proxy), under
the bridge as docs/agents/copilot-cli.md gives it (`--protocol copilot -- copilot`).

Set-up, once: one `compass serve` subprocess on a fresh database, a seeded world, a scripted
chat-completions model (tests/realagent/wire_models.ChatModel, in this process) whose turns
1..N each call `ask_user` with one numbered question and two choices and whose turn N+1 is
plain text, and ONE bridge process running Copilot CLI for one prompt that makes all N calls.

Per ask: the participant (this process, Connect-JSON over httpx as a browser) finds it with
ListPendingAsks, opens the floor's watcher and waits for its first state, lets `--think`
seconds pass (default 0.5: the bridge is following the ask by then, as it is when a person
answers), calls RespondToAsk (SQLite) and takes t0 = time.monotonic() right after the OK
arrived.

- subject: the time the scripted model received Copilot's next main-loop request (checked:
  its tool result is exactly `User selected: SQLite`). On the way: the server's change
  notification wakes the bridge's WatchAsk, the bridge sends `session.ui.handlePendingUserInput`
  over the CLI's stdin, Copilot completes the tool call and sends the next request.
- floor: a plain WatchAsk client in this process (the bridge's AgentClient.watch_ask with the
  agent's token), opened on the same ask before the answer: when it yields the answered state.

Reported: p50, p99 and max of both, the ratios subject/floor at p50 and p99, and answer ->
receipt stored (the database's answered_at and delivery_reported_at: the bridge reports once
the call's `tool.execution_complete` carried what the model read).
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
from tests.realagent.copilot_native import VERSION, copilot_launch
from tests.realagent.model_server import Turn
from tests.realagent.proxy import RefusingProxy
from tests.realagent.wire_models import ChatModel

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

PROMPT = "Ask the questions you need answered."
TITLE = f"Copilot CLI {VERSION}"
READ = "User selected: SQLite"
"""What the model must read for each answer (checked on every ask)."""


def _ask(number: int) -> dict[str, Any]:
    return {"question": f"Which database for service {number}?", "choices": ["Postgres", "SQLite"]}


def script(count: int) -> list[Turn]:
    calls = [Turn.call("ask_user", _ask(n), f"call_{n}") for n in range(count)]
    return [*calls, Turn.say("All set.")]


async def respond(http: httpx.AsyncClient, token: str, ask_id: str) -> None:
    """SQLite."""
    answers = [{"questionId": "answer", "chosenOptionIds": ["1"]}]
    reply = await http.post(
        f"{COMMS}/RespondToAsk",
        json={"askId": ask_id, "answers": answers},
        headers={"authorization": f"Bearer {token}", "content-type": "application/json"},
    )
    reply.raise_for_status()


@contextlib.asynccontextmanager
async def bridge_process(
    tmp: Path, server_url: str, world: _server.SeededWorld, model: ChatModel
) -> AsyncGenerator[asyncio.subprocess.Process]:
    """`compass agent-bridge --protocol copilot ... -- copilot`, its output in tmp/bridge.log;
    killed afterwards if still running."""
    token_file = tmp / "agent.token"
    token_file.write_text(world.agent.token + "\n", encoding="utf-8")
    with RefusingProxy() as proxy:
        launch = copilot_launch(tmp, model.base_url, proxy.env())
        argv = [
            *(sys.executable, "-m", "compass_server.cli", "agent-bridge", "--protocol", "copilot"),
            *("--server", server_url, "--channel", world.channel_id),
            *("--token-file", str(token_file), "--prompt", PROMPT),
            *("--", *launch.argv),
        ]
        with (tmp / "bridge.log").open("wb") as log:
            process = await asyncio.create_subprocess_exec(
                *argv,
                cwd=launch.cwd,
                env={**launch.env, "PYTHONUNBUFFERED": "1"},
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
    log = tmp / "bridge.log"
    return log.read_text(errors="replace")[-2000:] if log.exists() else ""


async def measure(
    server_url: str, dsn: str, *, asks: int, warmup: int, think: float
) -> tuple[list[float], list[float], list[float]]:
    world = await _server.seed_world(dsn, prefix="copilot-")
    subject: list[float] = []
    floor: list[float] = []
    measured: list[str] = []
    known: set[str] = set()
    total = warmup + asks
    with (
        tempfile.TemporaryDirectory(prefix="compass-next-agents-copilot-") as tmp,
        ChatModel(script(total)) as model,
    ):
        async with (
            httpx.AsyncClient(base_url=server_url, timeout=30) as http,
            bridge_process(Path(tmp), server_url, world, model) as process,
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
                    if read != READ:
                        raise BenchError(f"ask {number}: the model read {read!r}")
                    if number >= warmup and watcher.answered_at is not None:
                        subject.append(turns[number + 1].at - t0)
                        floor.append(watcher.answered_at - t0)
                        measured.append(ask_id)
                code = await asyncio.wait_for(process.wait(), STEP_TIMEOUT)
            except (BenchError, TimeoutError) as exc:
                raise BenchError(f"{exc!r}; the bridge's output:\n{_log_tail(Path(tmp))}") from exc
            if code != 0:
                raise BenchError(f"the bridge exited with {code}:\n{_log_tail(Path(tmp))}")
    return subject, floor, await receipt_delays(dsn, ask_ids=measured)


def report(subject: list[float], floor: list[float], receipts: list[float]) -> str:
    title = (
        f"copilot: {TITLE}, its own ask_user (agent-bridge --protocol copilot; {len(subject)} asks)"
    )
    table = latency_table(
        ("model request (tool result)", subject),
        ("floor (WatchAsk client)", floor),
        ratio="copilot's ask_user / floor",
    )
    return "\n".join([title, *table, receipt_line(receipts, len(subject))])


async def run_all(args: argparse.Namespace, admin: str, where: str) -> int:
    async with served_database(admin) as (server, dsn, settings):
        print(f"database: {where}; {settings}")
        print(machine())
        print(
            "answer-to-model latency: RespondToAsk sent -> Copilot's next model request "
            f"carrying the `ask_user` result; {args.asks} asks (+{args.warmup} "
            f"warm-up), think {args.think:g} s"
        )
        try:
            subject, floor, receipts = await measure(
                server.url, dsn, asks=args.asks, warmup=args.warmup, think=args.think
            )
        except BenchError as exc:
            print(f"copilot: FAILED: {exc}")
            return 1
        print(report(subject, floor, receipts), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.next_agents_copilot", description=(__doc__ or "").split("\n")[0]
    )
    args = answer_latency_arguments(parser, argv, asks=20, warmup=2, think=0.5)
    # SIGTERM ends the run like Ctrl-C: every child is stopped.
    return run_on_database(functools.partial(run_all, args))


if __name__ == "__main__":
    raise SystemExit(main())
