"""RespondToAsk answers/s end to end, against two floors measured in the same run.

Run from the repository root:

    .venv/bin/python -m bench.respond               # answers/s for each side, and the ratio
    .venv/bin/python -m bench.respond --check       # also exits 1 when the ratio is < 0.9

Where the database comes from: `COMPASS_BENCH_DATABASE_URL`, else `COMPASS_TEST_DATABASE_URL`
(an admin DSN: the bench creates a database of its own there and drops it afterwards), else a
temporary local cluster (compass_server.embedded, durability settings off). The PostgreSQL
settings that decide the cost of a commit (fsync, synchronous_commit) are printed.

One counted event is one successful RespondToAsk answering a 2-question ask (the runtime's
gallery ask: a single-select question with 3 options and a multi-select one with 4; the
answer picks one and two options). `--clients` (default 32) clients run at once, each
answering asks of its own channel (so clients do not queue on each other's channel lock).
What each side does per event:

- respond: the product. `compass serve` (a subprocess, exactly as a user starts it, with a
  pool of `--pool` connections) on the bench database; the clients are tasks in this process,
  each with its own httpx AsyncClient (one keep-alive connection; a single AsyncClient shared
  by 32 tasks costs more in its own pool than the requests do), POSTing Connect-JSON
  RespondToAsk with a bearer token for an unanswered ask. The server authenticates the token
  (from its token cache once it has seen it), answers and notifies watchers.
- echo (floor 1): the same request through the same stack without a database: the same
  client, uvicorn as `compass serve` configures it (its connection guard, keep-alive and
  logging), Starlette routes, ConnectGate (authentication is an in-memory token lookup),
  connectrpc with the hardened codecs and the product's interceptors (the per-RPC observer:
  metrics and the access line; the error mapping); the handler returns
  `RespondToAskResponse{}` at once. A subprocess built here from the product's pieces
  (`serve-echo`); nothing of it is part of the product. (Until 2026-12-05 the echo ran
  without the observer and the connection guard: a floor below what any RPC of the product
  costs.)
- sql (floor 2): exactly the statements one RespondToAsk issues, with asyncpg from
  `--clients` concurrent tasks in this process, on connections taken the way the store takes
  them (a PostgresStore with a pool of `--pool`: same pool set-up, acquisition, reset on
  release and error translation): the two statements of PostgresStore.answer_ask
  on an uncontended ask (select the ask with participation and the channel revision; then
  one statement that bumps the revision if unchanged, writes the answer, touches the message
  and NOTIFYs). The SQL text is the store's own constants and the parameters are what the
  server sends; none of the store's Python work (decoding stored blocks, validating,
  building the answered Ask). When answer_ask's statements change, `sql_side` must change
  with them.

The two floors compose serially: a RespondToAsk cannot cost less than the stack plus the
SQL, so the composed floor is 1/(1/echo + 1/sql) answers/s, and the figure of merit is
respond / composed floor (1.0 = the server adds nothing beyond the two; target >= 0.9).

- respond, N workers (`--workers N`, default 2; 1 skips it): the same requests to a second
  `compass serve` with COMPASS_WORKERS=N (its pools, N x `--pool`), in the same interleaved
  rounds, on a database of its own prepared the same way (so the servers' change listeners
  never parse each other's notifications). Figures: N workers / 1 worker in answers/s (no
  target: on 2 cores the clients and PostgreSQL take more than a core, so how throughput
  scales with cores is modelled from the CPU per answer, docs/operating/capacity.md) and in
  server CPU per answer (target <= 1.1: a worker more costs no extra CPU per answer).
Database round trips per answer are counted, not assumed: after the timed rounds one more
`compass serve` answers a few asks with its pool behind a counting proxy (bench/_pgcount.py:
every Sync or simple Query the server sends is one wait on the database), and the bench prints
the count per answer, the token lookup included.

What is left is the server's own work per answer: decoding the stored blocks, domain
validation, building the Ask, protobuf <-> JSON, and handing off between HTTP and database.

Rounds are interleaved (every round times each side once, in an order that rotates), each
for `--seconds`; between blocks, the asks a block answered are reset to unanswered (not
timed), so every block answers fresh asks. Reported: best and median answers/s per side;
the ratio best-against-best and as the median of the per-round ratios (each round's blocks
ran next to each other). Every call must succeed, else the bench stops.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import asyncpg
import httpx

from bench._pgcount import RoundTripCounter
from bench._timing import KEEPALIVE_EXPIRY_SECONDS, Rate, load_average, machine, report
from compass_server.cli.demo import GALLERY_ASK_ARGS
from tests import _procs

if TYPE_CHECKING:
    import socket
    from collections.abc import (
        AsyncGenerator,
        Awaitable,
        Callable,
        Coroutine,
        Generator,
        Sequence,
    )

    from connectrpc.request import RequestContext
    from starlette.applications import Starlette
    from starlette.types import ASGIApp

    from compass_server.config import Settings
    from compass_server.store.postgres import PostgresStore

ROOT = Path(__file__).resolve().parent.parent
TARGET = 0.9
WORKERS_CPU_TARGET = 1.1
READY_PREFIXES = ("Compass is running at ", "echo listening at ")
RPC_PATH = "/compass.v1.CommsService/RespondToAsk"

ANSWERS: list[dict[str, object]] = [
    {"questionId": "db", "chosenOptionIds": ["0"]},
    {"questionId": "features", "chosenOptionIds": ["0", "1"]},
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Ask:
    ask_id: str
    message_id: str
    channel_id: str

    def body(self) -> bytes:
        return json.dumps(
            {"askId": self.ask_id, "answers": ANSWERS}, separators=(",", ":")
        ).encode()


@dataclass(frozen=True, slots=True, kw_only=True)
class World:
    dsn: str
    token: str
    account_id: str
    asks: tuple[tuple[Ask, ...], ...]
    """Per client: the asks of its channel."""


# -- database --------------------------------------------------------------------------------


@contextlib.contextmanager
def admin_dsn() -> Generator[tuple[str, str]]:
    """(admin DSN, where it came from)."""
    for name in ("COMPASS_BENCH_DATABASE_URL", "COMPASS_TEST_DATABASE_URL"):
        if os.environ.get(name):
            yield os.environ[name], name
            return
    from compass_server.embedded import LocalPostgres

    with LocalPostgres.temporary() as pg:
        yield pg.dsn, f"a temporary local cluster ({pg.config.data_dir})"


def run_on_database(run: Callable[[str, str], Coroutine[Any, Any, int]]) -> int:
    """`run(admin DSN, where it came from)` in asyncio, its exit code; SIGTERM ends it like
    Ctrl-C, and either is exit code 130 (every child the run started is stopped on the way
    out)."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        with admin_dsn() as (admin, where):
            return asyncio.run(run(admin, where))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


