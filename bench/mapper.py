"""Mapping one ask event against one AppendMessage round trip, measured in the same run.

Run from the repository root:

    .venv/bin/python -m bench.mapper            # both latencies, and the ratio at p50
    .venv/bin/python -m bench.mapper --check    # also exits 1 when the ratio is above 5%

Where the database comes from: as bench.respond (`COMPASS_BENCH_DATABASE_URL`, else
`COMPASS_TEST_DATABASE_URL`, else a temporary local cluster); the bench makes a database of
its own and drops it afterwards.

The payload is the gallery ask (tests/fixtures/events/gallery-ask-fixture.json, the
runtime's own example): 2 questions, 7 options. The two sides:

- mapping (the subject): `EventMapper.map` on that ask's `tool_execution_start` event, as
  the runtime emits it (decoded JSON): event routing, narrowing the args, building the Ask
  and the frame with the full block set. Each ask is preceded by an untimed assistant
  `message_start`, so every ask lands in a fresh message as in a real turn. Each call is
  timed on its own.
- round trip (the yardstick): one AppendMessage carrying that frame, from this process to
  `compass serve` (a subprocess, exactly as a user starts it) on 127.0.0.1, the way the
  agent bridge posts it: Connect unary with a protobuf body on one keep-alive httpx
  AsyncClient, with an agent's bearer token. Timed from serializing the request to having
  parsed the response; every call stores a new message (a fresh client_message_id), and must
  succeed with a minted ask_id, else the bench stops.

The target (issue 14): mapping p50 <= 5% of round trip p50. The mapper is written for
readability, not microseconds; this keeps it from costing a noticeable share of what posting
its output costs anyway.

Rounds are interleaved: every round runs a block of each side, in an order that alternates
from round to round, so drift on a shared machine hits both alike. After a warm-up of both,
p50 and p99 per side are taken over all the samples of all rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from bench.respond import admin_dsn, bench_database
from compass_core import ConversationUpdated, EventMapper
from gen.compass.v1 import agent_pb2
from tests import _server

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gen.compass.v1 import comms_pb2

ROOT = Path(__file__).resolve().parent.parent
GALLERY = ROOT / "tests" / "fixtures" / "events" / "gallery-ask-fixture.json"
TARGET = 0.05
"""Most mapping p50 may cost, as a share of round trip p50."""
APPEND_PATH = "/compass.v1.AgentService/AppendMessage"

ASSISTANT_START: dict[str, Any] = {
    "type": "message_start",
    "message": {"role": "assistant", "content": []},
}


def ask_event(args: object) -> dict[str, Any]:
    """The runtime's tool_execution_start of an ask call with `args`."""
    return {
        "type": "tool_execution_start",
        "toolCallId": "toolu_1",
        "toolName": "ask",
        "args": args,
    }


def gallery_event() -> dict[str, Any]:
    return ask_event(json.loads(GALLERY.read_text(encoding="utf-8"))["args"])


@dataclass(frozen=True, slots=True, kw_only=True)
class Latency:
    """Per-call seconds of one side, over every round."""

    name: str
    samples: tuple[float, ...]

    def percentile(self, q: float) -> float:
        """Nearest-rank percentile, `q` in (0, 1]."""
        ordered = sorted(self.samples)
        return ordered[max(math.ceil(q * len(ordered)) - 1, 0)]

    def line(self) -> str:
        return (
            f"  {self.name:<10}  p50 {_us(self.percentile(0.5)):>10}  "
            f"p99 {_us(self.percentile(0.99)):>10}  ({len(self.samples)} calls)"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    mapping: Latency
    round_trip: Latency

    @property
    def ratio(self) -> float:
        """Mapping p50 as a share of round trip p50: the figure the target is about."""
        return self.mapping.percentile(0.5) / self.round_trip.percentile(0.5)

    @property
    def met(self) -> bool:
        return self.ratio <= TARGET

    def report(self) -> str:
        p99 = self.mapping.percentile(0.99) / self.round_trip.percentile(0.99)
        verdict = "met" if self.met else "NOT met"
        return "\n".join([
            "EventMapper: mapping the runtime's 2-question ask event (gallery fixture) against",
            "one AppendMessage round trip carrying its frame to `compass serve` (same run)",
            self.mapping.line(),
            self.round_trip.line(),
            f"  mapping/round trip  {self.ratio:.2%} at p50 ({p99:.2%} at p99);"
            f" target <= {TARGET:.0%} at p50: {verdict}",
        ])  # fmt: skip


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} us"


