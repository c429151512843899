"""`compass serve --workers 2` (COMPASS_WORKERS=2): two processes on one port.

Each worker has its own pool, change listener, sweeper and webhook worker, so what must happen
once per database (a deadline's expiry, a reminder, a webhook delivery) must still happen once
with two of them racing for it; and a watch held by one worker must see a change made through
the other (the LISTEN connection of each). Which worker serves a connection is read from /proc
(tests/_procs.py), so the test knows it covered both.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import signal
import socket
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import grpc
import grpc.aio
import httpx
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from compass_server.domain.webhook_targets import AllowList
from compass_server.store.postgres import PostgresStore
from compass_server.store.postgres.webhooks import WebhookStore
from gen.compass.v1 import agent_pb2, comms_pb2
from tests import _procs, _server
from tests._wait import eventually
from tests.e2e._asks import DEFAULT_ASK, answer, ask_ids, post, respond, text_block
from tests.e2e._connect import CAUGHT_UP, call, open_stream
from tests.e2e.test_outcomes import timed_ask

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from starlette.requests import Request

    from tests.e2e._connect import Stream

WORKERS_ENV = {
    "COMPASS_WORKERS": "2",
    "COMPASS_SWEEP_INTERVAL_SECONDS": "0.1",
    "COMPASS_WEBHOOK_POLL_SECONDS": "0.1",
    "COMPASS_REMINDER_AFTER_SECONDS": "1",
    "COMPASS_REMINDER_MAX": "2",
    "COMPASS_WEBHOOK_ALLOW_HOSTS": "127.0.0.1",  # the receiver is on loopback
}
TIMED = 4
"""Asks with a deadline (policy FAIL): the sweepers expire each exactly once."""
WAITING = 2
"""Asks without one: each gets exactly COMPASS_REMINDER_MAX reminders, COMPASS_REMINDER_AFTER
apart."""


@dataclass
class Hooks:
    """A webhook receiver: every delivery, by webhook-id."""

    got: list[tuple[str, str, str, float]] = field(default_factory=list)
    """(webhook-id, event type, ask id, time.monotonic() at arrival)."""

    async def hook(self, request: Request) -> Response:
        body = json.loads(await request.body())
        self.got.append(
            (request.headers["webhook-id"], body["type"], body["data"]["ask_id"], time.monotonic())
        )
        return Response(status_code=204)

    def of(self, kind: str) -> list[tuple[str, str, str, float]]:
        return [g for g in self.got if g[1] == kind]


@contextlib.asynccontextmanager
async def clients_on_every_worker(
    server: _server.RunningServer, workers: list[int], *, each: int = 2, most: int = 60
) -> AsyncGenerator[dict[int, list[httpx.AsyncClient]]]:
    """`each` clients of one kept-alive connection per worker: new connections until each
    worker holds that many (the kernel spreads them; with 60 tries, failing to reach 2 on each
    of two workers has odds below 1e-15)."""
    port = int(urlsplit(server.url).port or 0)
    found: dict[int, list[httpx.AsyncClient]] = {pid: [] for pid in workers}
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(most):
            client = await stack.enter_async_context(
                httpx.AsyncClient(
                    base_url=server.url, timeout=30, limits=httpx.Limits(max_connections=1)
                )
            )
            response = await client.get("/healthz")
            stream = response.extensions["network_stream"]
            client_port = int(stream.get_extra_info("client_addr")[1])
            pid = _procs.serving_pid(workers, port, client_port)
            assert pid in found, f"the connection is held by {pid}, not a worker"
            if len(found[pid]) < each:
                found[pid].append(client)
            if all(len(held) == each for held in found.values()):
                break
        counts = {pid: len(held) for pid, held in found.items()}
        assert all(n == each for n in counts.values()), f"connections per worker: {counts}"
        yield found


async def test_two_workers_sweep_remind_and_deliver_exactly_once_and_share_changes(
    database_url: str,
) -> None:
    hooks = Hooks()
    receiver = Starlette(routes=[Route("/hook", hooks.hook, methods=["POST"])])
    with _server.serve(database_url, env=WORKERS_ENV, timeout=60) as server:
        workers = _procs.children(server.process.pid)
        assert len(workers) == 2, workers
        world = await _server.seed_world(database_url)
        async with contextlib.AsyncExitStack() as stack:
            receiver_url = await stack.enter_async_context(_server.in_process(receiver))
            async with PostgresStore(database_url, pool_min=1, pool_max=1) as store:
                await WebhookStore(store).add(
                    world.workspace_id, f"{receiver_url}hook", allow=AllowList.parse("127.0.0.1")
                )
            on = await stack.enter_async_context(clients_on_every_worker(server, workers))
            (first, first_watch), (second, second_watch) = (on[pid] for pid in workers)

            # A watch on each worker.
            watches: list[Stream] = []
            for client in (first_watch, second_watch):
                watch = await stack.enter_async_context(
                    open_stream(
                        client, "WatchChannel", {"channelId": world.channel_id}, world.human.token
                    )
                )
                assert (await watch.next(10)).json() == CAUGHT_UP
                watches.append(watch)

            # Changes made through either worker reach both watches.
            for i, client in enumerate((first, second, first)):
                posted = await post(
                    client, world.agent.token, world.channel_id, text_block(f"via {i}")
                )
                for watch in watches:
                    got = (await watch.message(10))["message"]
                    assert isinstance(got, dict)
                    assert got["messageId"] == posted["messageId"]

            # Asks that expire, posted through both workers, and asks that only wait.
            soon = datetime.now(UTC) + timedelta(seconds=1)
            timed_block = timed_ask(soon, "ASK_TIMEOUT_POLICY_FAIL")
            timed = [
                ask_ids(
                    await post(
                        (first, second)[i % 2], world.agent.token, world.channel_id, timed_block
                    )
                )[0]
                for i in range(TIMED)
            ]
            waiting = [
                ask_ids(
                    await post(
                        (first, second)[i % 2], world.agent.token, world.channel_id, DEFAULT_ASK
                    )
                )[0]
                for i in range(WAITING)
            ]

            def settled() -> bool:
                closed = {g[2] for g in hooks.of("ask.closed")}
                reminded = collections.Counter(g[2] for g in hooks.of("ask.reminder"))
                return closed >= set(timed) and all(reminded[a] >= 2 for a in waiting)

            await eventually(settled, "expiries and reminders delivered", within=30, every=0.1)

            # Expired once each: one status change (one revision bump) per ask, seen by both
            # watches; answers GetAsk as EXPIRED.
            for ask_id in timed:
                reply = await call(first, "GetAsk", {"askId": ask_id}, world.human.token)
                assert reply.ok, reply
                assert reply.body["ask"]["status"] == "ASK_STATUS_EXPIRED"  # pyright: ignore[reportIndexIssue, reportCallIssue, reportArgumentType] - JSON
            # Let both workers run more sweeps, reminder ticks and deliveries: nothing repeats.
            await _more_ticks(database_url)

    by_id = collections.Counter(g[0] for g in hooks.got)
    assert all(n == 1 for n in by_id.values()), f"delivered twice: {by_id.most_common(3)}"
    created = collections.Counter(g[2] for g in hooks.of("ask.created"))
    assert created == dict.fromkeys([*timed, *waiting], 1), created
    closed = collections.Counter(g[2] for g in hooks.of("ask.closed"))
    assert closed == dict.fromkeys(timed, 1), closed
    for ask_id in waiting:
        times = sorted(g[3] for g in hooks.of("ask.reminder") if g[2] == ask_id)
        assert len(times) == 2, (ask_id, times)
        # A reminder enqueued by both workers at once would arrive twice at the same moment.
        assert times[1] - times[0] >= 0.5, times


async def _more_ticks(dsn: str) -> None:
    """Wait until the database has seen several more sweeper and webhook transactions from
    both workers (the advisory-lock attempts of each are visible as their sessions' xacts)."""
    async with PostgresStore(dsn, pool_min=1, pool_max=1) as store, store.connection() as conn:
        start = await conn.fetchval(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        )

        async def advanced() -> bool:
            await conn.execute("SELECT pg_stat_clear_snapshot()")
            now = await conn.fetchval(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
            )
            return int(now) >= int(start) + 40

        await eventually(advanced, "more sweeps and webhook ticks", within=30, every=0.2)


async def test_the_side_listeners_run_in_worker_0_and_ctrl_c_stops_everything(
    database_url: str,
) -> None:
    """gRPC (COMPASS_GRPC_PORT, HTTP/2) and the metrics port are served by worker 0 of a
    two-worker server; an answer given over Connect (either worker) reaches a gRPC WatchAsk;
    SIGINT (Ctrl-C) stops the workers and the supervisor quietly, with 128 + SIGINT."""
    grpc_port, metrics_port = _free_port(), _free_port()
    env = {
        "COMPASS_WORKERS": "2",
        "COMPASS_GRPC_PORT": str(grpc_port),
        "COMPASS_METRICS_PORT": str(metrics_port),
    }
    with _server.serve(database_url, env=env, timeout=60) as server:
        workers = _procs.children(server.process.pid)
        world = await _server.seed_world(database_url)
        async with (
            grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel,
            httpx.AsyncClient(base_url=server.url, timeout=30) as http,
        ):
            await asyncio.wait_for(channel.channel_ready(), 10)
            ask_id = ask_ids(await post(http, world.agent.token, world.channel_id, DEFAULT_ASK))[0]
            watch = channel.unary_stream(
                "/compass.v1.AgentService/WatchAsk",
                request_serializer=agent_pb2.WatchAskRequest.SerializeToString,
                response_deserializer=agent_pb2.WatchAskResponse.FromString,
            )(
                agent_pb2.WatchAskRequest(ask_id=ask_id),
                metadata=(("authorization", f"Bearer {world.agent.token}"),),
                timeout=30,
            )
            first = await watch.read()
            assert isinstance(first, agent_pb2.WatchAskResponse)
            assert first.ask.status == comms_pb2.ASK_STATUS_PENDING
            reply = await call(
                http,
                "RespondToAsk",
                respond(ask_id, answer("db", "1"), answer("features", "0")),
                world.human.token,
            )
            assert reply.ok, reply
            while True:  # past WatchAsk's keepalives, to the answer
                state = await watch.read()
                assert isinstance(state, agent_pb2.WatchAskResponse)
                if state.ask.status == comms_pb2.ASK_STATUS_ANSWERED:
                    break
            scraped = await http.get(f"http://127.0.0.1:{metrics_port}/metrics")
            assert scraped.status_code == 200
            assert "compass_rpc_total" in scraped.text
        server.process.send_signal(signal.SIGINT)
        code = server.process.wait(timeout=30)
        assert code == 128 + signal.SIGINT, server.log()
        assert "Traceback" not in server.log()
        assert "all 2 workers stopped" in server.log()
        assert [w for w in workers if _alive(w)] == [], workers


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
