"""The HTTP/2 (gRPC) listener under abuse: rapid reset, unfinished request bodies, log volume.

Run from the repository root:

    .venv/bin/python -m bench.h2_abuse                # 10,000 resets; 3 x 100 unfinished bodies
    .venv/bin/python -m bench.h2_abuse --check        # also exits 1 when a target is missed

Where the database comes from: as bench.respond. The server is `compass serve` with
COMPASS_GRPC_PORT, in a subprocess; the attacks come from another subprocess (a raw `h2`
client, tests/e2e/_h2.py) on 127.0.0.1, so they share no interpreter with the prober.

1. Rapid reset (issue 24 G1, CVE-2023-44487): `--resets` streams opened and at once reset
   (HEADERS with a made-up `cmp_` token, then RST_STREAM), reconnecting when the server ends
   a connection, up to `--attack-connections` connections. Meanwhile one client calls
   ListChannels on the MAIN listener (Connect, HTTP/1.1) back to back. Floor: the same
   client's latency before the attack, same server, same run. Reported: p50/p99/max during
   the attack, their ratio to the floor, how long after the attack the latency is back
   (below 3x the floor's p99 for 20 calls in a row), and how many streams the server took
   before ending each connection.
2. Unfinished bodies (G5): `--connections` connections x `--streams` streams, each sending
   `--body-bytes` of a request body (a valid token) and never ending it. Floor: the server's
   RSS at rest. Reported: the RSS peak above the floor, and what is still held `--hold`
   seconds after they started.
3. Log volume (G7): bytes the server logged during 1 (less the prober's access lines) against
   the bytes the attacker sent; and `--hostile` connections each sending one HEADERS with a
   non-ASCII :method and a 2.8 KB header (hypercorn raised on it, with the connection's raw
   bytes in the traceback), the log's growth against the bytes sent.

Targets (issue 24): during the reset attack the main listener's p99 <= 10x the loaded floor
and recovered within 1 s; under G5, <= 64 MiB above the floor at the peak and <= 16 MiB still
held after --hold; the log grows less than the attacker sent and never holds raw client bytes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import sys
import time
from pathlib import Path

import httpx

from bench.memory import MIB, Peak, rss
from bench.respond import admin_dsn, bench_database
from tests import _server

RECOVERED_CALLS = 20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def list_channels(client: httpx.AsyncClient, token: str) -> float:
    started = time.perf_counter()
    reply = await client.post(
        "/compass.v1.CommsService/ListChannels",
        json={},
        headers={"authorization": f"Bearer {token}"},
    )
    reply.raise_for_status()
    return time.perf_counter() - started


async def attacker(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.h2_abuse", "--attacker", *args, stdout=asyncio.subprocess.PIPE
    )


async def reset_attack(
    args: argparse.Namespace, server: _server.RunningServer, token: str, grpc_port: int
) -> dict[str, object]:
    async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
        for _ in range(20):
            await list_channels(client, token)
        floor = [await list_channels(client, token) for _ in range(args.floor_calls)]
        # The loaded floor: the same attack sent to a sink that reads and drops it, so the
        # machine carries the attacker's own CPU load while the server does nothing for it.
        sink = await attacker("sink")
        assert sink.stdout is not None
        sink_port = (await sink.stdout.readline()).decode().strip()
        loaded, _ = await probing(
            args, client, token, await attacker("resets", sink_port, str(args.resets), "1")
        )
        sink.kill()
        await sink.wait()
        logged = attack_log(server)
        during, out = await probing(
            args,
            client,
            token,
            await attacker(
                "resets", str(grpc_port), str(args.resets), str(args.attack_connections)
            ),
        )
        ended = time.perf_counter()
        limit = 3 * percentile(floor, 0.99)
        healthy_since: float | None = None
        streak = 0
        after: list[float] = []
        while streak < RECOVERED_CALLS and time.perf_counter() - ended < 60:
            started = time.perf_counter()
            latency = await list_channels(client, token)
            after.append(latency)
            if latency <= limit:
                if streak == 0:
                    healthy_since = started
                streak += 1
            else:
                streak = 0
        recovery = (healthy_since - ended) if healthy_since is not None and streak else None
    outcome = json.loads(out or b"{}")
    return {
        "floor": floor,
        "loaded": loaded,
        "during": during or after[:1],
        "recovery_s": max(recovery, 0.0) if recovery is not None else None,
        "attack": outcome,
        "logged": attack_log(server) - logged,
    }


def attack_log(server: _server.RunningServer) -> int:
    """Bytes the server logged so far, less the access lines of the prober's own calls."""
    return sum(len(line) for line in server.output if "compass.access" not in line)


