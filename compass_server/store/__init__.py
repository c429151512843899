"""The Store port: what the services need from durable storage (its rows: `store/rows.py`).

This module must not import `store.postgres` (nor asyncpg): the services depend on the port,
and only the composition root picks the implementation (`PostgresStore`).

Visibility and acting (docs/spec.md §4 steps 3-4):
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

from typing import TYPE_CHECKING, Final, Protocol

# The rows live in rows.py, the notifiers' outboxes in outboxes.py, Web Push's devices in
# push.py; the port is where they are imported from.
from compass_server.store.email import EmailOutbox, EmailStore
from compass_server.store.outboxes import Claims, PushOutbox, WebhookOutbox
from compass_server.store.push import PushStore
from compass_server.store.rows import (
    AccountKind,
    AccountRow,
    AnswerTokenRow,
    AskRow,
    ChangeEvent,
    ChannelRow,
    DueDelivery,
    DueEmail,
    DuePush,
    EmailSettingsRow,
    MessagePage,
    MessageRow,
    PendingAskPage,
    PendingAskRow,
    PushSubscriptionRow,
    ReplayBatch,
    ReplyTokenRow,
    WorkspaceRow,
    account_kind_proto,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime, timedelta

    from compass_server.domain.verdicts import DeliveryJudge, Judge, UpdateRule
    from gen.compass.v1 import comms_pb2

__all__ = [
    "ACCOUNTS_CHANNEL",
    "DEFAULT_PAGE_SIZE",
    "EVENTS_CHANNEL",
    "MAX_PAGE_SIZE",
    "MAX_REPLAY_LIMIT",
    "AccountKind",
    "AccountRow",
    "AnswerTokenRow",
    "AskRow",
    "AskStore",
    "ChangeEvent",
    "ChannelRow",
    "Claims",
    "DueDelivery",
    "DueEmail",
    "DuePush",
    "EmailOutbox",
    "EmailSettingsRow",
    "EmailStore",
    "McpStore",
    "MessagePage",
    "MessageRow",
    "PendingAskPage",
    "PendingAskRow",
    "PushOutbox",
    "PushStore",
    "PushSubscriptionRow",
    "ReplayBatch",
    "ReplyTokenRow",
    "Store",
    "WebhookOutbox",
    "WorkspaceRow",
    "account_kind_proto",
    "clamped_page_size",
]

EVENTS_CHANNEL: Final = "compass_events"
"""The one PostgreSQL NOTIFY channel every revision-bumping write notifies."""
ACCOUNTS_CHANNEL: Final = "compass_accounts"
"""The NOTIFY channel of writes that may end a token's access (an account disabled, its
sessions revoked); the payload is the account id. Each process's token cache forgets the
account's tokens on it (compass_server/live/tokens.py)."""

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
        """Answer every question of an ask at once (docs/spec.md §4 steps 3-7; the service ran step 2,
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

    def pool_in_use(self) -> int | None:
        """Connections checked out of its pool now (for /metrics); None when it has no pool
        (or it is not open yet): no gauge then."""
        ...

    async def count_pending(self) -> int:
        """How many asks are PENDING now, in every channel (for /metrics)."""
        ...

    def webhooks(self) -> WebhookOutbox | None:
        """The outgoing-webhook outbox it fills as asks change (docs/webhooks.md), for the
        worker that delivers it; None when it keeps none (then no worker runs)."""
        ...

    def push(self) -> PushStore:
        """People's devices for Web Push, the VAPID key and the answer tokens
        (docs/answering/push.md)."""
        ...

    def push_outbox(self) -> PushOutbox | None:
        """The push outbox it fills as asks change, for the worker that sends it; None when it
        keeps none (then no push worker runs)."""
        ...

    def email(self) -> EmailStore | None:
        """People's addresses, reply tokens and unsubscribe links (docs/answering/email.md);
        None when it keeps none (then email is off)."""
        ...

    def email_outbox(self) -> EmailOutbox | None:
        """The email outbox it fills as asks are made, for the sender; None when it keeps
        none (then no email sender runs)."""
        ...

    async def notified_ask(self, ask_id: str) -> tuple[PendingAskRow, str, AccountKind] | None:
        """An ask a webhook tells of, whoever may see it: the ask with its channel and author,
        its workspace id, and the author's kind; None when it is gone."""
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
        tokens stay. Its devices stop being pushed to (their subscriptions are removed) and
        the answer tokens already pushed to them stop working, as do the reply addresses of
        the mails already sent to it.

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

    async def list_accounts(self) -> Sequence[AccountRow]:
        """Every account, disabled ones too, oldest first (`compass admin list-accounts`)."""
        ...

    async def list_all_channels(self) -> Sequence[tuple[ChannelRow, Sequence[str]]]:
        """Every channel, oldest first, each with its participants' account ids (oldest
        account first) (`compass admin list-channels`)."""
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
        *,
        on_lost: Callable[[], None] = lambda: None,
        on_account: Callable[[str], None] = lambda _account_id: None,
    ) -> None:
        """Deliver change notifications until cancelled, on one dedicated connection.

        Reconnects by itself when the database goes away. `on_resync` is called each time the
        subscription is (re)established, and after an unreadable payload: notifications may
        have been missed, so watchers must re-read from their last revision. `on_lost` is
        called when the subscription is lost (/readyz says the listener is down until the
        next `on_resync`). `on_account` is called with the id of an account whose tokens may
        have stopped authenticating (`ACCOUNTS_CHANNEL`: disabled, sessions revoked). The
        callbacks run on the event loop and must not block.
        """
        ...
