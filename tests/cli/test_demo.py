"""`compass demo`: a workspace, a channel, a human and an agent, printed as JSON with their
tokens and the URL; the tokens work against a running server."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import httpx

from tests import _server
from tests.e2e._connect import call, open_stream

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.cli.conftest import Ran


async def test_demo_prints_working_tokens_and_the_url(
    compass_cli: Callable[..., Ran], database_url: str
) -> None:
    ran = compass_cli("demo", "--url", "http://compass.example:9000/")
    assert ran.code == 0, ran
    demo = json.loads(ran.stdout)
    assert set(demo) == {"url", "workspace_id", "channel_id", "human", "agent", "example_ask_id"}
    assert demo["url"] == "http://compass.example:9000/"
    for who in ("human", "agent"):
        assert set(demo[who]) == {"account_id", "name", "token"}
        assert demo[who]["token"].startswith("cmp_")

    with _server.serve(database_url) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            human, agent = demo["human"]["token"], demo["agent"]["token"]
            channels = await call(client, "ListChannels", {}, human)
            assert channels.body == {
                "channels": [
                    {
                        "channelId": demo["channel_id"],
                        "workspaceId": demo["workspace_id"],
                        "name": "general",
                    }
                ]
            }
            got = await call(client, "GetAsk", {"askId": demo["example_ask_id"]}, human)
            assert got.ok, got
            ask = got.body["ask"]
            assert isinstance(ask, dict)
            assert [q["questionId"] for q in ask["questions"]] == ["db", "features"]
            async with open_stream(
                client, "WatchAsk", {"askId": demo["example_ask_id"]}, agent
            ) as watch:
                assert (await watch.message())["ask"] == ask
            # Each token is for its own service.
            denied = await call(client, "ListChannels", {}, agent)
            assert denied.code == "permission_denied"

    # A second demo is another workspace, with other tokens.
    again = json.loads(compass_cli("demo").stdout)
    assert again["workspace_id"] != demo["workspace_id"]
    assert again["human"]["token"] != demo["human"]["token"]
