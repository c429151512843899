"""Where `compass serve` listens: the sockets, bound before the database starts.

uvicorn binds its port only once the app has started, which for `compass serve` is after the
embedded PostgreSQL started and the migrations ran; a busy port then surfaced as uvicorn's
`[Errno 98] ... address already in use`, a bad COMPASS_HOST as `[Errno -2] Name or service
not known`, naming no setting. So the server binds its sockets first (not
listening yet: connections are refused until it serves, as before) and hands them to uvicorn;
a failure is one line naming the address and the setting it came from. The side listeners'
ports (COMPASS_METRICS_PORT, COMPASS_GRPC_PORT) are probed the same way.

With `--workers N` the supervisor binds one SO_REUSEPORT socket that its workers join
(cli/workers.py). The kernel would let it join another server's SO_REUSEPORT group of the same
user just as well (and share that server's connections), so a plain bind probes the port
first.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from compass_server import config as config_names
from compass_server.cli.errors import CliError

if TYPE_CHECKING:
    import argparse
    from collections.abc import Generator

    from compass_server.config import Settings


@dataclass(frozen=True, slots=True)
class Setting:
    """A value and where it came from, for messages: `--port 8000`, `COMPASS_PORT=8000`."""

    value: str
    source: str

    def __str__(self) -> str:
        if self.source.startswith("--"):
            return f"{self.source} {self.value}"
        if self.source.startswith("COMPASS_"):
            return f"{self.source}={self.value}"
        return self.source


@dataclass(frozen=True, slots=True)
class Address:
    """Where `compass serve` was asked to listen."""

    host: str
    port: int
    host_from: Setting
    port_from: Setting

    @classmethod
    def of(cls, args: argparse.Namespace, settings: Settings) -> Address:
        """From `--host`/`--port`, else COMPASS_HOST/COMPASS_PORT, else the defaults."""
        host: str = args.host or settings.host
        port: int = settings.port if args.port is None else args.port
        return cls(
            host=host,
            port=port,
            host_from=_source(host, args.host is not None, config_names.HOST, "--host"),
            port_from=_source(str(port), args.port is not None, config_names.PORT, "--port"),
        )


def _source(value: str, given: bool, variable: str, flag: str) -> Setting:
    if given:
        return Setting(value, flag)
    if os.environ.get(variable):
        return Setting(value, variable)
    return Setting(value, f"the default; set {flag} or {variable}")


def bind(address: Address, *, shared: bool) -> list[socket.socket]:
    """Sockets bound to `address`, not listening: one per address the host resolves to, as
    asyncio's `create_server` binds them (`shared`: the `--workers` supervisor's one
    SO_REUSEPORT socket, after a probe that nobody listens there).

    Raises:
        CliError: the host or port cannot be used, naming the setting it came from.
    """
    if shared:
        if not hasattr(socket, "SO_REUSEPORT") or not sys.platform.startswith("linux"):
            raise CliError("--workers above 1 needs Linux (SO_REUSEPORT spreads connections)")
        for probe in _bound(address, reuse_port=False):
            probe.close()
        return _bound(address, reuse_port=True, first_only=True)
    return _bound(address, reuse_port=False)


def probe(address: Address, port: int, variable: str) -> None:
    """Check that a side listener's port (`variable`) is free on the server's host.

    Raises:
        CliError: it is not, naming `variable`.
    """
    side = replace(address, port=port, port_from=Setting(str(port), variable))
    for sock in _bound(side, reuse_port=False):
        sock.close()


def _bound(address: Address, *, reuse_port: bool, first_only: bool = False) -> list[socket.socket]:
    host, port = address.host, address.port
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise CliError(
            f"cannot listen on {host!r} ({address.host_from}): {exc.strerror}; use an address "
            "of this machine, e.g. 127.0.0.1"
        ) from None
    except (OverflowError, UnicodeError) as exc:  # a port out of range; an unencodable name
        raise CliError(
            f"cannot listen on {host!r} port {port} ({address.host_from}, {address.port_from}): "
            f"{exc}"
        ) from None
    sockets: list[socket.socket] = []
    seen: set[tuple[object, ...]] = set()
    try:
        for family, kind, proto, _, sockaddr in infos[:1] if first_only else infos:
            if (family, sockaddr) in seen:
                continue
            seen.add((family, sockaddr))
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if reuse_port:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(sockaddr)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        raise CliError(_refused(address, exc)) from None
    return sockets


def _refused(address: Address, exc: OSError) -> str:
    where = f"{address.host}:{address.port}"
    if exc.errno == errno.EADDRINUSE:
        return (
            f"cannot listen on {where} ({address.port_from}): the port is in use (by another "
            "program, or another server); choose another port"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return (
            f"cannot listen on {where} ({address.host_from}): {address.host} is not an address "
            "of this machine"
        )
    if exc.errno == errno.EACCES:
        return (
            f"cannot listen on {where} ({address.port_from}): permission denied (ports below "
            "1024 need privileges); choose another port"
        )
    return (
        f"cannot listen on {where} ({address.host_from}, {address.port_from}): "
        f"{exc.strerror or exc}"
    )


@contextlib.contextmanager
def closing(sockets: list[socket.socket]) -> Generator[list[socket.socket]]:
    """Close `sockets` when the block ends (uvicorn closes those it served on already)."""
    try:
        yield sockets
    finally:
        for sock in sockets:
            sock.close()
