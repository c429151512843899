"""Connect handlers: proto in, store (the port) and domain rules, proto out. No SQL, no HTTP.

Each handler orchestrates its RPC: it first runs every check that needs no I/O
(`domain.requests`, one function per RPC), then calls the store, handing it the pure rules it
must judge on stored state under its lock (`domain.verdicts`), then builds the response.

Authentication and the human/agent split happen in the gate before a handler runs; the
handlers get the caller from `AuthContext`. Every domain error they let through is mapped to
its Connect code by the interceptor.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, Final

from compass_server.domain import requests
from compass_server.domain.errors import (
    PermissionDeniedError,
    ResourceExhaustedError,
    UnauthenticatedError,
    UnavailableError,
)
from compass_server.domain.verdicts import (
    fit_update,
    judge_answer,
    judge_close,
    judge_decline,
    judge_delivery,
)
from compass_server.live.shared_reads import SharedReads, SharedResponses
from compass_server.store import account_kind_proto
from gen.compass.v1 import agent_pb2, comms_pb2
from gen.compass.v1.agent_connect import AgentService
from gen.compass.v1.comms_connect import CommsService

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Generator
    from typing import TypeAlias

    from connectrpc.request import RequestContext

    from compass_server.live.hub import ChangeHub, Signal
    from compass_server.live.revocation import Revocations
    from compass_server.observe.metrics import Metrics
    from compass_server.quota import PostQuota
    from compass_server.store import AccountRow, AskRow, AskStore, MessageRow
    from compass_server.transport.auth import AuthContext

    # Handlers never read the context's message types; the gate did the header work. (The
    # generated protocols type it per method; Any keeps one alias for all of them.)
    Ctx: TypeAlias = RequestContext[Any, Any]

REPLAY_BATCH: Final = 200
"""Messages read per store call while a WatchChannel catches up."""
MAX_STREAMS_PER_ACCOUNT: Final = 64
"""Default cap of one account's open WatchChannel + WatchAsk streams per server process."""
RECHECK_SECONDS: Final = 30.0
"""A watch re-reads the store at least this often even without a notification."""


SHUTTING_DOWN: Final = "the server is shutting down; reconnect"


REVOKED: Final = "your access was revoked; sign in again"


async def _woken(hub: ChangeHub, signal: Signal, seconds: float, revoked: asyncio.Event) -> bool:
    """Wait for a change notification, or `seconds` at most (then re-read anyway); True when
    the wait ran out (a re-check) rather than being woken.

    One wait on the watch's own signal, which everything that must wake it sets: the hub on a
    change and when it closes, the revocation check (`_revoked`), and a timer after `seconds`.
    A client that disconnects needs no wake-up: connectrpc cancels the handler at this await.
    (Waiting on several events with `asyncio.wait` made three tasks per watcher per change,
    and `asyncio.timeout` a context object, a task lookup and a cancellation protocol: most of
    the server's time when 1,000 watchers share a channel, bench.fanout. A timer that sets
    the signal costs one heap entry.)

    Raises:
        UnavailableError: the server is shutting down (before or while waiting).
        UnauthenticatedError: the stream's token was revoked (before or while waiting).
    """
    ran_out = False
    if not hub.closed and not revoked.is_set():

        def recheck() -> None:
            nonlocal ran_out
            ran_out = True
            signal.set()

        loop = asyncio.get_running_loop()
        timer = loop.call_at(loop.time() + seconds, recheck)
        try:
            await signal.wait()
        finally:
            timer.cancel()
    if hub.closed:
        raise UnavailableError(SHUTTING_DOWN)
    if revoked.is_set():
        raise UnauthenticatedError(REVOKED)
    return ran_out


