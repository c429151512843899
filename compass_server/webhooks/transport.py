"""The notifiers' HTTP transport (webhooks, Web Push): it connects only where
domain/webhook_targets.py says, and `post` is one bounded attempt over it.

A URL's host is judged when the endpoint is registered, but a name can resolve anywhere,
and differently each time (DNS rebinding). So the check is made again when connecting, on
the addresses the name resolves to then, and the connection goes to the very address that was
checked (no second lookup): an httpcore network backend wrapping the default one. TLS still
names the URL's host (httpcore takes SNI and certificate checks from the request, not from the
socket). Proxies from the environment are not used: the address checked must be the one
reached.

`HttpOutboxWorker` is the worker of a notifier that sends over HTTP: the shared rounds
(background/outbox.py) with one such client. `checked_client` is the client every notifier
sends with (no redirects followed, no proxies,
no decompression asked for); `post` makes one attempt within one deadline (connecting,
sending, the status line and headers, however slowly they trickle) and reads at most
MAX_RESPONSE_BYTES of the answer, as sent (never decompressed), and drops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeVar

import httpcore
import httpx

from compass_server.background.outbox import Forget, OutboxWorker
from compass_server.domain.webhook_targets import refusal

if TYPE_CHECKING:
    import logging
    from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
    from datetime import datetime

    from compass_server.domain.webhook_targets import AllowList
    from compass_server.store import Claims

D = TypeVar("D")

MAX_RESPONSE_BYTES: Final = 64 * 1024
"""Of a response's body, at most this much is read (and dropped); the rest is not read."""


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


def checked_client(
    allow: AllowList,
    *,
    timeout: float,
    user_agent: str,
    transport: httpx.AsyncBaseTransport | None = None,
) -> httpx.AsyncClient:
    """The client a notifier sends with: over `CheckedTransport(allow)` (or `transport`, a
    test's), redirects not followed, no proxy from the environment, identity encoding."""
    return httpx.AsyncClient(
        transport=transport or CheckedTransport(allow),
        timeout=timeout,
        follow_redirects=False,
        headers={"user-agent": user_agent, "accept-encoding": "identity"},
        trust_env=False,
    )


@dataclass(frozen=True, slots=True)
class Posted:
    """How one POST went."""

    outcome: str
    """For the log: "http 201", "timeout", "connection failed", "refused: internal address"."""
    status: int | None
    """The response's status; None when none came."""


async def post(
    client: httpx.AsyncClient,
    url: str,
    *,
    content: bytes,
    headers: Mapping[str, str],
    timeout: float,  # noqa: ASYNC109 - one deadline for the whole attempt, as the caller says
) -> Posted:
    """One POST of `content` to `url`, all of it within `timeout` seconds; of the response
    only the status counts (at most MAX_RESPONSE_BYTES of its body are read, as sent)."""
    try:
        async with asyncio.timeout(timeout):  # the whole attempt, not each read
            request = client.build_request("POST", url, content=content, headers=headers)
            response = await client.send(request, stream=True)
            try:
                read = 0
                async for chunk in response.aiter_raw():  # as sent: never decompressed
                    read += len(chunk)
                    if read >= MAX_RESPONSE_BYTES:
                        break
            finally:
                await response.aclose()
    except (TimeoutError, httpx.TimeoutException):
        return Posted("timeout", None)
    except httpx.ConnectError as exc:
        if isinstance(exc.__cause__, RefusedAddressError):
            return Posted("refused: internal address", None)
        return Posted("connection failed", None)
    except httpx.HTTPError:
        return Posted("connection failed", None)
    return Posted(f"http {response.status_code}", response.status_code)


class HttpOutboxWorker(OutboxWorker[D]):
    """A notifier's worker that sends over HTTP (webhooks, Web Push): its rounds run with one
    `checked_client` (the allow list `allow`, `timeout_seconds` per attempt), and `post`
    makes one bounded attempt with it."""

    def __init__(
        self,
        outbox: Claims[D],
        *,
        allow: AllowList,
        user_agent: str,
        transport: httpx.AsyncBaseTransport | None,
        name: str,
        logger: logging.Logger,
        poll_seconds: float,
        timeout_seconds: float,
        per_endpoint: int,
        clock: Callable[[], datetime],
        on_error: Callable[[], None] | None,
        forget: Forget | None = None,
    ) -> None:
        """`allow`, `user_agent` and `transport` (a test's) make the client; the rest are
        OutboxWorker's."""
        super().__init__(
            outbox,
            name=name,
            logger=logger,
            poll_seconds=poll_seconds,
            timeout_seconds=timeout_seconds,
            per_endpoint=per_endpoint,
            clock=clock,
            on_error=on_error,
            forget=forget,
        )
        self._allow = allow
        self._user_agent = user_agent
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncGenerator[object]:
        async with checked_client(
            self._allow,
            timeout=self._timeout,
            user_agent=self._user_agent,
            transport=self._transport,
        ) as client:
            self._client = client
            try:
                yield client
            finally:
                self._client = None

    async def post(self, url: str, *, content: bytes, headers: Mapping[str, str]) -> Posted:
        """One attempt (`post` above) with the rounds' client."""
        if self._client is None:
            raise RuntimeError(f"the {self._name} worker is not running")
        return await post(
            self._client, url, content=content, headers=headers, timeout=self._timeout
        )
