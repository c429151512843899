"""Operating: /metrics over real HTTP after scripted asks, its protection, JSON logs, and
/readyz reporting the change listener (docs/operating/metrics.md)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import asyncpg
import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests import _server
from tests.e2e._asks import answer, respond
from tests.e2e._connect import call
from tests.e2e.test_outcomes import close, decline, new_ask, timed_ask, wait_for_status

if TYPE_CHECKING:
    from tests._server import RunningServer, SeededWorld

TOKEN = "metrics-secret-token-1234"
SECRET_TEXT = "my very private other answer"
SECRET_DETAIL = "the runtime dropped the private note"
SECRET_PAYLOAD = '{"private":"payload handed to the agent"}'


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


async def scrape(http: httpx.AsyncClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    reply = await http.get("/metrics", headers={"authorization": f"Bearer {TOKEN}"})
    assert reply.status_code == 200, reply.text
    return samples(reply.text)


async def script(http: httpx.AsyncClient, world: SeededWorld) -> None:
    """5 asks: answered with Other, declined, TIMED_OUT with answers, expired, pending."""
    other, _ = await new_ask(http, world)
    declined, _ = await new_ask(http, world)
    timed, _ = await new_ask(http, world)
    soon = datetime.now(UTC) + timedelta(seconds=0.5)
    expiring, _ = await new_ask(http, world, timed_ask(soon, "ASK_TIMEOUT_POLICY_FAIL"))
    await new_ask(http, world)  # stays pending
    listed = await call(http, "ListMessages", {"channelId": world.channel_id}, world.human.token)
    assert listed.ok, listed
    answered = await call(
        http,
        "RespondToAsk",
        respond(other, answer("db", custom_text=SECRET_TEXT), answer("features", "1")),
        world.human.token,
    )
    assert answered.ok, answered
    reply = await call(http, "DeclineAsk", decline(declined, "no"), world.human.token)
    assert reply.ok, reply
    # Receipts: the answer was not delivered (reported twice: counted once); the decline was.
    for receipt in (
        {
            "askId": other,
            "state": "DELIVERY_STATE_NOT_DELIVERED",
            "detail": SECRET_DETAIL,
            "payload": SECRET_PAYLOAD,
        },
        {
            "askId": other,
            "state": "DELIVERY_STATE_NOT_DELIVERED",
            "detail": SECRET_DETAIL,
            "payload": SECRET_PAYLOAD,
        },
        {"askId": declined, "state": "DELIVERY_STATE_DELIVERED"},
    ):
        reply = await call(http, "ReportDelivery", receipt, world.agent.token)
        assert reply.ok, reply
    reply = await call(
        http,
        "CloseAsk",
        close(timed, "ASK_STATUS_TIMED_OUT", "", answer("db", "0"), answer("features")),
        world.agent.token,
    )
    assert reply.ok, reply
    await wait_for_status(http, world, expiring, "ASK_STATUS_EXPIRED")


async def test_metrics_after_scripted_asks_and_json_logs(database_url: str) -> None:
    env = {
        "COMPASS_METRICS_TOKEN": TOKEN,
        "COMPASS_SWEEP_INTERVAL_SECONDS": "0.2",
        "COMPASS_LOG_FORMAT": "json",
    }
    with _server.serve(database_url, env=env) as server:
        world = await _server.seed_world(database_url)
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            assert (await http.get("/metrics")).status_code == 401
            wrong = await http.get("/metrics", headers={"authorization": "Bearer nope"})
            assert wrong.status_code == 401
            await script(http, world)
            traced = await call(
                http,
                "ListChannels",
                {},
                world.human.token,
                headers={"x-request-id": "req-abc.1"},
            )
            assert traced.ok, traced
            got = await scrape(http)
        log = server.log()
    assert got[("compass_asks_created_total", ())] == 5
    assert got[("compass_asks_pending", ())] == 1
    for status, count in {
        "answered": 1,
        "declined": 1,
        "timed_out": 1,
        "expired": 1,
        "withdrawn": 0,
    }.items():
        assert got[("compass_ask_outcomes_total", (("status", status),))] == count, status
    assert got[("compass_questions_answered_total", ())] == 2
    assert got[("compass_questions_answered_other_total", ())] == 1
    assert got[("compass_questions_auto_picked_total", ())] == 2
    for state, count in {
        "delivered": 1,
        "delivered_with_changes": 0,
        "not_delivered": 1,
    }.items():
        assert got[("compass_ask_deliveries_total", (("state", state),))] == count, state
    assert got[("compass_ask_answer_to_receipt_seconds_count", ())] == 2
    assert got[("compass_rpc_total", (("code", "ok"), ("method", "ReportDelivery")))] == 3
    assert got[("compass_ask_time_to_answer_seconds_count", ())] == 1
    assert got[("compass_ask_time_to_first_view_seconds_count", ())] == 5
    assert got[("compass_listener_reconnects_total", ())] == 0
    assert got[("compass_rpc_total", (("code", "ok"), ("method", "AppendMessage")))] == 5
    assert got[("compass_rpc_total", (("code", "ok"), ("method", "RespondToAsk")))] == 1
    assert (
        got[("compass_rpc_duration_seconds_count", (("code", "ok"), ("method", "CloseAsk")))] == 1
    )
    assert got[("compass_live_streams", (("kind", "WatchChannel"),))] == 0
    assert got[("compass_db_pool_connections_in_use", ())] >= 0

    # JSON logs: every line an object; one access line per RPC; no secrets anywhere.
    assert TOKEN not in log
    assert SECRET_TEXT not in log
    assert SECRET_DETAIL not in log
    assert "payload handed to the agent" not in log
    for token in (world.human.token, world.agent.token):
        assert token not in log
    records = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    access = [r for r in records if r["logger"] == "compass.access"]
    responded = [r for r in access if r["method"] == "RespondToAsk"]
    assert len(responded) == 1
    (line,) = responded
    assert line["account_id"] == world.human.account_id
    assert line["code"] == "ok"
    assert isinstance(line["duration_ms"], float)
    assert len(line["request_id"]) == 32
    assert {r["method"] for r in access} >= {
        "AppendMessage",
        "ListMessages",
        "CloseAsk",
        "ReportDelivery",
    }
    assert [r["request_id"] for r in access if r["method"] == "ListChannels"] == ["req-abc.1"]
    non_json = [
        line
        for line in log.splitlines()
        if not line.startswith("{") and not line.startswith(_server.READY_PREFIX)
    ]
    assert non_json == []


async def test_metrics_404_without_token(
    compass_server: RunningServer, seeded: SeededWorld
) -> None:
    async with httpx.AsyncClient(base_url=compass_server.url) as http:
        assert (await http.get("/metrics")).status_code == 404
        assert (
            await http.get("/metrics", headers={"authorization": f"Bearer {seeded.human.token}"})
        ).status_code == 404


async def test_metrics_port_serves_without_token(database_url: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    with _server.serve(database_url, env={"COMPASS_METRICS_PORT": str(port)}) as server:
        world = await _server.seed_world(database_url)
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            assert (await http.get("/metrics")).status_code == 404
            missing = await call(http, "GetAsk", {"askId": "ask_missing"}, world.human.token)
            assert missing.code == "not_found", missing
            side = await http.get(f"http://127.0.0.1:{port}/metrics")
            assert side.status_code == 200
            got = samples(side.text)
            assert got[("compass_rpc_total", (("code", "not_found"), ("method", "GetAsk")))] == 1


async def test_readyz_reports_the_listener_down_until_it_reconnects(database_url: str) -> None:
    with _server.serve(database_url, env={"COMPASS_METRICS_TOKEN": TOKEN}) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            ready = await http.get("/readyz")
            assert ready.json() == {
                "status": "ok",
                "database": "ok",
                "listener": "ok",
                "webhooks": "ok",
                "push": "ok",
            }
            conn = await asyncpg.connect(database_url)
            try:
                killed = await conn.fetchval(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND application_name LIKE '%-listener'"
                )
            finally:
                await conn.close()
            assert killed == 1
            # Down from when the server notices the loss until it reconnects (0.5 s later).
            seen_down = None
            until = time.monotonic() + 5
            while seen_down is None and time.monotonic() < until:
                reply = await http.get("/readyz")
                if reply.status_code == 503:
                    seen_down = reply.json()
                await asyncio.sleep(0.02)
            assert seen_down == {
                "status": "unavailable",
                "database": "ok",
                "listener": "down",
                "webhooks": "ok",
                "push": "ok",
            }
            deadline = time.monotonic() + 15
            while (await http.get("/readyz")).status_code != 200:
                assert time.monotonic() < deadline, "the listener never reconnected"
                await asyncio.sleep(0.2)
            got = await scrape(http)
            assert got[("compass_listener_reconnects_total", ())] == 1