@contextlib.asynccontextmanager
async def bench_database(admin: str) -> AsyncGenerator[str]:
    from compass_server.store.migrate import migrate

    name = f"compass_bench_{uuid.uuid4().hex[:10]}"
    conn = await asyncpg.connect(admin)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    dsn = with_database(admin, name)
    try:
        conn = await asyncpg.connect(dsn)
        try:
            await migrate(conn)
        finally:
            await conn.close()
        yield dsn
    finally:
        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


def with_database(dsn: str, database: str) -> str:
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(dsn)
    query = [
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if k not in ("dbname", "database")
    ]
    return urlunsplit(
        (parts.scheme, parts.netloc, "/" + database, urlencode(query, safe="/"), parts.fragment)
    )


async def prepare(dsn: str, *, clients: int, asks_per_client: int) -> World:
    """A workspace with one channel per client, a human participant, and unanswered asks made
    the way an agent makes them (the gallery ask mapped by compass_core, appended)."""
    from compass_core import ConversationUpdated, EventMapper
    from compass_server.store import AccountKind
    from compass_server.store.postgres import PostgresStore

    mapper = EventMapper()
    frame = None
    for event in (
        {"type": "message_start", "message": {"role": "assistant", "content": []}},
        {
            "type": "tool_execution_start",
            "toolCallId": "t",
            "toolName": "ask",
            "args": GALLERY_ASK_ARGS,
        },
    ):
        for output in mapper.map(event):
            if isinstance(output, ConversationUpdated):
                frame = output.value
    assert frame is not None
    blocks = list(frame.blocks)

    async with PostgresStore(dsn, pool_min=1, pool_max=16) as store:
        workspace = await store.create_workspace("bench")
        human, token = await store.create_account(AccountKind.HUMAN, "Bench Human")
        agent, _ = await store.create_account(AccountKind.AGENT, "Bench Agent")

        async def channel_with_asks(index: int) -> tuple[Ask, ...]:
            channel = await store.create_channel(workspace.workspace_id, f"c{index}")
            await store.add_participant(channel.channel_id, human.account_id)
            await store.add_participant(channel.channel_id, agent.account_id)
            made: list[Ask] = []
            for _ in range(asks_per_client):
                message = await store.append_message(agent, channel.channel_id, blocks)
                made.extend(
                    Ask(ask_id=ask_id, message_id=message.message_id, channel_id=channel.channel_id)
                    for ask_id in message.ask_ids
                )
            return tuple(made)

        asks = await asyncio.gather(*(channel_with_asks(i) for i in range(clients)))
    return World(dsn=dsn, token=token, account_id=human.account_id, asks=tuple(asks))


