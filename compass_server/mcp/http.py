"""`/mcp`: the MCP front door on `compass serve`'s main port (streamable HTTP, stateless).

In front of the `mcp` SDK's transport, a gate like the one of the Connect routes
(`transport/gate.py`): it answers every method but POST 405 (no standalone SSE stream), a
Host it could not write into a URL 400, authenticates the bearer token (an agent account's;
no token, an unknown or disabled one and a person's are answered 401 with the
`WWW-Authenticate` header and the protected resource metadata the MCP authorization spec asks
of a protected resource, before anything is read or stored) and reads the body within
`COMPASS_MAX_REQUEST_BYTES` (413 above). Connection caps and the request-read deadline are
the listener's, as for every route. The SDK then serves the request statelessly (any replica
serves any request), its Host and Origin allow-list following `COMPASS_PUBLIC_URL`
(`transport_security`); its refusals of a malformed body go out in fixed words
(`_PlainRefusals`).

The exchange (who calls, the headers that set the channel and the hold, the receipts to
write) travels to the tool call in the ASGI scope. A result that carries an answer or a
decline is the delivery: its receipts are written once the response has been handed to the
client's connection whole, with no disconnect seen before.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, TypeAlias
from urllib.parse import urlsplit

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from sse_starlette.sse import AppStatus
from starlette.requests import Request
from starlette.responses import JSONResponse

from compass_core.jsonvalues import MappingError, is_object
from compass_mcp import tools
from compass_mcp.calls import AskTools, CallContext, ToolError
from compass_mcp.server import build_server, progress_sender
from compass_server.background.periodic import STALLED_SECONDS, Health, every
from compass_server.domain.errors import UnavailableError
from compass_server.mcp.backend import ServerBackend
from compass_server.store import AccountKind
from compass_server.transport.gate import (
    BodyTooLargeError,
    ClientGoneError,
    bearer_token,
    read_body,
    replay,
    request_headers,
)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Awaitable, Callable
    from typing import Any

    from mcp.server.context import ServerRequestContext
    from starlette.types import Message, Receive, Scope, Send

    from compass_server.config import Settings
    from compass_server.service.asks import McpAsks
    from compass_server.store import AccountRow

logger = logging.getLogger(__name__)

PATH: Final = "/mcp"
METADATA_PATH: Final = "/.well-known/oauth-protected-resource/mcp"
"""RFC 9728 §3.1: the metadata of resource `<base>/mcp`."""
ROOT_METADATA_PATH: Final = "/.well-known/oauth-protected-resource"
"""Where clients that ignore the resource's path look for it."""
_EXCHANGE: Final = "compass.mcp"
_LOOPBACK: Final = ("127.0.0.1", "localhost", "[::1]")
_HOST: Final = re.compile(r"(?:[A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
"""A Host header Compass writes into a URL (the 401 challenge, the metadata, a tool result's
link): a name or an IPv4 address, or an IPv6 literal, and a port. Anything else (a quote, a
backslash, a space, a control character) is refused before it is written anywhere."""
_INVALID_HOST: Final = "invalid Host header"
_INVALID_REQUEST: Final = (
    "Invalid request: the body must be one JSON-RPC request or notification "
    "(batches are not supported)"
)
_PARSE_ERROR: Final = "Parse error: the body is not JSON"
_PARSE_ERROR_CODE: Final = -32700
_INVALID_REQUEST_CODE: Final = -32600
_NO_STREAM: Final = "this MCP endpoint has no standalone SSE stream: POST each JSON-RPC message"
_WILDCARD_HOSTS: Final = frozenset({"", "0.0.0.0", "::"})  # noqa: S104 - names, not a bind


Receipt: TypeAlias = "Callable[[], Awaitable[None]]"
"""Writes one delivery receipt (registered by a tool call, run once the response is out)."""


@dataclass(slots=True, kw_only=True)
class _Exchange:
    """One /mcp request, as the gate admitted it."""

    actor: AccountRow
    token: str
    base_url: str
    channel: str | None
    wait_seconds: float
    receipts: list[Receipt] = field(default_factory=list["Receipt"])


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding protection: the Host (and, from browsers, Origin) headers
    it accepts. Loopback names always (a rebinding attack cannot make a browser send them
    for another site); `COMPASS_PUBLIC_URL`'s host when set, else the listening host
    unless it is a wildcard (then set COMPASS_PUBLIC_URL for other names to be served)."""
    hosts = [f"{name}:*" for name in _LOOPBACK]
    origins = [f"http://{name}:*" for name in _LOOPBACK]
    if settings.public_url:
        parts = urlsplit(settings.public_url)
        if parts.hostname:
            host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
            hosts += [parts.netloc, f"{host}:*"]
            origins += [f"{parts.scheme}://{parts.netloc}", f"{parts.scheme}://{host}:*"]
    elif settings.host not in _WILDCARD_HOSTS:
        host = f"[{settings.host}]" if ":" in settings.host else settings.host
        hosts.append(f"{host}:*")
        origins.append(f"http://{host}:*")
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


class McpFront:
    """The /mcp ASGI app (gate + SDK transport), its metadata endpoint, and its tasks."""

    def __init__(
        self,
        *,
        settings: Settings,
        asks: McpAsks,
        authenticate: Callable[[str], Awaitable[AccountRow | None]],
    ) -> None:
        self._settings = settings
        self._asks = asks
        self._authenticate = authenticate
        self.tools = AskTools(progress_seconds=settings.mcp_progress_seconds)
        self.leave_sweep = Health(stalled_after=STALLED_SECONDS + settings.sweep_interval_seconds)
        """Whether the leave sweep runs."""
        # sse-starlette (the SDK's SSE responses) ends every SSE response of the process
        # once it sees uvicorn's exit flag, polled every 0.5 s: a SIGTERM then cut waiting
        # calls with no result whenever that poll came before the shutdown had told them
        # `pending` (`compass serve` closes the change hub first, and each waiting call
        # returns `pending`). Off: every /mcp response ends with its call, and uvicorn's
        # graceful timeout still bounds one that would not.
        AppStatus.disable_automatic_graceful_drain()
        self._manager = StreamableHTTPSessionManager(
            app=build_server(self.tools, self._context_of),
            stateless=True,
            security_settings=transport_security(settings),
            max_request_body_size=settings.max_request_bytes,
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncGenerator[None]:
        """The SDK's task group and the leave sweep, for the app's lifespan."""
        async with self._manager.run():
            sweeping = asyncio.create_task(self._sweep_leaves(), name="compass-mcp-leaves")
            try:
                yield
            finally:
                sweeping.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sweeping
                await self.tools.settle()

    async def _sweep_leaves(self) -> None:
        """WITHDRAW the MCP asks nobody waits for any more, at once and then every sweep
        interval, until cancelled (background/periodic.py)."""
        await every(
            self._settings.sweep_interval_seconds,
            self._sweep_leaves_once,
            name="MCP leave sweep",
            logger=logger,
            health=self.leave_sweep,
        )

    async def _sweep_leaves_once(self) -> None:
        await self._asks.withdraw_abandoned(tools.STOPPED_WAITING)

    # -- the gate --------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # pragma: no cover - mounted as an HTTP route
            return
        if scope["method"] != "POST":
            # Stateless, Compass has no standalone SSE stream for a GET to open (streamable
            # HTTP: the server returns text/event-stream "or else HTTP 405"; the 2026-07-28
            # revision has no GET at all): answered at once, whoever asks, so that no
            # request holds a connection open here without a call behind it.
            await _method_not_allowed(scope, send)
            return
        headers = request_headers(scope)
        base_url = self._base_url(scope, headers)
        if base_url is None:
            await _json_rpc_error(send, 400, _INVALID_HOST)
            return
        token = bearer_token(headers.get("authorization"))
        if token is None:
            await self._unauthorized(
                send, base_url, None, "an agent account's bearer token is required"
            )
            return
        try:
            actor = await self._authenticate(token)
        except UnavailableError as exc:
            await _json_rpc_error(send, 503, exc.message)
            return
        if actor is None:
            await self._unauthorized(send, base_url, "invalid_token", "unknown or disabled token")
            return
        if actor.kind is not AccountKind.AGENT:
            await self._unauthorized(
                send,
                base_url,
                "invalid_token",
                "this is a person's token; the MCP tools take an agent account's token",
            )
            return
        try:
            wait = tools.parse_wait_header(headers.get(tools.WAIT_HEADER))
            body = await read_body(headers, receive, self._settings.max_request_bytes)
        except MappingError as exc:
            await _json_rpc_error(send, 400, exc.reason)
            return
        except BodyTooLargeError:
            limit = self._settings.max_request_bytes
            await _json_rpc_error(send, 413, f"request body is too large (limit {limit} bytes)")
            return
        except ClientGoneError:
            return
        self._cancelled(actor, body)
        exchange = _Exchange(
            actor=actor,
            token=token,
            base_url=base_url,
            channel=headers.get(tools.CHANNEL_HEADER) or None,
            wait_seconds=self._settings.mcp_wait_seconds if wait is None else wait,
        )
        watch = _DeliveryWatch(replay(body, receive), _PlainRefusals(send))
        await self._manager.handle_request(
            {**scope, _EXCHANGE: exchange}, watch.receive, watch.send
        )
        if exchange.receipts and watch.delivered:
            for receipt in exchange.receipts:
                try:
                    await receipt()
                except ToolError as exc:
                    # Refused as the API refuses it (e.g. another agent of the channel
                    # waited for this ask: only its author reports its delivery): expected,
                    # one line.
                    logger.warning("MCP: %s", exc.message)
                except Exception:
                    logger.exception("could not record an MCP delivery receipt")

    def _cancelled(self, actor: AccountRow, body: bytes) -> None:
        """A `notifications/cancelled` cancels the caller's call of that request id here.

        Stateless, the SDK serves each POST on a transport of its own, so the notification
        never meets the call it names; the gate does it. The id is the client's own (ids are
        per client session, and a stateless server has no sessions): a call is found by the
        account and the id, so another session of the same agent token with a call of the
        same id in flight at that moment would be cancelled too. A call running on another
        replica is not reached; it ends with its hold.
        """
        if b"notifications/cancelled" not in body:
            return
        try:
            message: object = json.loads(body)
        except ValueError:
            return  # the SDK answers it
        if not is_object(message) or message.get("method") != "notifications/cancelled":
            return
        params = message.get("params")
        request_id = params.get("requestId") if is_object(params) else None
        if isinstance(request_id, str | int) and not isinstance(request_id, bool):
            self.tools.cancel(_request_key(actor, request_id))

    async def _unauthorized(
        self, send: Send, base_url: str, error: str | None, description: str
    ) -> None:
        """401 with the MCP authorization spec's challenge (RFC 6750 + RFC 9728 §5.1).
        Every quoted value is Compass's own text or a URL of `_base_url` (no quote or
        backslash can be in it)."""
        metadata = base_url.rstrip("/") + METADATA_PATH
        challenge = 'Bearer realm="compass"'
        if error is not None:
            challenge += f', error="{error}", error_description="{description}"'
        challenge += f', resource_metadata="{metadata}"'
        body = json.dumps({"error": error or "invalid_request", "error_description": description})
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", challenge.encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body.encode(), "more_body": False})

    def _base_url(self, scope: Scope, headers: dict[str, str]) -> str | None:
        """COMPASS_PUBLIC_URL (the Host header then plays no part), else the URL the client
        used (its Host header); None for a Host that is not a host[:port] (`_HOST`)."""
        if self._settings.public_url:
            return self._settings.public_url.rstrip("/") + "/"
        host = headers.get("host")
        if host is None:
            host = f"{self._settings.host}:{self._settings.port}"
        elif _HOST.fullmatch(host) is None:
            return None
        return f"{scope.get('scheme', 'http')}://{host}/"

    async def metadata(self, request: Request) -> JSONResponse:
        """RFC 9728 protected resource metadata of /mcp.

        The MCP authorization spec asks for at least one authorization server. Compass issues
        its tokens itself (`compass admin create-account`), out of band: no OAuth endpoint
        exists, so a client that looks for one finds none and needs the header configured.
        """
        base = self._base_url(request.scope, request_headers(request.scope))
        if base is None:
            return JSONResponse(_error_body(_INVALID_HOST), status_code=400)
        return JSONResponse(
            {
                "resource": base.rstrip("/") + PATH,
                "authorization_servers": [base],
                "bearer_methods_supported": ["header"],
                "resource_name": "Compass",
                "resource_documentation": base,
            },
            headers={"cache-control": "no-store"},
        )

    # -- tool calls ------------------------------------------------------------------------

    def _context_of(self, ctx: ServerRequestContext[Any, Any]) -> CallContext:
        request: object = ctx.request
        exchange = request.scope.get(_EXCHANGE) if isinstance(request, Request) else None
        if not isinstance(exchange, _Exchange):  # pragma: no cover - every request is gated
            raise RuntimeError("an /mcp tool call reached the tools without the gate")
        backend = ServerBackend(
            actor=exchange.actor,
            token=exchange.token,
            asks=self._asks,
            grace_seconds=self._settings.mcp_grace_seconds,
            public_url=exchange.base_url,
        )
        return CallContext(
            backend=backend,
            progress=progress_sender(ctx),
            on_delivered=exchange.receipts.append,
            channel=exchange.channel,
            wait_seconds=exchange.wait_seconds,
            request_key=None
            if ctx.request_id is None
            else _request_key(exchange.actor, ctx.request_id),
        )


def _request_key(actor: AccountRow, request_id: str | int) -> str:
    # The JSON type is part of the id (1 and "1" are different requests).
    return f"{actor.account_id}:{type(request_id).__name__}:{request_id}"


class _DeliveryWatch:
    """The receive/send of one exchange, noting whether its response went out whole before
    any disconnect was seen (`delivered`)."""

    def __init__(self, receive: Receive, send: Send) -> None:
        self._receive = receive
        self._send = send
        self._gone = False
        self.delivered = False

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.disconnect" and not self.delivered:
            self._gone = True
        return message

    async def send(self, message: Message) -> None:
        await self._send(message)
        if (
            message["type"] == "http.response.body"
            and not message.get("more_body", False)
            and not self._gone
        ):
            self.delivered = True


class _PlainRefusals:
    """The `send` of the SDK's transport, with its 400 refusals of a malformed body said in
    fixed words: it answers them with the validator's own text, which quotes the input (a
    JSON-RPC batch got pydantic's four errors, each with a piece of it)."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._held: Message | None = None
        self._body = b""

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 400:
            self._held = message  # sent with the body, once it is known
            return
        if self._held is None or message["type"] != "http.response.body":
            await self._send(message)
            return
        self._body += message.get("body", b"")
        if message.get("more_body", False):
            return
        start, self._held = self._held, None
        body = _plain_refusal(self._body)
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await self._send({**start, "headers": headers})
        await self._send({"type": "http.response.body", "body": body, "more_body": False})


