"""Fan-out (issue 13): one change to a channel costs one store read in a process however
many of its WatchChannel streams watch that channel, and every stream still gets it. Over
real HTTP against `compass serve`; the reads are counted by the server's own metric."""

from __future__ import annotations

import asyncio
import contextlib

import httpx

from tests import _server
from tests.e2e._asks import post, text_block
from tests.e2e._connect import CAUGHT_UP, open_stream
from tests.e2e.test_metrics import TOKEN, scrape

WATCHERS = 40
READS = ("compass_watch_reads_total", ())


async def test_one_change_is_read_once_for_every_watcher_of_its_channel(database_url: str) -> None:
    # No sweeper ticks or keepalive re-checks during the test.
    env = {"COMPASS_METRICS_TOKEN": TOKEN}
    with _server.serve(database_url, env=env) as server:
        world = await _server.seed_world(database_url)
        limits = httpx.Limits(max_connections=WATCHERS + 5)
        async with (
            httpx.AsyncClient(base_url=server.url, timeout=30, limits=limits) as http,
            contextlib.AsyncExitStack() as stack,
        ):
            streams = [
                await stack.enter_async_context(
                    open_stream(
                        http,
                        "WatchChannel",
                        {"channelId": world.channel_id},
                        world.human.token if i % 2 else world.human2.token,
                    )
                )
                for i in range(WATCHERS)
            ]
            for stream in streams:
                assert (await stream.next(10)).json() == CAUGHT_UP
            before = (await scrape(http))[READS]
            for round_ in range(3):
                message = await post(
                    http, world.agent.token, world.channel_id, text_block(f"change {round_}")
                )
                got = await asyncio.gather(*(s.message(10) for s in streams))
                assert {str(g["message"]["messageId"]) for g in got} == {message["messageId"]}  # pyright: ignore[reportIndexIssue, reportUnknownArgumentType, reportArgumentType]
            reads = (await scrape(http))[READS] - before
    # One shared read per change (a watcher woken late may start one more, never one each).
    assert 3 <= reads <= 6, reads