async def reset(dsn: str, used: Sequence[str]) -> None:
    """Make answered asks unanswered again (between blocks; not timed)."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            # Every column RespondToAsk wrote: the row must be PENDING again as the outcome
            # check (migration 0002) defines it, else the next block's answers fail.
            "UPDATE asks SET status = 'pending', answers = NULL, answered_by_account_id = NULL, "
            "answered_at = NULL WHERE ask_id = ANY($1::text[])",
            list(used),
        )
    finally:
        await conn.close()


async def commit_settings(dsn: str) -> str:
    conn = await asyncpg.connect(dsn)
    try:
        values = [
            f"{name}={await conn.fetchval(f'SHOW {name}')}"
            for name in ("fsync", "synchronous_commit", "server_version")
        ]
    finally:
        await conn.close()
    return ", ".join(values)


# -- servers ---------------------------------------------------------------------------------


class Child:
    """A server subprocess; `url` once it printed its ready line.

    Its output goes to a file, not a pipe: a pipe drained by a thread of this (busy) process
    fills up, and the server's next log line then blocks its event loop, which measured the
    bench's own reader instead of the server."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self._log = tempfile.TemporaryFile(mode="w+", prefix="compass-bench-")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(  # noqa: S603 - our own server commands
            argv, env=env, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, text=True
        )
        deadline = time.monotonic() + 120
        self.url = ""
        try:
            while not self.url:
                for line in self.output:
                    for prefix in READY_PREFIXES:
                        if line.startswith(prefix):
                            self.url = line[len(prefix) :].strip()
                if self.url:
                    break
                if self.process.poll() is not None:
                    raise RuntimeError("server exited early:\n" + "".join(self.output))
                if time.monotonic() > deadline:
                    raise RuntimeError("server did not start:\n" + "".join(self.output))
                time.sleep(0.05)
        except BaseException:
            self.stop()  # never leave a half-started server behind
            raise

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server so far, its workers included (/proc)."""
        pid = self.process.pid
        return sum(_procs.cpu_seconds(p) for p in (pid, *_procs.children(pid)))

    @property
    def output(self) -> list[str]:
        """Everything the server printed so far, line by line."""
        self._log.seek(0)
        return self._log.readlines()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


@contextlib.asynccontextmanager
async def served_database(admin: str) -> AsyncGenerator[tuple[Child, str, str]]:
    """A fresh migrated database (bench_database), its commit settings in words, and one
    `compass serve` on it (on 127.0.0.1, any port; none of the caller's COMPASS_*
    settings), stopped afterwards: (server, dsn, settings)."""
    async with bench_database(admin) as dsn:
        settings = await commit_settings(dsn)
        env = {k: v for k, v in os.environ.items() if not k.startswith("COMPASS_")}
        server = Child(
            [
                sys.executable,
                "-m",
                "compass_server.cli",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
            ],
            env | {"COMPASS_DATABASE_URL": dsn},
        )
        try:
            yield server, dsn, settings
        finally:
            server.stop()


def echo_app(token: str, account_id: str, settings: Settings) -> Starlette:
    """The product's stack (routes, gate, connect, interceptors, codecs) with an empty handler
    and in-memory authentication: the echo floor's server."""
    from datetime import UTC, datetime

    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    from compass_server.app import authorize, rpc_interceptors
    from compass_server.background.sweeper import utc_now
    from compass_server.observe.metrics import Metrics
    from compass_server.store import AccountKind, AccountRow
    from compass_server.transport import wire
    from compass_server.transport.auth import AuthContext
    from compass_server.transport.gate import ConnectGate
    from compass_server.transport.static import STATIC_DIR
    from gen.compass.v1 import comms_pb2
    from gen.compass.v1.agent_connect import AgentService, AgentServiceASGIApplication
    from gen.compass.v1.comms_connect import CommsService, CommsServiceASGIApplication

    auth: AuthContext[AccountRow] = AuthContext()
    account = AccountRow(
        account_id=account_id,
        kind=AccountKind.HUMAN,
        name="Bench Human",
        disabled=False,
        created_at=datetime.now(UTC),
    )
    accounts = {token: account}

    async def authenticate(presented: str) -> AccountRow | None:
        return accounts.get(presented)

    class EmptyComms(CommsService):
        async def respond_to_ask(
            self, request: comms_pb2.RespondToAskRequest, ctx: RequestContext
        ) -> comms_pb2.RespondToAskResponse:
            auth.current()
            return comms_pb2.RespondToAskResponse()

    options = wire.app_options(settings.max_request_bytes)
    # The product's interceptors: the per-RPC observer (metrics, the access line) and the
    # error mapping, as every RPC of `compass serve` runs under them.
    interceptors = rpc_interceptors(Metrics(utc_now), auth)
    comms = CommsServiceASGIApplication(EmptyComms(), interceptors=interceptors, **options)

    class NoAgent(AgentService):
        """Routed like the product's AgentService, never called here."""

    agent = AgentServiceASGIApplication(NoAgent(), interceptors=interceptors, **options)

    def gated(rpc: ASGIApp) -> ASGIApp:
        return ConnectGate(
            rpc,
            auth=auth,
            authenticate=authenticate,
            authorize=authorize,
            max_body_bytes=settings.max_request_bytes,
        )

    async def probe(_request: object) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    return Starlette(
        routes=[
            Route("/healthz", probe),
            Route("/readyz", probe),
            Mount(agent.path, app=gated(cast("ASGIApp", agent))),
            Mount(comms.path, app=gated(cast("ASGIApp", comms))),
            Mount("/", app=StaticFiles(directory=STATIC_DIR, html=True)),
        ]
    )


