"""The ask round trip over Connect-JSON with plain HTTP requests (no generated client).

Agent appends a 2-question ask -> a participant sees it with its minted ask_id -> answers all
questions in one RespondToAsk -> the agent's WatchAsk stream receives the answered Ask and
ends -> ListMessages shows the answer and who gave it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import httpx

from tests.e2e import _connect

if TYPE_CHECKING:
    from tests._server import RunningServer, SeededWorld

GALLERY_ASK = {
    "questions": [
        {
            "questionId": "db",
            "question": "Which database should the new service use?",
            "header": "Database",
            "options": [
                {"id": "0", "label": "Postgres", "description": "Relational, JSONB"},
                {"id": "1", "label": "SQLite", "description": "Embedded, zero-ops"},
                {"id": "2", "label": "MongoDB", "preview": "db.things.find()"},
            ],
            "recommended": 0,
        },
        {
            "questionId": "features",
            "question": "Which auth flows should ship in v1?",
            "options": [
                {"id": "0", "label": "Email + password"},
                {"id": "1", "label": "OAuth (Google, GitHub)"},
                {"id": "2", "label": "Magic links"},
            ],
            "allowMultiple": True,
        },
    ]
}


async def test_ask_round_trip_over_plain_connect_json(
    compass_server: RunningServer, seeded: SeededWorld
) -> None:
    agent = {"authorization": f"Bearer {seeded.agent.token}"}
    human = {"authorization": f"Bearer {seeded.human.token}"}
    async with httpx.AsyncClient(base_url=compass_server.url, timeout=30) as client:
        # 1. The agent appends a message with text and a 2-question ask (no ask_id: minted).
        appended = await client.post(
            "/compass.v1.AgentService/AppendMessage",
            json={
                "channelId": seeded.channel_id,
                "frame": {
                    "clientMessageId": "turn-1",
                    "blocks": [{"text": {"text": "Two decisions first:"}}, {"ask": GALLERY_ASK}],
                },
            },
            headers=agent,
        )
        assert appended.status_code == 200, appended.text
        assert appended.headers["content-type"] == "application/json"
        message = appended.json()["message"]
        assert message["channelId"] == seeded.channel_id
        assert message["authorAccountId"] == seeded.agent.account_id
        assert message["clientMessageId"] == "turn-1"
        assert message["blocks"][0] == {"text": {"text": "Two decisions first:"}}
        minted = message["blocks"][1]["ask"]
        ask_id = minted["askId"]
        assert ask_id.startswith("ask_")
        assert minted["questions"] == GALLERY_ASK["questions"]  # order, options, recommended kept

        # 2. A participant reads the ask by its minted id.
        got = await client.post(
            "/compass.v1.CommsService/GetAsk", json={"askId": ask_id}, headers=human
        )
        assert got.status_code == 200, got.text
        assert got.json() == {
            "ask": {
                "askId": ask_id,
                "questions": GALLERY_ASK["questions"],
                "status": "ASK_STATUS_PENDING",
            },
            "messageId": message["messageId"],
            "channelId": seeded.channel_id,
        }

        # 3. The agent blocks on WatchAsk: the current (pending) state arrives at once.
        async with _connect.open_stream(
            client, "WatchAsk", {"askId": ask_id}, seeded.agent.token
        ) as watch:
            pending = await watch.message()
            response = await watch.response()
            assert response.status_code == 200
            assert response.headers["content-type"] == "application/connect+json"
            assert pending == {
                "ask": {
                    "askId": ask_id,
                    "questions": GALLERY_ASK["questions"],
                    "status": "ASK_STATUS_PENDING",
                }
            }

            # 4. The participant answers every question in one request.
            answered = await client.post(
                "/compass.v1.CommsService/RespondToAsk",
                content=json.dumps(
                    {
                        "askId": ask_id,
                        "answers": [
                            {"questionId": "db", "customText": "CockroachDB"},
                            {"questionId": "features", "chosenOptionIds": ["2", "0"]},
                        ],
                    }
                ),
                headers={**human, "content-type": "application/json"},
            )
            assert answered.status_code == 200, answered.text
            assert answered.json() == {}  # RespondToAskResponse{}

            # 5. The agent's stream receives the answered ask, then ends without error.
            done = (await watch.message())["ask"]
            assert isinstance(done, dict)
            end = await watch.end()
            assert end.error() is None
            assert await watch.frames.get() is None  # nothing after the end frame
        questions = done["questions"]
        assert isinstance(questions, list)
        assert [q.get("customText", "") for q in questions] == ["CockroachDB", ""]
        assert [q.get("chosenOptionIds", []) for q in questions] == [[], ["2", "0"]]
        assert not any(q.get("timedOut") for q in questions)
        assert done["answeredByAccountId"] == seeded.human.account_id
        assert done["answeredByName"] == "Ada"
        assert done["status"] == "ASK_STATUS_ANSWERED"
        assert isinstance(done["answeredAt"], str)
        assert done["answeredAt"].endswith("Z")

        # 6. ListMessages shows the answer state and who answered.
        listed = await client.post(
            "/compass.v1.CommsService/ListMessages",
            json={"channelId": seeded.channel_id},
            headers=human,
        )
        assert listed.status_code == 200, listed.text
        (stored,) = listed.json()["messages"]
        assert stored["messageId"] == message["messageId"]
        assert stored["revision"] != message["revision"]  # the answer made a new revision
        assert int(stored["revision"]) > int(message["revision"])
        assert stored["blocks"][1]["ask"] == done
        assert "nextPageToken" not in listed.json()
