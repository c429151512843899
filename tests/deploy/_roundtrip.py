"""One ask round trip against a Compass running in a container, over real HTTP from the host:
the demo workspace `compass demo` printed (inside the container), then the agent's
AppendMessage -> WatchAsk (pending) -> the human's RespondToAsk -> WatchAsk delivers the
answered ask and ends. Speaks Connect-JSON through tests/e2e/_connect.py (plain httpx, no
generated client and none of compass's own bridge code).
"""

from __future__ import annotations

import json
from typing import Final

import httpx

from tests.e2e import _asks, _connect

WITHIN: Final = 30.0
"""Per step: a container on a shared, busy machine may be slow; a correct one is much faster."""


def demo_workspace(stdout: str) -> dict[str, object]:
    """The JSON `compass demo` printed, with what the round trip needs checked present."""
    demo: object = json.loads(stdout)
    assert isinstance(demo, dict)
    for key in ("channel_id", "human", "agent", "example_ask_id"):
        assert demo.get(key), f"`compass demo` printed no {key}: {stdout}"
    return demo  # pyright: ignore[reportUnknownVariableType] - checked above, read by the tests


def _field(demo: dict[str, object], who: str, name: str) -> str:
    account = demo[who]
    assert isinstance(account, dict)
    value = account.get(name)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType] - JSON
    assert isinstance(value, str)
    return value


def _token(demo: dict[str, object], who: str) -> str:
    return _field(demo, who, "token")


def _account(demo: dict[str, object], who: str) -> str:
    return _field(demo, who, "account_id")


async def ask_round_trip(base_url: str, demo: dict[str, object]) -> dict[str, object]:
    """Run the round trip on the demo's channel; returns the answered ask WatchAsk delivered."""
    agent, human = _token(demo, "agent"), _token(demo, "human")
    async with httpx.AsyncClient(base_url=base_url, timeout=WITHIN) as client:
        # The demo's own ask is there for the human, pending.
        seeded = await _connect.call(client, "GetAsk", {"askId": demo["example_ask_id"]}, human)
        assert seeded.ok, seeded
        assert seeded.body["channelId"] == demo["channel_id"]

        appended = await _connect.call(
            client,
            "AppendMessage",
            {
                "channelId": demo["channel_id"],
                "frame": {
                    "clientMessageId": "container-check-1",
                    "blocks": [
                        _asks.text_block("One decision first:"),
                        _asks.ask_block(_asks.question("db", "0", "1", recommended=0)),
                    ],
                },
            },
            agent,
        )
        assert appended.ok, appended
        message = appended.body["message"]
        assert isinstance(message, dict)
        ask = message["blocks"][1]["ask"]  # pyright: ignore[reportUnknownVariableType] - JSON
        ask_id = ask["askId"]  # pyright: ignore[reportUnknownVariableType] - JSON
        assert isinstance(ask_id, str)
        assert ask_id.startswith("ask_")

        async with _connect.open_stream(client, "WatchAsk", {"askId": ask_id}, agent) as watch:
            pending = (await watch.message(WITHIN))["ask"]
            assert isinstance(pending, dict)
            assert pending["status"] == "ASK_STATUS_PENDING"
            answered = await _connect.call(
                client,
                "RespondToAsk",
                {"askId": ask_id, "answers": [{"questionId": "db", "chosenOptionIds": ["1"]}]},
                human,
            )
            assert answered.ok, answered
            done = (await watch.message(WITHIN))["ask"]
            end = await watch.end(WITHIN)
            assert end.error() is None, end.payload
        assert isinstance(done, dict)
        assert done["status"] == "ASK_STATUS_ANSWERED"
        assert done["answeredByAccountId"] == _account(demo, "human")
        questions = done["questions"]
        assert isinstance(questions, list)
        assert [q.get("chosenOptionIds") for q in questions] == [["1"]]  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType] - JSON
        return done  # pyright: ignore[reportUnknownVariableType] - JSON, checked above
