"""Answer-to-tool-result latency of the MCP front door: from a person's RespondToAsk to the
MCP client holding the `ask` tool's result, over HTTP (/mcp) and stdio (`compass mcp`).

Run from the repository root:

    .venv/bin/python -m bench.mcp_latency                      # both transports, 50 asks each
    .venv/bin/python -m bench.mcp_latency --transport stdio --asks 100

Where the database comes from: as in bench/respond.py (`COMPASS_BENCH_DATABASE_URL`, else
`COMPASS_TEST_DATABASE_URL`, an admin DSN where a database of its own is created and dropped,
else a temporary local cluster).

Set-up, once: one `compass serve` subprocess on a fresh database and a seeded world
(tests/_server.seed_world). Per transport, ONE client of the official `mcp` SDK (its
streamable HTTP client on /mcp with the agent's token, or its stdio client running `compass
mcp --server ... --channel ... --token-file ...`) makes every call, one after the other.

Per ask: the client calls `ask` (a one-question ask, its text numbered so no call rejoins an
earlier ask; `wait_seconds` 60); the participant (this process, Connect-JSON over httpx as a
browser) finds it with ListPendingAsks, opens the floor's watcher and waits for its first
state, lets `--think` seconds pass (default 0.5: the call is waiting on its own WatchAsk by
then, as it is when a person answers), calls RespondToAsk and takes t0 = time.monotonic()
right after the OK arrived.

- subject: t1 = time.monotonic() when `call_tool` returned in the client (the SDK has parsed
  the result). HTTP: the server's change notification wakes the tool call's wait, the result
  goes out on the call's SSE stream. stdio: `compass mcp`'s WatchAsk stream (HTTP to the
  server) wakes its call, the result goes out as a JSON line on its stdout.
- floor: a plain WatchAsk client in this process (the bridge's AgentClient.watch_ask with the
  agent's token), opened on the same ask before the answer: t = time.monotonic() when it
  yields the answered state. What any watcher of the ask pays (commit, NOTIFY, the server
  re-reading and streaming the ask) and nothing of MCP.

Both are measured on every ask at the same moment, so noise hits them alike. Reported per
transport: p50, p99 and max of both, and the ratios subject/floor at p50 and p99 (p99 of 50
samples is interpolated between the two slowest).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from bench._timing import answer_latency_arguments, latency_table
from bench.ask_latency import FloorWatcher
from bench.respond import run_on_database, served_database
from compass_bridge.client import AgentClient
from tests import _server

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Sequence

    from mcp_types import CallToolResult

COMMS = "compass.v1.CommsService"
STEP_TIMEOUT = 30.0


class BenchError(Exception):
    """A transport did not get through its asks; the message says where."""


@dataclass(frozen=True, slots=True)
class Sample:
    subject: float
    """t1 - t0: the MCP client held the tool result, seconds after RespondToAsk was sent."""
    floor: float
    """The plain WatchAsk watcher saw the answered state, seconds after RespondToAsk was
    sent."""


def _ask(number: int) -> dict[str, Any]:
    return {
        "questions": [
            {
                "id": "db",
                "question": f"Which database for service {number}?",
                "options": [{"label": "Postgres"}, {"label": "SQLite"}],
            }
        ],
        "wait_seconds": 60,
    }


class Participant:
    """The person answering, over Connect-JSON."""

    def __init__(self, http: httpx.AsyncClient, token: str) -> None:
        self._http = http
        self._headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}

    async def new_ask(self, known: set[str]) -> str:
        """The id of a pending ask not in `known`, once there is one."""
        deadline = time.monotonic() + STEP_TIMEOUT
        while time.monotonic() < deadline:
            reply = await self._http.post(
                f"{COMMS}/ListPendingAsks", json={}, headers=self._headers
            )
            reply.raise_for_status()
            for pending in reply.json().get("asks", []):
                ask_id = str(pending["ask"]["askId"])
                if ask_id not in known:
                    return ask_id
            await asyncio.sleep(0.01)
        raise BenchError(f"no new ask within {STEP_TIMEOUT:g}s")

    async def respond(self, ask_id: str, question_id: str = "db") -> None:
        """Answer the ask's one question with its second option."""
        await self.answer(ask_id, [{"questionId": question_id, "chosenOptionIds": ["1"]}])

    async def answer(self, ask_id: str, answers: list[dict[str, object]]) -> None:
        """RespondToAsk with `answers` (Connect-JSON)."""
        body = {"askId": ask_id, "answers": answers}
        reply = await self._http.post(f"{COMMS}/RespondToAsk", json=body, headers=self._headers)
        reply.raise_for_status()


