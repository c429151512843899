"""Web Push latency (issue 35): how soon a person's device hears of an ask, against the webhook
path in the same run, and how soon a notification's button reaches the agent, against a
browser's answer.

Run from the repository root:

    .venv/bin/python -m bench.push                   # 100 asks
    .venv/bin/python -m bench.push --asks 20

Where the database comes from: as in bench/respond.py (`COMPASS_BENCH_DATABASE_URL`, else
`COMPASS_TEST_DATABASE_URL`, an admin DSN where a database of its own is created and dropped,
else a temporary local cluster).

Set-up: one `compass serve` on a fresh database, its outbox workers polling every 0.1 s
(COMPASS_WEBHOOK_POLL_SECONDS: the push worker's poll too); a seeded world; one of Ada's
devices on the loopback push-service stand-in of tests/e2e/_push_service.py (it checks each
push's VAPID JWT and decrypts it with the device's key, then answers 201), and a webhook of
the workspace (ask.created only) to a receiver in this process that answers 204 at once.

Per ask, one after the other, each after a random pause of up to --think seconds (0.25: asks
arrive out of step with the 0.1 s polls), all times time.monotonic() in this process:

1. t0: the agent's AppendMessage of a one-question, two-option ask returned (the ask is
   stored). Subject: the stand-in took its push (after checking and decrypting it, before its
   201). Floor: the webhook receiver got its ask.created. Both from the same t0: the same
   outbox, claims and rounds; the push adds its answer token, the encryption and the JWT.
2. The agent's WatchAsk is opened on the ask and its first (PENDING) state read, and a task
   waits on it. t1: the notification's button is "tapped" as the service worker taps it
   (POST answer_url with the push's answer token and option, no other credential; its 200
   is checked). Subject: the waiting task sees WatchAsk yield ANSWERED. Floor: the same on a
   second ask of the round answered by a browser (RespondToAsk with Ada's token, sent at t1).

Reported: p50, p99 and max of each, and the ratios subject/floor at p50 and p99 (p99 of 100
samples is interpolated between the two slowest).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sys
import time
from typing import TYPE_CHECKING

import httpx
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from bench._timing import latency_table, notifier_bench_main, percentile
from bench.respond import bench_database
from tests import _server
from tests.e2e import _push_service
from tests.e2e._asks import answer, ask_block, ask_ids, post, question, respond
from tests.e2e._connect import call, open_stream
from tests.e2e.test_webhooks import _admin

if TYPE_CHECKING:
    import argparse

    from starlette.requests import Request

    from tests.e2e._connect import Stream
    from tests.e2e._push_service import PushService, Received

ENV = {
    "COMPASS_WEBHOOK_POLL_SECONDS": "0.1",
    "COMPASS_REMINDER_AFTER_SECONDS": "0",
    "COMPASS_PUSH_ALLOW_HOSTS": "127.0.0.1",
    "COMPASS_WEBHOOK_ALLOW_HOSTS": "127.0.0.1",
    "COMPASS_VAPID_SUBJECT": "mailto:bench@compass.test",
    "COMPASS_LOG_FORMAT": "json",
}
ASK = ask_block(question("db", "0", "1"))


class Hooks:
    """The webhook receiver: when each ask's ask.created arrived."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        self.changed = asyncio.Event()

    async def hook(self, request: Request) -> Response:
        body = await request.json()
        self.arrived[str(body["data"]["ask_id"])] = time.monotonic()
        self.changed.set()
        return Response(status_code=204)

    async def wait(self, ask_id: str) -> float:
        while ask_id not in self.arrived:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 30)
        return self.arrived[ask_id]


async def _answered(watch: Stream) -> float:
    """The time WatchAsk yields the ask ANSWERED."""
    while True:
        message = await watch.message(within=30)
        ask = message.get("ask")
        if isinstance(ask, dict) and ask.get("status") == "ASK_STATUS_ANSWERED":  # pyright: ignore[reportUnknownMemberType]
            return time.monotonic()