async def probing(
    args: argparse.Namespace,
    client: httpx.AsyncClient,
    token: str,
    attack: asyncio.subprocess.Process,
) -> tuple[list[float], bytes]:
    """ListChannels latencies while `attack` runs, and what it printed."""
    finished = asyncio.create_task(attack.communicate())
    probes: list[asyncio.Task[float]] = []
    while not finished.done():
        # Open loop: a call every --probe-interval whatever the previous ones are doing, so
        # a stall counts once per call it holds up, not once.
        probes.append(asyncio.create_task(list_channels(client, token)))
        await asyncio.sleep(args.probe_interval)
    out, _ = await finished
    return list(await asyncio.gather(*probes)), out


def sink() -> int:
    """Accept connections and read everything they send, answering nothing."""
    server = socket.create_server(("127.0.0.1", 0))
    print(server.getsockname()[1], flush=True)
    while True:
        conn, _ = server.accept()
        with conn:
            while conn.recv(65536):
                pass


async def body_attack(
    args: argparse.Namespace, server: _server.RunningServer, token: str, grpc_port: int
) -> dict[str, object]:
    pid = server.process.pid
    await asyncio.sleep(1.0)
    floor = rss(pid)
    logged = attack_log(server)
    started = time.monotonic()
    with Peak(pid) as peak:
        attack = await attacker(
            "bodies",
            str(grpc_port),
            token,
            str(args.connections),
            str(args.streams),
            str(args.body_bytes),
            str(args.hold),
        )
        out, _ = await attack.communicate()
        held = rss(pid)
    return {
        "floor": floor,
        "peak": peak.peak,
        "held": held,
        "held_after_s": time.monotonic() - started,
        "attack": json.loads(out or b"{}"),
        "logged": attack_log(server) - logged,
    }


def run_attacker(argv: list[str]) -> int:
    """The attacks, in their own process; prints what the server did, as JSON."""
    from tests.e2e import _h2

    if argv[0] == "sink":
        return sink()
    if argv[0] == "hostile":
        print(_h2.hostile(int(argv[1]), argv[2], connections=int(argv[3]), pad=2800))
        return 0
    kind, port = argv[0], int(argv[1])
    if kind == "resets":
        streams, connections = int(argv[2]), int(argv[3])
        outcomes = _h2.rapid_reset(
            port, "cmp_" + "x" * 40, streams=streams, connections=connections
        )
        print(
            json.dumps(
                {
                    "connections": len(outcomes),
                    "streams": [o.streams for o in outcomes],
                    "goaway": [o.goaway for o in outcomes],
                    "bytes_sent": sum(o.bytes_sent for o in outcomes),
                }
            )
        )
        return 0
    token, connections, streams, body, hold = argv[2], *map(int, argv[3:6]), float(argv[6])
    started = time.monotonic()
    with _h2.unfinished_bodies(
        port, token, connections=connections, streams=streams, body_bytes=body
    ) as conns:
        while time.monotonic() - started < hold:
            for conn in conns:
                conn.pump(0.05)
        print(
            json.dumps(
                {
                    "streams": [c.outcome.streams for c in conns],
                    "reset_by_server": [len(c.outcome.resets_received) for c in conns],
                    "goaway": [c.outcome.goaway for c in conns],
                    "closed": [c.outcome.closed for c in conns],
                    "bytes_sent": sum(c.outcome.bytes_sent for c in conns),
                }
            )
        )
    return 0


async def measure(args: argparse.Namespace) -> int:
    with admin_dsn() as (admin, where):
        print(f"database: {where}")
        async with bench_database(admin) as dsn:
            grpc_port = free_port()
            env = {"COMPASS_GRPC_PORT": str(grpc_port)}
            with _server.serve(dsn, env=env, timeout=120) as server:
                world = await _server.seed_world(dsn)
                resets = await reset_attack(args, server, world.human.token, grpc_port)
                bodies = await body_attack(args, server, world.human.token, grpc_port)
                logged = attack_log(server)
                hostile = await attacker(
                    "hostile", str(grpc_port), world.human.token, str(args.hostile)
                )
                out, _ = await hostile.communicate()
                await asyncio.sleep(1.0)
                bodies["hostile_sent"] = int(out or b"0")
                bodies["hostile_logged"] = attack_log(server) - logged
                log = server.log()
    if args.log:
        await asyncio.to_thread(Path(args.log).write_text, log)
    return report(args, resets, bodies, log)


