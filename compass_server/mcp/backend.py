"""The MCP tools' backend inside `compass serve`: one agent account's view of the store.

It goes through what AgentService goes through: the request checks of AppendMessage
(`domain.requests.check_append_message`, so the limits and messages are the same), the post
quota, and the handlers themselves for WatchAsk (the stream cap, the revocation re-check, the
change hub) and CloseAsk (the judge, the metrics). Domain errors become the tool errors the
model reads (`ToolError`, their message); a server shutting down ends a wait as `pending`.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Final

from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.request import Headers, RequestContext

from compass_mcp.calls import Channel, Interrupted, ToolError
from compass_server.domain import requests
from compass_server.domain.errors import (
    CompassError,
    InvalidArgumentError,
    UnavailableError,
)
from gen.compass.v1 import agent_pb2, comms_pb2

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Generator, Sequence

    from google.protobuf.message import Message

    from compass_server.live.hub import ChangeHub
    from compass_server.observe.metrics import Metrics
    from compass_server.quota import PostQuota
    from compass_server.service.handlers import AgentHandlers
    from compass_server.store import AccountRow, Store
    from compass_server.transport.auth import AuthContext


def _context(
    name: str, request: type[Message], response: type[Message], stream: StreamType
) -> RequestContext[Any, Any]:
    """The Connect request context of an AgentService method, for calling its handler
    directly (the handlers do not read it: the gate did the header work)."""
    method = MethodInfo(
        name=name,
        service_name="compass.v1.AgentService",
        input=request,
        output=response,
        idempotency_level=IdempotencyLevel.UNKNOWN,
        stream_type=stream,
    )
    return RequestContext(method=method, http_method="POST", request_headers=Headers())


_WATCH_ASK: Final = _context(
    "WatchAsk", agent_pb2.WatchAskRequest, agent_pb2.WatchAskResponse, StreamType.SERVER_STREAM
)
_CLOSE_ASK: Final = _context(
    "CloseAsk", agent_pb2.CloseAskRequest, agent_pb2.CloseAskResponse, StreamType.UNARY
)
_REPORT_DELIVERY: Final = _context(
    "ReportDelivery",
    agent_pb2.ReportDeliveryRequest,
    agent_pb2.ReportDeliveryResponse,
    StreamType.UNARY,
)


def explain(exc: CompassError) -> str:
    """A domain error in words for the model: its message, and each field violation."""
    if isinstance(exc, InvalidArgumentError) and exc.violations:
        return f"{exc.message}: " + "; ".join(v.description for v in exc.violations)
    return exc.message


@contextlib.contextmanager
def _as_tool_errors(hub: ChangeHub) -> Generator[None]:
    try:
        yield
    except UnavailableError as exc:
        if hub.closed:
            raise Interrupted from exc
        raise ToolError(explain(exc)) from exc
    except CompassError as exc:
        raise ToolError(explain(exc)) from exc


class StoreBackend:
    """`compass_mcp.calls.Backend` for one authenticated agent account."""

    def __init__(
        self,
        *,
        actor: AccountRow,
        token: str,
        store: Store,
        auth: AuthContext[AccountRow],
        handlers: AgentHandlers,
        hub: ChangeHub,
        metrics: Metrics | None,
        quota: PostQuota | None,
        grace_seconds: float,
        public_url: str,
    ) -> None:
        self._actor = actor
        self._token = token
        self._store = store
        self._auth = auth
        self._handlers = handlers
        self._hub = hub
        self._metrics = metrics
        self._quota = quota
        self._grace = grace_seconds
        self._public_url = public_url

    @contextlib.contextmanager
    def _calling(self) -> Generator[None]:
        """A handler call as this account, its domain errors made tool errors."""
        with self._auth.bound(self._actor, self._token), _as_tool_errors(self._hub):
            yield

    async def channels(self) -> Sequence[Channel]:
        with self._calling():
            rows = await self._store.list_channels(self._actor)
        return [Channel(channel_id=row.channel_id, name=row.name) for row in rows]

    async def open_ask(
        self,
        channel_id: str,
        blocks: Sequence[comms_pb2.MessageBlock],
        key: str,
        waiter: str,
        seconds: float,
    ) -> comms_pb2.Ask:
        request = agent_pb2.AppendMessageRequest(
            channel_id=channel_id, frame=comms_pb2.MessageUpdated(blocks=blocks)
        )
        with self._calling():
            requests.check_append_message(request)  # what AppendMessage would refuse
            if self._quota is not None:
                self._quota.take(self._actor.account_id)
            row, created = await self._store.open_mcp_ask(
                self._actor,
                channel_id,
                request.frame.blocks,
                call_key=key,
                waiter_id=waiter,
                seconds=seconds + self._grace,
            )
        if created and self._metrics is not None:
            self._metrics.asks_seen((row.ask,))
        return row.ask

    async def states(self, ask_id: str) -> AsyncGenerator[comms_pb2.Ask]:
        request = agent_pb2.WatchAskRequest(ask_id=ask_id)
        with self._calling():
            async for response in self._handlers.watch_ask(request, _WATCH_ASK):
                yield response.ask

    async def close_ask(
        self,
        ask_id: str,
        status: comms_pb2.AskStatus,
        reason: str,
        answers: Sequence[comms_pb2.AskQuestionAnswer] = (),
    ) -> comms_pb2.Ask:
        request = agent_pb2.CloseAskRequest(
            ask_id=ask_id, status=status, reason=reason, answers=answers
        )
        with self._calling():
            response = await self._handlers.close_ask(request, _CLOSE_ASK)
        return response.ask

    async def hold(self, ask_id: str, waiter: str, seconds: float) -> None:
        with self._calling():
            await self._store.hold_mcp_wait(self._actor, ask_id, waiter, seconds + self._grace)

    async def release(self, ask_id: str, waiter: str, *, left: bool) -> None:
        with self._calling():
            await self._store.release_mcp_wait(
                self._actor, ask_id, waiter, grace=self._grace if left else None
            )

    async def report_delivery(self, ask: comms_pb2.Ask, payload: str) -> None:
        request = agent_pb2.ReportDeliveryRequest(
            ask_id=ask.ask_id, state=comms_pb2.DELIVERY_STATE_DELIVERED, payload=payload
        )
        with self._calling():
            await self._handlers.report_delivery(request, _REPORT_DELIVERY)

    def link(self, ask_id: str) -> str:
        return f"{self._public_url}#/ask/{ask_id}"
