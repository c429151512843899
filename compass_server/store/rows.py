"""The rows of the Store port: what the store returns, as frozen dataclasses.

`compass_server.store` (the port) re-exports every name here: import them from there.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from compass_core.jsonvalues import is_array, is_object
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime


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


@dataclass(frozen=True, slots=True, kw_only=True)
class DueDelivery:
    """A webhook delivery claimed for one attempt (`WebhookOutbox.claim`)."""

    delivery_id: str
    webhook_id: str
    url: str
    secret: str
    event_type: str
    ask_id: str
    occurred_at: datetime
    payload: str | None
    """The JSON body fixed at the first attempt; None before it."""
    attempts: int
    """Attempts made before this one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PushSubscriptionRow:
    """One device of a person that Compass pushes asks to (never its keys)."""

    subscription_id: str
    account_id: str
    device_name: str
    created_at: datetime
    last_success_at: datetime | None
    """When its push service last accepted a push; None before the first."""
    last_error: str
    """How the last push that failed went ("http 500", "timeout"); "" after a success."""

    def to_proto(self) -> comms_pb2.PushSubscription:
        """The `compass.v1.PushSubscription` for this row."""
        message = comms_pb2.PushSubscription(
            subscription_id=self.subscription_id,
            device_name=self.device_name,
            last_error=self.last_error,
        )
        message.created_at.FromDatetime(self.created_at)
        if self.last_success_at is not None:
            message.last_success_at.FromDatetime(self.last_success_at)
        return message


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerTokenRow:
    """What a notification's answer token stands for (`PushStore.answer_token`)."""

    ask_id: str
    account: AccountRow
    """Whom it answers as (disabled or not: the caller judges)."""
    used: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class DuePush:
    """A push claimed for one attempt (`PushOutbox.claim`)."""

    delivery_id: str
    subscription_id: str
    account_id: str
    """Whose device it is: its answer token is bound to this account."""
    endpoint: str
    p256dh: str
    auth: str
    event_type: str
    """'ask', 'ask.reminder' or 'ask_closed'."""
    ask_id: str
    occurred_at: datetime
    """When the event happened (for 'ask': when the ask was stored)."""
    attempts: int
    """Attempts made before this one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EmailSettingsRow:
    """A person's email: the address asks are mailed to (None: none) and whether they take
    asks by email (docs/answering/email.md)."""

    account_id: str
    email: str | None
    email_asks: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyTokenRow:
    """What a reply address's token stands for (`EmailStore.reply_token`)."""

    ask_id: str
    account: AccountRow
    """Whom it answers as (disabled or not: the caller judges)."""
    email: str | None
    """That person's address now (a reply must come from it)."""
    used: bool
    """Spent (an answer or a decline of theirs was stored) or voided (revoke-sessions)."""
    thread_id: str | None
    """The Message-ID of the ask's mail to that person (None before it was sent)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DueEmail:
    """A mail claimed for one attempt (`EmailOutbox.claim`)."""

    delivery_id: str
    account_id: str
    email: str | None
    """The person's address now (None: removed since; the mail is skipped)."""
    email_asks: bool
    event_type: str
    """'ask', or a reply to the person's mail: 'not_understood', 'ended'."""
    ask_id: str
    occurred_at: datetime
    payload: str | None
    """A reply's JSON (problems, in_reply_to, references); None for an ask."""
    attempts: int