class _Handlers:
    """What both services' handlers work with."""

    def __init__(
        self,
        store: AskStore,
        auth: AuthContext[AccountRow],
        hub: ChangeHub,
        *,
        recheck_seconds: float = RECHECK_SECONDS,
        metrics: Metrics | None = None,
        revocations: Revocations | None = None,
        max_streams_per_account: int = MAX_STREAMS_PER_ACCOUNT,
        quota: PostQuota | None = None,
        responses: SharedResponses | None = None,
    ) -> None:
        self._quota = quota
        self._responses = responses or SharedResponses()
        self._revocations = revocations
        self._max_streams = max_streams_per_account
        self._streams: dict[str, int] = {}  # account id -> open watch streams here
        self._metrics = metrics
        self._store = store
        self._auth = auth
        self._hub = hub
        self._recheck = recheck_seconds
        self._reads = SharedReads(
            store, hub, on_read=metrics.watch_reads.inc if metrics is not None else None
        )

    @contextlib.contextmanager
    def _stream_slot(self, account_id: str) -> Generator[None]:
        """One of the account's open watch streams in this process, up to the cap (each
        holds a connection, a task and a replay batch): the one over it is refused."""
        held = self._streams.get(account_id, 0)
        if held >= self._max_streams:
            raise ResourceExhaustedError(
                f"this account already has {held} open watch streams here (the most allowed); "
                "close one first"
            )
        self._streams[account_id] = held + 1
        try:
            yield
        finally:
            left = self._streams[account_id] - 1
            if left:
                self._streams[account_id] = left
            else:
                del self._streams[account_id]

    def _revoked(self, signal: Signal) -> contextlib.AbstractContextManager[asyncio.Event]:
        """An event set (and `signal` woken) when the current stream's token is revoked
        (never, without a registry or a token)."""
        token = self._auth.token()
        if self._revocations is None or not token:
            return contextlib.nullcontext(asyncio.Event())
        return self._revocations.watching(token, wake=signal.set)


