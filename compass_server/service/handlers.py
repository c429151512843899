"""Connect handlers: decode a request, call the application API (`service/asks.py`, and
`service/push.py` for a person's devices) as the caller, encode its result. No store, no rules, no SQL, no HTTP.

Authentication and the human/agent split happen in the gate before a handler runs; the
handlers take the caller (and, for a stream, the token it was admitted with) from
`AuthContext` and hand them to the API as arguments. Every domain error the API raises is
mapped to its Connect code by the interceptor.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from compass_server.domain.errors import FailedPreconditionError
from compass_server.live.shared_reads import SharedResponses
from compass_server.store import account_kind_proto
from gen.compass.v1 import agent_pb2, comms_pb2
from gen.compass.v1.agent_connect import AgentService
from gen.compass.v1.comms_connect import CommsService

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from typing import TypeAlias

    from connectrpc.request import RequestContext

    from compass_server.service.asks import Asks
    from compass_server.service.email import Email
    from compass_server.service.push import Push
    from compass_server.store import AccountRow, EmailSettingsRow
    from compass_server.transport.auth import AuthContext

    # Handlers never read the context's message types; the gate did the header work. (The
    # generated protocols type it per method; Any keeps one alias for all of them.)
    Ctx: TypeAlias = RequestContext[Any, Any]


class _Handlers:
    """What both services' handlers work with: the API, and who is calling."""

    def __init__(self, asks: Asks, auth: AuthContext[AccountRow]) -> None:
        self._asks = asks
        self._auth = auth


class CommsHandlers(_Handlers, CommsService):
    """CommsService: what participants (human accounts) call from the browser."""

    def __init__(
        self,
        asks: Asks,
        auth: AuthContext[AccountRow],
        *,
        push: Push,
        email: Email | None = None,
        responses: SharedResponses | None = None,
    ) -> None:
        super().__init__(asks, auth)
        self._push = push
        self._email = email
        self._responses = responses or SharedResponses()

    async def get_me(self, request: comms_pb2.GetMeRequest, ctx: Ctx) -> comms_pb2.GetMeResponse:
        me = self._auth.current()
        workspaces = await self._asks.list_workspaces(me)
        return comms_pb2.GetMeResponse(
            account_id=me.account_id,
            kind=account_kind_proto(me.kind),
            name=me.name,
            workspaces=[
                comms_pb2.Workspace(workspace_id=w.workspace_id, name=w.name) for w in workspaces
            ],
        )

    async def list_pending_asks(
        self, request: comms_pb2.ListPendingAsksRequest, ctx: Ctx
    ) -> comms_pb2.ListPendingAsksResponse:
        page = await self._asks.list_pending_asks(self._auth.current(), request)
        return comms_pb2.ListPendingAsksResponse(
            asks=[row.to_proto() for row in page.asks], next_page_token=page.next_page_token
        )

    async def list_channels(
        self, request: comms_pb2.ListChannelsRequest, ctx: Ctx
    ) -> comms_pb2.ListChannelsResponse:
        rows = await self._asks.list_channels(self._auth.current())
        return comms_pb2.ListChannelsResponse(channels=[row.to_proto() for row in rows])

    async def list_messages(
        self, request: comms_pb2.ListMessagesRequest, ctx: Ctx
    ) -> comms_pb2.ListMessagesResponse:
        page = await self._asks.list_messages(self._auth.current(), request)
        return comms_pb2.ListMessagesResponse(
            messages=[row.to_proto() for row in page.messages],
            next_page_token=page.next_page_token,
        )

    async def get_ask(self, request: comms_pb2.GetAskRequest, ctx: Ctx) -> comms_pb2.GetAskResponse:
        row = await self._asks.get_ask(self._auth.current(), request)
        return comms_pb2.GetAskResponse(
            ask=row.ask, message_id=row.message_id, channel_id=row.channel_id
        )

    async def watch_channel(
        self, request: comms_pb2.WatchChannelRequest, ctx: Ctx
    ) -> AsyncIterator[comms_pb2.WatchChannelResponse]:
        # Each row's response is built (and encoded) once for every watcher sent that row
        # object (SharedResponses); `caught_up` also makes connectrpc send the response
        # headers without waiting for a first message.
        stream = self._asks.watch_channel(
            self._auth.current(), request, self._responses.response, token=self._auth.token()
        )
        async with contextlib.aclosing(stream):
            async for response in stream:
                yield (
                    comms_pb2.WatchChannelResponse(caught_up=True) if response is None else response
                )

    async def respond_to_ask(
        self, request: comms_pb2.RespondToAskRequest, ctx: Ctx
    ) -> comms_pb2.RespondToAskResponse:
        await self._asks.respond_to_ask(self._auth.current(), request)
        return comms_pb2.RespondToAskResponse()

    async def decline_ask(
        self, request: comms_pb2.DeclineAskRequest, ctx: Ctx
    ) -> comms_pb2.DeclineAskResponse:
        await self._asks.decline_ask(self._auth.current(), request)
        return comms_pb2.DeclineAskResponse()

    async def get_push_config(
        self, request: comms_pb2.GetPushConfigRequest, ctx: Ctx
    ) -> comms_pb2.GetPushConfigResponse:
        key = await self._push.vapid_public_key(self._auth.current())
        return comms_pb2.GetPushConfigResponse(vapid_public_key=key)

    async def add_push_subscription(
        self, request: comms_pb2.AddPushSubscriptionRequest, ctx: Ctx
    ) -> comms_pb2.AddPushSubscriptionResponse:
        subscription_id = await self._push.add_subscription(self._auth.current(), request)
        return comms_pb2.AddPushSubscriptionResponse(subscription_id=subscription_id)

    async def remove_push_subscription(
        self, request: comms_pb2.RemovePushSubscriptionRequest, ctx: Ctx
    ) -> comms_pb2.RemovePushSubscriptionResponse:
        await self._push.remove_subscription(self._auth.current(), request)
        return comms_pb2.RemovePushSubscriptionResponse()

    async def list_push_subscriptions(
        self, request: comms_pb2.ListPushSubscriptionsRequest, ctx: Ctx
    ) -> comms_pb2.ListPushSubscriptionsResponse:
        rows = await self._push.list_subscriptions(self._auth.current())
        return comms_pb2.ListPushSubscriptionsResponse(
            subscriptions=[row.to_proto() for row in rows]
        )

    async def get_email_settings(
        self, request: comms_pb2.GetEmailSettingsRequest, ctx: Ctx
    ) -> comms_pb2.GetEmailSettingsResponse:
        email = self._email_cases()
        row = await email.settings(self._auth.current())
        return comms_pb2.GetEmailSettingsResponse(settings=_email_settings(row, email.sends))

    async def set_email_asks(
        self, request: comms_pb2.SetEmailAsksRequest, ctx: Ctx
    ) -> comms_pb2.SetEmailAsksResponse:
        email = self._email_cases()
        row = await email.set_email_asks(self._auth.current(), request.on)
        return comms_pb2.SetEmailAsksResponse(settings=_email_settings(row, email.sends))

    def _email_cases(self) -> Email:
        if self._email is None:
            raise FailedPreconditionError("this server keeps no email settings")
        return self._email