def serve_echo(port: int) -> None:
    import uvicorn

    from compass_server.cli.main import configure_logging
    from compass_server.cli.serve import uvicorn_config
    from compass_server.config import Settings

    # Logging, uvicorn and its protocol (the connection guard) as `compass serve` sets them.
    configure_logging("text")
    settings = Settings()
    app = echo_app(os.environ["BENCH_ECHO_TOKEN"], os.environ["BENCH_ECHO_ACCOUNT"], settings)
    config = uvicorn_config(app, settings, host="127.0.0.1", port=port)

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            bound = self.servers[0].sockets[0].getsockname()[1]
            print(f"echo listening at http://127.0.0.1:{bound}/", flush=True)

    asyncio.run(Announcing(config).serve())


# -- the three sides ---------------------------------------------------------------------------


@dataclass
class Cursor:
    """Hands out each client's next ask and remembers what a block used."""

    asks: tuple[tuple[Ask, ...], ...]
    next: list[int]
    used: list[str]

    def take(self, client: int) -> Ask:
        index = self.next[client]
        if index >= len(self.asks[client]):
            raise RuntimeError("a client ran out of asks: raise --asks")
        self.next[client] = index + 1
        ask = self.asks[client][index]
        self.used.append(ask.ask_id)
        return ask

    def rewind(self) -> list[str]:
        used, self.used = self.used, []
        self.next = [0] * len(self.next)
        return used


async def timed(clients: int, seconds: float, one: Callable[[int], Awaitable[None]]) -> float:
    """Run `one(client)` in a loop on every client for `seconds`; return calls/s."""
    done = 0
    stop_at = time.perf_counter() + seconds

    async def client(index: int) -> None:
        nonlocal done
        while time.perf_counter() < stop_at:
            await one(index)
            done += 1

    start = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(clients)))
    return done / (time.perf_counter() - start)