def time_mapping(event: object, calls: int) -> list[float]:
    """Seconds for each of `calls` mappings of `event`, each into a fresh assistant message."""
    mapper = EventMapper(session="bench")
    samples: list[float] = []
    clock = time.perf_counter
    for _ in range(calls):
        mapper.map(ASSISTANT_START)
        start = clock()
        mapper.map(event)
        samples.append(clock() - start)
    return samples


def mapped_frame(event: object) -> comms_pb2.MessageUpdated:
    """The frame the mapper makes of `event` (which must be a well-formed ask)."""
    mapper = EventMapper(session="bench")
    [frame] = mapper.map(ASSISTANT_START) + mapper.map(event)
    if not isinstance(frame, ConversationUpdated):
        raise SystemExit(f"the bench's ask event does not map: {frame}")
    return frame.value


class AppendClient:
    """AppendMessage over Connect (protobuf body), as the bridge posts a frame."""

    def __init__(self, http: httpx.AsyncClient, token: str, channel_id: str) -> None:
        self._http = http
        self._headers = {"authorization": f"Bearer {token}", "content-type": "application/proto"}
        self._channel_id = channel_id
        self._sent = 0

    async def append(self, frame: comms_pb2.MessageUpdated) -> float:
        """Post `frame` as a new message (fresh client_message_id); seconds it took."""
        self._sent += 1
        request = agent_pb2.AppendMessageRequest(channel_id=self._channel_id, frame=frame)
        request.frame.client_message_id = f"bench-rt-{self._sent}"
        start = time.perf_counter()
        reply = await self._http.post(
            APPEND_PATH, content=request.SerializeToString(), headers=self._headers
        )
        response = agent_pb2.AppendMessageResponse()
        if reply.status_code == 200:
            response.ParseFromString(reply.content)
        elapsed = time.perf_counter() - start
        if reply.status_code != 200:
            raise SystemExit(f"AppendMessage failed: HTTP {reply.status_code} {reply.text}")
        if not response.message.blocks[0].ask.ask_id:
            raise SystemExit("AppendMessage stored the ask without minting an ask_id")
        return elapsed

    async def append_many(self, frame: comms_pb2.MessageUpdated, calls: int) -> list[float]:
        return [await self.append(frame) for _ in range(calls)]


async def interleave(
    *,
    rounds: int,
    maps_per_round: int,
    trips_per_round: int,
    event: object,
    client: AppendClient,
) -> Result:
    """Warm both sides up, then alternate a block of each per round."""
    frame = mapped_frame(event)
    time_mapping(event, maps_per_round)
    await client.append_many(frame, max(trips_per_round, 20))
    mapping: list[float] = []
    trips: list[float] = []
    for round_number in range(rounds):
        trips_first = round_number % 2 == 1
        if trips_first:
            trips.extend(await client.append_many(frame, trips_per_round))
        mapping.extend(time_mapping(event, maps_per_round))
        if not trips_first:
            trips.extend(await client.append_many(frame, trips_per_round))
    return Result(
        mapping=Latency(name="mapping", samples=tuple(mapping)),
        round_trip=Latency(name="round trip", samples=tuple(trips)),
    )


async def measure(options: argparse.Namespace) -> Result:
    trips_per_round = max(math.ceil(options.calls / options.rounds), 1)
    with admin_dsn() as (admin, where):
        print(f"database: {where}")
        async with bench_database(admin) as dsn:
            with _server.serve(dsn, timeout=120) as server:
                world = await _server.seed_world(dsn)
                async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
                    client = AppendClient(http, world.agent.token, world.channel_id)
                    return await interleave(
                        rounds=options.rounds,
                        maps_per_round=options.maps,
                        trips_per_round=trips_per_round,
                        event=gallery_event(),
                        client=client,
                    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.mapper",
        description="Mapping one ask event against one AppendMessage round trip.",
    )
    parser.add_argument("--rounds", type=int, default=20, help="interleaved rounds")
    parser.add_argument("--calls", type=int, default=200, help="timed round trips in all")
    parser.add_argument("--maps", type=int, default=1000, help="timed mappings per round")
    parser.add_argument(
        "--check", action="store_true", help=f"exit 1 when mapping p50 > {TARGET:.0%} of a trip"
    )
    options = parser.parse_args(argv)
    result = asyncio.run(measure(options))
    print(result.report())
    return 1 if options.check and not result.met else 0


if __name__ == "__main__":
    sys.exit(main())
