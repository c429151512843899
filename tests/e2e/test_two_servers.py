"""Two `compass serve` processes on one database: a change made through one reaches the watch
streams held on the other (PostgreSQL LISTEN/NOTIFY, one listening connection per process)."""

from __future__ import annotations

import httpx

from tests import _server
from tests.e2e._asks import answer, post_ask, respond
from tests.e2e._connect import call, open_stream


async def test_an_answer_given_through_one_server_reaches_a_watch_on_the_other(
    database_url: str,
) -> None:
    with _server.serve(database_url) as a, _server.serve(database_url) as b:
        world = await _server.seed_world(database_url)
        async with (
            httpx.AsyncClient(base_url=a.url, timeout=30) as on_a,
            httpx.AsyncClient(base_url=b.url, timeout=30) as on_b,
        ):
            ask_id = await post_ask(on_b, world.agent.token, world.channel_id)
            async with (
                open_stream(
                    on_a, "WatchChannel", {"channelId": world.channel_id}, world.human.token
                ) as channel,
                open_stream(on_a, "WatchAsk", {"askId": ask_id}, world.agent.token) as ask,
            ):
                posted = (await channel.message())["message"]
                assert isinstance(posted, dict)
                pending = (await ask.message())["ask"]
                assert isinstance(pending, dict)
                assert "answeredByAccountId" not in pending

                reply = await call(
                    on_b,
                    "RespondToAsk",
                    respond(ask_id, answer("db", "2"), answer("features", "0")),
                    world.human2.token,
                )
                assert reply.ok, reply

                changed = (await channel.message(within=10))["message"]
                assert isinstance(changed, dict)
                assert changed["messageId"] == posted["messageId"]
                assert int(changed["revision"]) > int(posted["revision"])
                answered = changed["blocks"][0]["ask"]
                assert answered["answeredByAccountId"] == world.human2.account_id
                assert [q.get("chosenOptionIds") for q in answered["questions"]] == [["2"], ["0"]]

                assert (await ask.message(within=10))["ask"] == answered
                assert (await ask.end()).error() is None

                # The watch on A stays live: the next change made through B arrives too.
                again = await post_ask(on_b, world.agent.token, world.channel_id)
                newer = (await channel.message(within=10))["message"]
                assert isinstance(newer, dict)
                assert newer["blocks"][0]["ask"]["askId"] == again
