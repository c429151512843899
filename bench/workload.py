"""A workload that looks like real use: agents ask, people watch and answer, over real HTTP.

Run from the repository root:

    .venv/bin/python -m bench.workload                      # 16 agents, 3 rounds of 6 s
    .venv/bin/python -m bench.workload --agents 32 --think 0.05

Where the database comes from: as bench.respond (`COMPASS_BENCH_DATABASE_URL`, else
`COMPASS_TEST_DATABASE_URL`, else a temporary local cluster; a database of its own, dropped
afterwards).

The world: `--agents` agent accounts, each posting in a channel of its own, and one person
per channel. Each agent loops: think (`--think` seconds, +-50% jitter), AppendMessage with a
2-question ask (the tests' DEFAULT_ASK), then WatchAsk on it until it is answered. Each person holds a WatchChannel on
their channel and, for every ask it shows them that is still pending, re-reads their inbox
(ListPendingAsks, as the browser does on every change) and answers (RespondToAsk). Everything
is Connect-JSON over httpx, one kept-alive client per agent and per person (the browser and
the bridge each hold their own connections).

Measured per set-up, over `--seconds` after `--warmup` seconds of the same load (the clients
are this one Python process: on a small machine they compete with the servers for CPU, and
the report says how much each took):
- asks answered and delivered per second (an ask counts when its agent's WatchAsk yielded
  the answered state);
- p50/p99 from just before the AppendMessage to that moment (post, notify, the person's
  watch, inbox read, answer, notify, the agent's watch: the whole round);
- server CPU per ask: user + system time of every server process (a supervisor and its
  workers) over the window, divided by the asks; and, as shares of one core, each server
  process's CPU, PostgreSQL's (every `postgres` process on this machine: on a shared machine
  that includes other databases' work), the clients' (this process), everything else's,
  and the machine's busy total (/proc/stat).

The set-ups, on one database (each its own channels and accounts), in interleaved rounds:
- `1 worker`: `compass serve` (COMPASS_WORKERS=1);
- `2 workers`: `compass serve` with COMPASS_WORKERS=2;
- `2 processes`: two `compass serve` (1 worker each) on the database, each agent talking to
  one and its person to the other, so every change crosses between them through PostgreSQL.

Printed: two lines per set-up and the ratios 2 workers / 1 worker and 2 processes / 1 worker
(asks/s). Which wall comes first shows in the same lines: a worker near 100% of a core is
the CPU wall of one process; the machine busy near all its cores is the machine's (then the
shares say who took it); asks/s flat while neither is, is the database (commits that NOTIFY
serialise on PostgreSQL's notification queue lock) or the pool (COMPASS_DB_POOL_MAX).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from bench._timing import KEEPALIVE_EXPIRY_SECONDS, load_average, machine
from bench.respond import Child, admin_dsn, bench_database, commit_settings, serve_argv
from compass_server.transport.connect_protocol import FLAG_END_STREAM, EnvelopeReader, envelope
from tests._procs import children, cpu_seconds
from tests.e2e._asks import DEFAULT_ASK, answer, append_request

LIMITS = httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_SECONDS)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Sequence

AGENT = "compass.v1.AgentService"
COMMS = "compass.v1.CommsService"
ANSWERS = [answer("db", "0"), answer("features", "0", "1")]
STEP_TIMEOUT = 30.0


class WorkloadError(Exception):
    """A call failed: the bench stops (every call must succeed)."""


# -- Connect-JSON ----------------------------------------------------------------------------


def _headers(token: str, content_type: str) -> dict[str, str]:
    return {"content-type": content_type, "authorization": f"Bearer {token}"}


async def unary(
    http: httpx.AsyncClient, service: str, method: str, body: object, token: str
) -> dict[str, Any]:
    response = await http.post(
        f"/{service}/{method}",
        content=json.dumps(body, separators=(",", ":")).encode(),
        headers=_headers(token, "application/json"),
    )
    if response.status_code != 200:
        raise WorkloadError(f"{method}: {response.status_code} {response.text[:300]}")
    result: dict[str, Any] = response.json()
    return result


async def stream(
    http: httpx.AsyncClient, service: str, method: str, body: object, token: str
) -> AsyncGenerator[dict[str, Any]]:
    """A server stream's messages (decoded JSON); WorkloadError on an error end."""
    request = http.build_request(
        "POST",
        f"/{service}/{method}",
        content=envelope(json.dumps(body).encode()),
        headers=_headers(token, "application/connect+json"),
        timeout=httpx.Timeout(STEP_TIMEOUT, read=None),
    )
    response = await http.send(request, stream=True)
    try:
        if response.status_code != 200:
            await response.aread()
            raise WorkloadError(f"{method}: {response.status_code} {response.text[:300]}")
        reader = EnvelopeReader()
        async for chunk in response.aiter_raw():
            for frame in reader.feed(chunk):
                doc: dict[str, Any] = json.loads(frame.payload or b"{}")
                if frame.flags & FLAG_END_STREAM:
                    if doc.get("error"):
                        raise WorkloadError(f"{method} ended: {doc['error']}")
                    return
                yield doc
    finally:
        await response.aclose()


