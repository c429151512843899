"""The answer-to-model benches' shared part (claude_hook_latency, opencode_question_latency,
next_agents_mcp, next_agents_acp, next_agents_copilot): each launches its agent on a scripted
model whose turns 1..N each call the agent's ask tool once; the rest is here.

Per ask (`answer_each`): the participant (Connect-JSON over httpx, as a browser) finds it with
ListPendingAsks, opens the floor's watcher (a plain WatchAsk client with the agent's token)
and waits for its first state, lets `think` seconds pass, calls RespondToAsk and takes t0 =
time.monotonic() right after the OK arrived. The subject is when the scripted model received
the agent's next request (its tool result checked), the floor when the watcher yielded the
answered state; both from t0. Reported (`report`): p50, p99 and max of both, the ratios at
p50 and p99, and answer -> receipt stored.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import httpx

from bench._receipts import receipt_delays, receipt_line
from bench._timing import answer_latency_arguments, latency_table, machine
from bench.ask_latency import FloorWatcher
from bench.mcp_latency import STEP_TIMEOUT, BenchError, Participant
from bench.respond import run_on_database
from compass_bridge.client import AgentClient
from tests import _procs, _server
from tests.realagent.proxy import RefusingProxy
from tests.realagent.wire_models import ChatModel

if TYPE_CHECKING:
    from collections.abc import (
        AsyncGenerator,
        Awaitable,
        Callable,
        Coroutine,
        Mapping,
        Sequence,
    )
    from contextlib import AbstractAsyncContextManager

    from tests._server import SeededWorld
    from tests.realagent.model_server import Turn
    from tests.realagent.wire_models import ScriptedWire

Answers = list[dict[str, object]]
"""RespondToAsk's `answers`, as Connect-JSON."""
PROMPT = "Ask the questions you need answered."
"""The one prompt of a headless run."""


class Launched(Protocol):
    """How the tests launch a real agent (tests/realagent): its command, environment and
    working directory."""

    @property
    def argv(self) -> list[str]: ...
    @property
    def env(self) -> dict[str, str]: ...
    @property
    def cwd(self) -> Path: ...


@dataclass(frozen=True, slots=True)
class _Run:
    argv: list[str]
    env: dict[str, str]
    cwd: Path


@dataclass(slots=True)
class Answered:
    """What `answer_each` measured over the asks after the warm-up (seconds)."""

    subject: list[float] = field(default_factory=list)
    """RespondToAsk's OK -> the model's next request."""
    floor: list[float] = field(default_factory=list)
    """RespondToAsk's OK -> the floor's WatchAsk yielding the answered state."""
    asked: list[float] = field(default_factory=list)
    """The model request answered with the call -> ListPendingAsks listing its ask."""
    ask_ids: list[str] = field(default_factory=list)


def _call_id(number: int) -> str:
    return f"call_{number}"


async def answer_each(
    http: httpx.AsyncClient,
    server_url: str,
    world: SeededWorld,
    model: ScriptedWire,
    *,
    total: int,
    warmup: int,
    think: float,
    answers: Callable[[int], Answers],
    read_ok: Callable[[int, str], bool],
    call_id: Callable[[int], str] = _call_id,
) -> Answered:
    """Answer the `total` asks the agent makes, one at a time, with `answers(number)`; the
    model must read what `read_ok(number, read)` accepts (else BenchError)."""
    participant = Participant(http, world.human.token)
    agent = AgentClient(server_url, world.agent.token)
    measured = Answered()
    known: set[str] = set()
    for number in range(total):
        ask_id = await participant.new_ask(known)
        seen = time.monotonic()
        known.add(ask_id)
        watcher = FloorWatcher(agent, ask_id)
        await asyncio.wait_for(watcher.started(), STEP_TIMEOUT)
        await asyncio.sleep(think)  # a person reads the question (time itself)
        t0 = time.monotonic()
        await participant.answer(ask_id, answers(number))
        turns = await asyncio.to_thread(model.wait_for_turns, number + 2, STEP_TIMEOUT)
        await asyncio.wait_for(watcher.task, STEP_TIMEOUT)
        read = turns[number + 1].tool_result(call_id(number))
        if not read_ok(number, read):
            raise BenchError(f"ask {number}: the model read {read!r}")
        if number >= warmup and watcher.answered_at is not None:
            measured.subject.append(turns[number + 1].at - t0)
            measured.floor.append(watcher.answered_at - t0)
            measured.asked.append(seen - turns[number].at)
            measured.ask_ids.append(ask_id)
    return measured