def http_side(
    clients: Sequence[httpx.AsyncClient], url: str, token: str, cursor: Cursor
) -> Callable[[int], Awaitable[None]]:
    headers = {"content-type": "application/json", "authorization": f"Bearer {token}"}
    endpoint = url.rstrip("/") + RPC_PATH

    async def one(index: int) -> None:
        response = await clients[index].post(
            endpoint, content=cursor.take(index).body(), headers=headers
        )
        if response.status_code != 200 or response.content != b"{}":
            raise RuntimeError(
                f"RespondToAsk failed: {response.status_code} {response.content[:300]!r}"
            )

    return one


def sql_side(
    store: PostgresStore, account_id: str, cursor: Cursor
) -> Callable[[int], Awaitable[None]]:
    """The statements of PostgresStore.answer_ask, on connections taken the
    way the store takes them (its own pool, acquisition and error translation), without the
    store's Python work (decoding blocks, validating answers, building the answered Ask).
    Every ask here is its client's own and unanswered, so answer_ask takes its optimistic path
    (read, then one conditional write) and never the locked one."""
    from compass_server.store import EVENTS_CHANNEL, ChangeEvent
    from compass_server.store.blocks import encode_answers
    from compass_server.store.postgres.sql import (  # the floor issues the store's own SQL
        ANSWER_ASK,
        SELECT_ASK,
    )

    answers = encode_answers([("db", ["0"], ""), ("features", ["0", "1"], "")])
    connection = store._connection  # pyright: ignore[reportPrivateUsage] - the store's own acquisition path

    async def one(index: int) -> None:
        ask = cursor.take(index)
        # No token lookup: the server's gate answers a token it saw within the cache's max age
        # from its token cache (compass_server/live/tokens.py), as every timed request here.
        # answer_ask(), the path every answer here takes: each statement on a pooled
        # connection of its own, as the store takes them.
        async with connection() as conn:
            found = await conn.fetchrow(SELECT_ASK, ask.ask_id, account_id)
        if found is None or not found["participant"] or found["answered_by_account_id"]:
            raise RuntimeError(f"ask {ask.ask_id} is not answerable")
        head, tail = ChangeEvent.payload_around_revision(
            channel_id=ask.channel_id, message_id=ask.message_id, ask_ids=(ask.ask_id,)
        )
        async with connection() as conn:
            answered_at = await conn.fetchval(
                ANSWER_ASK,
                ask.channel_id,
                found["channel_revision"],
                ask.ask_id,
                answers,
                account_id,
                ask.message_id,
                EVENTS_CHANNEL,
                head,
                tail,
            )
        if answered_at is None:
            raise RuntimeError(f"ask {ask.ask_id}: its channel changed under the answer")

    return one


# -- main ------------------------------------------------------------------------------------


def serve_argv() -> list[str]:
    return [
        sys.executable,
        "-m",
        "compass_server.cli",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
    ]