class CommsHandlers(_Handlers, CommsService):
    """CommsService: what participants (human accounts) call from the browser."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # WatchChannel's reads happen before its watchers wake (shared_reads.py).
        self._hub.prefetch_with(self._reads.prefetch, self._reads.forget)

    async def get_me(self, request: comms_pb2.GetMeRequest, ctx: Ctx) -> comms_pb2.GetMeResponse:
        me = self._auth.current()
        workspaces = await self._store.list_workspaces(me)
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
        requests.check_list_pending_asks(request)
        page = await self._store.list_pending_asks(
            self._auth.current(), page_size=request.page_size, page_token=request.page_token
        )
        if self._metrics is not None:
            self._metrics.viewed(row.ask.ask.ask_id for row in page.asks)
        return comms_pb2.ListPendingAsksResponse(
            asks=[row.to_proto() for row in page.asks], next_page_token=page.next_page_token
        )

    async def list_channels(
        self, request: comms_pb2.ListChannelsRequest, ctx: Ctx
    ) -> comms_pb2.ListChannelsResponse:
        rows = await self._store.list_channels(self._auth.current())
        return comms_pb2.ListChannelsResponse(channels=[row.to_proto() for row in rows])

    async def list_messages(
        self, request: comms_pb2.ListMessagesRequest, ctx: Ctx
    ) -> comms_pb2.ListMessagesResponse:
        requests.check_list_messages(request)
        page = await self._store.list_messages(
            self._auth.current(),
            request.channel_id,
            page_size=request.page_size,
            page_token=request.page_token,
        )
        if self._metrics is not None:
            self._metrics.viewed(a for row in page.messages for a in row.ask_ids)
        return comms_pb2.ListMessagesResponse(
            messages=[row.to_proto() for row in page.messages],
            next_page_token=page.next_page_token,
        )

    async def get_ask(self, request: comms_pb2.GetAskRequest, ctx: Ctx) -> comms_pb2.GetAskResponse:
        requests.check_get_ask(request)
        row = await self._store.get_ask(self._auth.current(), request.ask_id)
        if self._metrics is not None:
            self._metrics.viewed((row.ask.ask_id,))
        return comms_pb2.GetAskResponse(
            ask=row.ask, message_id=row.message_id, channel_id=row.channel_id
        )

    async def watch_channel(
        self, request: comms_pb2.WatchChannelRequest, ctx: Ctx
    ) -> AsyncIterator[comms_pb2.WatchChannelResponse]:
        requests.check_watch_channel(request)
        actor = self._auth.current()
        await self._store.get_channel(actor, request.channel_id)  # NOT_FOUND before streaming
        last = request.after_revision
        # Subscribe before the first read: a change landing between the read and the wait
        # still wakes us.
        with (
            self._stream_slot(actor.account_id),
            self._hub.channel(request.channel_id) as signal,
            self._revoked(signal) as revoked,
        ):
            announce = True
            while True:
                rows = await self._reads.messages_after(
                    actor, request.channel_id, last, limit=REPLAY_BATCH
                )
                more, found = rows.more, bool(rows)
                # The batch may be shared with other watchers (SharedReads): this watch keeps
                # its own list of what it has not sent yet and drops each row before the
                # yield, so a slow client holds only that.
                pending = list(reversed(rows))
                del rows
                while pending:
                    row = pending.pop()
                    last = max(last, row.revision)
                    if self._metrics is not None:
                        self._metrics.viewed(row.ask_ids)
                    # Built (and encoded) once for every watcher sent this row object.
                    response = self._responses.response(row)
                    del row
                    yield response
                    del response
                if more:
                    continue  # more to replay (a batch ends at REPLAY_BATCH or its bytes)
                if announce or not found:
                    # Caught up: said once after the replay, then as a keepalive each time a
                    # re-check (every `recheck_seconds` at most) finds nothing new. It also
                    # makes connectrpc send the response headers without waiting for
                    # a first message.
                    yield comms_pb2.WatchChannelResponse(caught_up=True)
                    announce = False
                await _woken(self._hub, signal, self._recheck, revoked)

    async def respond_to_ask(
        self, request: comms_pb2.RespondToAskRequest, ctx: Ctx
    ) -> comms_pb2.RespondToAskResponse:
        # SPEC §4 in order: step 2 here, before any I/O; the store then checks visibility
        # and participation (3-4) and runs the judge (already final, fit: 5-6) under its
        # lock before the atomic write (7).
        requests.check_respond_to_ask(request)
        actor = self._auth.current()
        judge = judge_answer(actor.account_id, request.answers)
        row = await self._store.answer_ask(actor, request.ask_id, judge)
        if self._metrics is not None:
            self._metrics.outcome(row)
        return comms_pb2.RespondToAskResponse()

    async def decline_ask(
        self, request: comms_pb2.DeclineAskRequest, ctx: Ctx
    ) -> comms_pb2.DeclineAskResponse:
        # Guards in order (docs/ask-outcomes.md): malformed here; visibility and participation
        # in the store; final other than an identical retry by the judge, under the lock.
        requests.check_decline_ask(request)
        actor = self._auth.current()
        judge = judge_decline(actor.account_id, request.reason)
        row = await self._store.decline_ask(actor, request.ask_id, judge)
        if self._metrics is not None:
            self._metrics.outcome(row)
        return comms_pb2.DeclineAskResponse()


class AgentHandlers(_Handlers, AgentService):
    """AgentService: what agent processes call to post frames and wait for answers."""

    async def get_channel(
        self, request: agent_pb2.GetChannelRequest, ctx: Ctx
    ) -> agent_pb2.GetChannelResponse:
        requests.check_get_channel(request)
        actor = self._auth.current()
        channel = await self._store.get_channel(actor, request.channel_id)  # NOT_FOUND first
        mine = await self._store.list_channels(actor)
        if all(row.channel_id != channel.channel_id for row in mine):
            raise PermissionDeniedError("only participants of the channel may post in it")
        return agent_pb2.GetChannelResponse(channel=channel.to_proto())

    async def append_message(
        self, request: agent_pb2.AppendMessageRequest, ctx: Ctx
    ) -> agent_pb2.AppendMessageResponse:
        requests.check_append_message(request)
        actor = self._auth.current()
        if self._quota is not None:
            self._quota.take(actor.account_id)
        row = await self._store.append_message(
            actor,
            request.channel_id,
            request.frame.blocks,
            client_message_id=request.frame.client_message_id,
        )
        self._asks_seen(row)
        return agent_pb2.AppendMessageResponse(message=row.to_proto())

    async def update_message(
        self, request: agent_pb2.UpdateMessageRequest, ctx: Ctx
    ) -> agent_pb2.UpdateMessageResponse:
        requests.check_update_message(request)
        actor = self._auth.current()
        if self._quota is not None:
            self._quota.take(actor.account_id)
        row = await self._store.update_message(
            actor, request.frame.message_id, request.frame.blocks, fit_update
        )
        self._asks_seen(row)
        return agent_pb2.UpdateMessageResponse(message=row.to_proto())

    async def watch_ask(
        self, request: agent_pb2.WatchAskRequest, ctx: Ctx
    ) -> AsyncIterator[agent_pb2.WatchAskResponse]:
        requests.check_get_ask(request)
        actor = self._auth.current()
        await self._store.get_ask(actor, request.ask_id)  # NOT_FOUND before streaming
        with (
            self._stream_slot(actor.account_id),
            self._hub.ask(request.ask_id) as signal,
            self._revoked(signal) as revoked,
        ):
            sent: bytes | None = None
            rechecked = False
            while True:
                row = await self._store.get_ask(actor, request.ask_id)
                state = _ask_state(row)
                if state != sent:
                    yield agent_pb2.WatchAskResponse(ask=row.ask)
                    sent = state
                elif rechecked:
                    # Unchanged at a re-check (`recheck_seconds` without a change): a
                    # keepalive, as WatchChannel's caught_up, so a client's read timeout and
                    # any proxy see a live stream while a person takes their time. A change
                    # that leaves the ask as it was still sends nothing.
                    yield agent_pb2.WatchAskResponse(keepalive=True)
                if row.final:  # any outcome: answered, declined, withdrawn, timed out, expired
                    return
                rechecked = await _woken(self._hub, signal, self._recheck, revoked)

    async def close_ask(
        self, request: agent_pb2.CloseAskRequest, ctx: Ctx
    ) -> agent_pb2.CloseAskResponse:
        # Guards in order: malformed here; visibility and authorship in the store; final
        # other than an identical retry, then TIMED_OUT answers' fit, by the judge.
        requests.check_close_ask(request)
        actor = self._auth.current()
        judge = judge_close(actor.account_id, request.status, request.reason, request.answers)
        row = await self._store.close_ask(actor, request.ask_id, judge)
        if self._metrics is not None:
            self._metrics.outcome(row)
        return agent_pb2.CloseAskResponse(ask=row.ask)

    async def report_delivery(
        self, request: agent_pb2.ReportDeliveryRequest, ctx: Ctx
    ) -> agent_pb2.ReportDeliveryResponse:
        # Guards in order: malformed here; visibility and authorship in the store; nothing
        # to deliver, or another receipt stored, by the judge under the channel lock.
        requests.check_report_delivery(request)
        actor = self._auth.current()
        judge = judge_delivery(actor.account_id, request.state, request.detail, request.payload)
        row = await self._store.report_delivery(actor, request.ask_id, judge)
        if self._metrics is not None:
            self._metrics.delivery(row)
        return agent_pb2.ReportDeliveryResponse(ask=row.ask)

    def _asks_seen(self, row: MessageRow) -> None:
        if self._metrics is not None:
            self._metrics.asks_seen(block.ask for block in row.blocks if block.HasField("ask"))


def _ask_state(row: AskRow) -> bytes:
    return row.ask.SerializeToString(deterministic=True)
