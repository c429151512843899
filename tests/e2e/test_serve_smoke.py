"""The served app answers probes and rejects anonymous RPCs (a smoke test of the fixture)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx

if TYPE_CHECKING:
    from tests._server import RunningServer, SeededWorld


async def test_probes_and_an_authenticated_call(
    compass_server: RunningServer, seeded: SeededWorld
) -> None:
    async with httpx.AsyncClient(base_url=compass_server.url) as client:
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        assert (await client.get("/readyz")).json() == {
            "status": "ok",
            "database": "ok",
            "listener": "ok",
            "webhooks": "ok",
            "push": "ok",
        }
        anonymous = await client.post(
            "/compass.v1.CommsService/ListChannels",
            json={},
        )
        assert anonymous.status_code == 401
        listed = await client.post(
            "/compass.v1.CommsService/ListChannels",
            json={},
            headers={"authorization": f"Bearer {seeded.human.token}"},
        )
        assert listed.status_code == 200
        assert listed.json()["channels"] == [
            {"channelId": seeded.channel_id, "workspaceId": seeded.workspace_id, "name": "general"}
        ]
