"""`compass mcp` (the MCP tools over stdio, an AgentService client) as a real process, driven
by the official `mcp` SDK's stdio client, against `compass serve` on PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests._wait import eventually
from tests.mcp import _mcp
from tests.mcp._mcp import TWO, Person, Progress, answer, one_question, text_of

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator
    from pathlib import Path

    from tests import _server


def _command(server: _server.RunningServer, channel: str, token_file: Path) -> list[str]:
    return [
        "-m",
        "compass_server.cli",
        "mcp",
        "--server",
        server.url,
        "--channel",
        channel,
        "--token-file",
        str(token_file),
        "--progress-seconds",
        "0.2",
        "--grace-seconds",
        str(_mcp.GRACE_SECONDS),
        "--max-backoff",
        "0.5",
    ]


@contextlib.asynccontextmanager
async def stdio_agent(
    server: _server.RunningServer, world: _server.SeededWorld, tmp_path: Path
) -> AsyncGenerator[Client]:
    token_file = tmp_path / "agent.token"
    token_file.write_text(world.agent.token + "\n")
    params = StdioServerParameters(
        command=sys.executable,
        args=_command(server, world.channel_id, token_file),
        env={**os.environ},
    )
    async with Client(params, mode="legacy") as client:
        yield client


async def test_an_answer_reaches_the_call_with_progress_and_a_receipt(
    server: _server.RunningServer, world: _server.SeededWorld, person: Person, tmp_path: Path
) -> None:
    progress = Progress()
    async with stdio_agent(server, world, tmp_path) as client:
        call = asyncio.create_task(
            client.call_tool("ask", {**TWO, "context": "Billing"}, progress_callback=progress)
        )
        [pending] = await person.pending()
        ask_id = str(pending["ask"]["askId"])
        assert {q["freeText"] for q in pending["ask"]["questions"]} == {"FREE_TEXT_ACCEPTED"}
        await eventually(lambda: len(progress.values) >= 3, "three progress notifications")
        await person.respond(ask_id, answer("db", "0"), answer("features", "1", text="and SAML"))
        result = await call
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["status"] == "answered"
    assert result.structured_content["link"] == f"{server.url}#/ask/{ask_id}"
    assert text_of(result) == (
        'User answers:\ndb: Postgres\nfeatures: [OAuth] + "and SAML"\n(answered by Ada in Compass)'
    )
    stored = await _mcp.until_delivered(server.dsn, ask_id)
    assert stored["delivery_state"] == "delivered"
    assert json.loads(stored["delivery_payload"])["structuredContent"] == result.structured_content


async def test_decline_pending_wait_cancel_and_pick_recommended(
    server: _server.RunningServer, world: _server.SeededWorld, person: Person, tmp_path: Path
) -> None:
    async with stdio_agent(server, world, tmp_path) as client:
        declined = asyncio.create_task(client.call_tool("ask", one_question("Friday deploy?")))
        ask_id = await person.one_pending_id()
        await person.decline(ask_id, "no")
        assert (await declined).structured_content["status"] == "declined"  # type: ignore[index] - checked by the SDK's schema
        pending = await client.call_tool("ask", {**one_question("Later?"), "wait_seconds": 0})
        assert pending.structured_content is not None
        later = pending.structured_content["ask_id"]
        assert pending.structured_content["status"] == "pending"
        waiting = asyncio.create_task(client.call_tool("ask_wait", {"ask_id": later}))
        [open_ask] = await person.pending()
        assert open_ask["ask"]["askId"] == later
        await person.respond(later, answer("go", "1"))
        assert text_of(await waiting).startswith("User selected: No")
        cancelled = await client.call_tool("ask", {**one_question("Drop?"), "wait_seconds": 0})
        assert cancelled.structured_content is not None
        withdrawn = await client.call_tool(
            "ask_cancel", {"ask_id": cancelled.structured_content["ask_id"], "reason": "moot"}
        )
        timed_out = await client.call_tool(
            "ask", {**TWO, "deadline_seconds": 0.5, "on_timeout": "pick_recommended"}
        )
    assert withdrawn.structured_content is not None
    assert (
        withdrawn.structured_content["status"],
        withdrawn.structured_content["close_reason"],
    ) == (
        "withdrawn",
        "moot",
    )
    assert timed_out.structured_content is not None
    assert timed_out.structured_content["status"] == "timed_out"
    assert [a["chosen_labels"] for a in timed_out.structured_content["answers"]] == [
        ["SQLite"],
        ["Email"],
    ]
    stored = await _mcp.stored_ask(server.dsn, timed_out.structured_content["ask_id"])
    assert stored["status"] == "timed_out"
    assert (await _mcp.until_delivered(server.dsn, ask_id))["delivery_state"] == "delivered"


async def test_a_reissue_rejoins_and_a_cancelled_call_leaves_after_the_grace(
    server: _server.RunningServer, world: _server.SeededWorld, person: Person, tmp_path: Path
) -> None:
    args = one_question("Rejoin?")
    async with stdio_agent(server, world, tmp_path) as client:
        first = await client.call_tool("ask", {**args, "wait_seconds": 0})
        assert first.structured_content is not None
        ask_id = first.structured_content["ask_id"]
        again = asyncio.create_task(client.call_tool("ask", {**args, "wait_seconds": 30}))
        await person.one_pending_id()
        await person.respond(ask_id, answer("go", "0"))
        result = await again
        assert result.structured_content is not None
        assert result.structured_content["ask_id"] == ask_id
        # Cancelled by the client (notifications/cancelled on the session): withdrawn after
        # --grace-seconds, while the process keeps running.
        call = asyncio.create_task(client.call_tool("ask", one_question("Cancel me?")))
        [left] = await person.pending()
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
        stored = await _mcp.until_status(server.dsn, str(left["ask"]["askId"]), "withdrawn")
        assert stored["close_reason"] == "agent stopped waiting"


async def test_closing_stdin_withdraws_what_calls_still_waited_for(
    server: _server.RunningServer, world: _server.SeededWorld, person: Person, tmp_path: Path
) -> None:
    async with stdio_agent(server, world, tmp_path) as client:
        call = asyncio.create_task(client.call_tool("ask", one_question("Abandoned?")))
        [pending] = await person.pending()
    call.cancel()
    with contextlib.suppress(BaseException):
        await call
    stored = await _mcp.until_status(server.dsn, str(pending["ask"]["askId"]), "withdrawn")
    assert stored["close_reason"] == "agent stopped waiting"


async def test_an_ask_returned_pending_is_withdrawn_when_its_client_quits(
    server: _server.RunningServer, world: _server.SeededWorld, tmp_path: Path
) -> None:
    """After a `pending` result the agent waits for nothing until it comes back with
    ask_wait: a client that quits instead (closes stdin) leaves it withdrawn at once, as
    any ask a call left (issue 33, N7). Before: a `pending` result forgot the ask, which
    stayed answerable forever."""
    async with stdio_agent(server, world, tmp_path) as client:
        pending = await client.call_tool("ask", {**one_question("Quit on?"), "wait_seconds": 0})
    assert pending.structured_content is not None
    assert pending.structured_content["status"] == "pending"
    ask_id = pending.structured_content["ask_id"]
    stored = await _mcp.until_status(server.dsn, ask_id, "withdrawn")
    assert stored["close_reason"] == "agent stopped waiting"


async def test_input_errors_are_tool_errors_and_store_nothing(
    server: _server.RunningServer, world: _server.SeededWorld, tmp_path: Path
) -> None:
    thousand = {"questions": [{"id": f"q{i}", "question": "?", "options": []} for i in range(1000)]}
    async with stdio_agent(server, world, tmp_path) as client:
        result = await client.call_tool("ask", thousand)
        unknown = await client.call_tool("ask_wait", {"ask_id": "ask_nope"})
    assert result.is_error
    assert text_of(result) == "invalid arguments: questions has more than 100 items (got 1000)"
    assert unknown.is_error
    assert text_of(unknown) == "ask not found"
    found = await _mcp.rows(
        server.dsn, "SELECT count(*) AS n FROM messages WHERE channel_id = $1", world.channel_id
    )
    assert found[0]["n"] == 0


@pytest.mark.parametrize(
    ("which", "says"),
    [
        ("person", "the token is not an agent's: use an agent account's token"),
        ("unknown", "the server did not accept the token (unknown, or its account is disabled)"),
        ("channel", "does not exist or is not visible to this agent"),
    ],
)
async def test_a_wrong_token_or_channel_stops_it_at_start(
    server: _server.RunningServer,
    world: _server.SeededWorld,
    tmp_path: Path,
    which: str,
    says: str,
) -> None:
    token = {"person": world.human.token, "unknown": "cmp_" + "y" * 40}.get(
        which, world.agent.token
    )
    channel = "ch_nope" if which == "channel" else world.channel_id
    token_file = tmp_path / "t"
    token_file.write_text(token)
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, *_command(server, channel, token_file)],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert says in done.stderr
