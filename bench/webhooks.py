"""The webhook worker beside receivers that misbehave (issue 24, G3/G4).

Run from the repository root:

    .venv/bin/python -m bench.webhooks              # 5 rounds; 256 MiB and gzip-bomb bodies
    .venv/bin/python -m bench.webhooks --check      # also exits 1 when a target is missed

Where the database comes from: as bench.respond. The server is `compass serve` (webhook
timeout 3 s, polling every 0.1 s, receivers on loopback allowed by
COMPASS_WEBHOOK_ALLOW_HOSTS); the receivers are raw asyncio servers in this process
(tests/e2e/test_webhook_abuse.RawReceiver).

1. Delay of a healthy endpoint (G4): workspace A's webhook goes to a receiver that answers at
   1 byte/s (its 27-byte answer takes 27 s), workspace B's to one that answers at once. Each
   round posts an ask in A, then one in B, and times B's delivery from its AppendMessage's
   answer to the request arriving. Floor: the same rounds, same server, with A's receiver
   answering at once too. Reported: B's p50/max delay beside the slow receiver and the floor.
2. Memory (G3): a receiver answering 200 with a 256 MiB body, then one answering with
   `content-encoding: gzip` and 255 KiB that decode to 256 MiB. Floor: the server's RSS at
   rest. Reported: the RSS peak above the floor while each delivery is attempted.

Targets: B's p50 delay beside the slow receiver <= 2x the floor's + 0.5 s (before: 29 s, held
up by the whole slow attempt); <= 16 MiB above the floor for either body (before: +460-540 MiB
and +470-490 MiB).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import statistics
import sys
import time

import httpx

from bench.memory import MIB, Peak, rss
from bench.respond import admin_dsn, bench_database
from tests import _server
from tests._wait import eventually
from tests.e2e._asks import post_ask
from tests.e2e.test_webhook_abuse import RawReceiver, serving
from tests.e2e.test_webhooks import LOOPBACK_ALLOWED, _admin

FAST = b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n"
SLOW = b"HTTP/1.1 204 No Content\r\n\r\n"


async def hook(dsn: str, workspace_id: str, url: str) -> str:
    added = await asyncio.to_thread(
        _admin,
        dsn,
        "add-webhook",
        "--workspace",
        workspace_id,
        "--url",
        url,
        "--events",
        "ask.created",
    )
    return str(added["webhook_id"])


async def delays(
    http: httpx.AsyncClient,
    a: _server.SeededWorld,
    b: _server.SeededWorld,
    b_receiver: RawReceiver,
    rounds: int,
) -> list[float]:
    found: list[float] = []
    for _ in range(rounds):
        await post_ask(http, a.agent.token, a.channel_id)
        await asyncio.sleep(0.3)  # A's attempt is under way (it is claimed within 0.1 s)
        seen = len(b_receiver.arrived)
        posted = time.monotonic()
        await post_ask(http, b.agent.token, b.channel_id)
        await eventually(
            lambda seen=seen: len(b_receiver.arrived) > seen, "B's delivery", within=120
        )
        found.append(b_receiver.arrived[-1] - posted)
    return found


async def rss_during(
    server: _server.RunningServer,
    world: _server.SeededWorld,
    head: bytes,
    body: bytes,
    http: httpx.AsyncClient,
) -> tuple[int, int]:
    receiver = RawReceiver(head=head, body=body, chunk=256 * 1024)
    async with serving(receiver) as url:
        await hook(server.dsn, world.workspace_id, url)
        await asyncio.sleep(1.0)
        floor = rss(server.process.pid)
        with Peak(server.process.pid) as peak:
            await post_ask(http, world.agent.token, world.channel_id)
            await eventually(
                lambda: receiver.written, "the receiver sees the client leave", within=60
            )
            await asyncio.sleep(1.0)  # and the server has let go of what it read
    return floor, peak.peak


async def measure(args: argparse.Namespace) -> int:
    env = {
        "COMPASS_WEBHOOK_POLL_SECONDS": "0.1",
        "COMPASS_WEBHOOK_TIMEOUT_SECONDS": "3",
        "COMPASS_WEBHOOK_BACKOFF_SECONDS": "3600",
        "COMPASS_REMINDER_AFTER_SECONDS": "0",
        **LOOPBACK_ALLOWED,
    }
    with admin_dsn() as (admin, where):
        print(f"database: {where}")
        async with bench_database(admin) as dsn:
            with _server.serve(dsn, env=env, timeout=120) as server:
                a = await _server.seed_world(dsn, prefix="a-")
                b = await _server.seed_world(dsn, prefix="b-")
                fast_a, slow_a, fast_b = (
                    RawReceiver(head=FAST),
                    RawReceiver(head=SLOW, every=1.0),
                    RawReceiver(head=FAST),
                )
                async with (
                    httpx.AsyncClient(base_url=server.url, timeout=120) as http,
                    serving(fast_a) as fast_a_url,
                    serving(slow_a) as slow_a_url,
                    serving(fast_b) as fast_b_url,
                ):
                    await hook(dsn, b.workspace_id, fast_b_url)
                    a_hook = await hook(dsn, a.workspace_id, fast_a_url)
                    floor = await delays(http, a, b, fast_b, args.rounds)
                    await asyncio.to_thread(_admin, dsn, "remove-webhook", "--id", a_hook)
                    await hook(dsn, a.workspace_id, slow_a_url)
                    beside = await delays(http, a, b, fast_b, args.rounds)
                    c = await _server.seed_world(dsn, prefix="c-")
                    big = b"x" * (args.body_mib << 20)
                    head = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(big)
                    plain = await rss_during(server, c, head, big, http)
                    del big
                    d = await _server.seed_world(dsn, prefix="d-")
                    bomb = gzip.compress(b"\0" * (args.body_mib << 20), 9)
                    head = (
                        b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: %d\r\n\r\n"
                        % len(bomb)
                    )
                    zipped = await rss_during(server, d, head, bomb, http)
    f50, b50 = statistics.median(floor), statistics.median(beside)
    print(
        f"1. healthy endpoint's delay, {args.rounds} rounds: p50/max {f50:.2f}/{max(floor):.2f} s "
        f"beside a healthy one (floor); {b50:.2f}/{max(beside):.2f} s beside one answering at "
        f"1 byte/s ({b50 / f50:.1f}x)"
    )
    over_plain = (plain[1] - plain[0]) / MIB
    over_zip = (zipped[1] - zipped[0]) / MIB
    print(
        f"2. RSS floor {plain[0] / MIB:.1f} MiB; {args.body_mib} MiB body: peak "
        f"+{over_plain:.1f} MiB; {len(bomb) / 1024:.0f} KiB of gzip ({args.body_mib} MiB "
        f"decoded): peak +{over_zip:.1f} MiB"
    )
    missed = b50 > 2 * f50 + 0.5 or over_plain > 16 or over_zip > 16
    if args.check and missed:
        print("target missed", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--body-mib", type=int, default=256, help="the big and the gzip-bomb bodies' size"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    return asyncio.run(measure(parser.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