async def measure(
    args: argparse.Namespace, dsn: str, where: str, many_dsn: str | None = None
) -> float:
    from compass_server.store.postgres import PostgresStore

    settings = await commit_settings(dsn)
    started_on = machine()
    world = await prepare(dsn, clients=args.clients, asks_per_client=args.asks)
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPASS_")}
    server_env = env | {
        "COMPASS_DATABASE_URL": dsn,
        "COMPASS_DB_POOL_MIN": "1",
        "COMPASS_DB_POOL_MAX": str(args.pool),
    }
    cursor = Cursor(world.asks, [0] * args.clients, [])
    # The N-worker server has a database (and asks) of its own: NOTIFY is per database, so
    # neither server's listeners parse the other's answers while it sits out a block.
    many_world = many_cursor = None
    if many_dsn is not None:
        many_world = await prepare(many_dsn, clients=args.clients, asks_per_client=args.asks)
        many_cursor = Cursor(many_world.asks, [0] * args.clients, [])
    with contextlib.ExitStack() as children:
        server = Child(serve_argv(), server_env | {"COMPASS_WORKERS": "1"})
        children.callback(server.stop)
        echo = Child(
            [sys.executable, "-m", "bench.respond", "serve-echo"],
            env | {"BENCH_ECHO_TOKEN": world.token, "BENCH_ECHO_ACCOUNT": world.account_id},
        )
        children.callback(echo.stop)
        many: Child | None = None
        if many_dsn is not None:
            many_env = server_env | {"COMPASS_DATABASE_URL": many_dsn}
            many = Child(serve_argv(), many_env | {"COMPASS_WORKERS": str(args.workers)})
            children.callback(many.stop)
        async with contextlib.AsyncExitStack() as stack:
            # One httpx client (one keep-alive connection per server) per client: a single
            # AsyncClient shared by 32 tasks spends more time in its own pool than on the
            # requests.
            clients = [
                await stack.enter_async_context(
                    httpx.AsyncClient(
                        timeout=60, limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_SECONDS)
                    )
                )
                for _ in range(args.clients)
            ]
            # The floor's pool is a PostgresStore's, configured as `compass serve` configures it.
            store = await stack.enter_async_context(
                PostgresStore(dsn, pool_min=1, pool_max=args.pool)
            )
            sides: dict[str, Callable[[int], Awaitable[None]]] = {
                "echo": http_side(clients, echo.url, world.token, cursor),
                "sql": sql_side(store, world.account_id, cursor),
                "respond": http_side(clients, server.url, world.token, cursor),
            }
            databases = dict.fromkeys(sides, (dsn, cursor))
            # The echo server's CPU too: respond minus echo is the server's own work per
            # answer beyond the HTTP+Connect stack (the store's asyncpg calls included).
            servers = {"respond": server, "echo": echo}
            if many is not None and many_world is not None and many_cursor is not None:
                name = f"respond, {args.workers} workers"
                sides[name] = http_side(clients, many.url, many_world.token, many_cursor)
                databases[name] = (many_dsn or "", many_cursor)
                servers[name] = many
            per_round: dict[str, list[float]] = {name: [] for name in sides}
            cpu = await run_rounds(args, sides, databases, per_round, servers)
        trips = await count_round_trips(dsn, world, cursor, server_env)

    rates = {name: Rate(name=name, rounds=tuple(values)) for name, values in per_round.items()}
    echo_rate, sql_rate, respond_rate = rates["echo"], rates["sql"], rates["respond"]
    composed_rounds = [
        1 / (1 / e + 1 / s) for e, s in zip(echo_rate.rounds, sql_rate.rounds, strict=True)
    ]
    composed = Rate(name="composed floor", rounds=tuple(composed_rounds))
    best_ratio = respond_rate.best / (1 / (1 / echo_rate.best + 1 / sql_rate.best))
    paired_ratio = statistics.median(
        r / c for r, c in zip(respond_rate.rounds, composed_rounds, strict=True)
    )
    print(f"database: {where}; {settings}")
    print(f"{started_on}; at the end: {load_average()}")
    print(
        f"RespondToAsk end to end: {args.clients} clients, pool {args.pool} per worker, "
        f"{args.rounds} interleaved rounds of {args.seconds:g} s"
    )
    print(report({**rates, "composed floor": composed}, unit="answers/s"))
    print("  (composed floor = 1/(1/echo + 1/sql), per round)")
    print(
        f"ratio respond / composed floor: {best_ratio:.2f} best-against-best, "
        f"{paired_ratio:.2f} median of per-round ratios (target >= {TARGET})"
    )
    print(
        "server CPU per answer (echo: per call): "
        + ", ".join(f"{name} {seconds * 1e3:.2f} ms" for name, seconds in cpu.items())
    )
    print(
        f"database round trips per answer (counted on the wire, {COUNTED_ANSWERS} answers "
        f"after {WARM_ANSWERS}): respond {trips:.2f} (token lookup included), sql floor "
        f"{SQL_FLOOR_ROUND_TRIPS}"
    )
    if many is not None:
        name = f"respond, {args.workers} workers"
        scaled = rates[name]
        print(
            f"ratio {args.workers} workers / 1 worker: {scaled.best / respond_rate.best:.2f} "
            "best-against-best, "
            f"{statistics.median(m / o for m, o in zip(scaled.rounds, respond_rate.rounds, strict=True)):.2f}"
            " median of per-round ratios (answers/s; no target on 2 cores, where the clients "
            "and PostgreSQL share them)"
        )
        print(
            f"ratio {args.workers} workers / 1 worker (server CPU per answer): "
            f"{cpu[name] / cpu['respond']:.2f} (target <= {WORKERS_CPU_TARGET}: a worker "
            "more costs no extra CPU per answer)"
        )
    return paired_ratio