class AgentHandlers(_Handlers, AgentService):
    """AgentService: what agent processes call to post frames and wait for answers."""

    async def get_channel(
        self, request: agent_pb2.GetChannelRequest, ctx: Ctx
    ) -> agent_pb2.GetChannelResponse:
        channel = await self._asks.get_channel(self._auth.current(), request)
        return agent_pb2.GetChannelResponse(channel=channel.to_proto())

    async def append_message(
        self, request: agent_pb2.AppendMessageRequest, ctx: Ctx
    ) -> agent_pb2.AppendMessageResponse:
        row = await self._asks.append_message(self._auth.current(), request)
        return agent_pb2.AppendMessageResponse(message=row.to_proto())

    async def update_message(
        self, request: agent_pb2.UpdateMessageRequest, ctx: Ctx
    ) -> agent_pb2.UpdateMessageResponse:
        row = await self._asks.update_message(self._auth.current(), request)
        return agent_pb2.UpdateMessageResponse(message=row.to_proto())

    async def watch_ask(
        self, request: agent_pb2.WatchAskRequest, ctx: Ctx
    ) -> AsyncIterator[agent_pb2.WatchAskResponse]:
        stream = self._asks.watch_ask(self._auth.current(), request, token=self._auth.token())
        async with contextlib.aclosing(stream):
            async for ask in stream:
                if ask is None:
                    yield agent_pb2.WatchAskResponse(keepalive=True)
                else:
                    yield agent_pb2.WatchAskResponse(ask=ask)

    async def close_ask(
        self, request: agent_pb2.CloseAskRequest, ctx: Ctx
    ) -> agent_pb2.CloseAskResponse:
        row = await self._asks.close_ask(self._auth.current(), request)
        return agent_pb2.CloseAskResponse(ask=row.ask)

    async def report_delivery(
        self, request: agent_pb2.ReportDeliveryRequest, ctx: Ctx
    ) -> agent_pb2.ReportDeliveryResponse:
        row = await self._asks.report_delivery(self._auth.current(), request)
        return agent_pb2.ReportDeliveryResponse(ask=row.ask)


def _email_settings(row: EmailSettingsRow, sends: bool) -> comms_pb2.EmailSettings:
    return comms_pb2.EmailSettings(
        email=row.email or "", email_asks=row.email_asks, server_sends=sends
    )
