"""The webhook worker against receivers that misbehave (issue 24, G2-G4, G6): an endpoint the
client cannot use, a receiver trickling its answer at 1 byte/s, a huge or gzip-bombed response
body, and internal addresses reached through a name. Every receiver is real (loopback, allowed
with COMPASS_WEBHOOK_ALLOW_HOSTS); the delays are bench/webhooks.py's."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import asyncpg
import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from compass_server.domain.webhook_targets import AllowList
from compass_server.webhooks.transport import CheckedTransport, RefusedAddressError
from tests import _server
from tests._wait import eventually
from tests.e2e._asks import post_ask
from tests.e2e.test_metrics import TOKEN, scrape
from tests.e2e.test_webhooks import LOOPBACK_ALLOWED, Receiver, _admin

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Generator

TIMEOUT_SECONDS = 6.0


@dataclass
class RawReceiver:
    """A loopback HTTP/1.1 receiver answering every request with `head` + `body`, written
    `chunk` bytes at a time every `every` seconds; it records what it managed to write."""

    head: bytes
    body: bytes = b""
    chunk: int = 1
    every: float = 0.0
    requests: int = 0
    got_request: asyncio.Event = field(default_factory=asyncio.Event)
    written: list[int] = field(default_factory=list[int])
    """Bytes written to each connection before the client left (or all were written)."""
    closed_at: list[float] = field(default_factory=list[float])
    connections: set[asyncio.Task[object]] = field(default_factory=set[asyncio.Task[object]])
    arrived: list[float] = field(default_factory=list[float])
    """When each request had arrived whole (time.monotonic())."""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.connections.add(task)
            task.add_done_callback(self.connections.discard)
        # Ended by `serving` when the test is done: asyncio 3.11 logs a cancelled
        # connection handler as an error, so the cancel ends it quietly here.
        with contextlib.suppress(asyncio.CancelledError, asyncio.IncompleteReadError):
            await self._answer(reader, writer)

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ),
            0,
        )
        await reader.readexactly(length)
        self.arrived.append(time.monotonic())
        self.requests += 1
        self.got_request.set()
        answer = self.head + self.body
        sent = 0
        try:
            while sent < len(answer):
                writer.write(answer[sent : sent + self.chunk])
                await writer.drain()
                sent += min(self.chunk, len(answer) - sent)
                if self.every:
                    await asyncio.sleep(self.every)  # the trickle itself is under test
                elif reader.at_eof():
                    break
        except (ConnectionError, OSError):
            pass
        finally:
            self.written.append(sent)
            self.closed_at.append(time.monotonic())
            writer.close()


@contextlib.asynccontextmanager
async def serving(receiver: RawReceiver) -> AsyncGenerator[str]:
    server = await asyncio.start_server(receiver.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/hook"
    finally:
        server.close()
        for task in list(receiver.connections):
            task.cancel()
        await asyncio.gather(*receiver.connections, return_exceptions=True)


@pytest.fixture
def worker_server(database_url: str) -> Generator[_server.RunningServer]:
    env = {
        "COMPASS_WEBHOOK_POLL_SECONDS": "0.1",
        "COMPASS_WEBHOOK_TIMEOUT_SECONDS": str(TIMEOUT_SECONDS),
        "COMPASS_WEBHOOK_BACKOFF_SECONDS": "3600",  # one attempt each, in the test's time
        "COMPASS_REMINDER_AFTER_SECONDS": "0",
        "COMPASS_METRICS_TOKEN": TOKEN,
        **LOOPBACK_ALLOWED,
    }
    with _server.serve(database_url, env=env) as server:
        yield server


async def _hook(server: _server.RunningServer, workspace_id: str, url: str) -> str:
    added = await asyncio.to_thread(
        _admin,
        server.dsn,
        "add-webhook",
        *("--workspace", workspace_id, "--url", url, "--events", "ask.created"),
    )
    return str(added["webhook_id"])


async def _outcomes(server: _server.RunningServer, webhook_id: str) -> list[str]:
    log = await asyncio.to_thread(_admin, server.dsn, "webhook-deliveries", "--id", webhook_id)
    return [
        str(attempt["outcome"])  # pyright: ignore[reportUnknownArgumentType]
        for delivery in log["deliveries"]  # pyright: ignore[reportGeneralTypeIssues, reportUnknownVariableType]
        for attempt in delivery["attempts"]  # pyright: ignore[reportUnknownVariableType]
    ]


async def test_an_unusable_endpoint_stops_no_one_and_the_worker_stays_up(
    worker_server: _server.RunningServer,
) -> None:
    """G2: a URL the old check let through (here 999.1.1.1, which httpx refuses to parse)
    made the client raise outside what the worker caught: the worker died for every
    workspace, for good, and /readyz said 200."""
    bad = await _server.seed_world(worker_server.dsn, prefix="bad-")
    good = await _server.seed_world(worker_server.dsn, prefix="good-")
    conn = await asyncpg.connect(worker_server.dsn)
    try:
        await conn.execute(
            "INSERT INTO webhooks (webhook_id, workspace_id, url, secret, events) "
            "VALUES ('wh_old', $1, 'http://999.1.1.1/hook', 'whsec_AAAA', "
            "ARRAY['ask.created'])",
            bad.workspace_id,
        )
    finally:
        await conn.close()
    receiver = Receiver(fail_first=0)
    app = Starlette(routes=[Route("/hook", receiver.hook, methods=["POST"])])
    async with (
        _server.in_process(app) as receiver_url,
        httpx.AsyncClient(base_url=worker_server.url, timeout=30) as http,
    ):
        await _hook(worker_server, good.workspace_id, f"{receiver_url}hook")
        await post_ask(http, bad.agent.token, bad.channel_id)
        await post_ask(http, good.agent.token, good.channel_id)
        await receiver.wait_for(1)
        outcomes = await eventually(
            lambda: _outcomes(worker_server, "wh_old"), "the bad endpoint's attempt is logged"
        )
        assert outcomes == ["refused: the URL's host 999.1.1.1 is not a valid IPv4 address"]
        # Still up afterwards: another event goes out.
        await post_ask(http, good.agent.token, good.channel_id)
        await receiver.wait_for(2)
        ready = await http.get("/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json()["webhooks"] == "ok"
        metrics = await scrape(http)
        assert metrics[("compass_webhook_worker_up", ())] == 1.0
        assert metrics[("compass_webhook_worker_errors_total", ())] == 0.0
    assert "Traceback" not in worker_server.log()


async def test_a_receiver_trickling_at_1_byte_a_second_holds_up_no_one_else(
    worker_server: _server.RunningServer,
) -> None:
    """G4: the timeout was per socket read, so a receiver sending its answer at 1 byte/s
    kept the attempt (and, through the worker's round, every other delivery) for as long as
    it liked. Now the whole attempt has the timeout, and other endpoints go on meanwhile."""
    slow = RawReceiver(
        head=b"HTTP/1.1 204 No Content\r\nX-Slow: " + b"z" * 60 + b"\r\n\r\n", every=1.0
    )
    fast = Receiver(fail_first=0)
    slow_world = await _server.seed_world(worker_server.dsn, prefix="slow-")
    fast_world = await _server.seed_world(worker_server.dsn, prefix="fast-")
    app = Starlette(routes=[Route("/hook", fast.hook, methods=["POST"])])
    async with (
        serving(slow) as slow_url,
        _server.in_process(app) as fast_url,
        httpx.AsyncClient(base_url=worker_server.url, timeout=30) as http,
    ):
        slow_hook = await _hook(worker_server, slow_world.workspace_id, slow_url)
        await _hook(worker_server, fast_world.workspace_id, f"{fast_url}hook")
        await post_ask(http, slow_world.agent.token, slow_world.channel_id)
        await asyncio.wait_for(slow.got_request.wait(), 30)
        await post_ask(http, fast_world.agent.token, fast_world.channel_id)
        await fast.wait_for(1)
        delivered_at = time.monotonic()
        outcomes = await eventually(
            lambda: _outcomes(worker_server, slow_hook),
            "the slow attempt is logged",
            within=TIMEOUT_SECONDS + 30,
            every=0.5,
        )
        # The receiver notices the client gone at its next write or two (1 s apart).
        await eventually(lambda: slow.closed_at, "the receiver sees the client leave", within=10)
    assert outcomes == ["timeout"]  # before: "http 204", some 70 s later
    assert slow.closed_at
    assert delivered_at < slow.closed_at[0]  # the other endpoint's event went out meanwhile
    assert slow.written[0] < len(slow.head)


@pytest.mark.parametrize("encoding", ["identity", "gzip"])
async def test_a_huge_response_body_is_not_read(
    worker_server: _server.RunningServer, encoding: str
) -> None:
    """G3: the response body was read whole and gzip-decoded: 256 MiB, or 255 KiB of gzip,
    cost ~500 MiB of the server's memory. Now at most 64 KiB of it is read, as sent."""
    # Big enough that the kernel's socket buffers cannot take it all (bench/webhooks.py has
    # the gzip bomb itself, whose decoding would cost the old server hundreds of MiB).
    body = gzip.compress(os.urandom(16 << 20), 1) if encoding == "gzip" else b"x" * (32 << 20)
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n"
        b"content-encoding: %s\r\ncontent-length: %d\r\n\r\n" % (encoding.encode(), len(body))
    )
    big = RawReceiver(head=head, body=body, chunk=16 * 1024)
    world = await _server.seed_world(worker_server.dsn)
    async with (
        serving(big) as url,
        httpx.AsyncClient(base_url=worker_server.url, timeout=30) as http,
    ):
        hook = await _hook(worker_server, world.workspace_id, url)
        await post_ask(http, world.agent.token, world.channel_id)
        outcomes = await eventually(
            lambda: _outcomes(worker_server, hook), "the attempt is logged", within=30, every=0.3
        )
        await eventually(lambda: big.written, "the receiver saw the client leave", within=30)
    assert outcomes == ["http 200"]
    assert big.written[0] < len(head) + len(body) // 2, (big.written, len(body))


async def test_names_are_checked_where_they_resolve_and_go_there_only() -> None:
    """G6: the check at registration sees the name; the connection sees where it resolves.
    `localhost` resolves to loopback here (/etc/hosts), as a hostile DNS name could."""
    seen = RawReceiver(head=b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n", chunk=1024)
    async with serving(seen) as url:
        port = url.split(":")[2].split("/")[0]
        async with httpx.AsyncClient(transport=CheckedTransport(AllowList())) as client:
            with pytest.raises(httpx.ConnectError) as refused:
                await client.post(f"http://localhost:{port}/hook", content=b"{}")
            assert isinstance(refused.value.__cause__, RefusedAddressError)
            assert "internal address" in str(refused.value)
        assert seen.requests == 0
        allowed = CheckedTransport(AllowList.parse("127.0.0.0/8"))
        async with httpx.AsyncClient(transport=allowed) as client:
            assert (
                await client.post(f"http://localhost:{port}/hook", content=b"{}")
            ).status_code == 204
        assert seen.requests == 1