def report(
    args: argparse.Namespace, resets: dict[str, object], bodies: dict[str, object], log: str
) -> int:
    floor = list(map(float, resets["floor"]))  # type: ignore[arg-type]
    loaded = list(map(float, resets["loaded"]))  # type: ignore[arg-type]
    l99 = percentile(loaded, 0.99)
    during = list(map(float, resets["during"]))  # type: ignore[arg-type]
    f99, d99 = percentile(floor, 0.99), percentile(during, 0.99)
    recovery = resets["recovery_s"]
    attack = resets["attack"]
    print(
        f"1. rapid reset, {args.resets} streams: {attack}\n"
        f"   main-listener ListChannels floor p50/p99 {statistics.median(floor) * 1000:.1f}/"
        f"{f99 * 1000:.1f} ms at rest, {statistics.median(loaded) * 1000:.1f}/{l99 * 1000:.1f} ms "
        f"with the attack sent to a sink (loaded floor)\n"
        f"   during the attack ({len(during)} calls) p50/p99/max "
        f"{statistics.median(during) * 1000:.1f}/{d99 * 1000:.1f}/{max(during) * 1000:.1f} ms "
        f"= p99 {d99 / l99:.1f}x the loaded floor ({d99 / f99:.1f}x at rest); back {recovery if recovery is None else f'{recovery:.2f}'} s "
        f"after the attack; server log +{int(resets['logged']) / 1024:.1f} KiB"  # type: ignore[call-overload]
    )
    floor_rss, peak, held = (int(bodies[k]) for k in ("floor", "peak", "held"))  # type: ignore[call-overload]
    print(
        f"2. unfinished bodies, {args.connections} x {args.streams} streams x "
        f"{args.body_bytes:,} bytes: {bodies['attack']}\n"
        f"   RSS floor {floor_rss / MIB:.1f} MiB; peak +{(peak - floor_rss) / MIB:.1f} MiB; "
        f"+{(held - floor_rss) / MIB:.1f} MiB still held {float(bodies['held_after_s']):.0f} s "  # type: ignore[arg-type]
        f"after they started; server log +{int(bodies['logged']) / 1024:.1f} KiB"  # type: ignore[call-overload]
    )
    sent = int(attack.get("bytes_sent", 0)) if isinstance(attack, dict) else 0  # type: ignore[arg-type]
    logged = int(resets["logged"])  # type: ignore[call-overload]
    raw = "\\x" in log or "b'" in log
    hostile_sent, hostile_logged = int(bodies["hostile_sent"]), int(bodies["hostile_logged"])  # type: ignore[call-overload]
    print(
        f"3. log: +{logged:,} bytes for {sent:,} sent by the reset attacker; "
        f"+{hostile_logged:,} bytes for {hostile_sent:,} sent on {args.hostile} connections "
        f"with a non-ASCII :method; raw client bytes in the log: {raw}"
    )
    missed = (
        d99 > 10 * l99
        or recovery is None
        or float(recovery) > 1.0  # type: ignore[arg-type]
        or (peak - floor_rss) > 64 * MIB
        or (held - floor_rss) > 16 * MIB
        or logged > sent
        or hostile_logged > hostile_sent
        or raw
    )
    if args.check and missed:
        print("target missed", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--attacker"]:
        return run_attacker(argv[1:])
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--resets", type=int, default=10_000)
    parser.add_argument("--attack-connections", type=int, default=1000)
    parser.add_argument("--floor-calls", type=int, default=200)
    parser.add_argument("--probe-interval", type=float, default=0.01)
    parser.add_argument("--connections", type=int, default=3)
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--body-bytes", type=int, default=1_000_000)
    parser.add_argument("--hold", type=float, default=15.0)
    parser.add_argument("--hostile", type=int, default=200, help="connections for G7")
    parser.add_argument("--log", help="write the server's log to this file")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    return asyncio.run(measure(parser.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
