"""The MCP front door at /mcp, through the official `mcp` SDK's own client, against `compass
serve` on PostgreSQL: every outcome, progress, re-issue, cancel, leaving, refusals, receipts."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from compass_server.store.postgres import PostgresStore
from tests import _server
from tests._wait import eventually
from tests.mcp import _mcp
from tests.mcp._mcp import TWO, Person, Progress, agent, answer, one_question, text_of

if TYPE_CHECKING:
    from mcp_types import CallToolResult


async def _messages_in(server: _server.RunningServer, channel_id: str) -> int:
    found = await _mcp.rows(
        server.dsn, "SELECT count(*) AS n FROM messages WHERE channel_id = $1", channel_id
    )
    return int(found[0]["n"])


# -- outcomes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", _mcp.MODES)
async def test_an_answer_reaches_the_call_whole_with_progress_and_a_receipt(
    server: _server.RunningServer, world: _server.SeededWorld, person: Person, mode: str
) -> None:
    progress = Progress()
    args = {**TWO, "context": "We are choosing the stack for the billing service."}
    async with agent(server, world.agent.token, mode=mode) as client:
        call = asyncio.create_task(client.call_tool("ask", args, progress_callback=progress))
        [pending] = await person.pending()
        ask_id = str(pending["ask"]["askId"])
        # What people see: the context first, then the form as asked, free text accepted.
        reply = await _mcp.rows(
            server.dsn, "SELECT blocks FROM messages WHERE message_id = $1", pending["messageId"]
        )
        blocks = json.loads(reply[0]["blocks"])
        assert [next(iter(block)) for block in blocks] == ["text", "ask"]
        questions = pending["ask"]["questions"]
        assert [q["questionId"] for q in questions] == ["db", "features"]
        assert {q["freeText"] for q in questions} == {"FREE_TEXT_ACCEPTED"}
        assert questions[0]["header"] == "DB"
        assert questions[0]["options"][1]["preview"] == "sqlite3 app.db"
        # Progress at once, then every 0.2 s (COMPASS_MCP_PROGRESS_SECONDS) while it waits.
        await eventually(lambda: len(progress.values) >= 3, "three progress notifications")
        assert progress.values == sorted(progress.values)
        assert progress.values[0] == 0
        await person.respond(
            ask_id, answer("db", "1"), answer("features", "0", "2", text="SCIM later")
        )
        result = await call
    assert not result.is_error
    assert result.structured_content == {
        "status": "answered",
        "ask_id": ask_id,
        "answers": [
            {
                "question_id": "db",
                "chosen_labels": ["SQLite"],
                "chosen_option_ids": ["1"],
                "custom_text": "",
                "skipped": False,
                "timed_out": False,
            },
            {
                "question_id": "features",
                "chosen_labels": ["Email", "SSO"],
                "chosen_option_ids": ["0", "2"],
                "custom_text": "SCIM later",
                "skipped": False,
                "timed_out": False,
            },
        ],
        "answered_by": "Ada",
        "link": f"{server.url}#/ask/{ask_id}",
    }
    assert text_of(result) == (
        "User answers:\n"
        "db: SQLite\n"
        'features: [Email, SSO] + "SCIM later"\n'
        "(answered by Ada in Compass)"
    )
    # The tool's return is the delivery: its receipt carries what the client was handed.
    stored = await _mcp.until_delivered(server.dsn, ask_id)
    assert stored["status"] == "answered"
    assert stored["delivery_state"] == "delivered"
    payload = json.loads(stored["delivery_payload"])
    assert payload["structuredContent"] == result.structured_content
    assert payload["content"] == [{"type": "text", "text": text_of(result)}]


async def test_a_decline_is_a_normal_result_and_is_delivered(
    server: _server.RunningServer, world: _server.SeededWorld, person: Person
) -> None:
    async with agent(server, world.agent.token) as client:
        call = asyncio.create_task(client.call_tool("ask", one_question("Deploy now?")))
        ask_id = await person.one_pending_id()
        await person.decline(ask_id, "not on a Friday")
        result = await call
    assert not result.is_error
    assert result.structured_content == {
        "status": "declined",
        "ask_id": ask_id,
        "answers": [],
        "answered_by": "Ada",
        "link": f"{server.url}#/ask/{ask_id}",
        "close_reason": "not on a Friday",
    }
    assert text_of(result).startswith("Ada declined to answer (not on a Friday).")
    assert (await _mcp.until_delivered(server.dsn, ask_id))["delivery_state"] == "delivered"


@pytest.mark.parametrize("mode", _mcp.MODES)
async def test_pending_after_the_hold_then_ask_wait_gets_the_answer(
    server: _server.RunningServer, world: _server.SeededWorld, person: Person, mode: str
) -> None:
    async with agent(server, world.agent.token, mode=mode) as client:
        first = await client.call_tool("ask", {**one_question("Merge?"), "wait_seconds": 0.3})
        assert not first.is_error
        assert first.structured_content is not None
        ask_id = first.structured_content["ask_id"]
        assert first.structured_content == {
            "status": "pending",
            "ask_id": ask_id,
            "answers": [],
            "link": f"{server.url}#/ask/{ask_id}",
        }
        assert f'call ask_wait with {{"ask_id": "{ask_id}"}}' in text_of(first)
        waiting = asyncio.create_task(
            client.call_tool("ask_wait", {"ask_id": ask_id, "wait_seconds": 30})
        )
        assert await person.one_pending_id() == ask_id
        await person.respond(ask_id, answer("go", "0"))
        result = await waiting
    assert result.structured_content is not None
    assert result.structured_content["status"] == "answered"
    assert text_of(result).startswith("User selected: Yes")
    assert (await _mcp.until_delivered(server.dsn, ask_id))["delivery_state"] == "delivered"


async def test_ask_cancel_withdraws_with_the_reason(
    server: _server.RunningServer, world: _server.SeededWorld
) -> None:
    async with agent(server, world.agent.token) as client:
        first = await client.call_tool("ask", {**one_question("Rename?"), "wait_seconds": 0})
        assert first.structured_content is not None
        ask_id = first.structured_content["ask_id"]
        result = await client.call_tool(
            "ask_cancel", {"ask_id": ask_id, "reason": "found it in the docs"}
        )
        again = await client.call_tool("ask_wait", {"ask_id": ask_id})
    assert not result.is_error
    assert result.structured_content == {
        "status": "withdrawn",
        "ask_id": ask_id,
        "answers": [],
        "link": f"{server.url}#/ask/{ask_id}",
        "close_reason": "found it in the docs",
    }
    assert again.structured_content == result.structured_content
    stored = await _mcp.stored_ask(server.dsn, ask_id)
    assert (stored["status"], stored["close_reason"]) == ("withdrawn", "found it in the docs")


async def test_pick_recommended_at_the_deadline_is_timed_out_and_recorded(
    server: _server.RunningServer, world: _server.SeededWorld
) -> None:
    args = {**TWO, "deadline_seconds": 1, "on_timeout": "pick_recommended", "wait_seconds": 30}
    async with agent(server, world.agent.token) as client:
        result = await client.call_tool("ask", args)
    assert not result.is_error
    content = result.structured_content
    assert content is not None
    assert content["status"] == "timed_out"
    assert [(a["question_id"], a["chosen_labels"], a["timed_out"]) for a in content["answers"]] == [
        ("db", ["SQLite"], True),  # the recommended option
        ("features", ["Email"], True),  # no recommendation: the first
    ]
    assert text_of(result) == (
        "User answers:\n"
        "db: SQLite (auto-selected after timeout)\n"
        "features: [Email] (auto-selected after timeout)"
    )
    stored = await _mcp.stored_ask(server.dsn, content["ask_id"])
    assert stored["status"] == "timed_out"
    assert [entry["chosen_option_ids"] for entry in json.loads(stored["answers"])] == [
        ["1"],
        ["0"],
    ]


async def test_fail_at_the_deadline_is_expired(
    server: _server.RunningServer, world: _server.SeededWorld
) -> None:
    args = {**one_question("Expire?"), "deadline_seconds": 0.5, "wait_seconds": 30}
    async with agent(server, world.agent.token) as client:
        result = await client.call_tool("ask", args)
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["status"] == "expired"
    assert text_of(result) == "Nobody answered before the deadline; the ask expired."


# -- re-issue, cancel, leaving ---------------------------------------------------------------


@pytest.mark.parametrize("mode", _mcp.MODES)
async def test_an_identical_reissue_rejoins_the_pending_ask(
    server: _server.RunningServer,
    world: _server.SeededWorld,
    person: Person,
    mode: str,
) -> None:
    args = one_question("Use the cache?")
    async with agent(server, world.agent.token, mode=mode) as client:
        first = await client.call_tool("ask", {**args, "wait_seconds": 0})
        assert first.structured_content is not None
        ask_id = first.structured_content["ask_id"]
        again = asyncio.create_task(client.call_tool("ask", {**args, "wait_seconds": 30}))
        await eventually(
            lambda: _waiting(server, ask_id), "the re-issued call waiting for the same ask"
        )
        await person.respond(ask_id, answer("go", "1"))
        result = await again
        other = await client.call_tool(
            "ask", {**args, "context": "another question", "wait_seconds": 0}
        )
    assert result.structured_content is not None
    assert result.structured_content["ask_id"] == ask_id
    assert result.structured_content["status"] == "answered"
    assert other.structured_content is not None
    assert other.structured_content["ask_id"] != ask_id
    assert await _messages_in(server, world.channel_id) == 2


async def _waiting(server: _server.RunningServer, ask_id: str) -> bool:
    """A call waits for the ask now (not one that left: returned `pending` or went away)."""
    found = await _mcp.rows(
        server.dsn, "SELECT 1 FROM mcp_waiters WHERE ask_id = $1 AND left_at IS NULL", ask_id
    )
    return bool(found)


async def _start_and_drop(
    server: _server.RunningServer, token: str, args: dict[str, Any], *, mode: str = "legacy"
) -> str:
    """Call `ask` and go away while it waits (the client closes its connection); its ask id."""
    before = await _mcp.rows(server.dsn, "SELECT ask_id FROM mcp_asks")
    known = {row["ask_id"] for row in before}
    async with agent(server, token, mode=mode) as client:
        call = asyncio.create_task(client.call_tool("ask", {**args, "wait_seconds": 60}))

        async def made() -> str | None:
            for row in await _mcp.rows(server.dsn, "SELECT ask_id FROM mcp_waiters"):
                if row["ask_id"] not in known:
                    return str(row["ask_id"])
            return None

        ask_id = await eventually(made, "the call waiting")
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
    return ask_id


@pytest.mark.parametrize("mode", _mcp.MODES)
async def test_a_client_that_goes_away_leaves_the_ask_withdrawn_after_the_grace(
    server: _server.RunningServer, world: _server.SeededWorld, mode: str
) -> None:
    """The SDK cancels: over the handshake era a `notifications/cancelled` in a request of
    its own (the gate routes it to the call), over 2026-07-28 by closing the stream."""
    ask_id = await _start_and_drop(server, world.agent.token, one_question("Leave?"), mode=mode)
    stored = await _mcp.until_status(server.dsn, ask_id, "withdrawn")
    assert stored["close_reason"] == "agent stopped waiting"


async def test_a_reissue_within_the_grace_keeps_the_ask(
    server: _server.RunningServer, world: _server.SeededWorld, person: Person
) -> None:
    kept = one_question("Keep me?")
    ask_id = await _start_and_drop(server, world.agent.token, kept)
    async with agent(server, world.agent.token) as client:
        rejoined = asyncio.create_task(client.call_tool("ask", {**kept, "wait_seconds": 60}))
        await eventually(lambda: _waiting(server, ask_id), "the re-issue waiting")
        # A control ask dropped after the rejoined one's grace began: once the sweep has
        # withdrawn it, the first one's grace is over too.
        control = await _start_and_drop(server, world.agent.token, one_question("Control?"))
        await _mcp.until_status(server.dsn, control, "withdrawn")
        assert (await _mcp.stored_ask(server.dsn, ask_id))["status"] == "pending"
        await person.respond(ask_id, answer("go", "0"))
        result = await rejoined
    assert result.structured_content is not None
    assert (result.structured_content["ask_id"], result.structured_content["status"]) == (
        ask_id,
        "answered",
    )


async def test_an_answer_whose_result_never_arrived_is_delivered_to_the_reissue(
    server: _server.RunningServer, world: _server.SeededWorld, person: Person
) -> None:
    args = one_question("Lost on the way?")
    ask_id = await _start_and_drop(server, world.agent.token, args)
    await person.respond(ask_id, answer("go", "1"))
    assert (await _mcp.stored_ask(server.dsn, ask_id))["delivery_state"] is None
    async with agent(server, world.agent.token) as client:
        result = await client.call_tool("ask", {**args, "wait_seconds": 30})
    assert result.structured_content is not None
    assert (result.structured_content["ask_id"], result.structured_content["status"]) == (
        ask_id,
        "answered",
    )
    assert (await _mcp.until_delivered(server.dsn, ask_id))["delivery_state"] == "delivered"
    # Delivered now: the same call again is a new question.
    async with agent(server, world.agent.token) as client:
        fresh = await client.call_tool("ask", {**args, "wait_seconds": 0})
    assert fresh.structured_content is not None
    assert fresh.structured_content["ask_id"] != ask_id


async def test_a_disabled_agent_s_waiting_call_ends(
    server: _server.RunningServer, world: _server.SeededWorld, person: Person
) -> None:
    async with agent(server, world.agent.token) as client:
        call = asyncio.create_task(
            client.call_tool("ask", {**one_question("Still there?"), "wait_seconds": 60})
        )
        [pending] = await person.pending()
        async with PostgresStore(server.dsn, pool_min=1, pool_max=1) as store:
            await store.disable_account(world.agent.account_id)
        result = await asyncio.wait_for(call, 20)
    assert result.is_error
    assert text_of(result) == "your access was revoked; sign in again"
    stored = await _mcp.until_status(server.dsn, str(pending["ask"]["askId"]), "withdrawn")
    assert stored["close_reason"] == "agent stopped waiting"


# -- channels ----------------------------------------------------------------------------------


async def test_the_channel_comes_from_the_argument_the_header_or_the_only_one(
    server: _server.RunningServer, world: _server.SeededWorld
) -> None:
    async with PostgresStore(server.dsn, pool_min=1, pool_max=1) as store:
        second = await store.create_channel(world.workspace_id, "second")
        await store.add_participant(second.channel_id, world.agent.account_id)
    quiet = {**one_question("Where?"), "wait_seconds": 0}
    async with agent(server, world.agent.token) as client:
        several = await client.call_tool("ask", quiet)
        by_argument = await client.call_tool("ask", {**quiet, "channel": second.channel_id})
    async with agent(
        server, world.agent.token, headers={"X-Compass-Channel": world.channel_id}
    ) as client:
        by_header = await client.call_tool("ask", {**quiet, "context": "h"})
    assert several.is_error
    assert text_of(several) == (
        "this agent takes part in several channels; name one with the `channel` argument or "
        f"the X-Compass-Channel header: {world.channel_id} (general), {second.channel_id} (second)"
    )
    channel_of = {}
    for result in (by_argument, by_header):
        assert result.structured_content is not None
        found = await _mcp.rows(
            server.dsn,
            "SELECT channel_id FROM asks WHERE ask_id = $1",
            result.structured_content["ask_id"],
        )
        channel_of[id(result)] = found[0]["channel_id"]
    assert channel_of[id(by_argument)] == second.channel_id
    assert channel_of[id(by_header)] == world.channel_id
    # The other agent takes part only in the other workspace's channel: that one is used.
    async with agent(server, world.other_agent.token) as client:
        only = await client.call_tool("ask", quiet)
        foreign = await client.call_tool("ask", {**quiet, "channel": world.channel_id})
    assert not only.is_error
    assert foreign.is_error
    assert text_of(foreign) == "channel not found"


# -- refusals and limits -----------------------------------------------------------------------

_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


async def test_refused_tokens_get_the_authorization_challenge_and_store_nothing(
    server: _server.RunningServer, world: _server.SeededWorld
) -> None:
    metadata_url = f"{server.url}.well-known/oauth-protected-resource/mcp"
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        cases = {
            "none": None,
            "unknown": "cmp_" + "x" * 40,
            "person": world.human.token,
            "disabled": world.disabled.token,
        }
        for case, token in cases.items():
            headers = {**_HEADERS, **({"authorization": f"Bearer {token}"} if token else {})}
            for body in (_INITIALIZE, _call("ask", one_question(f"refused {case}"))):
                reply = await http.post("mcp", json=body, headers=headers)
                assert reply.status_code == 401, (case, reply.text)
                challenge = reply.headers["www-authenticate"]
                assert challenge.startswith('Bearer realm="compass"'), challenge
                assert f'resource_metadata="{metadata_url}"' in challenge
                assert ('error="invalid_token"' in challenge) is (token is not None)
        person = await http.post(
            "mcp", json=_INITIALIZE, headers={**_HEADERS, **_auth(world.human.token)}
        )
        assert "a person's token" in person.json()["error_description"]
        metadata = await http.get(".well-known/oauth-protected-resource/mcp")
        root = await http.get(".well-known/oauth-protected-resource")
    assert metadata.status_code == 200
    assert (
        metadata.json()
        == root.json()
        == {
            "resource": f"{server.url}mcp",
            "authorization_servers": [server.url],
            "bearer_methods_supported": ["header"],
            "resource_name": "Compass",
            "resource_documentation": server.url,
        }
    )
    assert await _messages_in(server, world.channel_id) == 0
    # The SDK's client, given a person's token, cannot connect (it reports the 401 as an
    # error response of the initialize request).
    with pytest.raises(BaseExceptionGroup) as raised:
        async with agent(server, world.human.token) as client:
            await client.list_tools()
    assert _leaves(raised.value), raised.value


def _leaves(group: BaseException) -> list[MCPError]:
    if isinstance(group, BaseExceptionGroup):
        return [leaf for inner in group.exceptions for leaf in _leaves(inner)]
    return [group] if isinstance(group, MCPError) else []


def _auth(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def test_input_errors_are_tool_errors_and_store_nothing(
    server: _server.RunningServer, world: _server.SeededWorld
) -> None:
    thousand = {"questions": [{"id": f"q{i}", "question": "?", "options": []} for i in range(1000)]}
    async with agent(server, world.agent.token) as client:
        results: list[CallToolResult] = [
            await client.call_tool("ask", thousand),
            await client.call_tool(
                "ask", {"questions": [{"id": "", "question": "?", "options": []}]}
            ),
            await client.call_tool("ask", {**one_question(), "context": "a\x00b"}),
            await client.call_tool("ask", {**one_question(), "channel": "x" * 300}),
            await client.call_tool("ask_wait", {"ask_id": "ask_nope"}),
            await client.call_tool("ask_cancel", {}),
            await client.call_tool("nope", {}),
        ]
    texts = [text_of(result) for result in results]
    assert all(result.is_error for result in results), texts
    assert texts[0] == "invalid arguments: questions has more than 100 items (got 1000)"
    assert texts[1] == "invalid arguments: questions[0].id is empty"
    assert texts[2].startswith("invalid message blocks: "), texts[2]
    assert "NUL" in texts[2]
    assert texts[3] == "invalid arguments: channel is not an id"
    assert texts[4] == "ask not found"
    assert texts[5] == "invalid arguments: ask_id is missing"
    assert texts[6] == "unknown tool 'nope': this server has ask, ask_wait and ask_cancel"
    assert await _messages_in(server, world.channel_id) == 0


async def test_an_oversize_body_is_refused_before_it_is_read(
    server: _server.RunningServer, world: _server.SeededWorld
) -> None:
    big = _call("ask", {**one_question(), "context": "x" * (1 << 20)})
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        reply = await http.post("mcp", json=big, headers={**_HEADERS, **_auth(world.agent.token)})
    assert reply.status_code == 413
    assert reply.json()["error"]["message"] == "request body is too large (limit 1048576 bytes)"
    assert await _messages_in(server, world.channel_id) == 0


async def test_the_host_allow_list_refuses_a_rebound_name(
    server: _server.RunningServer, world: _server.SeededWorld
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        evil = await http.post(
            "mcp",
            json=_INITIALIZE,
            headers={**_HEADERS, **_auth(world.agent.token), "host": "evil.example:80"},
        )
        local = await http.post(
            "mcp",
            json=_INITIALIZE,
            headers={**_HEADERS, **_auth(world.agent.token), "host": "localhost:1"},
        )
    assert evil.status_code == 421
    assert local.status_code == 200


async def test_mcp_asks_are_agent_asks_in_the_inbox(
    server: _server.RunningServer, world: _server.SeededWorld, person: Person
) -> None:
    """What a person sees: the ask in "Waiting on you", from the agent, in its channel."""
    async with agent(server, world.agent.token) as client:
        # Waiting while the person looks (an ask returned `pending` is withdrawn after the
        # grace unless its agent comes back).
        call = asyncio.create_task(
            client.call_tool("ask", {**one_question("Inbox?"), "wait_seconds": 30})
        )
        [pending] = await person.pending()
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
    assert (pending["authorAccountId"], pending["authorName"], pending["channelId"]) == (
        world.agent.account_id,
        world.agent.name,
        world.channel_id,
    )


async def test_a_server_shutting_down_returns_pending_and_the_ask_waits_on(
    database_url: str,
) -> None:
    """SIGTERM: waiting calls end at once with `pending` (uvicorn waits for every running
    response before it stops), and, as after any `pending`, the ask stays answerable for an
    `ask_wait` (to another server) within the grace (COMPASS_MCP_GRACE_SECONDS)."""
    call = _call("ask", {**one_question("Restart?"), "wait_seconds": 60})
    with _server.serve(database_url, env=_mcp.FAST) as stopping:
        world = await _server.seed_world(database_url, prefix="shutdown-")
        headers = {**_HEADERS, **_auth(world.agent.token), "mcp-protocol-version": "2025-06-18"}
        async with httpx.AsyncClient(base_url=stopping.url, timeout=30) as http:
            reply = asyncio.create_task(http.post("mcp", json=call, headers=headers))
            ada = Person(stopping, world.human.token)
            await ada.pending()
            await ada.close()
            stopping.process.send_signal(signal.SIGTERM)
            answered = await asyncio.wait_for(reply, 30)
        await asyncio.to_thread(stopping.process.wait, 30)
    [event] = [line for line in answered.text.splitlines() if line.startswith("data: {")]
    result = json.loads(event.removeprefix("data: "))["result"]
    assert not result["isError"]
    assert result["structuredContent"]["status"] == "pending"
    stored = await _mcp.stored_ask(database_url, result["structuredContent"]["ask_id"])
    assert stored["status"] == "pending"
    [waiter] = await _mcp.rows(
        database_url,
        "SELECT expires_at - left_at AS grace FROM mcp_waiters WHERE ask_id = $1",
        result["structuredContent"]["ask_id"],
    )
    assert waiter["grace"] == timedelta(seconds=_mcp.GRACE_SECONDS)  # left: the grace runs


async def test_the_listener_s_connection_cap_holds_for_mcp_calls(database_url: str) -> None:
    """Waiting MCP calls hold their connections; the listener's per-client cap refuses the
    next one (503, before anything is read), as for every route. Every client here is
    127.0.0.1: the cap of 3 is the two waiting calls and the person's own connection."""
    env = {**_mcp.FAST, "COMPASS_MAX_CONNECTIONS_PER_CLIENT": "3"}
    with _server.serve(database_url, env=env) as capped:
        world = await _server.seed_world(database_url, prefix="capped-")
        async with httpx.AsyncClient(base_url=capped.url, timeout=30) as before:
            assert (await before.get("healthz")).status_code == 200
        ada = Person(capped, world.human.token)
        async with (
            agent(capped, world.agent.token) as first,
            agent(capped, world.agent.token) as second,
        ):
            calls = [
                asyncio.create_task(
                    client.call_tool("ask", {**one_question(text), "wait_seconds": 60})
                )
                for client, text in ((first, "One?"), (second, "Two?"))
            ]
            async with httpx.AsyncClient(base_url=capped.url, timeout=30) as http:

                async def refused() -> bool:
                    with contextlib.suppress(httpx.TransportError):
                        reply = await http.get("healthz")
                        return reply.status_code == 503
                    return True  # closed before an answer is a refusal too

                await ada.pending(count=2)
                await eventually(refused, "a third connection refused")
            for pending in await ada.pending(count=2):
                await ada.respond(str(pending["ask"]["askId"]), answer("go", "0"))
            results = await asyncio.gather(*calls)
        await ada.close()
    assert [r.structured_content["status"] for r in results if r.structured_content] == [
        "answered",
        "answered",
    ]
