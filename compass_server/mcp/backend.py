"""The MCP tools' backend inside `compass serve`: one agent account's calls of the
application API (`service/asks.py`).

Every tool call goes through what AgentService goes through, since both call the same API
as the same account: AppendMessage's request checks and post quota for a new ask, WatchAsk
(the stream cap shared with Connect's streams, the revocation of the token the call came
with, the change hub), CloseAsk and ReportDelivery (their judges and metrics). Domain errors
become the tool errors the model reads (`ToolError`, their message); a server shutting down
ends a wait as `pending`.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from compass_mcp.calls import Channel, Interrupted, ToolError
from compass_server.domain.errors import (
    CompassError,
    InvalidArgumentError,
    UnavailableError,
)
from gen.compass.v1 import agent_pb2, comms_pb2

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Generator, Sequence

    from compass_server.service.asks import McpAsks
    from compass_server.service.streams import Slot
    from compass_server.store import AccountRow


def explain(exc: CompassError) -> str:
    """A domain error in words for the model: its message, and each field violation."""
    if isinstance(exc, InvalidArgumentError) and exc.violations:
        return f"{exc.message}: " + "; ".join(v.description for v in exc.violations)
    return exc.message


class ServerBackend:
    """`compass_mcp.calls.Backend` for one authenticated agent account (the stdio twin,
    `compass mcp`'s, calls AgentService over the network instead)."""

    def __init__(
        self,
        *,
        actor: AccountRow,
        token: str,
        asks: McpAsks,
        grace_seconds: float,
        public_url: str,
    ) -> None:
        self._actor = actor
        self._token = token
        self._asks = asks
        self._grace = grace_seconds
        self._public_url = public_url
        self._slot: Slot | None = None
        """The stream slot `open_ask` took for the wait that follows (`states` hands it to
        the watch; `release` lets it go if the watch never started)."""

    @contextlib.contextmanager
    def _tool_errors(self) -> Generator[None]:
        """The API's domain errors as the tool errors the model reads."""
        try:
            yield
        except UnavailableError as exc:
            if self._asks.shutting_down:
                raise Interrupted from exc
            raise ToolError(explain(exc)) from exc
        except CompassError as exc:
            raise ToolError(explain(exc)) from exc

    async def channels(self) -> Sequence[Channel]:
        with self._tool_errors():
            rows = await self._asks.list_channels(self._actor)
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
        with self._tool_errors():
            row, _created, slot = await self._asks.open_mcp_ask(
                self._actor,
                request,
                call_key=key,
                waiter_id=waiter,
                seconds=seconds + self._grace,
            )
        self._let_go()
        self._slot = slot
        return row.ask

    async def states(self, ask_id: str) -> AsyncGenerator[comms_pb2.Ask]:
        request = agent_pb2.WatchAskRequest(ask_id=ask_id)
        slot, self._slot = self._slot, None  # the first watch after open_ask waits on it
        stream = self._asks.watch_ask(self._actor, request, token=self._token, slot=slot)
        with self._tool_errors():
            async with contextlib.aclosing(stream):
                async for ask in stream:
                    if ask is not None:  # a keepalive is nothing new for a tool call
                        yield ask

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
        with self._tool_errors():
            row = await self._asks.close_ask(self._actor, request)
        return row.ask

    async def hold(self, ask_id: str, waiter: str, seconds: float) -> None:
        with self._tool_errors():
            await self._asks.hold_mcp_wait(self._actor, ask_id, waiter, seconds + self._grace)

    async def release(self, ask_id: str, waiter: str, *, left: bool) -> None:
        self._let_go()
        with self._tool_errors():
            await self._asks.release_mcp_wait(
                self._actor, ask_id, waiter, grace=self._grace if left else None
            )

    async def report_delivery(self, ask: comms_pb2.Ask, payload: str) -> None:
        request = agent_pb2.ReportDeliveryRequest(
            ask_id=ask.ask_id, state=comms_pb2.DELIVERY_STATE_DELIVERED, payload=payload
        )
        try:
            await self._asks.report_delivery(self._actor, request)
        except CompassError as exc:
            raise ToolError(
                f"the delivery receipt of ask {ask.ask_id} was not recorded: {explain(exc)}"
            ) from None

    def _let_go(self) -> None:
        slot, self._slot = self._slot, None
        if slot is not None:
            slot.release()

    def link(self, ask_id: str) -> str:
        return f"{self._public_url}#/ask/{ask_id}"
