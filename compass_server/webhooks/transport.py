"""The webhook worker's HTTP transport: it connects only where domain/webhook_targets.py says.

A URL's host is judged when the endpoint is registered, but a name can resolve anywhere,
and differently each time (DNS rebinding). So the check is made again when connecting, on
the addresses the name resolves to then, and the connection goes to the very address that was
checked (no second lookup): an httpcore network backend wrapping the default one. TLS still
names the URL's host (httpcore takes SNI and certificate checks from the request, not from the
socket). Proxies from the environment are not used: the address checked must be the one
reached.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import TYPE_CHECKING

import httpcore
import httpx

from compass_server.domain.webhook_targets import refusal

if TYPE_CHECKING:
    from collections.abc import Iterable

    from compass_server.domain.webhook_targets import AllowList


class RefusedAddressError(httpcore.ConnectError):
    """Every address the host resolved to is one a webhook may not reach."""


class _CheckedBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, allow: AllowList) -> None:
        self._allow = allow
        # httpx's own default on asyncio (httpcore declares it conditionally on anyio,
        # which httpx requires; the checker sees the fallback).
        self._inner: httpcore.AsyncNetworkBackend = httpcore.AnyIOBackend()  # pyright: ignore[reportAttributeAccessIssue]

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if self._allow.allows_name(host):
            return await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                found = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, TimeoutError) as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}") from exc
        reasons: list[str] = []
        last: Exception | None = None
        for *_, sockaddr in found:
            address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
            reason = refusal(address, self._allow)
            if reason is not None:
                reasons.append(reason)
                continue
            try:
                return await self._inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except httpcore.ConnectError as exc:  # try the next address, as a resolver would
                last = exc
        if last is not None:
            raise last
        raise RefusedAddressError(reasons[0] if reasons else f"{host} has no address")

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("webhooks are not sent over unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class CheckedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport over a connection pool whose connections are checked as above."""

    def __init__(self, allow: AllowList) -> None:
        super().__init__(trust_env=False)
        # httpx builds its pool without a way to pass a network backend; this is its own
        # pool class with the same defaults, and the backend.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=_CheckedBackend(allow),
        )