# -- the world -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pair:
    """An agent and the person answering it, in their channel."""

    channel_id: str
    agent_token: str
    person_token: str


@dataclass(frozen=True, slots=True)
class Setup:
    name: str
    children: tuple[Child, ...]
    agent_urls: tuple[str, ...]
    """Where agent i talks: agent_urls[i % len]."""
    person_urls: tuple[str, ...]
    pairs: tuple[Pair, ...]


async def make_pairs(dsn: str, count: int, label: str) -> tuple[Pair, ...]:
    from compass_server.store import AccountKind
    from compass_server.store.postgres import PostgresStore

    async with PostgresStore(dsn, pool_min=1, pool_max=4) as store:
        workspace = await store.create_workspace(f"workload {label}")

        async def pair(index: int) -> Pair:
            channel = await store.create_channel(workspace.workspace_id, f"c{index}")
            agent, agent_token = await store.create_account(AccountKind.AGENT, f"agent {index}")
            person, person_token = await store.create_account(AccountKind.HUMAN, f"person {index}")
            for account in (agent, person):
                await store.add_participant(channel.channel_id, account.account_id)
            return Pair(channel.channel_id, agent_token, person_token)

        return tuple(await asyncio.gather(*(pair(i) for i in range(count))))


# -- one block of load -----------------------------------------------------------------------


@dataclass
class Tally:
    measuring_from: float = float("inf")
    measuring_until: float = float("inf")
    latencies: list[float] = field(default_factory=list[float])
    errors: list[BaseException] = field(default_factory=list[BaseException])

    def done(self, posted: float, delivered: float) -> None:
        if self.measuring_from <= delivered <= self.measuring_until:
            self.latencies.append(delivered - posted)


async def agent_loop(url: str, pair: Pair, think: float, tally: Tally) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=STEP_TIMEOUT, limits=LIMITS) as http:
        while True:
            await asyncio.sleep(think * random.uniform(0.5, 1.5))  # noqa: S311 - jitter
            posted = time.perf_counter()
            appended = await unary(
                http,
                AGENT,
                "AppendMessage",
                append_request(pair.channel_id, DEFAULT_ASK),
                pair.agent_token,
            )
            ask_id = appended["message"]["blocks"][0]["ask"]["askId"]
            async with contextlib.aclosing(
                stream(http, AGENT, "WatchAsk", {"askId": ask_id}, pair.agent_token)
            ) as states:
                async for state in states:
                    if state["ask"].get("status") == "ASK_STATUS_ANSWERED":
                        tally.done(posted, time.perf_counter())
                        break
                else:
                    raise WorkloadError(f"WatchAsk {ask_id} ended before the answer")


async def person_loop(url: str, pair: Pair, tally: Tally) -> None:
    answered: set[str] = set()
    async with httpx.AsyncClient(base_url=url, timeout=STEP_TIMEOUT, limits=LIMITS) as http:
        channel = stream(
            http, COMMS, "WatchChannel", {"channelId": pair.channel_id}, pair.person_token
        )
        async with contextlib.aclosing(channel) as changes:
            async for change in changes:
                pending = [
                    block["ask"]["askId"]
                    for block in (change.get("message") or {}).get("blocks", [])
                    if "ask" in block
                    and block["ask"].get("status", "ASK_STATUS_PENDING") == "ASK_STATUS_PENDING"
                    and block["ask"]["askId"] not in answered
                ]
                if not pending:
                    continue
                await unary(http, COMMS, "ListPendingAsks", {}, pair.person_token)  # the inbox
                for ask_id in pending:
                    answered.add(ask_id)
                    await unary(
                        http,
                        COMMS,
                        "RespondToAsk",
                        {"askId": ask_id, "answers": ANSWERS},
                        pair.person_token,
                    )


