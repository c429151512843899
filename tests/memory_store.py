"""An in-memory double of the handlers' store port (`compass_server.store.AskStore`), with
what the composition root reads of a `Store` (the change feed, the /metrics samples).

For fast handler tests: no database, and a log of every store call, so a test can prove a
request was refused before any I/O. It keeps the port's semantics as the PostgreSQL store
implements them (visibility, participation, minting, idempotent appends, revisions, judges run
under one lock, the same error messages) and is held to them by
`tests/integration/store/test_memory_double.py`, which runs the same scenarios on both. It is
a double BESIDE the real store: the store's own tests stay on PostgreSQL.

Stored blocks go through the real store codec (`compass_server.store.blocks`), as they do in
PostgreSQL's jsonb, so reads return fresh objects exactly shaped like the real store's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from compass_server.domain import DELIVERY_STATE_NAMES, STATUS_BY_NAME, STATUS_NAMES
from compass_server.domain.errors import (
    AlreadyExistsError,
    FieldViolation,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
)
from compass_server.store import (
    MAX_REPLAY_LIMIT,
    AccountKind,
    AccountRow,
    AskRow,
    ChangeEvent,
    ChannelRow,
    MessagePage,
    MessageRow,
    PendingAskPage,
    PendingAskRow,
    ReplayBatch,
    WorkspaceRow,
    clamped_page_size,
)
from compass_server.store.blocks import (
    apply_answer_state,
    apply_delivery,
    decode_blocks,
    encode_blocks,
    outcome_answers,
    same_content,
)
from gen.compass.v1 import comms_pb2
from tests.memory_push import MemoryPushStore

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from compass_server.domain.verdicts import (
        Delivery,
        DeliveryJudge,
        Judge,
        Outcome,
        UpdateRule,
    )


@dataclass(slots=True)
class _Message:
    message_id: str
    channel_id: str
    author: AccountRow
    client_message_id: str
    blocks: list[object]  # the codec's encoding, ask ids included
    created_revision: int
    revision: int
    created_at: datetime
    updated_at: datetime


@dataclass(slots=True)
class _Ask:
    message_id: str
    channel_id: str
    asked_at: datetime
    on_timeout: comms_pb2.AskTimeoutPolicy
    deadline: datetime | None
    status: str = "pending"
    answers: list[object] | None = None
    answered_by: AccountRow | None = None
    answered_at: datetime | None = None
    closed_by: AccountRow | None = None
    closed_at: datetime | None = None
    close_reason: str = ""
    delivery: Delivery | None = None
    reported_by: AccountRow | None = None
    reported_at: datetime | None = None


@dataclass(slots=True)
class MemoryStore:
    """The handlers' store, in memory. `calls` names every port method called, in order."""

    on_change: Callable[[ChangeEvent], None] | None = None
    """Told of every revision-bumping write (as PostgreSQL's NOTIFY tells the hub)."""
    calls: list[str] = field(default_factory=list[str])
    _accounts: dict[str, AccountRow] = field(default_factory=dict[str, AccountRow])
    _workspaces: dict[str, WorkspaceRow] = field(default_factory=dict[str, WorkspaceRow])
    _channels: dict[str, ChannelRow] = field(default_factory=dict[str, ChannelRow])
    _members: set[tuple[str, str]] = field(default_factory=set[tuple[str, str]])
    _participants: set[tuple[str, str]] = field(default_factory=set[tuple[str, str]])
    _messages: dict[str, _Message] = field(default_factory=dict[str, _Message])
    _asks: dict[str, _Ask] = field(default_factory=dict[str, _Ask])
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _push: MemoryPushStore | None = None

    # -- seeding (the admin side of `Store`, as far as `tests/.../_seed.seed` needs it) -----

    async def create_workspace(self, name: str) -> WorkspaceRow:
        row = WorkspaceRow(workspace_id=self._new_id("ws"), name=name, created_at=_now())
        self._workspaces[row.workspace_id] = row
        return row

    async def create_channel(self, workspace_id: str, name: str) -> ChannelRow:
        row = ChannelRow(
            channel_id=self._new_id("ch"),
            workspace_id=workspace_id,
            name=name,
            revision=0,
            created_at=_now(),
        )
        self._channels[row.channel_id] = row
        return row

    async def create_account(self, kind: AccountKind, name: str) -> tuple[AccountRow, str]:
        row = AccountRow(
            account_id=self._new_id("acct"), kind=kind, name=name, disabled=False, created_at=_now()
        )
        self._accounts[row.account_id] = row
        return row, f"cmp_memory_{row.account_id}"

    async def add_workspace_member(self, workspace_id: str, account_id: str) -> None:
        self._members.add((workspace_id, account_id))

    async def add_participant(self, channel_id: str, account_id: str) -> None:
        self._participants.add((channel_id, account_id))
        self._members.add((self._channels[channel_id].workspace_id, account_id))

    async def list_accounts(self) -> list[AccountRow]:
        self.calls.append("list_accounts")
        return sorted(self._accounts.values(), key=lambda a: (a.created_at, a.account_id))

    async def list_all_channels(self) -> list[tuple[ChannelRow, list[str]]]:
        self.calls.append("list_all_channels")
        accounts = await self.list_accounts()
        channels = sorted(self._channels.values(), key=lambda c: (c.created_at, c.channel_id))
        return [
            (
                c,
                [
                    a.account_id
                    for a in accounts
                    if (c.channel_id, a.account_id) in self._participants
                ],
            )
            for c in channels
        ]

    # -- reads ---------------------------------------------------------------------------

    async def list_channels(self, actor: AccountRow) -> list[ChannelRow]:
        self.calls.append("list_channels")
        return [row for row in self._channels.values() if self._takes_part(actor, row.channel_id)]

    async def list_workspaces(self, actor: AccountRow) -> list[WorkspaceRow]:
        self.calls.append("list_workspaces")
        mine = [
            w
            for w in self._workspaces.values()
            if (w.workspace_id, actor.account_id) in self._members
        ]
        return sorted(mine, key=lambda w: w.name)

    async def list_pending_asks(
        self, actor: AccountRow, *, page_size: int = 0, page_token: str = ""
    ) -> PendingAskPage:
        self.calls.append("list_pending_asks")
        size = clamped_page_size(page_size)
        pending = sorted(
            (
                (state.asked_at, ask_id)
                for ask_id, state in self._asks.items()
                if state.status == "pending" and self._takes_part(actor, state.channel_id)
            ),
        )
        start = 0
        if page_token:
            keys = [ask_id for _, ask_id in pending]
            if page_token not in keys:
                raise _bad_token("page_token is not one this server issued")
            start = keys.index(page_token) + 1
        chosen = pending[start : start + size]
        rows = tuple(self._pending_row(ask_id) for _, ask_id in chosen)
        more = len(pending) > start + size
        return PendingAskPage(asks=rows, next_page_token=chosen[-1][1] if more else "")

    async def get_channel(self, actor: AccountRow, channel_id: str) -> ChannelRow:
        self.calls.append("get_channel")
        return self._visible_channel(actor, channel_id)

    async def list_messages(
        self, actor: AccountRow, channel_id: str, *, page_size: int = 0, page_token: str = ""
    ) -> MessagePage:
        self.calls.append("list_messages")
        size = clamped_page_size(page_size)
        after = 0
        if page_token:
            channel, _, revision = page_token.rpartition(":")
            if channel != channel_id or not revision.isdigit():
                raise _bad_token("page_token does not belong to this channel")
            after = int(revision)
        self._visible_channel(actor, channel_id)
        ordered = sorted(
            (
                m
                for m in self._messages.values()
                if m.channel_id == channel_id and m.created_revision > after
            ),
            key=lambda m: m.created_revision,
        )
        page = ordered[:size]
        token = f"{channel_id}:{page[-1].created_revision}" if len(ordered) > size else ""
        return MessagePage(messages=tuple(self._row(m) for m in page), next_page_token=token)

    async def messages_after(
        self, actor: AccountRow, channel_id: str, after_revision: int, *, limit: int = 100
    ) -> ReplayBatch:
        self.calls.append("messages_after")
        if after_revision < 0 or not 1 <= limit <= MAX_REPLAY_LIMIT:
            raise ValueError(f"messages_after({after_revision}, limit={limit}): out of range")
        self._visible_channel(actor, channel_id)
        changed = sorted(
            (
                m
                for m in self._messages.values()
                if m.channel_id == channel_id and m.revision > after_revision
            ),
            key=lambda m: m.revision,
        )
        batch = ReplayBatch(self._row(m) for m in changed[:limit])
        batch.more = len(changed) > limit
        return batch

    async def get_ask(self, actor: AccountRow, ask_id: str) -> AskRow:
        self.calls.append("get_ask")
        state = self._asks.get(ask_id)
        if state is None or not self._sees(actor, state.channel_id):
            raise NotFoundError("ask not found")
        if actor.kind is AccountKind.AGENT and not self._takes_part(actor, state.channel_id):
            raise NotFoundError("ask not found")
        return self._ask_row(ask_id)

    # -- writes --------------------------------------------------------------------------

    async def append_message(
        self,
        actor: AccountRow,
        channel_id: str,
        blocks: Sequence[comms_pb2.MessageBlock],
        *,
        client_message_id: str = "",
    ) -> MessageRow:
        self.calls.append("append_message")
        async with self._lock:
            channel = self._channels.get(channel_id)
            if channel is None or not self._sees(actor, channel_id):
                raise NotFoundError("channel not found")
            if not self._takes_part(actor, channel_id):
                raise PermissionDeniedError("only participants of the channel may post in it")
            if client_message_id:
                for message in self._messages.values():
                    if (message.channel_id, message.client_message_id) == (
                        channel_id,
                        client_message_id,
                    ):
                        stored = self._row(message)
                        same = message.author.account_id == actor.account_id and same_content(
                            blocks, stored.blocks
                        )
                        if not same:
                            raise AlreadyExistsError(
                                "a message with this client_message_id already exists in the channel"
                            )
                        return stored
            minted = [_copy(block) for block in blocks]
            revision = self._bump(channel_id)
            now = _now()
            message = _Message(
                message_id=self._new_id("msg"),
                channel_id=channel_id,
                author=actor,
                client_message_id=client_message_id,
                blocks=[],
                created_revision=revision,
                revision=revision,
                created_at=now,
                updated_at=now,
            )
            self._mint(message, [b.ask for b in minted if b.HasField("ask")])
            message.blocks = encode_blocks(minted)
            self._messages[message.message_id] = message
            row = self._row(message)
            self._tell(channel_id, revision, message.message_id, row.ask_ids)
            return row

    async def update_message(
        self,
        actor: AccountRow,
        message_id: str,
        blocks: Sequence[comms_pb2.MessageBlock],
        fit: UpdateRule,
    ) -> MessageRow:
        self.calls.append("update_message")
        async with self._lock:
            message = self._messages.get(message_id)
            if message is None or not self._sees(actor, message.channel_id):
                raise NotFoundError("message not found")
            if message.author.account_id != actor.account_id:
                raise PermissionDeniedError("only the author of a message may update it")
            stored = self._row(message)
            stored_asks = [b.ask for b in stored.blocks if b.HasField("ask")]
            replaced = fit(stored_asks, blocks)
            added = [b.ask for b in replaced if b.HasField("ask")][len(stored_asks) :]
            if not added and encode_blocks(replaced) == encode_blocks(stored.blocks):
                return stored
            message.revision = self._bump(message.channel_id)
            message.updated_at = _now()
            self._mint(message, added)
            message.blocks = encode_blocks(replaced)
            row = self._row(message)
            self._tell(message.channel_id, message.revision, message_id, row.ask_ids)
            return row

    async def answer_ask(self, actor: AccountRow, ask_id: str, judge: Judge) -> AskRow:
        self.calls.append("answer_ask")
        return await self._close(actor, ask_id, judge, verb="answer")

    async def decline_ask(self, actor: AccountRow, ask_id: str, judge: Judge) -> AskRow:
        self.calls.append("decline_ask")
        return await self._close(actor, ask_id, judge, verb="decline")

    async def close_ask(self, actor: AccountRow, ask_id: str, judge: Judge) -> AskRow:
        self.calls.append("close_ask")
        return await self._close(actor, ask_id, judge, verb=None)

    async def report_delivery(self, actor: AccountRow, ask_id: str, judge: DeliveryJudge) -> AskRow:
        self.calls.append("report_delivery")
        async with self._lock:
            state = self._asks.get(ask_id)
            if (
                state is None
                or not self._sees(actor, state.channel_id)
                or (
                    actor.kind is AccountKind.AGENT
                    and not self._takes_part(actor, state.channel_id)
                )
            ):
                raise NotFoundError("ask not found")
            if self._messages[state.message_id].author.account_id != actor.account_id:
                raise PermissionDeniedError(
                    "only the agent account that posted the ask may report its delivery"
                )
            delivery = judge(self._ask_row(ask_id).ask)
            if delivery is None:
                return self._ask_row(ask_id)
            state.delivery, state.reported_by, state.reported_at = delivery, actor, _now()
            message = self._messages[state.message_id]
            message.revision = self._bump(state.channel_id)
            message.updated_at = _now()
            self._tell(state.channel_id, message.revision, message.message_id, (ask_id,))
            return self._ask_row(ask_id)

    # -- what the composition root reads (`Store`: /metrics, /readyz, the change feed) ----

    def pool_in_use(self) -> int | None:
        return None  # no pool

    async def count_pending(self) -> int:
        self.calls.append("count_pending")
        return sum(1 for state in self._asks.values() if state.status == "pending")

    def webhooks(self) -> None:
        return None  # no outbox: no webhook worker

    def push(self) -> MemoryPushStore:
        """People's devices and answer tokens (tests/memory_push.py), one per store."""
        if self._push is None:
            self._push = MemoryPushStore(self._accounts.__getitem__)
        return self._push

    def push_outbox(self) -> None:
        return None  # no outbox: no push worker

    def email(self) -> None:
        return None  # no email: the email use cases are off

    def email_outbox(self) -> None:
        return None  # no outbox: no email sender

    async def listen(
        self,
        on_change: Callable[[ChangeEvent], None],
        on_resync: Callable[[], None],
        *,
        on_lost: Callable[[], None] = lambda: None,
        on_account: Callable[[str], None] = lambda _account_id: None,
    ) -> None:
        """Tell `on_change` of every write until cancelled (as `on_change` above does):
        subscribed at once (`on_resync`), lost only when it ends (`on_lost`, as PostgreSQL's
        listener says when its connection closes)."""
        self.on_change = on_change
        on_resync()
        try:
            await asyncio.get_running_loop().create_future()
        finally:
            self.on_change = None
            on_lost()

    # -- internals -----------------------------------------------------------------------

    async def _close(
        self, actor: AccountRow, ask_id: str, judge: Judge, *, verb: str | None
    ) -> AskRow:
        """Answer (verb "answer"), decline ("decline") or close (None: the author only)."""
        async with self._lock:
            state = self._asks.get(ask_id)
            if state is None or not self._sees(actor, state.channel_id):
                raise NotFoundError("ask not found")
            if verb is None:  # CloseAsk: only the asking agent; to anyone else it is absent
                if self._messages[state.message_id].author.account_id != actor.account_id:
                    raise NotFoundError("ask not found")
            elif not self._takes_part(actor, state.channel_id):
                raise PermissionDeniedError(f"only participants of the ask's channel may {verb} it")
            outcome = judge(self._ask_row(ask_id).ask)
            if outcome is None:
                return self._ask_row(ask_id)
            self._write(state, actor, outcome)
            message = self._messages[state.message_id]
            message.revision = self._bump(state.channel_id)
            message.updated_at = _now()
            self._tell(state.channel_id, message.revision, message.message_id, (ask_id,))
            return self._ask_row(ask_id)

    @staticmethod
    def _write(state: _Ask, actor: AccountRow, outcome: Outcome) -> None:
        now = _now()
        state.status = STATUS_NAMES[outcome.status]
        state.answers = outcome_answers(outcome)
        if state.answers is not None:
            state.answered_by, state.answered_at = actor, now
        if outcome.status != comms_pb2.ASK_STATUS_ANSWERED:
            state.closed_by, state.closed_at = actor, now
            state.close_reason = outcome.reason

    def _mint(self, message: _Message, asks: Sequence[comms_pb2.Ask]) -> None:
        for ask in asks:
            ask.ask_id = self._new_id("ask")
            self._asks[ask.ask_id] = _Ask(
                message_id=message.message_id,
                channel_id=message.channel_id,
                asked_at=_now(),
                on_timeout=ask.on_timeout,
                deadline=ask.deadline.ToDatetime(tzinfo=UTC) if ask.HasField("deadline") else None,
            )

    def _row(self, message: _Message) -> MessageRow:
        blocks = decode_blocks(message.blocks, message_id=message.message_id)
        for block in blocks:
            if block.HasField("ask"):
                self._merge(block.ask, self._asks[block.ask.ask_id], message.message_id)
        return MessageRow(
            message_id=message.message_id,
            channel_id=message.channel_id,
            author_account_id=message.author.account_id,
            author_name=message.author.name,
            author_kind=message.author.kind,
            client_message_id=message.client_message_id,
            blocks=tuple(blocks),
            created_at=message.created_at,
            updated_at=message.updated_at,
            revision=message.revision,
        )

    def _ask_row(self, ask_id: str) -> AskRow:
        state = self._asks[ask_id]
        (ask,) = (
            b.ask
            for b in self._row(self._messages[state.message_id]).blocks
            if b.ask.ask_id == ask_id
        )
        return AskRow(ask=ask, message_id=state.message_id, channel_id=state.channel_id)

    def _pending_row(self, ask_id: str) -> PendingAskRow:
        state = self._asks[ask_id]
        channel = self._channels[state.channel_id]
        author = self._messages[state.message_id].author
        return PendingAskRow(
            ask=self._ask_row(ask_id),
            channel_name=channel.name,
            author_account_id=author.account_id,
            author_name=author.name,
            asked_at=state.asked_at,
        )

    @staticmethod
    def _merge(ask: comms_pb2.Ask, state: _Ask, message_id: str) -> None:
        """The ask's stored state, merged in as the PostgreSQL store's `apply_stored_state`."""
        if state.answered_by is not None and state.answers is not None:
            apply_answer_state(
                ask,
                state.answers,
                answered_by_account_id=state.answered_by.account_id,
                answered_at=state.answered_at or _now(),
                answered_by_name=state.answered_by.name,
                message_id=message_id,
            )
        ask.status = STATUS_BY_NAME[state.status]
        ask.on_timeout = state.on_timeout
        if state.deadline is not None:
            ask.deadline.FromDatetime(state.deadline)
        if state.closed_at is not None:
            ask.closed_at.FromDatetime(state.closed_at)
        ask.closed_by_account_id = state.closed_by.account_id if state.closed_by else ""
        ask.closed_by_name = state.closed_by.name if state.closed_by else ""
        ask.close_reason = state.close_reason
        if state.delivery is not None and state.reported_by is not None:
            apply_delivery(
                ask,
                state=DELIVERY_STATE_NAMES[state.delivery.state],
                detail=state.delivery.detail,
                payload=state.delivery.payload,
                reported_by_account_id=state.reported_by.account_id,
                reported_by_name=state.reported_by.name,
                reported_at=state.reported_at or _now(),
                message_id=message_id,
            )

    def _visible_channel(self, actor: AccountRow, channel_id: str) -> ChannelRow:
        channel = self._channels.get(channel_id)
        if channel is None or not self._sees(actor, channel_id):
            raise NotFoundError("channel not found")
        return channel

    def _sees(self, actor: AccountRow, channel_id: str) -> bool:
        channel = self._channels.get(channel_id)
        return channel is not None and (channel.workspace_id, actor.account_id) in self._members

    def _takes_part(self, actor: AccountRow, channel_id: str) -> bool:
        return (channel_id, actor.account_id) in self._participants

    def _bump(self, channel_id: str) -> int:
        channel = self._channels[channel_id]
        bumped = dataclasses.replace(channel, revision=channel.revision + 1)
        self._channels[channel_id] = bumped
        return bumped.revision

    def _tell(
        self, channel_id: str, revision: int, message_id: str, ask_ids: tuple[str, ...]
    ) -> None:
        if self.on_change is not None:
            self.on_change(
                ChangeEvent(
                    channel_id=channel_id, revision=revision, message_id=message_id, ask_ids=ask_ids
                )
            )

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_mem{next(self._ids):06d}"


def _now() -> datetime:
    return datetime.now(UTC)


def _copy(block: comms_pb2.MessageBlock) -> comms_pb2.MessageBlock:
    copy = comms_pb2.MessageBlock()
    copy.CopyFrom(block)
    return copy


def _bad_token(description: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        "invalid page_token", [FieldViolation(field="page_token", description=description)]
    )
