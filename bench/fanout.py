"""Fan-out: one change to a channel watched by many WatchChannel streams of one server.

Run from the repository root:

    .venv/bin/python -m bench.fanout                    # 1,000 watchers, 10 changes
    .venv/bin/python -m bench.fanout --watchers 200 --changes 5 --check

Where the database comes from: as bench.respond (`COMPASS_BENCH_DATABASE_URL`, else
`COMPASS_TEST_DATABASE_URL`, else a temporary local cluster); the bench makes a database of
its own and drops it afterwards. The server is `compass serve` in a subprocess, exactly as a
user starts it; the watchers are streams over real HTTP from this process (one connection
each, Connect-JSON): minimal raw-socket clients that only look for the change's unique text
in what arrives (`RawWatcher`), or with `--client httpx` the tests' own client.

Measured, for the floor (ONE watcher) and then for `--watchers` watchers of the same channel,
in the same run and against the same server:
- delivery latency: from just before the AppendMessage request is sent to the moment each
  watcher has the changed message; p50 and p99 over every (change, watcher) pair;
- store reads per change: the server's own `compass_watch_reads_total` (the database reads
  made by WatchChannel streams, counted where they are issued), its increase divided by
  the changes. (PostgreSQL's own counters, e.g. pg_stat_database.xact_commit, are flushed
  about once a second and also count the AppendMessage itself: too coarse to tell 1 from 2.)

Printed: both lines and the ratios many/one for p50 and p99. Targets (issue 13): store reads
per change = 1 per process, and p99 <= 5x the single watcher's. `--check` exits 1 when a
target is missed. The client side runs in one Python process: with 1,000 streams, part of
the latency is this process reading 1,000 frames, which the floor does not pay; with the
httpx client that part dominated (p99 ~25x), with the raw one the server's own per-watcher
work does (a socket write, the interceptor and ASGI send chain: ~50 us a watcher).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx

from bench.respond import admin_dsn, bench_database
from compass_agent.connect_protocol import envelope
from tests import _server
from tests.e2e._asks import post, text_block
from tests.e2e._connect import CAUGHT_UP, open_stream

if TYPE_CHECKING:
    from tests.e2e._connect import Stream

METRICS_TOKEN = "bench-fanout-metrics"  # noqa: S105 - a throwaway bench value
READS = "compass_watch_reads_total"
OPEN_AT_ONCE = 100
"""Streams opened concurrently while the watchers connect."""


@dataclass(frozen=True, slots=True)
class Result:
    watchers: int
    latencies: tuple[float, ...]
    """Seconds, one per (change, watcher)."""
    reads_per_change: float

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    def line(self) -> str:
        return (
            f"{self.watchers:>5} watcher(s): p50 {self.percentile(0.5) * 1000:7.2f} ms  "
            f"p99 {self.percentile(0.99) * 1000:7.2f} ms  max {max(self.latencies) * 1000:7.2f} ms  "
            f"store reads/change {self.reads_per_change:.2f}"
        )


async def watch_reads(http: httpx.AsyncClient) -> float:
    reply = await http.get("/metrics", headers={"authorization": f"Bearer {METRICS_TOKEN}"})
    reply.raise_for_status()
    for line in reply.text.splitlines():
        if line.startswith(READS + " "):
            return float(line.split()[1])
    raise RuntimeError(f"{READS} is not in /metrics")


class RawWatcher(asyncio.Protocol):
    """One WatchChannel stream on its own socket, read by a minimal client: it only looks for
    the bytes it waits for in what arrives (the message's unique text), so 1,000 of them cost
    this process little and the latency measured is the server's. (The tests' httpx client,
    `--client httpx`, parses every frame: with 1,000 streams in one process that parsing,
    not the server, dominated the measured latency.)"""

    def __init__(self) -> None:
        self.tail = b""
        self.needle = b""
        self.found: asyncio.Future[float] | None = None
        self.caught_up = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def expect(self, needle: bytes) -> asyncio.Future[float]:
        self.needle, self.tail = needle, b""
        self.found = asyncio.get_running_loop().create_future()
        return self.found

    def data_received(self, data: bytes) -> None:
        at = time.perf_counter()
        seen = self.tail + data
        if not self.caught_up.done() and b'"caughtUp"' in seen:
            self.caught_up.set_result(None)
        if self.found is not None and not self.found.done() and self.needle in seen:
            self.found.set_result(at)
        self.tail = seen[-64:]

    def connection_lost(self, exc: Exception | None) -> None:
        for future in (self.caught_up, self.found):
            if future is not None and not future.done():
                future.set_exception(ConnectionError("the watch ended"))


async def open_raw(url: str, token: str, channel_id: str) -> RawWatcher:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    body = json.dumps({"channelId": channel_id}).encode()
    framed = envelope(body)
    head = (
        f"POST /compass.v1.CommsService/WatchChannel HTTP/1.1\r\nhost: {host}:{port}\r\n"
        f"content-type: application/connect+json\r\nauthorization: Bearer {token}\r\n"
        f"content-length: {len(framed)}\r\n\r\n"
    ).encode()
    loop = asyncio.get_running_loop()
    _, watcher = await loop.create_connection(RawWatcher, host, port)
    assert watcher.transport is not None
    watcher.transport.write(head + framed)
    await asyncio.wait_for(watcher.caught_up, 60)
    return watcher


async def run_raw(
    http: httpx.AsyncClient, url: str, world: _server.SeededWorld, watchers: int, changes: int
) -> Result:
    streams: list[RawWatcher] = []
    try:
        for start in range(0, watchers, OPEN_AT_ONCE):
            batch = range(start, min(start + OPEN_AT_ONCE, watchers))
            streams.extend(
                await asyncio.gather(
                    *(
                        open_raw(
                            url,
                            world.human.token if i % 2 else world.human2.token,
                            world.channel_id,
                        )
                        for i in batch
                    )
                )
            )
        reads_before = await watch_reads(http)
        latencies: list[float] = []
        for change in range(changes):
            text = f"fanout-{change}-{time.time_ns()}"
            arrivals = [s.expect(text.encode()) for s in streams]
            sent = time.perf_counter()
            await post(http, world.agent.token, world.channel_id, text_block(text))
            done = await asyncio.wait_for(asyncio.gather(*arrivals), 60)
            latencies.extend(at - sent for at in done)
        reads = await watch_reads(http) - reads_before
    finally:
        for stream in streams:
            if stream.transport is not None:
                stream.transport.close()
    return Result(watchers=watchers, latencies=tuple(latencies), reads_per_change=reads / changes)


async def run(
    http: httpx.AsyncClient, world: _server.SeededWorld, watchers: int, changes: int
) -> Result:
    async with contextlib.AsyncExitStack() as stack:
        streams: list[Stream] = []

        async def one(index: int) -> Stream:
            token = world.human.token if index % 2 else world.human2.token
            stream = await stack.enter_async_context(
                open_stream(http, "WatchChannel", {"channelId": world.channel_id}, token)
            )
            while (await stream.next(60)).json() != CAUGHT_UP:
                pass  # the replay of earlier changes
            return stream

        for start in range(0, watchers, OPEN_AT_ONCE):
            batch = range(start, min(start + OPEN_AT_ONCE, watchers))
            streams.extend(await asyncio.gather(*(one(i) for i in batch)))
        reads_before = await watch_reads(http)
        latencies: list[float] = []
        for change in range(changes):

            async def delivered(
                stream: Stream, sent: float, message_id: asyncio.Future[str]
            ) -> float:
                doc = await stream.message(60)
                at = time.perf_counter()
                got = doc["message"]
                assert isinstance(got, dict)
                assert got.get("messageId") == await message_id, "a watcher got another message"  # pyright: ignore[reportUnknownMemberType]
                return at - sent

            loop = asyncio.get_running_loop()
            message_id: asyncio.Future[str] = loop.create_future()
            sent = time.perf_counter()
            waiting = [asyncio.ensure_future(delivered(s, sent, message_id)) for s in streams]
            message = await post(
                http, world.agent.token, world.channel_id, text_block(f"c{change}")
            )
            message_id.set_result(str(message["messageId"]))
            latencies.extend(await asyncio.gather(*waiting))
        reads = await watch_reads(http) - reads_before
    return Result(watchers=watchers, latencies=tuple(latencies), reads_per_change=reads / changes)


async def measure(args: argparse.Namespace) -> int:
    with admin_dsn() as (admin, where):
        print(f"database: {where}")
        async with bench_database(admin) as dsn:
            env = {
                "COMPASS_METRICS_TOKEN": METRICS_TOKEN,
                "COMPASS_SWEEP_INTERVAL_SECONDS": "600",  # no sweeper transactions in the count
                # 1,000 streams from this one address: past the default connection caps.
                "COMPASS_MAX_CONNECTIONS": str(args.watchers + 100),
                "COMPASS_MAX_CONNECTIONS_PER_CLIENT": "0",
                # and past the per-account stream cap (the watchers share two accounts).
                "COMPASS_MAX_STREAMS_PER_ACCOUNT": str(args.watchers),
            }
            with _server.serve(dsn, env=env, timeout=120) as server:
                world = await _server.seed_world(dsn)
                limits = httpx.Limits(max_connections=args.watchers + 10)
                timeout = httpx.Timeout(60.0)
                async with httpx.AsyncClient(
                    base_url=server.url, limits=limits, timeout=timeout
                ) as http:
                    if args.client == "raw":
                        floor = await run_raw(http, server.url, world, 1, args.changes)
                        many = await run_raw(http, server.url, world, args.watchers, args.changes)
                    else:
                        floor = await run(http, world, 1, args.changes)
                        many = await run(http, world, args.watchers, args.changes)
    p50 = many.percentile(0.5) / floor.percentile(0.5)
    p99 = many.percentile(0.99) / floor.percentile(0.99)
    print(floor.line())
    print(many.line())
    print(
        f"ratio {args.watchers}/1: p50 {p50:.2f}x  p99 {p99:.2f}x  "
        f"(targets: store reads/change = 1, p99 <= 5x)"
    )
    missed = many.reads_per_change > 1.0 or p99 > 5.0
    if args.check and missed:
        print("target missed", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--changes", type=int, default=10)
    parser.add_argument(
        "--client",
        choices=["raw", "httpx"],
        default="raw",
        help="the watchers' client: minimal raw sockets (default) or the tests' httpx client",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    return asyncio.run(measure(parser.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
