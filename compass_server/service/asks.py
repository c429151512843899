"""The application API: the use cases of channels, messages and asks, one seam under every
front door.

The Connect handlers (`service/handlers.py`), the `/mcp` front door (`mcp/backend.py`) and any
answer surface to come (push, email, chat) call these methods; none of them reaches the store
or the request checks itself. Each use case goes check -> judge -> store -> metrics, in the
guard order of docs/ask-outcomes.md ("Guard order"; docs/spec.md §4 for RespondToAsk):

1. every check of the request that needs no stored state (`domain.requests.check_<rpc>`), so
   a malformed request never reaches the store;
2. the store call, which checks what needs its data (visibility, participation, authorship)
   and runs the pure rule it is handed (`domain.verdicts`) on the ask as stored, under its
   channel lock;
3. the metrics of what was written or read.

Requests come in as the contract's request messages (a front door builds them); results go
out as the store's rows. The caller is an argument, `actor`: the `AccountRow` its front door
authenticated (a frozen dataclass, and the store's own actor type, so nothing converts it on
the way down). Nothing here knows Connect, HTTP or a context variable; a stream also takes
the token it was admitted with, so that revoking the token ends it. Failures are domain errors
(`domain.errors`); each front door says them its own way (Connect codes in
`transport/error_mapping.py`, the tool errors of `mcp/backend.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar

from compass_server.domain import requests
from compass_server.domain.errors import PermissionDeniedError
from compass_server.domain.verdicts import (
    fit_update,
    judge_answer,
    judge_close,
    judge_decline,
    judge_delivery,
)
from compass_server.live.shared_reads import SharedReads
from compass_server.service.streams import (
    MAX_STREAMS_PER_ACCOUNT,
    RECHECK_SECONDS,
    REPLAY_BATCH,
    Slot,
    Streams,
)
from compass_server.store import AskStore, McpStore

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable, Sequence

    from compass_server.live.hub import ChangeHub
    from compass_server.live.revocation import Revocations
    from compass_server.observe.metrics import Metrics
    from compass_server.quota import PostQuota
    from compass_server.store import (
        AccountRow,
        AskRow,
        ChannelRow,
        MessagePage,
        MessageRow,
        PendingAskPage,
        WorkspaceRow,
    )
    from gen.compass.v1 import agent_pb2, comms_pb2

T = TypeVar("T")


class Asks:
    """The use cases on the store's `AskStore` port, for any front door (one per process:
    its `Streams` hold the per-account cap of open watches)."""

    def __init__(
        self,
        store: AskStore,
        hub: ChangeHub,
        *,
        metrics: Metrics | None = None,
        quota: PostQuota | None = None,
        revocations: Revocations | None = None,
        max_streams_per_account: int = MAX_STREAMS_PER_ACCOUNT,
        recheck_seconds: float = RECHECK_SECONDS,
    ) -> None:
        self._store = store
        self._hub = hub
        self._metrics = metrics
        self._quota = quota
        self.streams = Streams(
            hub,
            revocations=revocations,
            max_per_account=max_streams_per_account,
            recheck_seconds=recheck_seconds,
        )
        self._reads = SharedReads(
            store, hub, on_read=metrics.watch_reads.inc if metrics is not None else None
        )
        # WatchChannel's reads happen before its watchers wake (shared_reads.py).
        hub.prefetch_with(self._reads.prefetch, self._reads.forget)

    @property
    def shutting_down(self) -> bool:
        """True once the server is shutting down: every watch ends (UNAVAILABLE)."""
        return self._hub.closed

    # -- messages ----------------------------------------------------------------------------

    async def append_message(
        self, actor: AccountRow, request: agent_pb2.AppendMessageRequest
    ) -> MessageRow:
        """AppendMessage: a new message of the request's frame, its asks minted.

        Raises:
            InvalidArgumentError: a malformed request (nothing read or stored).
            ResourceExhaustedError: the account's post quota is spent.
            NotFoundError, PermissionDeniedError, AlreadyExistsError: as
                `AskStore.append_message`.
        """
        requests.check_append_message(request)
        self._take_quota(actor)
        row = await self._store.append_message(
            actor,
            request.channel_id,
            request.frame.blocks,
            client_message_id=request.frame.client_message_id,
        )
        self._asks_seen(row)
        return row

    async def update_message(
        self, actor: AccountRow, request: agent_pb2.UpdateMessageRequest
    ) -> MessageRow:
        """UpdateMessage: the message's blocks replaced, its stored asks kept in place
        (`domain.verdicts.fit_update`) and new ones minted.

        Raises:
            InvalidArgumentError: a malformed request (nothing read or stored).
            ResourceExhaustedError: the account's post quota is spent.
            NotFoundError, PermissionDeniedError, FailedPreconditionError,
                InvalidArgumentError: as `AskStore.update_message`.
        """
        requests.check_update_message(request)
        self._take_quota(actor)
        row = await self._store.update_message(
            actor, request.frame.message_id, request.frame.blocks, fit_update
        )
        self._asks_seen(row)
        return row

    # -- outcomes and receipts ---------------------------------------------------------------

    async def respond_to_ask(
        self, actor: AccountRow, request: comms_pb2.RespondToAskRequest
    ) -> AskRow:
        """RespondToAsk, docs/spec.md §4 in order: step 2 here, before any I/O; the store then checks
        visibility and participation (3-4) and runs the judge (already final, fit: 5-6) under
        its lock before the atomic write (7).

        Returns:
            The ask as answered (also for an identical retry, which writes nothing).
        """
        requests.check_respond_to_ask(request)
        judge = judge_answer(actor.account_id, request.answers)
        row = await self._store.answer_ask(actor, request.ask_id, judge)
        self._outcome(row)
        return row

    async def decline_ask(self, actor: AccountRow, request: comms_pb2.DeclineAskRequest) -> AskRow:
        """DeclineAsk. Guards in order (docs/ask-outcomes.md): malformed here; visibility and
        participation in the store; final other than an identical retry by the judge, under
        the lock."""
        requests.check_decline_ask(request)
        judge = judge_decline(actor.account_id, request.reason)
        row = await self._store.decline_ask(actor, request.ask_id, judge)
        self._outcome(row)
        return row

    async def close_ask(self, actor: AccountRow, request: agent_pb2.CloseAskRequest) -> AskRow:
        """CloseAsk (WITHDRAWN, or TIMED_OUT with the runtime's answers). Guards in order:
        malformed here; visibility and authorship in the store; final other than an
        identical retry, then TIMED_OUT answers' fit, by the judge."""
        requests.check_close_ask(request)
        judge = judge_close(actor.account_id, request.status, request.reason, request.answers)
        row = await self._store.close_ask(actor, request.ask_id, judge)
        self._outcome(row)
        return row

    async def report_delivery(
        self, actor: AccountRow, request: agent_pb2.ReportDeliveryRequest
    ) -> AskRow:
        """ReportDelivery: the agent's receipt of an answer or decline. Guards in order:
        malformed here; visibility and authorship in the store; nothing to deliver, or
        another receipt stored, by the judge under the channel lock."""
        requests.check_report_delivery(request)
        judge = judge_delivery(actor.account_id, request.state, request.detail, request.payload)
        row = await self._store.report_delivery(actor, request.ask_id, judge)
        if self._metrics is not None:
            self._metrics.delivery(row)
        return row

    # -- reads -------------------------------------------------------------------------------

    async def list_workspaces(self, actor: AccountRow) -> Sequence[WorkspaceRow]:
        """The workspaces `actor` is a member of (GetMe)."""
        return await self._store.list_workspaces(actor)

    async def list_channels(self, actor: AccountRow) -> Sequence[ChannelRow]:
        """The channels `actor` takes part in, oldest first."""
        return await self._store.list_channels(actor)

    async def get_channel(
        self, actor: AccountRow, request: agent_pb2.GetChannelRequest
    ) -> ChannelRow:
        """GetChannel: a channel `actor` takes part in.

        Raises:
            NotFoundError: no such channel, or not visible to `actor` (checked first).
            PermissionDeniedError: `actor` sees the channel but does not take part in it.
        """
        requests.check_get_channel(request)
        channel = await self._store.get_channel(actor, request.channel_id)  # NOT_FOUND first
        mine = await self._store.list_channels(actor)
        if all(row.channel_id != channel.channel_id for row in mine):
            raise PermissionDeniedError("only participants of the channel may post in it")
        return channel

    async def get_ask(self, actor: AccountRow, request: comms_pb2.GetAskRequest) -> AskRow:
        """GetAsk: one ask `actor` can see, with its answer state."""
        requests.check_get_ask(request)
        row = await self._store.get_ask(actor, request.ask_id)
        if self._metrics is not None:
            self._metrics.viewed((row.ask.ask_id,))
        return row

    async def list_pending_asks(
        self, actor: AccountRow, request: comms_pb2.ListPendingAsksRequest
    ) -> PendingAskPage:
        """ListPendingAsks: a page of the asks waiting in `actor`'s channels."""
        requests.check_list_pending_asks(request)
        page = await self._store.list_pending_asks(
            actor, page_size=request.page_size, page_token=request.page_token
        )
        if self._metrics is not None:
            self._metrics.viewed(row.ask.ask.ask_id for row in page.asks)
        return page

    async def list_messages(
        self, actor: AccountRow, request: comms_pb2.ListMessagesRequest
    ) -> MessagePage:
        """ListMessages: a page of a visible channel's messages."""
        requests.check_list_messages(request)
        page = await self._store.list_messages(
            actor, request.channel_id, page_size=request.page_size, page_token=request.page_token
        )
        if self._metrics is not None:
            self._metrics.viewed(a for row in page.messages for a in row.ask_ids)
        return page

    # -- watches -----------------------------------------------------------------------------

    async def watch_ask(
        self,
        actor: AccountRow,
        request: agent_pb2.WatchAskRequest,
        *,
        token: str,
        slot: Slot | None = None,
    ) -> AsyncGenerator[comms_pb2.Ask | None]:
        """WatchAsk: the ask's state at once, then each change of it; None is a keepalive
        (unchanged at a re-check). Ends after the first final state.

        Checked before the first state: the request, the ask's visibility (NOT_FOUND), then
        the account's stream cap (RESOURCE_EXHAUSTED), unless the caller hands it the `slot`
        it took already (`open_mcp_ask`'s; released when the watch ends, however it ends).
        `token` is the one the caller was admitted with: the stream ends UNAUTHENTICATED
        once it is revoked ("" for none). Close the generator when done with it
        (`contextlib.aclosing`): it holds a stream slot.

        Raises:
            UnavailableError: the server is shutting down.
            UnauthenticatedError: `token` was revoked.
        """
        try:
            requests.check_get_ask(request)
            await self._store.get_ask(actor, request.ask_id)  # NOT_FOUND before streaming
            streams = self.streams
            if slot is None:
                slot = streams.take(actor.account_id)
            with (
                self._hub.ask(request.ask_id) as signal,
                streams.revoked(token, signal) as revoked,
            ):
                sent: bytes | None = None
                rechecked = False
                while True:
                    row = await self._store.get_ask(actor, request.ask_id)
                    state = row.ask.SerializeToString(deterministic=True)
                    if state != sent:
                        yield row.ask
                        sent = state
                    elif rechecked:
                        # Unchanged at a re-check (`recheck_seconds` without a change): a
                        # keepalive, as WatchChannel's caught_up, so a client's read timeout
                        # and any proxy see a live stream while a person takes their time. A
                        # change that leaves the ask as it was still sends nothing.
                        yield None
                    if row.final:  # any outcome: answered, declined, withdrawn, timed out, expired
                        return
                    rechecked = await streams.woken(signal, revoked)
        finally:
            if slot is not None:
                slot.release()

    async def watch_channel(
        self,
        actor: AccountRow,
        request: comms_pb2.WatchChannelRequest,
        present: Callable[[MessageRow], T],
        *,
        token: str,
    ) -> AsyncGenerator[T | None]:
        """WatchChannel: each message changed after the request's revision, as `present`
        makes it (the caller's encoding, built before the row is dropped), in revision
        order; None when caught up: once after the replay, then as a keepalive at each
        re-check that finds nothing new.

        Checked before the first message: the request, the channel's visibility
        (NOT_FOUND), then the account's stream cap. `token` as for `watch_ask`; close the
        generator when done with it.

        Raises:
            UnavailableError: the server is shutting down.
            UnauthenticatedError: `token` was revoked.
        """
        requests.check_watch_channel(request)
        await self._store.get_channel(actor, request.channel_id)  # NOT_FOUND before streaming
        last = request.after_revision
        streams = self.streams
        # Subscribe before the first read: a change landing between the read and the wait
        # still wakes us.
        with (
            streams.slot(actor.account_id),
            self._hub.channel(request.channel_id) as signal,
            streams.revoked(token, signal) as revoked,
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
                    item = present(row)
                    del row
                    yield item
                    del item
                if more:
                    continue  # more to replay (a batch ends at REPLAY_BATCH or its bytes)
                if announce or not found:
                    # Caught up: said once after the replay, then as a keepalive each time a
                    # re-check (every `recheck_seconds` at most) finds nothing new. (Over
                    # Connect it also makes the response headers go out without waiting for
                    # a first message.)
                    yield None
                    announce = False
                await streams.woken(signal, revoked)

    # -- helpers -----------------------------------------------------------------------------

    def _take_quota(self, actor: AccountRow) -> None:
        if self._quota is not None:
            self._quota.take(actor.account_id)

    def _asks_seen(self, row: MessageRow) -> None:
        if self._metrics is not None:
            self._metrics.asks_seen(block.ask for block in row.blocks if block.HasField("ask"))

    def _outcome(self, row: AskRow) -> None:
        if self._metrics is not None:
            self._metrics.outcome(row)


class AppStore(AskStore, McpStore, Protocol):
    """The ports `McpAsks` works on (the PostgreSQL store is both)."""


class McpAsks(Asks):
    """`Asks`, plus the use cases of MCP's tool calls (`McpStore`): an ask named by the call
    that made it, the calls waiting for it, and the leave sweep. One instance serves the
    Connect handlers and `/mcp` alike: one stream cap, one post quota."""

    def __init__(
        self,
        store: AppStore,
        hub: ChangeHub,
        *,
        metrics: Metrics | None = None,
        quota: PostQuota | None = None,
        revocations: Revocations | None = None,
        max_streams_per_account: int = MAX_STREAMS_PER_ACCOUNT,
        recheck_seconds: float = RECHECK_SECONDS,
    ) -> None:
        super().__init__(
            store,
            hub,
            metrics=metrics,
            quota=quota,
            revocations=revocations,
            max_streams_per_account=max_streams_per_account,
            recheck_seconds=recheck_seconds,
        )
        self._calls: McpStore = store

    async def open_mcp_ask(
        self,
        actor: AccountRow,
        request: agent_pb2.AppendMessageRequest,
        *,
        call_key: str,
        waiter_id: str,
        seconds: float,
    ) -> tuple[AskRow, bool, Slot]:
        """The ask of an earlier call with `call_key` in the channel still to be delivered,
        else a new message of the request's blocks (checked as AppendMessage checks them,
        under the same post quota); either way held by `waiter_id` for `seconds`.

        The call then waits on a watch (`watch_ask`), one of the account's streams: its slot
        is taken here, before the quota or the store, so that a call over the cap is
        refused with nothing spent or stored (an `isError` result stored nothing). Hand it
        to `watch_ask`, or release it.

        Returns:
            The ask, whether it is new, and the call's stream slot (held).

        Raises:
            InvalidArgumentError: what AppendMessage would refuse (nothing read or stored).
            ResourceExhaustedError: the account holds the most streams allowed, or its post
                quota is spent (nothing stored).
            NotFoundError, PermissionDeniedError: as `McpStore.open_mcp_ask`.
        """
        requests.check_append_message(request)
        slot = self.streams.take(actor.account_id)
        try:
            self._take_quota(actor)
            row, created = await self._calls.open_mcp_ask(
                actor,
                request.channel_id,
                request.frame.blocks,
                call_key=call_key,
                waiter_id=waiter_id,
                seconds=seconds,
            )
        except BaseException:
            slot.release()
            raise
        if created and self._metrics is not None:
            self._metrics.asks_seen((row.ask,))
        return row, created, slot

    async def hold_mcp_wait(
        self, actor: AccountRow, ask_id: str, waiter_id: str, seconds: float
    ) -> None:
        """`waiter_id` (one tool call) waits for `actor`'s MCP ask and says so again within
        `seconds`."""
        await self._calls.hold_mcp_wait(actor, ask_id, waiter_id, seconds)

    async def release_mcp_wait(
        self, actor: AccountRow, ask_id: str, waiter_id: str, *, grace: float | None
    ) -> None:
        """`waiter_id` stopped waiting: it returned the final result (`grace` None), or the
        ask is still pending and its client waits no more, told `pending` or gone (its wait
        counts `grace` seconds more: then the leave sweep withdraws the ask unless a call came
        back for it)."""
        await self._calls.release_mcp_wait(actor, ask_id, waiter_id, grace=grace)

    async def withdraw_abandoned(self, reason: str) -> Sequence[str]:
        """The leave sweep: WITHDRAW (`reason`) the MCP asks nobody waits for any more.

        Returns:
            The ask ids withdrawn.
        """
        withdrawn = await self._calls.withdraw_abandoned(reason)
        if self._metrics is not None:
            self._metrics.abandoned(withdrawn)
        return withdrawn
