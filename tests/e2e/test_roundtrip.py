"""The ask round trip over Connect-JSON with plain HTTP requests (no generated client).

Agent appends a 2-question ask -> a participant sees it with its minted ask_id -> answers all
questions in one RespondToAsk -> the agent's WatchAsk stream receives the answered Ask and
ends -> ListMessages shows the answer and who gave it.

Twice: with the server on PostgreSQL directly, and with its pool going through PgBouncer in
transaction mode (tests/_pgbouncer.py; its LISTEN connection direct, asyncpg's statement cache
off), as docs/operating/deploying.md sets it up for many replicas.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx
import pytest

from tests import _server
from tests.e2e import _connect

if TYPE_CHECKING:
    from collections.abc import Generator

    from tests._pgbouncer import Bouncer
    from tests._server import RunningServer

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


@pytest.fixture(params=["direct", "pgbouncer"])
def roundtrip_server(
    request: pytest.FixtureRequest, database_url: str
) -> Generator[tuple[RunningServer, Bouncer | None]]:
    """`compass serve` on the test database, directly or through PgBouncer."""
    if request.param == "direct":
        with _server.serve(database_url) as server:
            yield server, None
        return
    bouncer: Bouncer = request.getfixturevalue("pgbouncer")
    # deploy/pgbouncer/pgbouncer.ini's transaction mode, really in force.
    assert asyncio.run(bouncer.shares_server_connections(database_url))
    env = {
        "COMPASS_LISTEN_DATABASE_URL": database_url,  # LISTEN needs a session of its own
        "COMPASS_DB_STATEMENT_CACHE_SIZE": "0",  # PgBouncer 1.18 tracks no prepared statements
    }
    with _server.serve(bouncer.dsn_for(database_url), env=env) as server:
        yield server, bouncer


async def test_ask_round_trip_over_plain_connect_json(
    roundtrip_server: tuple[RunningServer, Bouncer | None], database_url: str
) -> None:
    compass_server, bouncer = roundtrip_server
    seeded = await _server.seed_world(database_url)
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
    if bouncer is not None:  # the pool's traffic went through PgBouncer
        database = urlsplit(database_url).path.lstrip("/")
        assert bouncer.logins(database) >= 1, bouncer.log.read_text()[-2000:]
