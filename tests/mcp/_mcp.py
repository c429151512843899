"""The MCP front door from outside: the official `mcp` SDK's own client against `compass
serve`'s /mcp (or `compass mcp` over stdio), a person answering over Connect-JSON as the
browser does, and the stored asks read back from PostgreSQL."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import asyncpg
import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests._wait import eventually
from tests.e2e import _connect

if TYPE_CHECKING:
    import asyncio
    from collections.abc import AsyncGenerator, Mapping

    from mcp_types import CallToolResult

    from tests import _server

#: Environment of a `compass serve` for these tests: progress and sweeps in tenths of a
#: second, the grace in seconds, so a test waits for them without taking minutes. (After a
#: `pending` result the grace runs until the next call: a busy machine's gap between two
#: calls of one test stays well within it.)
GRACE_SECONDS = 3
FAST: dict[str, str] = {
    "COMPASS_MCP_PROGRESS_SECONDS": "0.2",
    "COMPASS_MCP_GRACE_SECONDS": str(GRACE_SECONDS),
    "COMPASS_SWEEP_INTERVAL_SECONDS": "0.1",
    "COMPASS_AUTH_RECHECK_SECONDS": "0.2",
    "COMPASS_EXPIRY_GRACE_SECONDS": "60",
}

#: Protocol eras of the SDK client: the initialize handshake (what published clients speak
#: today) and the stateless 2026-07-28 envelope ("auto" picks it against this server).
MODES = ("legacy", "auto")

TWO: dict[str, Any] = {
    "questions": [
        {
            "id": "db",
            "question": "Which database should the new service use?",
            "header": "DB",
            "options": [
                {"label": "Postgres", "description": "relational"},
                {"label": "SQLite", "preview": "sqlite3 app.db"},
            ],
            "recommended": 1,
        },
        {
            "id": "features",
            "question": "Which auth flows ship in v1?",
            "options": [{"label": "Email"}, {"label": "OAuth"}, {"label": "SSO"}],
            "multi": True,
        },
    ]
}


def one_question(text: str = "Ship it?") -> dict[str, Any]:
    """A one-question ask whose question text makes its arguments (and call key) unique."""
    return {
        "questions": [
            {"id": "go", "question": text, "options": [{"label": "Yes"}, {"label": "No"}]}
        ]
    }


@contextlib.asynccontextmanager
async def agent(
    server: _server.RunningServer,
    token: str | None,
    *,
    mode: str = "legacy",
    headers: Mapping[str, str] | None = None,
) -> AsyncGenerator[Client]:
    """The SDK's client on /mcp with `token` as its bearer token."""
    sent = {"authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers={**sent, **(headers or {})}, timeout=60)
    async with (
        http,
        Client(streamable_http_client(f"{server.url}mcp", http_client=http), mode=mode) as client,
    ):  # type: ignore[arg-type] - mode is a Literal
        yield client


@dataclass
class Progress:
    """What a call's progress callback was told."""

    values: list[float] = field(default_factory=list[float])
    messages: list[str | None] = field(default_factory=list["str | None"])

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        del total
        self.values.append(progress)
        self.messages.append(message)


class Person:
    """A participant in the browser: CommsService over Connect-JSON."""

    def __init__(self, server: _server.RunningServer, token: str) -> None:
        self._http = httpx.AsyncClient(base_url=server.url, timeout=30)
        self._token = token

    async def close(self) -> None:
        await self._http.aclose()

    async def pending(
        self, *, count: int = 1, within: float = 20, agent: asyncio.subprocess.Process | None = None
    ) -> list[dict[str, Any]]:
        """The pending asks of the person's channels, once there are `count` of them. With
        `agent` (the process that asks), failing at once if it exits first."""

        async def found() -> list[dict[str, Any]] | None:
            if agent is not None and agent.returncode is not None:
                raise AssertionError(f"the agent exited ({agent.returncode}) before it asked")
            reply = await _connect.call(self._http, "ListPendingAsks", {}, self._token)
            asks = reply.body.get("asks", [])
            return asks if isinstance(asks, list) and len(asks) >= count else None  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType] - JSON

        return await eventually(found, f"{count} pending ask(s)", within=within)

    async def one_pending_id(
        self, *, within: float = 20, agent: asyncio.subprocess.Process | None = None
    ) -> str:
        [pending] = await self.pending(within=within, agent=agent)
        return str(pending["ask"]["askId"])

    async def respond(self, ask_id: str, *answers: dict[str, Any]) -> None:
        body = {"askId": ask_id, "answers": list(answers)}
        reply = await _connect.call(self._http, "RespondToAsk", body, self._token)
        assert reply.ok, reply

    async def decline(self, ask_id: str, reason: str) -> None:
        body = {"askId": ask_id, "reason": reason}
        reply = await _connect.call(self._http, "DeclineAsk", body, self._token)
        assert reply.ok, reply


def answer(question_id: str, *chosen: str, text: str = "") -> dict[str, Any]:
    entry: dict[str, Any] = {"questionId": question_id, "chosenOptionIds": list(chosen)}
    if text:
        entry["customText"] = text
    return entry


async def rows(dsn: str, query: str, *args: object) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetch(query, *args)
    finally:
        await conn.close()


async def stored_ask(dsn: str, ask_id: str) -> asyncpg.Record:
    [row] = await rows(
        dsn,
        "SELECT status, close_reason, answers, delivery_state, delivery_payload"
        " FROM asks WHERE ask_id = $1",
        ask_id,
    )
    return row


async def until_status(dsn: str, ask_id: str, status: str, *, within: float = 20) -> asyncpg.Record:
    async def reached() -> asyncpg.Record | None:
        row = await stored_ask(dsn, ask_id)
        return row if row["status"] == status else None

    return await eventually(reached, f"ask {ask_id} {status}", within=within)


async def until_delivered(dsn: str, ask_id: str) -> asyncpg.Record:
    async def reported() -> asyncpg.Record | None:
        row = await stored_ask(dsn, ask_id)
        return row if row["delivery_state"] is not None else None

    return await eventually(reported, f"ask {ask_id}'s delivery receipt", within=20)


async def count(dsn: str, table: str) -> int:
    # Only this module's own table names are interpolated.
    [row] = await rows(dsn, f"SELECT count(*) AS n FROM {table}")  # noqa: S608
    return int(row["n"])


def text_of(result: CallToolResult) -> str:
    [block] = result.content
    assert block.type == "text"
    return block.text