@dataclass(frozen=True, slots=True)
class Block:
    asks: int
    seconds: float
    latencies: tuple[float, ...]
    cpu: dict[str, float]
    """Process label -> CPU seconds over the window."""
    postgres_cpu: float
    client_cpu: float
    """This process (every agent and person) over the window."""
    machine_cpu: float
    """Every CPU of the machine, busy seconds over the window (/proc/stat)."""
    kernel_cpu: float
    """Of which interrupts (network softirqs on loopback) and time stolen by the hypervisor."""

    @property
    def rate(self) -> float:
        return self.asks / self.seconds


async def run_block(setup: Setup, args: argparse.Namespace) -> Block:
    tally = Tally()
    tasks: list[asyncio.Task[None]] = []
    for index, pair in enumerate(setup.pairs):
        person_url = setup.person_urls[index % len(setup.person_urls)]
        agent_url = setup.agent_urls[index % len(setup.agent_urls)]
        tasks.append(asyncio.create_task(person_loop(person_url, pair, tally)))
        tasks.append(asyncio.create_task(agent_loop(agent_url, pair, args.think, tally)))

    def failed() -> BaseException | None:
        for task in tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:
                return task.exception()
        return None

    try:
        await asyncio.sleep(args.warmup)
        pids = server_pids(setup)
        cpu_before = {label: cpu_seconds(pid) for label, pid in pids.items()}
        postgres_before, client_before, machine_before = postgres_cpu(), own_cpu(), busy_cpu()
        tally.measuring_from = start = time.perf_counter()
        await asyncio.sleep(args.seconds)
        tally.measuring_until = end = time.perf_counter()
        cpu = {label: cpu_seconds(pid) - cpu_before[label] for label, pid in pids.items()}
        postgres = postgres_cpu() - postgres_before
        client = own_cpu() - client_before
        busy = tuple(
            after - before for after, before in zip(busy_cpu(), machine_before, strict=True)
        )
        if (error := failed()) is not None:
            raise WorkloadError(f"{setup.name}: {error!r}") from error
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return Block(
        asks=len(tally.latencies),
        seconds=end - start,
        latencies=tuple(tally.latencies),
        cpu=cpu,
        postgres_cpu=postgres,
        client_cpu=client,
        machine_cpu=busy[0],
        kernel_cpu=busy[1],
    )


# -- processes -------------------------------------------------------------------------------


def server_pids(setup: Setup) -> dict[str, int]:
    """Every server process of the set-up: each child and, for a supervisor, its workers."""
    found: dict[str, int] = {}
    for number, child in enumerate(setup.children):
        found[f"p{number}"] = child.process.pid
        for index, pid in enumerate(children(child.process.pid)):
            found[f"p{number}w{index}"] = pid
    return found


def own_cpu() -> float:
    times = os.times()
    return times.user + times.system


def busy_cpu() -> tuple[float, float]:
    """Busy CPU seconds of the whole machine so far (every CPU; /proc/stat, less idle), and
    of those the interrupts' and the time the hypervisor stole."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(fields[:8]) - idle) / tick, sum(fields[5:8]) / tick  # irq, softirq, steal


def postgres_cpu() -> float:
    """CPU seconds of every process named postgres on this machine (live ones only)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "comm").read_text().strip() == "postgres":
                    total += cpu_seconds(int(entry.name))
    return total


# -- report ----------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


CPU_TARGET = 1.1
"""Server CPU per ask with 2 workers against 1 (docs/operating/capacity.md)."""


def cpu_per_ask(blocks: Sequence[Block]) -> float:
    asks = sum(b.asks for b in blocks)
    return sum(sum(b.cpu.values()) for b in blocks) / asks if asks else float("nan")