@contextlib.asynccontextmanager
async def mcp_client(
    transport: str, server_url: str, world: _server.SeededWorld, tmp: Path
) -> AsyncGenerator[Client]:
    if transport == "http":
        http = httpx2.AsyncClient(
            headers={"authorization": f"Bearer {world.agent.token}"}, timeout=120
        )
        async with (
            http,
            Client(
                streamable_http_client(f"{server_url}mcp", http_client=http), mode="legacy"
            ) as client,
        ):
            yield client
        return
    token_file = tmp / "agent.token"
    token_file.write_text(world.agent.token)
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "compass_server.cli",
            "mcp",
            "--server",
            server_url,
            "--channel",
            world.channel_id,
            "--token-file",
            str(token_file),
        ],
        env=dict(os.environ),
    )
    async with Client(params, mode="legacy") as client:
        yield client


async def _timed_call(client: Client, args: dict[str, Any]) -> tuple[CallToolResult, float]:
    """The tool's result and time.monotonic() the moment the client had it."""
    result = await client.call_tool("ask", args)
    return result, time.monotonic()


async def measure_transport(
    transport: str, *, server_url: str, dsn: str, asks: int, warmup: int, think: float
) -> list[Sample]:
    world = await _server.seed_world(dsn, prefix=f"{transport}-")
    samples: list[Sample] = []
    known: set[str] = set()
    with tempfile.TemporaryDirectory(prefix=f"compass-mcp-latency-{transport}-") as tmp:
        async with (
            httpx.AsyncClient(base_url=server_url, timeout=30) as http,
            mcp_client(transport, server_url, world, Path(tmp)) as client,
        ):
            participant = Participant(http, world.human.token)
            agent = AgentClient(server_url, world.agent.token)
            for number in range(warmup + asks):
                call = asyncio.create_task(_timed_call(client, _ask(number)))
                ask_id = await participant.new_ask(known)
                known.add(ask_id)
                floor = FloorWatcher(agent, ask_id)
                await asyncio.wait_for(floor.started(), STEP_TIMEOUT)
                await asyncio.sleep(think)  # a person reads the question (time itself)
                t0 = time.monotonic()
                await participant.respond(ask_id)
                result, t1 = await asyncio.wait_for(call, STEP_TIMEOUT)
                await asyncio.wait_for(floor.task, STEP_TIMEOUT)
                content = result.structured_content or {}
                if content.get("status") != "answered" or content.get("ask_id") != ask_id:
                    raise BenchError(f"call {number} returned {content}")
                if number >= warmup and floor.answered_at is not None:
                    samples.append(Sample(subject=t1 - t0, floor=floor.answered_at - t0))
    return samples


def report(transport: str, samples: Sequence[Sample]) -> str:
    where = "/mcp (streamable HTTP)" if transport == "http" else "compass mcp (stdio)"
    title = f"{transport}: {where}, the mcp SDK's client ({len(samples)} asks)"
    table = latency_table(
        ("MCP client (tool result)", [s.subject for s in samples]),
        ("floor (WatchAsk client)", [s.floor for s in samples]),
        ratio="MCP / floor",
    )
    return "\n".join([title, *table])


async def run_all(args: argparse.Namespace, admin: str, where: str) -> int:
    transports = ["http", "stdio"] if args.transport == "both" else [args.transport]
    failed: list[str] = []
    async with served_database(admin) as (server, dsn, settings):
        print(f"database: {where}; {settings}")
        print(
            f"answer-to-tool-result latency: RespondToAsk sent -> the MCP client holds the "
            f"`ask` result; {args.asks} asks per transport (+{args.warmup} warm-up), "
            f"think {args.think:g} s"
        )
        for transport in transports:
            try:
                samples = await measure_transport(
                    transport,
                    server_url=server.url,
                    dsn=dsn,
                    asks=args.asks,
                    warmup=args.warmup,
                    think=args.think,
                )
            except (BenchError, TimeoutError) as exc:
                failed.append(transport)
                print(f"{transport}: FAILED: {exc!r}")
                continue
            print(report(transport, samples), flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.mcp_latency", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument(
        "--transport", choices=["http", "stdio", "both"], default="both", help="(default both)"
    )
    args = answer_latency_arguments(
        parser, argv, asks=50, warmup=3, think=0.5, per=" per transport"
    )
    # SIGTERM ends the run like Ctrl-C: every child is stopped.
    return run_on_database(functools.partial(run_all, args))


if __name__ == "__main__":
    raise SystemExit(main())