@contextlib.asynccontextmanager
async def logged_process(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], log: Path
) -> AsyncGenerator[asyncio.subprocess.Process]:
    """`argv` running with its output in `log`; killed afterwards if still running."""
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
        )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


@contextlib.asynccontextmanager
async def agent_process(
    launch: Callable[[dict[str, str]], Launched], log: Path
) -> AsyncGenerator[asyncio.subprocess.Process]:
    """The agent `launch(the proxy's environment)` starts, every other request refused by a
    loopback proxy (tests/realagent/proxy.py), its output in `log`; killed afterwards if
    still running."""
    with RefusingProxy() as proxy:
        run = launch(proxy.env())
        async with logged_process(run.argv, cwd=run.cwd, env=run.env, log=log) as process:
            yield process


AgentLaunch: TypeAlias = (
    "Callable[[Path, ChatModel, dict[str, str]], tuple[Launched, Sequence[str]]]"
)
"""(the run's temp dir, its model, the proxy's environment) -> how to launch the agent, and
the bridge's options for it."""
Start: TypeAlias = "Callable[[Path, SeededWorld, ChatModel], AbstractAsyncContextManager[asyncio.subprocess.Process]]"


@dataclass(frozen=True, slots=True)
class Headless:
    """One headless run of an agent for PROMPT: started by `start` (in the run's temp dir, its
    output in the file `log` there, `who` in a failure's message), its model's turns
    `script(count)`: `count` calls of its ask tool, then plain text."""

    start: Start
    log: str
    who: str
    script: Callable[[int], list[Turn]]


def under_bridge(
    server_url: str, protocol: str, agent: AgentLaunch, script: Callable[[int], list[Turn]]
) -> Headless:
    """`compass agent-bridge --protocol <protocol> ... -- AGENT` for PROMPT (`agent_process`),
    the agent and the bridge's options for it from `agent`, its output in tmp/bridge.log."""

    def start(
        tmp: Path, world: SeededWorld, model: ChatModel
    ) -> AbstractAsyncContextManager[asyncio.subprocess.Process]:
        token_file = tmp / "agent.token"
        token_file.write_text(world.agent.token + "\n", encoding="utf-8")

        def bridged(proxy_env: dict[str, str]) -> Launched:
            run, bridge_args = agent(tmp, model, proxy_env)
            argv = [
                *(sys.executable, "-m", "compass_server.cli", "agent-bridge"),
                *("--protocol", protocol, "--server", server_url, "--channel", world.channel_id),
                *("--token-file", str(token_file), "--prompt", PROMPT, *bridge_args),
                *("--", *run.argv),
            ]
            return _Run(argv, {**run.env, "PYTHONUNBUFFERED": "1"}, run.cwd)

        return agent_process(bridged, tmp / "bridge.log")

    return Headless(start, "bridge.log", "the bridge", script)


def log_tail(log: Path) -> str:
    """The end of a process's log, for a failure's message."""
    return log.read_text(errors="replace")[-2000:] if log.exists() else ""