def _plain_refusal(body: bytes) -> bytes:
    """The legacy transport's "Parse error: ..." and "Validation error: ..." (a malformed
    body, no request id) in fixed words; any other body as is (the SDK's other refusals are
    fixed texts, or carry the request's id and data a client needs)."""
    try:
        message: object = json.loads(body)
    except ValueError:
        return body
    error = message.get("error") if is_object(message) else None
    if not is_object(message) or message.get("id") is not None or not is_object(error):
        return body
    text = error.get("message")
    if not isinstance(text, str):
        return body
    if text.startswith("Parse error"):
        return json.dumps(_error_body(_PARSE_ERROR, _PARSE_ERROR_CODE)).encode()
    if text.startswith("Validation error"):
        return json.dumps(_error_body(_INVALID_REQUEST)).encode()
    return body


def _error_body(message: str, code: int = _INVALID_REQUEST_CODE) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}


async def _method_not_allowed(scope: Scope, send: Send) -> None:
    body = b"" if scope["method"] == "HEAD" else json.dumps(_error_body(_NO_STREAM)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 405,
            "headers": [
                (b"allow", b"POST"),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _json_rpc_error(send: Send, status: int, message: str) -> None:
    body = json.dumps(_error_body(message))
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body.encode(), "more_body": False})
