"""A TCP proxy in front of PostgreSQL that counts the round trips its clients make.

A benchmark points a server's pool at `RoundTripCounter.dsn` to count, not assume, how many
times the server waits on the database per event. What is counted is read off the wire
protocol the client sends: a round trip ends where the client must wait for the server, at a
`Sync` (the end of an extended-protocol exchange: asyncpg's prepared statements, whatever
Parse/Bind/Execute it batched before) or a simple `Query` (BEGIN, COMMIT, a reset on
release). The counter sits in the bench's own process, so it slows every call through it: use
it for counting, never while timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from typing import TYPE_CHECKING, Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

_UNTYPED_REQUESTS: Final = frozenset({80877103, 80877104})
"""SSLRequest and GSSENCRequest: answered by one byte, then the startup message follows."""
_WAITS: Final = frozenset({b"S", b"Q"})


class RoundTripCounter:
    """Counts Sync and Query messages from every client connection (`round_trips`)."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        query_host = dict(parse_qsl(parts.query)).get("host", "")
        self._host = query_host or parts.hostname or "127.0.0.1"
        self._port = parts.port or int(dict(parse_qsl(parts.query)).get("port", "5432"))
        self._upstream = parts
        self.round_trips = 0
        self.dsn = ""
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncGenerator[RoundTripCounter]:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        query = [
            (k, v)
            for k, v in parse_qsl(self._upstream.query, keep_blank_values=True)
            if k not in ("host", "port", "sslmode")
        ]
        query.append(("sslmode", "disable"))  # the counter reads the protocol in the clear
        user = self._upstream.username or ""
        netloc = f"{user}{'@' if user else ''}127.0.0.1:{port}"
        if self._upstream.password:
            netloc = f"{user}:{self._upstream.password}@127.0.0.1:{port}"
        self.dsn = urlunsplit(
            (self._upstream.scheme, netloc, self._upstream.path, urlencode(query), "")
        )
        try:
            yield self
        finally:
            self._server.close()
            for pipe in list(self._pipes):
                pipe.cancel()
            await asyncio.gather(*self._pipes, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if self._host.startswith("/"):  # a socket directory (e.g. a temporary cluster)
                up_reader, up_writer = await asyncio.open_unix_connection(
                    f"{self._host}/.s.PGSQL.{self._port}"
                )
            else:
                up_reader, up_writer = await asyncio.open_connection(self._host, self._port)
        except OSError:
            writer.close()
            return
        tasks = (
            asyncio.create_task(self._client_to_server(reader, up_writer)),
            asyncio.create_task(_pipe(up_reader, writer)),
        )
        self._pipes.update(tasks)
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._pipes.difference_update(tasks)
            for w in (writer, up_writer):
                w.close()

    async def _client_to_server(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:  # untyped messages until the startup message itself
                head = await reader.readexactly(8)
                length, code = struct.unpack("!ii", head)
                writer.write(head + await reader.readexactly(length - 8))
                await writer.drain()
                if code not in _UNTYPED_REQUESTS:
                    break
            while True:
                head = await reader.readexactly(5)
                (length,) = struct.unpack("!i", head[1:])
                if head[:1] in _WAITS:
                    self.round_trips += 1
                writer.write(head + await reader.readexactly(length - 4))
                await writer.drain()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