def line(name: str, blocks: Sequence[Block]) -> str:
    asks = sum(b.asks for b in blocks)
    seconds = sum(b.seconds for b in blocks)
    latencies = [x for b in blocks for x in b.latencies]
    server = sum(sum(b.cpu.values()) for b in blocks)
    shares: dict[str, float] = {}
    for block in blocks:
        for label, used in block.cpu.items():
            shares[label] = shares.get(label, 0.0) + used
    busy = ", ".join(
        f"{label} {used / seconds * 100:.0f}%" for label, used in sorted(shares.items()) if used
    )
    postgres = sum(b.postgres_cpu for b in blocks) / seconds * 100
    client = sum(b.client_cpu for b in blocks) / seconds * 100
    machine_busy = sum(b.machine_cpu for b in blocks) / seconds * 100
    kernel = sum(b.kernel_cpu for b in blocks) / seconds * 100
    others = machine_busy - server / seconds * 100 - postgres - client - kernel
    return (
        f"  {name:<12} {asks / seconds:7.1f} asks/s  p50 {percentile(latencies, 0.5) * 1e3:6.1f} ms"
        f"  p99 {percentile(latencies, 0.99) * 1e3:6.1f} ms  server CPU/ask "
        f"{(server / asks * 1e3) if asks else float('nan'):5.2f} ms\n"
        f"  {'':<12} CPU, % of one core: server {busy}; postgres {postgres:.0f}%; "
        f"the clients {client:.0f}%; interrupts and steal {kernel:.0f}%; "
        f"everything else {max(others, 0):.0f}%; "
        f"machine busy {machine_busy:.0f}% of {os.cpu_count() or 1}00%"
    )


async def run(args: argparse.Namespace, admin: str, where: str) -> int:
    async with bench_database(admin) as dsn:
        settings = await commit_settings(dsn)
        print(f"database: {where}; {settings}")
        print(machine())
        env = {k: v for k, v in os.environ.items() if not k.startswith("COMPASS_")} | {
            "COMPASS_DATABASE_URL": dsn,
            "COMPASS_DB_POOL_MAX": str(args.pool),
            "COMPASS_MAX_CONNECTIONS_PER_CLIENT": "0",
            "COMPASS_SWEEP_INTERVAL_SECONDS": "5",
            "COMPASS_WEBHOOK_POLL_SECONDS": "5",
        }
        with contextlib.ExitStack() as stack:

            def start(workers: int) -> Child:
                child = Child(serve_argv(), env | {"COMPASS_WORKERS": str(workers)})
                stack.callback(child.stop)
                return child

            one, two = start(1), start(2)
            left, right = start(1), start(1)
            setups = [
                Setup(
                    "1 worker",
                    (one,),
                    (one.url,),
                    (one.url,),
                    await make_pairs(dsn, args.agents, "a"),
                ),
                Setup(
                    "2 workers",
                    (two,),
                    (two.url,),
                    (two.url,),
                    await make_pairs(dsn, args.agents, "b"),
                ),
                Setup(
                    "2 processes",
                    (left, right),
                    (left.url, right.url),
                    (right.url, left.url),  # each change crosses to the other process
                    await make_pairs(dsn, args.agents, "c"),
                ),
            ]
            print(
                f"workload: {args.agents} agents in {args.agents} channels, one person each; "
                f"think {args.think:g} s; {args.rounds} interleaved rounds of {args.seconds:g} s "
                f"(+{args.warmup:g} s warm-up); pool {args.pool} per process"
            )
            results: dict[str, list[Block]] = {s.name: [] for s in setups}
            for round_number in range(args.rounds):
                shift = round_number % len(setups)
                for setup in setups[shift:] + setups[:shift]:
                    results[setup.name].append(await run_block(setup, args))
        for name, blocks in results.items():
            print(line(name, blocks))
        print(f"  (at the end: {load_average()})")
        base = results["1 worker"]
        for name in ("2 workers", "2 processes"):
            ratios = [b.rate / o.rate for b, o in zip(results[name], base, strict=True) if o.rate]
            print(
                f"ratio {name} / 1 worker (asks/s): "
                f"{statistics.median(ratios) if ratios else float('nan'):.2f} median of "
                "per-round ratios (no target on 2 cores: the clients and PostgreSQL share them)"
            )
        print(
            f"ratio 2 workers / 1 worker (server CPU per ask): "
            f"{cpu_per_ask(results['2 workers']) / cpu_per_ask(base):.2f} "
            f"(target <= {CPU_TARGET}: a second worker costs no extra CPU per ask)"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.workload", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--agents", type=int, default=16, help="agents (= channels = people)")
    parser.add_argument(
        "--think", type=float, default=0.1, help="an agent's think time between asks, s"
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--seconds", type=float, default=6.0, help="measured seconds per block")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before measuring")
    parser.add_argument("--pool", type=int, default=10, help="COMPASS_DB_POOL_MAX per process")
    args = parser.parse_args(argv)
    if args.agents < 1 or args.rounds < 1 or args.seconds <= 0 or args.think < 0:
        parser.error("--agents and --rounds must be >= 1, --seconds > 0, --think >= 0")
    try:
        with admin_dsn() as (admin, where):
            return asyncio.run(run(args, admin, where))
    except WorkloadError as exc:
        print(f"workload failed: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
