"""The Store port: what the services need from durable storage, and the rows it returns.

This module must not import `store.postgres` (nor asyncpg): the services depend on the port,
and only the composition root picks the implementation (`PostgresStore`).

Visibility and acting (SPEC §4 steps 3-4):
- an account SEES a channel (its messages, its asks) when it is a member of the channel's
  workspace; anything it cannot see is reported exactly like something that does not exist
  (`NotFoundError`, same message);
- an account ACTS in a channel (appends, answers) only as a participant of that channel
  (`PermissionDeniedError` when it can see but not act).
Account kinds (humans use CommsService, agents AgentService) are enforced by the service.

Answer state, the ask's outcome (status, deadline, on_timeout, closed_*) and its delivery
receipt have one source of truth: the store's ask record. They are merged into the ask blocks of every message and
ask the store returns, and no `update_message` can change them; an agent writes only the
`deadline` and `on_timeout` of a NEW ask (docs/ask-outcomes.md).

Change notification: every write that bumps a channel revision sends, in the same
transaction, a PostgreSQL NOTIFY on `EVENTS_CHANNEL` whose payload is a `ChangeEvent` as JSON.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from compass_core.jsonvalues import is_array, is_object
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime, timedelta

    from compass_server.domain.verdicts import DeliveryJudge, Judge, UpdateRule

EVENTS_CHANNEL: Final = "compass_events"
"""The one PostgreSQL NOTIFY channel every revision-bumping write notifies."""

DEFAULT_PAGE_SIZE: Final = 50
"""`list_messages` page size when the caller passes 0."""
MAX_PAGE_SIZE: Final = 500
"""Largest `list_messages` page; larger requests are capped, not refused."""
MAX_REPLAY_LIMIT: Final = 1000
"""Largest `messages_after` batch."""


def clamped_page_size(page_size: int) -> int:
    """A request's page size: 0 for the default, capped at MAX_PAGE_SIZE (a negative one is
    refused before the store: `domain.requests.check_page_size`)."""
    if page_size < 0:
        raise ValueError(f"page_size {page_size} is negative")
    return min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)


class AccountKind(enum.StrEnum):
    """What an account is; decides which service it may call."""

    HUMAN = "human"
    """A participant using the browser UI (CommsService)."""
    AGENT = "agent"
    """An agent process posting frames and waiting for answers (AgentService)."""


_KIND_PROTO: Final[dict[AccountKind | None, comms_pb2.AccountKind]] = {
    AccountKind.HUMAN: comms_pb2.ACCOUNT_KIND_HUMAN,
    AccountKind.AGENT: comms_pb2.ACCOUNT_KIND_AGENT,
}


def account_kind_proto(kind: AccountKind) -> comms_pb2.AccountKind:
    """The `compass.v1.AccountKind` of `kind`."""
    return _KIND_PROTO[kind]


@dataclass(frozen=True, slots=True, kw_only=True)
class AccountRow:
    account_id: str
    kind: AccountKind
    name: str
    disabled: bool
    created_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkspaceRow:
    workspace_id: str
    name: str
    created_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelRow:
    channel_id: str
    workspace_id: str
    name: str
    revision: int
    """The channel's latest revision (0 before its first message)."""
    created_at: datetime

    def to_proto(self) -> comms_pb2.Channel:
        """The `compass.v1.Channel` for this row."""
        return comms_pb2.Channel(
            channel_id=self.channel_id, workspace_id=self.workspace_id, name=self.name
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageRow:
    """A stored message, with answer state merged into its ask blocks.

    The blocks are fresh protobuf objects owned by this row; treat them as read-only.
    """

    message_id: str
    channel_id: str
    author_account_id: str
    client_message_id: str
    """The agent's key for the message; "" when it gave none."""
    blocks: tuple[comms_pb2.MessageBlock, ...]
    created_at: datetime
    """Timezone-aware (UTC)."""
    updated_at: datetime
    """Timezone-aware (UTC); changes on update and when one of its asks is answered."""
    revision: int
    """Channel revision of the latest change to this message."""
    author_name: str = ""
    """Display name of the author account."""
    author_kind: AccountKind | None = None
    """What the author is (None: not read)."""

    @property
    def ask_ids(self) -> tuple[str, ...]:
        """The ask ids of this message's ask blocks, in block order."""
        return tuple(block.ask.ask_id for block in self.blocks if block.HasField("ask"))

    def to_proto(self) -> comms_pb2.Message:
        """The `compass.v1.Message` for this row (a copy; safe to mutate)."""
        message = comms_pb2.Message(
            message_id=self.message_id,
            channel_id=self.channel_id,
            author_account_id=self.author_account_id,
            client_message_id=self.client_message_id,
            blocks=self.blocks,
            revision=self.revision,
            author_name=self.author_name,
            author_kind=_KIND_PROTO.get(self.author_kind, comms_pb2.ACCOUNT_KIND_UNSPECIFIED),
        )
        message.created_at.FromDatetime(self.created_at)
        message.updated_at.FromDatetime(self.updated_at)
        return message


class ReplayBatch(list[MessageRow]):
    """A `messages_after` batch (a list, in revision order); `more` is True when the store
    stopped before the channel's end (at the count limit or its byte budget)."""

    more: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class MessagePage:
    messages: tuple[MessageRow, ...]
    """Oldest first."""
    next_page_token: str
    """Opaque; "" when there are no more messages."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AskRow:
    """One ask with its answer state merged in, and where it lives."""

    ask: comms_pb2.Ask
    """Fresh object owned by this row; treat as read-only (copy before mutating)."""
    message_id: str
    channel_id: str

    @property
    def answered(self) -> bool:
        """Whether the ask carries answers (ANSWERED, or TIMED_OUT with the runtime's)."""
        return bool(self.ask.answered_by_account_id)

    @property
    def final(self) -> bool:
        """Whether the ask has its outcome: any status but PENDING (nothing changes it)."""
        return self.ask.status not in (
            comms_pb2.ASK_STATUS_PENDING,
            comms_pb2.ASK_STATUS_UNSPECIFIED,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingAskRow:
    """A pending ask in one of the caller's channels, for the "waiting on you" inbox."""

    ask: AskRow
    channel_name: str
    author_account_id: str
    author_name: str
    asked_at: datetime
    """When the ask was first stored (timezone-aware, UTC)."""

    def to_proto(self) -> comms_pb2.PendingAsk:
        """The `compass.v1.PendingAsk` for this row."""
        pending = comms_pb2.PendingAsk(
            ask=self.ask.ask,
            message_id=self.ask.message_id,
            channel_id=self.ask.channel_id,
            channel_name=self.channel_name,
            author_account_id=self.author_account_id,
            author_name=self.author_name,
        )
        pending.asked_at.FromDatetime(self.asked_at)
        return pending


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingAskPage:
    asks: tuple[PendingAskRow, ...]
    """Oldest first (asked_at, then ask_id)."""
    next_page_token: str
    """Opaque; "" when there are no more."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeEvent:
    """Payload of a change notification: one write to one message of one channel."""

    channel_id: str
    revision: int
    """The channel revision the write created."""
    message_id: str
    ask_ids: tuple[str, ...]
    """Asks of the message that a WatchAsk may care about (all of them on append/update,
    the answered one on answer)."""

    def to_payload(self) -> str:
        return json.dumps(
            {
                "channel_id": self.channel_id,
                "revision": self.revision,
                "message_id": self.message_id,
                "ask_ids": list(self.ask_ids),
            },
            separators=(",", ":"),
        )

    @staticmethod
    def payload_around_revision(
        *, channel_id: str, message_id: str, ask_ids: Sequence[str]
    ) -> tuple[str, str]:
        """The payload of an event, as the text before and after its revision: for every
        revision, `head + str(revision) + tail == to_payload()`. Lets the statement that
        assigns a revision also send the notification.

        Returns:
            (head, tail).
        """
        return (
            '{"channel_id":' + json.dumps(channel_id) + ',"revision":',
            ',"message_id":'
            + json.dumps(message_id)
            + ',"ask_ids":'
            + json.dumps(list(ask_ids), separators=(",", ":"))
            + "}",
        )

    @classmethod
    def from_payload(cls, payload: str) -> ChangeEvent:
        """Parse a notification payload.

        Raises:
            ValueError: `payload` is not a change event.
        """
        obj: object = json.loads(payload)
        if not is_object(obj):
            raise ValueError("change event is not an object")
        channel_id = obj.get("channel_id")
        revision = obj.get("revision")
        message_id = obj.get("message_id")
        ask_ids = obj.get("ask_ids")
        if (
            not isinstance(channel_id, str)
            or not isinstance(revision, int)
            or isinstance(revision, bool)
            or not isinstance(message_id, str)
            or not is_array(ask_ids)
        ):
            raise ValueError("change event has missing or mistyped fields")
        ids: list[str] = []
        for item in ask_ids:
            if not isinstance(item, str):
                raise ValueError("change event ask_ids must be strings")
            ids.append(item)
        return cls(
            channel_id=channel_id, revision=revision, message_id=message_id, ask_ids=tuple(ids)
        )


class AskStore(Protocol):
    """What the RPC handlers need from storage: visibility-scoped reads and the writes of
    messages and answers. Requests reach it checked (`domain.requests`); what must be judged
    on stored state under a lock is handed in as pure domain functions (`domain.verdicts`).
    Every method may also raise `UnavailableError` when the database cannot be reached."""

    # -- reads (visibility-scoped by the actor) ----------------------------------------------

    async def list_channels(self, actor: AccountRow) -> Sequence[ChannelRow]:
        """The channels `actor` participates in, oldest first."""
        ...

    async def list_workspaces(self, actor: AccountRow) -> Sequence[WorkspaceRow]:
        """The workspaces `actor` is a member of, by name."""
        ...

    async def list_pending_asks(
        self, actor: AccountRow, *, page_size: int = 0, page_token: str = ""
    ) -> PendingAskPage:
        """The PENDING asks of every channel `actor` participates in, oldest first.

        Args:
            page_size: 0 for DEFAULT_PAGE_SIZE; values above MAX_PAGE_SIZE are capped.
            page_token: "" for the first page, else a previous page's `next_page_token`.

        Raises:
            InvalidArgumentError: a malformed page_token (field `page_token`).
            CorruptDataError: a stored ask breaks an invariant.
        """
        ...

    async def get_channel(self, actor: AccountRow, channel_id: str) -> ChannelRow:
        """One channel `actor` can see, with its current revision.

        Raises:
            NotFoundError: no such channel, or not visible to `actor` (same message).
        """
        ...

    async def list_messages(
        self, actor: AccountRow, channel_id: str, *, page_size: int = 0, page_token: str = ""
    ) -> MessagePage:
        """A page of a visible channel's messages, oldest first.

        Args:
            actor: who asks.
            channel_id: the channel.
            page_size: 0 for DEFAULT_PAGE_SIZE; values above MAX_PAGE_SIZE are capped.
            page_token: "" for the first page, else a previous page's `next_page_token`.

        Raises:
            InvalidArgumentError: a page_token that is malformed or belongs to another
                channel (field `page_token`).
            NotFoundError: no such channel, or not visible to `actor`.
            CorruptDataError: a stored message on the page breaks a block invariant.
        """
        ...

    async def messages_after(
        self, actor: AccountRow, channel_id: str, after_revision: int, *, limit: int = 100
    ) -> ReplayBatch:
        """Messages of a visible channel changed after `after_revision`, in revision order
        (WatchChannel replay). Each message appears once, as of its latest revision.

        Args:
            after_revision: 0 or more (`domain.requests.check_watch_channel`).
            limit: 1..MAX_REPLAY_LIMIT messages at most; call again after the last revision
                for more.

        Raises:
            ValueError: a negative after_revision or a limit out of range (a caller's bug).
            NotFoundError: no such channel, or not visible to `actor`.
            CorruptDataError: a stored message breaks a block invariant.
        """
        ...

    async def get_ask(self, actor: AccountRow, ask_id: str) -> AskRow:
        """One ask visible to `actor`, with its answer state. A person sees the asks of its
        workspaces' channels; an agent only those of channels it participates in.

        Raises:
            NotFoundError: no such ask, or not visible to `actor` (same message).
            CorruptDataError: the stored ask breaks an invariant.
        """
        ...

    # -- writes ------------------------------------------------------------------------------

    async def append_message(
        self,
        actor: AccountRow,
        channel_id: str,
        blocks: Sequence[comms_pb2.MessageBlock],
        *,
        client_message_id: str = "",
    ) -> MessageRow:
        """Store a new message, minting one ask_id per ask block; bumps the channel revision.

        Idempotent on (channel_id, client_message_id) when that key is non-empty: a repeat
        by the same author with the same blocks returns the stored message (same ids, no new
        revision).

        `blocks` and `client_message_id` passed `domain.requests.check_append_message`.

        Raises:
            NotFoundError: no such channel, or not visible to `actor`.
            PermissionDeniedError: `actor` sees the channel but is not a participant.
            AlreadyExistsError: the client_message_id is taken by different blocks (or
                another author).
        """
        ...

    async def update_message(
        self,
        actor: AccountRow,
        message_id: str,
        blocks: Sequence[comms_pb2.MessageBlock],
        fit: UpdateRule,
    ) -> MessageRow:
        """Replace a message's block set; bumps the channel revision unless nothing changed.

        `blocks` passed `domain.requests.check_update_message`; `fit`
        (`domain.verdicts.fit_update`) judges them against the stored asks under the channel
        lock. That rule: ask blocks match the stored asks BY POSITION: the i-th ask block of
        `blocks` (counting ask blocks only, in block order) is the message's i-th stored ask
        and must
        carry exactly the ask_id minted for it, so stored asks can be neither dropped,
        reordered nor replaced. Ask blocks after the stored ones are NEW asks: like asks on
        append they must carry an empty ask_id and no answer state, and the store mints one
        id for each (they are then answerable like any ask, and the returned row and the
        change notification list all of the message's ask ids). Answer state sent on a
        minted ask is ignored: the stored answers always win. The questions of an ANSWERED
        ask (ids, option ids, allow_multiple) cannot change; its texts may.

        At a minted position, an ask block with an EMPTY ask_id whose content equals the
        stored ask's (compared without ask ids and answer state, as `append_message`'s
        idempotent repeat compares: `domain.same_ask`) is that stored ask, sent again as it
        was when it was new; the store writes its minted id in. So an update that added
        asks is safe to retry: a caller that lost its response sends the same blocks again
        and gets the stored message back (the same ask ids; no new revision and no
        notification when nothing else changed). With other content an empty ask_id at a
        minted position is refused.

        Concurrent updates are serialised per channel and judged against the message as
        stored when they get the lock: of two updates that each add "the next" ask, the
        later one finds that position minted; it is refused (its empty ask_id) when its ask
        differs from the winner's, and it IS the winner's ask when it is the same.

        Raises:
            InvalidArgumentError, FailedPreconditionError: as `fit` raises them (a stored
                ask's block is missing, has a different ask_id or an empty one with other
                content than the stored ask, or a final ask changed its questions; or a new
                ask carries an ask_id or answer state).
            NotFoundError: no such message, or not visible to `actor`.
            PermissionDeniedError: `actor` is not the message's author.
        """
        ...

    async def answer_ask(self, actor: AccountRow, ask_id: str, judge: Judge) -> AskRow:
        """Answer every question of an ask at once (SPEC §4 steps 3-7; the service ran step 2,
        `domain.requests.check_respond_to_ask`).

        The store checks visibility (step 3) and participation (step 4), then lets `judge`
        (`domain.verdicts.judge_answer`) decide on the ask as stored (steps 5-6): an outcome
        ANSWERED with the answer state to write, None for an identical retry, or an error.
        Concurrent answers are serialised: exactly one wins, the others see it answered; a
        judge that refused answers on an unlocked read is asked again under the lock.

        Returns:
            The ask as answered (also for an identical retry, which writes nothing).

        Raises:
            NotFoundError: no such ask, or not visible to `actor` (same message).
            PermissionDeniedError: `actor` is not a participant of the ask's channel.
            FailedPreconditionError, InvalidArgumentError: as `judge` raises them.
            CorruptDataError: the stored ask breaks an invariant.
        """
        ...

    async def decline_ask(self, actor: AccountRow, ask_id: str, judge: Judge) -> AskRow:
        """Close a pending ask as `actor`, a participant, with the outcome `judge`
        (`domain.verdicts.judge_decline`) decides under the channel lock.

        Returns:
            The ask as declined (also for an identical retry, which writes nothing).

        Raises:
            NotFoundError: no such ask, or not visible to `actor` ("ask not found").
            PermissionDeniedError: `actor` is not a participant of the ask's channel.
            FailedPreconditionError: as `judge` raises it (the ask is final).
        """
        ...

    async def close_ask(self, actor: AccountRow, ask_id: str, judge: Judge) -> AskRow:
        """Close a pending ask as WITHDRAWN or TIMED_OUT (with the runtime's auto-answers,
        stored with `timed_out` set and `actor` as who answered), as `judge`
        (`domain.verdicts.judge_close`) decides under the channel lock. Only the agent account
        that appended the ask's message may.

        Returns:
            The ask as closed (also for an identical retry, which writes nothing).

        Raises:
            NotFoundError: no such ask, not visible, or not appended by `actor` (the same
                "ask not found").
            FailedPreconditionError, InvalidArgumentError: as `judge` raises them (final;
                TIMED_OUT answers that do not fit the ask).
        """
        ...

    async def report_delivery(self, actor: AccountRow, ask_id: str, judge: DeliveryJudge) -> AskRow:
        """Record what the agent received of an ANSWERED or DECLINED ask (its delivery
        receipt), as `judge` (`domain.verdicts.judge_delivery`) decides under the channel
        lock: the first receipt is written with `actor` and the time as who reported it and
        when; an identical repeat writes nothing. Only the agent account that appended the
        ask's message may report. A write bumps the channel revision, touches the message
        (its revision and `updated_at`) and notifies, like an answer.

        The request passed `domain.requests.check_report_delivery`.

        Returns:
            The ask with its receipt (also for an identical repeat).

        Raises:
            NotFoundError: no such ask, or not visible to `actor` ("ask not found"; an agent
                sees the asks of the channels it takes part in, as `get_ask`).
            PermissionDeniedError: `actor` sees the ask but did not append it.
            FailedPreconditionError: as `judge` raises it (the ask is not ANSWERED or
                DECLINED, or holds another receipt).
        """
        ...


class McpStore(Protocol):
    """What the MCP front door (`compass_server.mcp`) needs beyond the handlers' port: asks
    named by the identity of the tool call that made them, and the calls waiting for them."""

    async def open_mcp_ask(
        self,
        actor: AccountRow,
        channel_id: str,
        blocks: Sequence[comms_pb2.MessageBlock],
        *,
        call_key: str,
        waiter_id: str,
        seconds: float,
    ) -> tuple[AskRow, bool]:
        """Under the channel lock: the newest ask `actor` made in `channel_id` with
        `call_key` while it is still to be delivered (PENDING; ANSWERED or DECLINED without a
        delivery receipt); else a new message of `blocks` (as
        `append_message` stores it; they passed `domain.requests.check_append_message` and
        hold exactly one ask), its ask recorded under `call_key`. In the same transaction
        the call (`waiter_id`) holds it for `seconds` (as `hold_mcp_wait`): a call that
        goes away before it says so again leaves the ask to the leave sweep.

        Returns:
            The ask, and whether it is new.

        Raises:
            NotFoundError: no such channel, or not visible to `actor`.
            PermissionDeniedError: `actor` sees the channel but is not a participant.
        """
        ...

    async def hold_mcp_wait(
        self, actor: AccountRow, ask_id: str, waiter_id: str, seconds: float
    ) -> None:
        """Record that one tool call (`waiter_id`) waits for an MCP ask of `actor` and will
        say so again within `seconds`. Nothing for an ask `actor` did not make over MCP. When
        no call waited for the pending ask before (its agent came back), that is a write
        people see (a new channel revision: its `withdraw_at` is gone)."""
        ...

    async def release_mcp_wait(
        self, actor: AccountRow, ask_id: str, waiter_id: str, *, grace: float | None
    ) -> None:
        """A tool call stopped waiting. `grace` None: it returned the ask's final result: the
        ask's waiters are forgotten. Else the ask is still pending and the call's client waits
        no more (it was told `pending`, or went away): its wait counts for `grace` seconds
        more, and once no call waits, reads give the ask's `withdraw_at` (a write people see:
        a new channel revision)."""
        ...

    async def withdraw_abandoned(self, reason: str, *, limit: int = 100) -> Sequence[str]:
        """Close as WITHDRAWN (`reason`, closed by its author) every PENDING MCP ask that had
        waiting calls and has none whose time is still running; forget the waiters of final
        asks. Runs only while it holds the sweeper lock (as `expire_due`).

        Returns:
            The ask ids this call withdrew.
        """
        ...


class Store(AskStore, McpStore, Protocol):
    """Durable storage for Compass. Every method may also raise `UnavailableError` when the
    database cannot be reached (including a restart mid-operation); the caller may retry."""

    # -- lifecycle ---------------------------------------------------------------------------

    async def ping(self) -> None:
        """Check that the database answers (for /readyz).

        Raises:
            UnavailableError: it does not.
        """
        ...

    # -- accounts, workspaces, channels (admin) ----------------------------------------------

    async def create_workspace(self, name: str) -> WorkspaceRow:
        """Create a workspace.

        Raises:
            InvalidArgumentError: empty, oversize or NUL-holding name.
            AlreadyExistsError: a workspace with this name exists.
        """
        ...

    async def create_channel(self, workspace_id: str, name: str) -> ChannelRow:
        """Create a channel in a workspace.

        Raises:
            InvalidArgumentError: bad name.
            NotFoundError: no such workspace.
            AlreadyExistsError: the workspace already has a channel of this name.
        """
        ...

    async def create_account(self, kind: AccountKind, name: str) -> tuple[AccountRow, str]:
        """Create an account and its API token.

        Returns:
            The account and its bearer token (`cmp_...`). The token is not stored (only its
            SHA-256 is) and cannot be shown again.

        Raises:
            InvalidArgumentError: bad name.
        """
        ...

    async def get_account(self, account_id: str) -> AccountRow:
        """One account by id.

        Raises:
            NotFoundError: no such account.
        """
        ...

    async def disable_account(self, account_id: str) -> AccountRow:
        """Disable an account: its tokens stop authenticating. Idempotent.

        Raises:
            NotFoundError: no such account.
        """
        ...

    async def valid_tokens(self, tokens: Sequence[str]) -> set[str]:
        """Those of `tokens` that still authenticate (known, account enabled): one query."""
        ...

    async def create_sign_in_link(self, account_id: str, ttl: timedelta) -> tuple[str, datetime]:
        """A one-time sign-in code for a person's account, valid for `ttl`.

        Returns:
            The code (shown once; only its hash is stored) and when it expires.

        Raises:
            NotFoundError: no such account.
            FailedPreconditionError: the account is disabled, or is an agent's.
        """
        ...

    async def exchange_sign_in_link(self, code: str) -> tuple[AccountRow, str] | None:
        """Use a sign-in code: once, before it expires, unless revoked, for an enabled
        account. Returns the account and a new session token (shown once), else None."""
        ...

    async def revoke_sessions(self, account_id: str) -> tuple[int, int]:
        """End every session of an account and void its unused sign-in codes; its ordinary
        tokens stay.

        Returns:
            (sessions ended, codes voided).

        Raises:
            NotFoundError: no such account.
        """
        ...

    async def add_workspace_member(self, workspace_id: str, account_id: str) -> None:
        """Make an account a member of a workspace (it then sees its channels). Idempotent.

        Raises:
            NotFoundError: no such workspace or account.
        """
        ...

    async def add_participant(self, channel_id: str, account_id: str) -> None:
        """Make an account a participant of a channel, and a member of its workspace.
        Idempotent.

        Raises:
            NotFoundError: no such channel or account.
        """
        ...

    async def has_accounts(self) -> bool:
        """Whether any account exists (False on a fresh database: `compass demo` seeds it)."""
        ...

    async def authenticate(self, token: str) -> AccountRow | None:
        """The enabled account a bearer token belongs to.

        Returns:
            The account, or None for an unknown token or a disabled account.
        """
        ...

    async def expire_due(
        self, now: datetime, grace: timedelta, *, limit: int = 100
    ) -> Sequence[str]:
        """Close as EXPIRED every pending ask whose deadline is at or before `now` (on_timeout
        FAIL or UNSPECIFIED) or at or before `now - grace` (PICK_RECOMMENDED): at most
        `limit` of them per call. Runs only while it holds the database's sweeper lock (a
        PostgreSQL advisory lock), so one process at a time sweeps; a call that cannot get it
        returns at once with nothing.

        Returns:
            The ask ids this call expired.
        """
        ...

    # -- change feed -------------------------------------------------------------------------

    async def listen(
        self,
        on_change: Callable[[ChangeEvent], None],
        on_resync: Callable[[], None],
    ) -> None:
        """Deliver change notifications until cancelled, on one dedicated connection.

        Reconnects by itself when the database goes away. `on_resync` is called each time the
        subscription is (re)established, and after an unreadable payload: notifications may
        have been missed, so watchers must re-read from their last revision. Both callbacks
        run on the event loop and must not block.
        """
        ...
