"""The HTTP/2 (gRPC) listener under abuse (issue 24, G1/G5/G7), with a raw `h2` client on
127.0.0.1 (tests/e2e/_h2.py): rapid reset ends in GOAWAY, handlers and connections are
capped, an unfinished request body is reset after the read timeout and held to a byte budget,
hostile frames are logged as one line without the client's bytes, and HTTP/1.1 is told where
to go. The main listener keeps answering throughout. Timings are bench/h2_abuse.py's."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from typing import TYPE_CHECKING

import httpx
from h2.errors import ErrorCodes

from gen.compass.v1 import comms_pb2
from tests import _server
from tests._wait import eventually
from tests.e2e import _h2

if TYPE_CHECKING:
    from collections.abc import Generator, Mapping

    from tests._server import RunningServer, SeededWorld


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _serving(
    database_url: str, env: Mapping[str, str] | None = None
) -> Generator[tuple[RunningServer, int]]:
    port = _free_port()
    with _server.serve(database_url, env={"COMPASS_GRPC_PORT": str(port), **(env or {})}) as server:
        yield server, port


async def _main_listener_answers(server: RunningServer, world: SeededWorld) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        reply = await http.post(
            "/compass.v1.CommsService/ListChannels",
            json={},
            headers={"authorization": f"Bearer {world.human.token}"},
        )
    assert reply.status_code == 200, reply.text


def _watch(conn: _h2.Conn, port: int, token: str, channel_id: str) -> int | None:
    """Open a gRPC WatchChannel stream (a handler that keeps running)."""
    stream_id = conn.open(_h2.grpc_headers(port, token, "/compass.v1.CommsService/WatchChannel"))
    if stream_id is not None:
        body = comms_pb2.WatchChannelRequest(channel_id=channel_id).SerializeToString()
        conn.h2.send_data(stream_id, _h2.grpc_frame(len(body)) + body, end_stream=True)
        conn.flush()
    return stream_id


async def test_rapid_reset_ends_in_goaway_and_the_main_listener_answers(
    database_url: str,
) -> None:
    with _serving(database_url) as (server, port):
        world = await _server.seed_world(database_url)
        outcomes = await asyncio.to_thread(
            _h2.rapid_reset, port, "cmp_" + "x" * 40, streams=5000, connections=1
        )
        assert outcomes[0].goaway == ErrorCodes.ENHANCE_YOUR_CALM, outcomes
        # A valid token costs the same: the handlers of streams reset before they started
        # never run, and the client is sent away all the same.
        outcomes = await asyncio.to_thread(
            _h2.rapid_reset, port, world.human.token, streams=5000, connections=1
        )
        assert outcomes[0].goaway == ErrorCodes.ENHANCE_YOUR_CALM, outcomes
        await _main_listener_answers(server, world)
    log = server.log()
    assert "sent GOAWAY to an HTTP/2 client at 127.0.0.1" in log, log
    assert "Traceback" not in log, log


async def test_streams_over_the_handler_limit_are_refused(database_url: str) -> None:
    # COMPASS_MAX_CONNECTIONS also caps the listener's running handlers: 3 here.
    with _serving(database_url, {"COMPASS_MAX_CONNECTIONS": "3"}) as (_, port):
        world = await _server.seed_world(database_url)

        def scenario() -> _h2.Outcome:
            conn = _h2.Conn(port)
            try:
                watches = [
                    _watch(conn, port, world.human.token, world.channel_id) for _ in range(3)
                ]
                # Each watch answers its first message (caught_up) once its handler runs.
                while conn.outcome.responses < 3 and not conn.outcome.closed:
                    conn.pump(0.5)
                assert None not in watches
                _watch(conn, port, world.human.token, world.channel_id)
                while not conn.outcome.resets_received and not conn.outcome.closed:
                    conn.pump(0.5)
                return conn.outcome
            finally:
                conn.close()

        outcome = await asyncio.wait_for(asyncio.to_thread(scenario), 30)
        assert outcome.responses == 3, outcome
        assert outcome.resets_received == [ErrorCodes.REFUSED_STREAM], outcome
        assert outcome.goaway is None, outcome


async def test_connections_over_the_per_client_cap_are_closed(database_url: str) -> None:
    with _serving(database_url, {"COMPASS_MAX_CONNECTIONS_PER_CLIENT": "2"}) as (server, port):
        world = await _server.seed_world(database_url)

        def scenario() -> list[_h2.Outcome]:
            conns = [_h2.Conn(port) for _ in range(3)]
            try:
                for conn in conns:
                    conn.pump(1.0)
                return [c.outcome for c in conns]
            finally:
                for conn in conns:
                    conn.close()

        first, second, third = await asyncio.to_thread(scenario)
        assert not first.closed, first
        assert not second.closed, second
        assert third.closed, third
        await _main_listener_answers(server, world)
    assert "refused an HTTP/2 connection: too many open connections from 127.0.0.1" in server.log()


async def test_an_unfinished_body_is_reset_after_the_read_timeout(database_url: str) -> None:
    env = {"COMPASS_REQUEST_READ_TIMEOUT_SECONDS": "1"}
    with _serving(database_url, env) as (server, port):
        world = await _server.seed_world(database_url)
        conn = _h2.Conn(port)
        try:
            stream_id = conn.open(_h2.grpc_headers(port, world.human.token))
            assert stream_id is not None
            conn.h2.send_data(stream_id, _h2.grpc_frame(1000) + b"x" * 10)
            conn.flush()

            def reset() -> list[int]:
                conn.pump(0.1)
                return conn.outcome.resets_received

            assert await eventually(reset, "the server resets the stream", within=15) == [
                ErrorCodes.CANCEL
            ]
            # The connection itself stays: another request on it is answered.
            body = comms_pb2.ListChannelsRequest().SerializeToString()
            other = conn.open(_h2.grpc_headers(port, world.human.token))
            assert other is not None
            conn.h2.send_data(other, _h2.grpc_frame(len(body)) + body, end_stream=True)
            conn.flush()
            await eventually(
                lambda: conn.pump(0.1) or conn.outcome.responses, "ListChannels is answered"
            )
            assert not conn.outcome.closed
        finally:
            conn.close()
    assert "its request body did not end within 1 s" in server.log()


async def test_unfinished_bodies_are_held_to_a_byte_budget(database_url: str) -> None:
    # 64 KiB requests: each connection may have 8 x 64 KiB of bodies still arriving.
    env = {"COMPASS_MAX_REQUEST_BYTES": str(64 * 1024)}
    with _serving(database_url, env) as (server, port):
        world = await _server.seed_world(database_url)

        def scenario() -> _h2.Outcome:
            with _h2.unfinished_bodies(
                port, world.human.token, connections=1, streams=20, body_bytes=60_000, within=10
            ) as conns:
                conns[0].pump(0.5)
                return conns[0].outcome

        outcome = await asyncio.to_thread(scenario)
        # 20 x 60,000 bytes is over 512 KiB: the streams that would pass it are reset.
        assert outcome.resets_received, outcome
        assert set(outcome.resets_received) == {ErrorCodes.ENHANCE_YOUR_CALM}, outcome
        assert len(outcome.resets_received) < 20, outcome
        await _main_listener_answers(server, world)


async def test_hostile_frames_are_logged_once_without_the_clients_bytes(
    database_url: str,
) -> None:
    """A non-ASCII :method made hypercorn raise with the connection's first bytes (HPACK,
    the bearer token among them) in the traceback, once per connection."""
    with _serving(database_url) as (server, port):
        world = await _server.seed_world(database_url)

        def hostile() -> None:
            _h2.hostile(port, world.human.token, connections=1)

        started = time.monotonic()
        await asyncio.gather(*(asyncio.to_thread(hostile) for _ in range(20)))
        took = time.monotonic() - started
        await _main_listener_answers(server, world)
    log = server.log()
    broken = [line for line in log.splitlines() if "its frames raised" in line]
    # One line per 10 s (the log's interval), however many connections.
    assert 1 <= len(broken) <= 1 + took // 10, log
    assert "Traceback" not in log, log
    assert "\\x" not in log, log
    assert world.human.token not in log


async def test_http1_on_the_grpc_port_is_told_where_to_go(database_url: str) -> None:
    with _serving(database_url) as (server, port):
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            reply = await http.get("/healthz")
        assert reply.status_code == 505, reply.text
        assert "use the main port" in reply.text
    assert "Traceback" not in server.log()