async def _round(
    http: httpx.AsyncClient,
    world: _server.SeededWorld,
    pushes: PushService,
    device: str,
    hooks: Hooks,
    think: float,
) -> tuple[float, float, float, float]:
    """(push latency, webhook latency, tap -> ANSWERED, RespondToAsk -> ANSWERED)."""
    # Asks come at random moments, not in step with the outbox workers' polls (the push
    # worker's sleep starts when the last round's closing push went out).
    await asyncio.sleep(random.uniform(0, think))  # noqa: S311 - spread, not secrecy
    (ask_id,) = ask_ids(await post(http, world.agent.token, world.channel_id, ASK))
    stored = time.monotonic()

    def its_push() -> Received | None:
        return next(
            (r for r in pushes.of(device) if r.type == "ask" and r.payload["ask_id"] == ask_id),
            None,
        )

    await pushes.wait_for(lambda: its_push() is not None, "the push", within=30)
    pushed = its_push()
    assert pushed is not None
    hooked = await hooks.wait(ask_id)
    async with open_stream(http, "WatchAsk", {"askId": ask_id}, world.agent.token) as watch:
        await watch.message(within=30)  # PENDING
        seen = asyncio.create_task(_answered(watch))  # waiting before the tap is sent
        tap_at = time.monotonic()
        tapped = await http.post(
            str(pushed.payload["answer_url"]),
            json={"answer_token": pushed.payload["answer_token"], "option_id": "1"},
        )
        assert tapped.status_code == 200, tapped.text
        tap_seen = await seen
    # The floor's ask is in the other workspace (its agent, Mallory answering): no device of
    # Ada's is told of it, so her device's pushes are this round's ask and its closing only.
    floor_post = await post(http, world.other_agent.token, world.other_channel_id, ASK)
    (floor_id,) = ask_ids(floor_post)
    async with open_stream(http, "WatchAsk", {"askId": floor_id}, world.other_agent.token) as watch:
        await watch.message(within=30)
        seen = asyncio.create_task(_answered(watch))
        respond_at = time.monotonic()
        reply = await call(
            http, "RespondToAsk", respond(floor_id, answer("db", "1")), world.outsider.token
        )
        assert reply.ok, reply
        respond_seen = await seen
    # The device is told the ask ended before the next round (its pushes go in order).
    await pushes.wait_for(
        lambda: any(
            r.type == "ask_closed" and r.payload["ask_id"] == ask_id for r in pushes.of(device)
        ),
        "the closing push",
        within=30,
    )
    return pushed.at - stored, hooked - stored, tap_seen - tap_at, respond_seen - respond_at


async def measure(admin: str, where: str, args: argparse.Namespace) -> int:
    print(f"database: {where}")
    hooks = Hooks()
    receiver = Starlette(routes=[Route("/hook", hooks.hook, methods=["POST"])])
    async with bench_database(admin) as dsn:
        with _server.serve(dsn, env=ENV, timeout=120) as server:
            world = await _server.seed_world(dsn)
            async with (
                httpx.AsyncClient(base_url=server.url, timeout=60) as http,
                _push_service.serving() as pushes,
                _server.in_process(receiver) as receiver_url,
            ):
                await pushes.learn_key(http, world.human.token)
                _, device, _ = await pushes.add_device(http, world.human.token, name="bench")
                await asyncio.to_thread(
                    _admin,
                    dsn,
                    "add-webhook",
                    *("--workspace", world.workspace_id, "--url", f"{receiver_url}hook"),
                    *("--events", "ask.created"),
                )
                for _ in range(args.warmup):
                    await _round(http, world, pushes, device, hooks, args.think)
                rows = [
                    await _round(http, world, pushes, device, hooks, args.think)
                    for _ in range(args.asks)
                ]
                assert pushes.rejected == [], pushes.rejected
    push, hook, tap, browser = (list(column) for column in zip(*rows, strict=True))
    print(f"ask stored -> its push accepted by the push service, {args.asks} asks:")
    for line in latency_table(
        ("push (stand-in 201)", push), ("webhook (floor)", hook), ratio="push / webhook"
    ):
        print(line)
    print(f"notification button -> the agent's WatchAsk sees ANSWERED, {args.asks} asks:")
    for line in latency_table(
        ("tap (POST /push/answer)", tap),
        ("RespondToAsk (floor)", browser),
        ratio="tap / RespondToAsk",
    ):
        print(line)
    print(
        f"summary: push p50 {percentile(push, 0.5) * 1e3:.1f} ms, p99 "
        f"{percentile(push, 0.99) * 1e3:.1f} ms; webhook p50 {percentile(hook, 0.5) * 1e3:.1f} "
        f"ms, p99 {percentile(hook, 0.99) * 1e3:.1f} ms; tap -> ANSWERED p50 "
        f"{percentile(tap, 0.5) * 1e3:.1f} ms, p99 {percentile(tap, 0.99) * 1e3:.1f} ms"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    return notifier_bench_main(argv, __doc__, measure)


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
