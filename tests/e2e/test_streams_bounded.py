"""Streams under load (issue 12 F1): a WatchChannel replay larger than one batch arrives
whole and in order across batch boundaries, and one account's open streams are capped
(RESOURCE_EXHAUSTED), freeing a slot when one closes."""

from __future__ import annotations

import asyncio
import contextlib

import httpx

from tests import _server
from tests.e2e._asks import post, post_ask, text_block
from tests.e2e._connect import CAUGHT_UP, open_stream

BIG = 300_000
"""A message of ~300 kB: four of them pass the 1 MiB replay batch."""


async def test_a_replay_larger_than_a_batch_arrives_whole_and_in_order(database_url: str) -> None:
    with _server.serve(database_url) as server:
        world = await _server.seed_world(database_url)
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
            posted = [
                str(
                    (
                        await post(
                            http, world.agent.token, world.channel_id, text_block(str(i) * BIG)
                        )
                    )["messageId"]
                )
                for i in range(9)
            ]
            async with open_stream(
                http, "WatchChannel", {"channelId": world.channel_id}, world.human.token
            ) as stream:
                got: list[str] = []
                while (doc := (await stream.next(30)).json()) != CAUGHT_UP:
                    message = doc["message"]
                    assert isinstance(message, dict)
                    got.append(str(message["messageId"]))  # pyright: ignore[reportUnknownArgumentType]
    assert got == posted


async def test_one_accounts_open_streams_are_capped(database_url: str) -> None:
    env = {"COMPASS_MAX_STREAMS_PER_ACCOUNT": "3"}
    with _server.serve(database_url, env=env) as server:
        world = await _server.seed_world(database_url)
        watch = {"channelId": world.channel_id}
        async with (
            httpx.AsyncClient(base_url=server.url, timeout=30) as http,
            contextlib.AsyncExitStack() as stack,
        ):
            ask_id = await post_ask(http, world.agent.token, world.channel_id)
            held = [
                await stack.enter_async_context(
                    open_stream(http, "WatchChannel", watch, world.human.token)
                )
                for _ in range(3)
            ]
            for stream in held:
                assert (await stream.next()).json() != {}
            async with open_stream(http, "WatchChannel", watch, world.human.token) as extra:
                end = await extra.end()
            error = end.error()
            assert error is not None
            assert error["code"] == "resource_exhausted", error
            # Another account is not affected; the agent's WatchAsk neither.
            async with open_stream(http, "WatchChannel", watch, world.human2.token) as other:
                assert (await other.next()).json() != {}
            async with open_stream(http, "WatchAsk", {"askId": ask_id}, world.agent.token) as w:
                await w.message()
        # Closing the held streams frees their slots (once the server saw them go).
        first: dict[str, object] = {}
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            for _ in range(50):
                async with open_stream(http, "WatchChannel", watch, world.human.token) as again:
                    first = (await again.next()).json()
                if "error" not in first:
                    break
                await asyncio.sleep(0.1)
        assert "error" not in first, first
