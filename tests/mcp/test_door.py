"""The /mcp door held under abuse (issue 33): a GET stream per request, waiting calls over the
account's stream cap, a receipt another agent cannot write, a Host header written into the
401 challenge, a malformed body echoed back; over real HTTP against `compass serve` on
PostgreSQL."""

from __future__ import annotations

import asyncio
import collections
import json
import os
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from compass_server.store import AccountKind
from compass_server.store.postgres import PostgresStore
from tests import _procs, _server
from tests._wait import eventually
from tests.e2e import _connect
from tests.mcp import _mcp
from tests.mcp._mcp import answer, one_question

_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-06-18",
}


def _auth(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def _call(name: str, arguments: dict[str, Any], request_id: int = 2) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def _result(reply: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC result of a tools/call answered as an SSE stream."""
    for line in reply.text.splitlines():
        if line.startswith("data: {") and '"result"' in line:
            result: dict[str, Any] = json.loads(line.removeprefix("data: "))["result"]
            return result
    raise AssertionError(f"no result in {reply.status_code} {reply.text!r}")


async def _count_asks(dsn: str, channel_id: str) -> int:
    found = await _mcp.rows(dsn, "SELECT count(*) AS n FROM asks WHERE channel_id = $1", channel_id)
    return int(found[0]["n"])


# -- H1: no standalone GET stream ---------------------------------------------------------------


async def test_get_and_head_on_mcp_are_405_and_hold_nothing(
    server: _server.RunningServer, world: _server.SeededWorld
) -> None:
    """A stateless server offers no standalone SSE stream: GET (and HEAD) are answered 405
    `Allow: POST` at once (streamable HTTP: "or else return HTTP 405"), whoever asks, so an
    agent token cannot hold the listener's connections open with them. Before: each GET was
    an SSE stream that never ended and counted against no cap (1,000 of one token took every
    connection; disabling the account ended none)."""
    sse = {**_HEADERS, "accept": "text/event-stream"}
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=server.url, timeout=10, limits=limits) as http:

        async def get(headers: dict[str, str]) -> httpx.Response:
            # A stream that never ends would time this out (10 s) instead of answering.
            return await http.get("mcp", headers=headers)

        replies = await asyncio.gather(
            *(get({**sse, **_auth(world.agent.token)}) for _ in range(50)),
            get(sse),  # no token
            get({**sse, **_auth(world.human.token)}),
        )
        head = await http.head("mcp", headers={**sse, **_auth(world.agent.token)})
        delete = await http.delete("mcp", headers={**sse, **_auth(world.agent.token)})
    for reply in [*replies, head, delete]:
        assert reply.status_code == 405, (reply.request.method, reply.status_code, reply.text)
        assert reply.headers["allow"] == "POST"
        assert "text/event-stream" not in reply.headers.get("content-type", "")


# -- H2: over the stream cap, nothing stored ----------------------------------------------------


async def test_a_waiting_call_over_the_stream_cap_stores_no_ask(
    server: _server.RunningServer, world: _server.SeededWorld
) -> None:
    """66 concurrent waiting `ask` calls of one token against its cap of 64 streams: the two
    refused get `isError` and, as docs/agents/mcp.md says of every `isError` result, stored
    nothing: 64 asks, every one with a call waiting for it. Before: 66/66 stored, the two
    refused left pending for people to answer."""
    calls = 66
    limits = httpx.Limits(max_connections=calls + 4, max_keepalive_connections=0)
    headers = {**_HEADERS, **_auth(world.agent.token)}
    async with httpx.AsyncClient(base_url=server.url, timeout=60, limits=limits) as http:
        refused: list[dict[str, Any]] = []

        async def one(index: int) -> None:
            args = {**one_question(f"Over the cap {index}?"), "wait_seconds": 30}
            reply = await http.post("mcp", json=_call("ask", args, index), headers=headers)
            result = _result(reply)
            if result["isError"]:
                refused.append(result)

        tasks = [asyncio.create_task(one(index)) for index in range(calls)]
        try:
            await eventually(lambda: len(refused) == 2, "two calls refused", within=30)

            async def waited_for() -> int | None:
                found = await _mcp.rows(
                    server.dsn,
                    "SELECT count(DISTINCT w.ask_id) AS n FROM mcp_waiters w"
                    " JOIN asks a USING (ask_id) WHERE a.channel_id = $1",
                    world.channel_id,
                )
                n = int(found[0]["n"])
                return n if n >= calls - 2 else None

            waiting = await eventually(waited_for, "64 calls waiting", within=30)
            stored = await _count_asks(server.dsn, world.channel_id)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    assert [r["content"][0]["text"] for r in refused] == [
        "this account already has 64 open watch streams here (the most allowed); close one first"
    ] * 2
    assert (stored, waiting) == (64, 64)


# -- H3: another agent's receipt ----------------------------------------------------------------


async def test_another_agent_s_refused_receipt_logs_one_line_without_a_traceback(
    server: _server.RunningServer, world: _server.SeededWorld, person: _mcp.Person
) -> None:
    """A second agent of the channel waits (`ask_wait`) for the first one's answered ask: it
    reads the answer, and its receipt is refused (only the ask's author reports delivery).
    An expected refusal: one warning line per call, no traceback. Before: two chained
    tracebacks per call (21 calls: 42)."""
    async with PostgresStore(server.dsn, pool_min=1, pool_max=1) as store:
        _row, second = await store.create_account(AccountKind.AGENT, "Second Agent")
        await store.add_participant(world.channel_id, _row.account_id)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        first = await http.post(
            "mcp",
            json=_call("ask", {**one_question("Whose receipt?"), "wait_seconds": 0}),
            headers={**_HEADERS, **_auth(world.agent.token)},
        )
        ask_id = _result(first)["structuredContent"]["ask_id"]
        await person.respond(ask_id, answer("go", "1"))
        logged = len(server.output)
        results = [
            _result(
                await http.post(
                    "mcp",
                    json=_call("ask_wait", {"ask_id": ask_id}),
                    headers={**_HEADERS, **_auth(second)},
                )
            )
            for _ in range(3)
        ]
    assert [r["structuredContent"]["status"] for r in results] == ["answered"] * 3
    refusal = "only the agent account that posted the ask may report its delivery"

    def refusals() -> list[str] | None:
        found = [line for line in server.output[logged:] if refusal in line]
        return found if len(found) >= 3 else None

    lines = await eventually(refusals, "three refusals logged")
    log = "".join(server.output[logged:])
    assert "Traceback" not in log, log
    assert len(lines) == 3, lines
    assert all(ask_id in line for line in lines), lines
    assert (await _mcp.stored_ask(server.dsn, ask_id))["delivery_state"] is None


# -- the 401 challenge and a malformed body ----------------------------------------------------


async def test_a_host_header_cannot_write_into_the_challenge(
    server: _server.RunningServer,
) -> None:
    """The challenge's `resource_metadata` is built from the Host the client sent (no
    COMPASS_PUBLIC_URL here): a Host that is not a host[:port] is refused 400 before it is
    written anywhere; a valid one still makes the challenge. Before: `"` in Host closed the
    quoted value and added parameters of the client's choosing to the header."""
    forged = '127.0.0.1:1", error="forged'
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        refused = {
            host: await http.post("mcp", json={}, headers={**_HEADERS, "host": host})
            for host in (forged, "a\\b", "x y", "[::1", "host:port")
        }
        metadata = await http.get(
            ".well-known/oauth-protected-resource/mcp", headers={"host": forged}
        )
        fine = await http.post("mcp", json={}, headers={**_HEADERS, "host": "localhost:8"})
    for host, reply in refused.items():
        assert reply.status_code == 400, (host, reply.status_code, reply.headers)
        assert "www-authenticate" not in reply.headers
        assert reply.json()["error"]["message"] == "invalid Host header"
    assert metadata.status_code == 400
    assert fine.status_code == 401
    assert fine.headers["www-authenticate"] == (
        'Bearer realm="compass", '
        'resource_metadata="http://localhost:8/.well-known/oauth-protected-resource/mcp"'
    )


async def test_a_refused_batch_or_malformed_message_echoes_nothing(
    server: _server.RunningServer, world: _server.SeededWorld
) -> None:
    """A JSON-RPC batch, a message of the wrong shape, a body that is not JSON: 400 with a
    fixed message, never the validator's text or a piece of the input. Before: pydantic's
    four validation errors, each quoting the input."""
    secret = "SECRET-INPUT-7f3a"
    bodies = {
        "batch": json.dumps(
            [{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": secret}}] * 2
        ),
        "shape": json.dumps({"jsonrpc": "2.0", "id": 1, "method": 5, "x": secret}),
        "not json": '{"jsonrpc": "2.0", "id": 1, "method": "' + secret,
    }
    headers = {**_HEADERS, **_auth(world.agent.token)}
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        replies = {
            case: await http.post("mcp", content=body, headers=headers)
            for case, body in bodies.items()
        }
    for case, reply in replies.items():
        assert reply.status_code == 400, (case, reply.text)
        assert secret not in reply.text, (case, reply.text)
        assert "pydantic" not in reply.text, (case, reply.text)
        assert int(reply.headers["content-length"]) == len(reply.content)
    assert (
        replies["batch"].json()
        == replies["shape"].json()
        == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": "Invalid request: the body must be one JSON-RPC request or notification "
                "(batches are not supported)",
            },
        }
    )
    assert replies["not json"].json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: the body is not JSON"},
    }


# -- H9: stopped while calls wait ---------------------------------------------------------------


def _status(pid: int, field: str) -> str:
    """A field of /proc/PID/status ("State", "ShdPnd", ...)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == field:
            return value.strip()
    raise AssertionError(f"no {field} for {pid}")


def _stopped(pid: int) -> bool:
    """`pid` is stopped (SIGSTOP takes effect after kill() returns)."""
    return _status(pid, "State").startswith("T")


def _sigterm_pending(pid: int) -> bool:
    """SIGTERM sent to `pid` and not yet handled (it is stopped)."""
    return bool(int(_status(pid, "ShdPnd"), 16) & (1 << (signal.SIGTERM - 1)))


async def _stop_while_ten_calls_wait(database_url: str, workers: int, run: int) -> list[str]:
    """`compass serve --workers N` with 10 `ask` calls waiting, then SIGTERM: what each
    call got. Each serving process is stopped (SIGSTOP) before the SIGTERM and continued
    once it is pending: it handles the signal together with the timers that came due
    meanwhile, the order a busy machine gives by chance (a poller that notices the signal
    runs before the shutdown it races)."""
    env = {**_mcp.FAST, "COMPASS_WORKERS": str(workers)}
    with _server.serve(database_url, env=env, timeout=60) as stopping:
        world = await _server.seed_world(database_url, prefix=f"stop{workers}-{run}-")
        headers = {**_HEADERS, **_auth(world.agent.token)}
        limits = httpx.Limits(max_connections=20, max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=stopping.url, timeout=60, limits=limits) as http:

            async def one(index: int) -> str:
                args = {**one_question(f"Stop {run}.{index}?"), "wait_seconds": 60}
                try:
                    reply = await http.post("mcp", json=_call("ask", args, index), headers=headers)
                    result = _result(reply)
                except (httpx.HTTPError, AssertionError) as exc:
                    return f"cut: {exc!r}"[:200]
                if result["isError"]:
                    return f"isError: {result['content'][0]['text']}"
                return str(result["structuredContent"]["status"])

            calls = [asyncio.create_task(one(index)) for index in range(10)]

            async def all_waiting() -> bool:
                found = await _mcp.rows(
                    database_url,
                    "SELECT count(*) AS n FROM mcp_waiters w JOIN asks a USING (ask_id)"
                    " WHERE a.channel_id = $1",
                    world.channel_id,
                )
                return int(found[0]["n"]) == 10

            await eventually(all_waiting, "10 calls waiting", within=30)
            serving = _procs.children(stopping.process.pid) if workers > 1 else []
            serving = serving or [stopping.process.pid]
            for pid in serving:
                os.kill(pid, signal.SIGSTOP)
            try:
                for pid in serving:
                    await eventually(lambda pid=pid: _stopped(pid), f"{pid} stopped")
                stopping.process.send_signal(signal.SIGTERM)  # a supervisor forwards it
                for pid in serving:
                    await eventually(
                        lambda pid=pid: _sigterm_pending(pid), f"SIGTERM to {pid}", within=20
                    )
                # Time itself is under test: stopped for longer than the 0.5 s poll of
                # sse-starlette's shutdown watcher, the timers of a loop are all due on resume.
                await asyncio.sleep(1)
            finally:
                for pid in serving:
                    os.kill(pid, signal.SIGCONT)
            results = await asyncio.wait_for(asyncio.gather(*calls), 40)
        await asyncio.to_thread(stopping.process.wait, 40)
    return results


@pytest.mark.parametrize("workers", [2, 1])
async def test_every_waiting_call_is_told_pending_when_the_server_stops(
    database_url: str, workers: int
) -> None:
    """SIGTERM while 10 `ask` calls wait: every call gets its `pending` result before its
    worker exits, three runs in a row. Before: sse-starlette's own shutdown watcher (it
    polls uvicorn's exit flag every 0.5 s) ended the calls' SSE responses before the
    shutdown told them `pending`, whenever it polled first: 10/10 cut in every run here."""
    runs = [
        collections.Counter(await _stop_while_ten_calls_wait(database_url, workers, run))
        for run in range(3 if workers > 1 else 1)
    ]
    assert runs == [collections.Counter({"pending": 10})] * len(runs)


# -- N7: an ask its agent is not waiting for ----------------------------------------------------


def _ask_in(message: dict[str, Any], ask_id: str) -> dict[str, Any] | None:
    for block in message.get("message", {}).get("blocks", []):
        if block.get("ask", {}).get("askId") == ask_id:
            found: dict[str, Any] = block["ask"]
            return found
    return None


async def test_after_pending_the_grace_runs_and_people_see_the_agent_is_not_waiting(
    server: _server.RunningServer, world: _server.SeededWorld
) -> None:
    """An ask returned `pending` is one its agent is not waiting for until it comes back:
    people watching the channel see `withdrawAt` (when the server withdraws it) at once,
    see it go when the agent comes back with `ask_wait`, and an ask whose client then quit
    is WITHDRAWN "agent stopped waiting" after the grace. Before: a `pending` result
    forgot the ask's waiting calls, so it stayed answerable forever with no sign of it."""
    headers = {**_HEADERS, **_auth(world.agent.token)}
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=30) as http,
        _connect.open_stream(
            http, "WatchChannel", {"channelId": world.channel_id}, world.human.token
        ) as watch,
    ):
        assert await watch.next() is not None  # caught up: the channel is empty

        async def ask_state(ask_id: str, *, away: bool) -> dict[str, Any]:
            """The next state of the ask the watch sends whose agent is (not) away."""
            while True:
                found = _ask_in(await watch.message(within=10), ask_id)
                if found is not None and ("withdrawAt" in found) is away:
                    return found

        quit_on = _result(
            await http.post(
                "mcp",
                json=_call("ask", {**one_question("Left alone?"), "wait_seconds": 0.2}),
                headers=headers,
            )
        )
        assert quit_on["structuredContent"]["status"] == "pending"
        ask_id = quit_on["structuredContent"]["ask_id"]
        away = await ask_state(ask_id, away=True)
        left_for = datetime.fromisoformat(away["withdrawAt"]) - datetime.now(UTC)
        assert timedelta(0) < left_for <= timedelta(seconds=_mcp.GRACE_SECONDS)
        read = await _connect.call(http, "GetAsk", {"askId": ask_id}, world.human.token)
        assert json.loads(read.raw)["ask"]["withdrawAt"] == away["withdrawAt"]
        # The client quit: nobody comes back, the leave sweep withdraws it.
        stored = await _mcp.until_status(server.dsn, ask_id, "withdrawn")
        assert stored["close_reason"] == "agent stopped waiting"
        closed = await ask_state(ask_id, away=False)
        assert closed["status"] == "ASK_STATUS_WITHDRAWN"

        # Another ask: its agent comes back with ask_wait, and its answer reaches it.
        first = _result(
            await http.post(
                "mcp",
                json=_call("ask", {**one_question("Come back?"), "wait_seconds": 0.2}),
                headers=headers,
            )
        )
        ask_id = first["structuredContent"]["ask_id"]
        await ask_state(ask_id, away=True)
        waiting = asyncio.create_task(
            http.post(
                "mcp",
                json=_call("ask_wait", {"ask_id": ask_id, "wait_seconds": 30}),
                headers=headers,
            )
        )
        back = await ask_state(ask_id, away=False)
        assert back["status"] == "ASK_STATUS_PENDING"
        reply = await _connect.call(
            http,
            "RespondToAsk",
            {"askId": ask_id, "answers": [answer("go", "0")]},
            world.human.token,
        )
        assert reply.ok, reply
        result = _result(await waiting)
    assert result["structuredContent"]["status"] == "answered"