async def measure_run(
    server_url: str,
    dsn: str,
    args: argparse.Namespace,
    *,
    name: str,
    run: Headless,
    answers: Answers,
    read_ok: Callable[[int, str], bool],
) -> tuple[Answered, list[float]]:
    """`run` with `args.warmup` + `args.asks` calls on a chat-completions model, each
    answered with `answers` (`answer_each`, thinking `args.think`); then it must exit 0.
    (What was measured, answer -> receipt stored.) A failure is a BenchError with the end of
    the run's output."""
    warmup, asks = args.warmup, args.asks
    world = await _server.seed_world(dsn, prefix=f"{name}-")
    with (
        tempfile.TemporaryDirectory(prefix=f"compass-next-agents-{name}-") as tmp,
        ChatModel(run.script(warmup + asks)) as model,
    ):
        output = Path(tmp) / run.log
        async with (
            _stopping_strays(Path(tmp)),
            httpx.AsyncClient(base_url=server_url, timeout=30) as http,
            run.start(Path(tmp), world, model) as process,
        ):
            try:
                measured = await answer_each(
                    http,
                    server_url,
                    world,
                    model,
                    total=warmup + asks,
                    warmup=warmup,
                    think=args.think,
                    answers=lambda _: answers,
                    read_ok=read_ok,
                )
                code = await asyncio.wait_for(process.wait(), STEP_TIMEOUT)
            except (BenchError, TimeoutError) as exc:
                raise BenchError(f"{exc!r}; {run.who}'s output:\n{log_tail(output)}") from exc
            if code != 0:
                raise BenchError(f"{run.who} exited with {code}:\n{log_tail(output)}")
    return measured, await receipt_delays(dsn, ask_ids=measured.ask_ids)


@contextlib.asynccontextmanager
async def _stopping_strays(tmp: Path) -> AsyncGenerator[None]:
    """On the way out, after the run's own process: what it left running under `tmp`
    (Cline's hub daemon outlives the run otherwise)."""
    try:
        yield
    finally:
        _procs.stop_strays(tmp)


def header(next_request: str, args: argparse.Namespace, *, per: str = "") -> str:
    """The line saying what is measured: RespondToAsk -> `next_request`, and how often."""
    return (
        f"answer-to-model latency: RespondToAsk sent -> {next_request}; {args.asks} asks{per} "
        f"(+{args.warmup} warm-up), think {args.think:g} s"
    )


def print_setting(
    where: str, settings: str, next_request: str, args: argparse.Namespace, *, per: str = ""
) -> None:
    """The database, the machine and what is measured (`header`), each on a line."""
    print(f"database: {where}; {settings}")
    print(machine())
    print(header(next_request, args, per=per))


async def run_agent(
    label: str,
    measuring: Awaitable[tuple[Answered, list[float]]],
    *,
    title: str,
    ratio: str,
) -> bool:
    """Print the figures of `measuring` (`report`, `title` with its number of `{asks}`), or
    that `label` FAILED; whether it did not."""
    try:
        measured, receipts = await measuring
    except BenchError as exc:
        print(f"{label}: FAILED: {exc}")
        return False
    lines = report(title.format(asks=len(measured.subject)), measured, receipts, ratio=ratio)
    print("\n".join(lines), flush=True)
    return True


def report(
    title: str,
    measured: Answered,
    receipts: Sequence[float],
    *,
    ratio: str,
    extra: Sequence[str] = (),
) -> list[str]:
    """The figures: `title`, the latency table (ratio `ratio`), `extra` lines, answer ->
    receipt stored."""
    table = latency_table(
        ("model request (tool result)", measured.subject),
        ("floor (WatchAsk client)", measured.floor),
        ratio=ratio,
    )
    return [title, *table, *extra, receipt_line(receipts, len(measured.subject))]


def main(
    module: str,
    doc: str | None,
    argv: list[str] | None,
    run_all: Callable[[argparse.Namespace, str, str], Coroutine[Any, Any, int]],
    *,
    asks: int,
    more: Callable[[argparse.ArgumentParser], None] | None = None,
    per: str = "",
) -> int:
    """`python -m bench.<module>`: --asks (default `asks`), --warmup 2, --think 0.5 (and what
    `more` adds), then `run_all(args, admin DSN, where)` on a database (bench.respond)."""
    parser = argparse.ArgumentParser(
        prog=f"python -m bench.{module}", description=(doc or "").split("\n")[0]
    )
    if more is not None:
        more(parser)
    args = answer_latency_arguments(parser, argv, asks=asks, warmup=2, think=0.5, per=per)
    # SIGTERM ends the run like Ctrl-C: every child is stopped.
    return run_on_database(functools.partial(run_all, args))