WARM_ANSWERS = 5
COUNTED_ANSWERS = 20
SQL_FLOOR_ROUND_TRIPS = 2
"""The statements sql_side issues per answer, each a round trip of its own."""


async def count_round_trips(
    dsn: str, world: World, cursor: Cursor, server_env: dict[str, str]
) -> float:
    """Database round trips per answer of a `compass serve` (1 worker) whose pool reaches the
    database through a RoundTripCounter (its change listener directly): one client answers
    WARM_ANSWERS asks (connections, statement caches), then COUNTED_ANSWERS counted ones. Not
    timed: the counter slows every call through it."""
    async with RoundTripCounter(dsn).running() as counter:
        env = server_env | {
            "COMPASS_WORKERS": "1",
            "COMPASS_DATABASE_URL": counter.dsn,
            "COMPASS_LISTEN_DATABASE_URL": dsn,
        }
        # Child waits for the ready line synchronously; the counter runs on this loop.
        child = await asyncio.to_thread(Child, serve_argv(), env)
        try:
            async with httpx.AsyncClient(timeout=60) as client:
                one = http_side([client], child.url, world.token, cursor)
                for _ in range(WARM_ANSWERS):
                    await one(0)
                before = counter.round_trips
                for _ in range(COUNTED_ANSWERS):
                    await one(0)
                trips = (counter.round_trips - before) / COUNTED_ANSWERS
        finally:
            await asyncio.to_thread(child.stop)
    await reset(dsn, cursor.rewind())
    return trips


async def run_rounds(
    args: argparse.Namespace,
    sides: dict[str, Callable[[int], Awaitable[None]]],
    databases: dict[str, tuple[str, Cursor]],
    per_round: dict[str, list[float]],
    servers: dict[str, Child],
) -> dict[str, float]:
    """Warm every side up, then time `args.rounds` interleaved rounds into `per_round`; after
    each block, the asks it answered in its side's database are reset. Returns the CPU
    seconds per answer of the `servers` (side name -> its server, workers included)."""
    for name, one in sides.items():  # warm-up: connections, pools, caches
        await timed(args.clients, args.warmup, one)
        dsn, cursor = databases[name]
        await reset(dsn, cursor.rewind())
    names = list(sides)
    spent = dict.fromkeys(servers, 0.0)
    answered = dict.fromkeys(servers, 0)
    for round_number in range(args.rounds):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            child = servers.get(name)
            before = child.cpu_seconds() if child is not None else 0.0
            per_round[name].append(await timed(args.clients, args.seconds, sides[name]))
            dsn, cursor = databases[name]
            if child is not None:
                spent[name] += child.cpu_seconds() - before
                answered[name] += len(cursor.used)
            await reset(dsn, cursor.rewind())
    return {name: spent[name] / max(answered[name], 1) for name in servers}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.respond", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument(
        "mode", nargs="?", default="bench", choices=["bench", "serve-echo"], help=argparse.SUPPRESS
    )
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32)")
    parser.add_argument(
        "--pool",
        type=int,
        default=10,
        help="database pool size of server and sql floor (default 10)",
    )
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument(
        "--seconds", type=float, default=2.0, help="seconds per timed block (default 2)"
    )
    parser.add_argument(
        "--asks", type=int, default=200, help="asks per client (reused between blocks; default 200)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        help="also measure a server with this many workers (`compass serve --workers N`), "
        "interleaved with the others; 1: skip (default 2)",
    )
    parser.add_argument(
        "--warmup", type=float, default=0.5, help="seconds of warm-up per side (default 0.5)"
    )
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument(
        "--check", action="store_true", help=f"exit 1 when the ratio is below {TARGET}"
    )
    args = parser.parse_args(argv)
    if args.mode == "serve-echo":
        serve_echo(args.port)
        return 0

    async def run(admin: str, where: str) -> float:
        async with contextlib.AsyncExitStack() as databases:
            dsn = await databases.enter_async_context(bench_database(admin))
            many = None
            if args.workers > 1:
                many = await databases.enter_async_context(bench_database(admin))
            return await measure(args, dsn, where, many)

    with admin_dsn() as (admin, where):
        ratio = asyncio.run(run(admin, where))
    return 1 if args.check and ratio < TARGET else 0


if __name__ == "__main__":
    raise SystemExit(main())
