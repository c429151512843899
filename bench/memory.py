"""Server memory under big messages: one big ListMessages, and slow WatchChannel readers.

Run from the repository root:

    .venv/bin/python -m bench.memory                 # 200 messages of ~1 MB, 8 slow readers
    .venv/bin/python -m bench.memory --check         # also exits 1 when a target is missed

Where the database comes from: as bench.respond. The server is `compass serve` in a
subprocess; its resident memory (VmRSS from /proc) is what is measured, sampled every 5 ms
in this process. The messages are stored through the store directly (200 x 1 MB over HTTP
would only slow the set-up).

Measured against the floor of the same run, the server's RSS at rest (after the messages
were stored and one small request warmed it up):
- one ListMessages(page_size=500) over the 200 messages: the peak RSS during the call minus
  the floor, beside the size of the response the client received;
- `--readers` slow WatchChannel readers replaying from revision 0 (raw sockets that read
  64 kB of the response, then stop reading): the RSS after they stalled minus the floor,
  per reader.

Targets (issue 12 F1): one ListMessages <= a few MiB above its payload (here: peak -
floor <= 3x the response + 8 MiB); <= 2 MiB per slow reader. Before the byte-bounded pages
and replay batches these were 996 MiB for the call and ~320 MiB per reader.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from bench.respond import admin_dsn, bench_database
from compass_server.store.postgres import PostgresStore
from compass_server.transport.connect_protocol import envelope
from tests import _server
from tests.integration.store._seed import text

MIB = 1 << 20


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


class Peak:
    """The highest RSS of `pid` while the block runs (sampled every 5 ms in a thread)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.wait(0.005):
            self.peak = max(self.peak, rss(self.pid))

    def __enter__(self) -> Peak:
        self.peak = rss(self.pid)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join()
        self.peak = max(self.peak, rss(self.pid))


def slow_reader(url: str, token: str, channel_id: str) -> socket.socket:
    """A WatchChannel from revision 0 that reads 64 kB of the response and then stalls."""
    parts = urlsplit(url)
    body = json.dumps({"channelId": channel_id}).encode()
    framed = envelope(body)
    sock = socket.create_connection((parts.hostname, parts.port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    request = (
        f"POST /compass.v1.CommsService/WatchChannel HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/connect+json\r\n"
        f"Connect-Protocol-Version: 1\r\nContent-Length: {len(framed)}\r\n\r\n"
    ).encode()
    sock.sendall(request + framed)
    got = 0
    while got < 64 * 1024:
        chunk = sock.recv(16 * 1024)
        if not chunk:
            break
        got += len(chunk)
    return sock


async def measure(args: argparse.Namespace) -> int:
    with admin_dsn() as (admin, where):
        print(f"database: {where}")
        async with bench_database(admin) as dsn:
            env = {"COMPASS_MAX_STREAMS_PER_ACCOUNT": str(args.readers + 4)}
            with _server.serve(dsn, env=env, timeout=120) as server:
                world = await _server.seed_world(dsn)
                async with PostgresStore(dsn, pool_min=1, pool_max=2) as store:
                    agent = await store.authenticate(world.agent.token)
                    assert agent is not None
                    for i in range(args.messages):
                        chunk = f"{i:04d}" + "x" * (args.message_bytes - 4)
                        await store.append_message(agent, world.channel_id, [text(chunk)])
                pid = server.process.pid
                headers = {"authorization": f"Bearer {world.human.token}"}
                async with httpx.AsyncClient(base_url=server.url, timeout=300) as http:
                    warm = await http.post(
                        "/compass.v1.CommsService/ListMessages",
                        json={"channelId": world.channel_id, "pageSize": 1},
                        headers=headers,
                    )
                    warm.raise_for_status()
                    await asyncio.sleep(0.5)
                    floor = rss(pid)
                    with Peak(pid) as peak:
                        reply = await http.post(
                            "/compass.v1.CommsService/ListMessages",
                            json={"channelId": world.channel_id, "pageSize": 500},
                            headers=headers,
                        )
                    reply.raise_for_status()
                    payload = len(reply.content)
                    listed = len(reply.json().get("messages", []))
                    await asyncio.sleep(1.0)
                    rest = rss(pid)
                    readers = [
                        await asyncio.to_thread(
                            slow_reader, server.url, world.human.token, world.channel_id
                        )
                        for _ in range(args.readers)
                    ]
                    await asyncio.sleep(args.stall)
                    stalled = rss(pid)
                    for sock in readers:
                        sock.close()
    list_over = (peak.peak - floor) / MIB
    per_reader = max(stalled - rest, 0) / args.readers / MIB
    print(
        f"floor (rest)                         {floor / MIB:8.1f} MiB\n"
        f"ListMessages(500): {listed} messages, {payload / MIB:.1f} MiB sent; "
        f"peak {peak.peak / MIB:.1f} MiB = floor + {list_over:.1f} MiB "
        f"({list_over / max(payload / MIB, 0.001):.2f}x the response)\n"
        f"{args.readers} slow readers from revision 0: {stalled / MIB:.1f} MiB = "
        f"rest + {(stalled - rest) / MIB:.1f} MiB, {per_reader:.2f} MiB per reader"
    )
    missed = list_over > 3 * payload / MIB + 8 or per_reader > 2.0
    if args.check and missed:
        print("target missed", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--message-bytes", type=int, default=1_000_000)
    parser.add_argument("--readers", type=int, default=8)
    parser.add_argument("--stall", type=float, default=3.0, help="seconds the readers stall")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    return asyncio.run(measure(parser.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
