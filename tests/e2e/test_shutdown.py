"""Live watches and the server's life cycle: a watch never keeps the server from stopping, and a
watch whose client went away does not live on.

- SIGTERM while browsers and agents hold WatchChannel/WatchAsk streams open: the streams end
  with UNAVAILABLE (so clients reconnect, to this server once it is back or to another one)
  and the process exits promptly. uvicorn's graceful shutdown waits for every running
  response, and a watch only ends when something changes.
- A client that disconnects from a watch: its handler stops waiting and unsubscribes, instead
  of re-reading the database every recheck period forever (a watch only notices a gone client
  when it has something to send).
"""

from __future__ import annotations

import asyncio
import signal
import time
from typing import TYPE_CHECKING

import httpx

from compass_server.app import create_app
from compass_server.config import Settings
from compass_server.live.hub import ChangeHub
from tests import _server
from tests.e2e._asks import post as post_message, post_ask, text_block
from tests.e2e._connect import open_stream

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from starlette.applications import Starlette

SHUTDOWN_SECONDS = 10.0
"""Generous for 2 shared CI cores; without the fix the server waits for ever."""


async def test_sigterm_ends_open_watches_with_unavailable_and_exits(database_url: str) -> None:
    with _server.serve(database_url) as server:
        world = await _server.seed_world(database_url)
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            await post_message(client, world.agent.token, world.channel_id, text_block("hello"))
            ask_id = await post_ask(client, world.agent.token, world.channel_id)
            async with (
                open_stream(
                    client, "WatchChannel", {"channelId": world.channel_id}, world.human.token
                ) as channel,
                open_stream(client, "WatchAsk", {"askId": ask_id}, world.agent.token) as ask,
            ):
                await channel.message()
                await channel.message()
                await ask.message()
                server.process.send_signal(signal.SIGTERM)
                started = time.monotonic()
                for stream in (channel, ask):
                    error = (await stream.end(within=SHUTDOWN_SECONDS)).error()
                    assert error is not None
                    assert error["code"] == "unavailable", error
            exit_code = await asyncio.to_thread(server.process.wait, SHUTDOWN_SECONDS)
        assert time.monotonic() - started < SHUTDOWN_SECONDS
        # uvicorn re-raises the signal once it has shut down cleanly.
        assert exit_code in (0, -signal.SIGTERM), server.log()
        assert "Application shutdown complete." in server.log()


async def _hub_of(app: Starlette) -> ChangeHub:
    hub = app.state.change_hub
    assert isinstance(hub, ChangeHub)
    return hub


async def _in_process(database_url: str) -> AsyncGenerator[tuple[str, ChangeHub]]:
    app = create_app(Settings(database_url=database_url))
    async with _server.in_process(app, shutdown_seconds=SHUTDOWN_SECONDS) as url:
        yield url, await _hub_of(app)


async def test_a_watch_whose_client_left_stops_watching(database_url: str) -> None:
    world = await _server.seed_world(database_url)
    async for url, hub in _in_process(database_url):
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            ask_id = await post_ask(client, world.agent.token, world.channel_id)
            async with (
                open_stream(
                    client, "WatchChannel", {"channelId": world.channel_id}, world.human.token
                ) as channel,
                open_stream(client, "WatchAsk", {"askId": ask_id}, world.agent.token) as ask,
            ):
                await channel.message()
                await ask.message()
                assert hub.watcher_count() == 2
            # Both clients are gone (the streams were closed): the handlers notice at once.
            deadline = time.monotonic() + 5
            while hub.watcher_count() and time.monotonic() < deadline:  # noqa: ASYNC110 - polling the server's state; nothing to await
                await asyncio.sleep(0.05)
            assert hub.watcher_count() == 0
