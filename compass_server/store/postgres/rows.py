"""Rows -> store dataclasses, answer-state merging, page tokens and sizes."""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from compass_server import domain
from compass_server.domain.errors import (
    CorruptDataError,
    FieldViolation,
    InvalidArgumentError,
    NotFoundError,
)
from compass_server.store import (
    EVENTS_CHANNEL,
    AccountKind,
    AccountRow,
    AskRow,
    ChangeEvent,
    ChannelRow,
    MessageRow,
)
from compass_server.store.blocks import (
    apply_answer_state,
    apply_delivery,
    decode_blocks,
)
from compass_server.store.postgres.sql import (
    NOTIFY,
    SELECT_ASK_STATE_OF_MESSAGES,
    SELECT_VISIBLE_CHANNEL,
)
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import TypeAlias

    import asyncpg
    from asyncpg.pool import PoolConnectionProxy

    _Conn: TypeAlias = PoolConnectionProxy[asyncpg.Record]

# ---------------------------------------------------------------------------------------------
# Row conversion and helpers


def account_row(row: asyncpg.Record) -> AccountRow:
    return AccountRow(
        account_id=row["account_id"],
        kind=AccountKind(row["kind"]),
        name=row["name"],
        disabled=row["disabled"],
        created_at=row["created_at"],
    )


def channel_row(row: asyncpg.Record) -> ChannelRow:
    return ChannelRow(
        channel_id=row["channel_id"],
        workspace_id=row["workspace_id"],
        name=row["name"],
        revision=row["revision"],
        created_at=row["created_at"],
    )


async def visible_channel(conn: _Conn, actor: AccountRow, channel_id: str) -> ChannelRow:
    row = await conn.fetchrow(SELECT_VISIBLE_CHANNEL, channel_id, actor.account_id)
    if row is None:
        raise NotFoundError("channel not found")
    return channel_row(row)


async def message_rows(conn: _Conn, rows: Sequence[asyncpg.Record]) -> list[MessageRow]:
    if not rows:
        return []
    answers: dict[str, list[asyncpg.Record]] = {}
    for answer in await conn.fetch(
        SELECT_ASK_STATE_OF_MESSAGES, [row["message_id"] for row in rows]
    ):
        answers.setdefault(answer["message_id"], []).append(answer)
    return [message_row(row, answers.get(row["message_id"], [])) for row in rows]


def message_row(row: asyncpg.Record, answers: Sequence[asyncpg.Record]) -> MessageRow:
    message_id: str = row["message_id"]
    blocks = decode_blocks(row["blocks"], message_id=message_id)
    asks = {block.ask.ask_id: block.ask for block in blocks if block.HasField("ask")}
    for answer in answers:
        ask = asks.get(answer["ask_id"])
        if ask is None:
            raise CorruptDataError(
                f"stored message {message_id} has a record for ask {answer['ask_id']} "
                "that none of its blocks holds"
            )
        apply_stored_state(ask, answer, message_id)
    author_name, author_kind = row["author"]
    return MessageRow(
        message_id=message_id,
        channel_id=row["channel_id"],
        author_account_id=row["author_account_id"],
        author_name=author_name,
        author_kind=AccountKind(author_kind),
        client_message_id=row["client_message_id"] or "",
        blocks=tuple(blocks),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        revision=row["revision"],
    )


def apply_stored_state(ask: comms_pb2.Ask, record: asyncpg.Record, message_id: str) -> None:
    """Merge the state read from the asks table (`ASK_STATE_COLUMNS`) into `ask`: its
    answers and who gave them, its status, deadline, timeout policy, who closed it, when it
    is withdrawn unless its agent comes back, and its delivery receipt."""
    if record["answered_by_account_id"] is not None:
        apply_answer_state(
            ask,
            record["answers"],
            answered_by_account_id=record["answered_by_account_id"],
            answered_at=record["answered_at"],
            answered_by_name=record["answered_by_name"],
            message_id=message_id,
        )
    status = domain.STATUS_BY_NAME.get(record["status"])
    on_timeout = domain.TIMEOUT_POLICY_BY_NAME.get(record["on_timeout"])
    if status is None or on_timeout is None:  # pragma: no cover - CHECK constraints
        raise CorruptDataError(
            f"stored ask {ask.ask_id} (message {message_id}) has status {record['status']!r} "
            f"and on_timeout {record['on_timeout']!r}"
        )
    ask.status = status
    ask.on_timeout = on_timeout
    if record["deadline"] is not None:
        ask.deadline.FromDatetime(record["deadline"])
    if record["closed_at"] is not None:
        ask.closed_at.FromDatetime(record["closed_at"])
    ask.closed_by_account_id = record["closed_by_account_id"] or ""
    ask.closed_by_name = record["closed_by_name"] or ""
    ask.close_reason = record["close_reason"]
    if record["withdraw_at"] is not None:
        ask.withdraw_at.FromDatetime(record["withdraw_at"])
    if record["delivery_state"] is not None:
        apply_delivery(
            ask,
            state=record["delivery_state"],
            detail=record["delivery_detail"],
            payload=record["delivery_payload"],
            reported_by_account_id=record["delivery_reported_by"],
            reported_by_name=record["delivery_reported_by_name"],
            reported_at=record["delivery_reported_at"],
            message_id=message_id,
        )


def set_new_ask_state(target: comms_pb2.Ask, sent: comms_pb2.Ask) -> None:
    """The state of an ask just inserted: PENDING, with the deadline and policy `sent`."""
    target.status = comms_pb2.ASK_STATUS_PENDING
    target.on_timeout = sent.on_timeout
    if sent.HasField("deadline"):
        # As PostgreSQL keeps it (microseconds), so the caller sees what a read returns.
        target.deadline.FromDatetime(sent.deadline.ToDatetime(tzinfo=UTC))


def deadline_value(ask: comms_pb2.Ask) -> str | None:
    """The ask's deadline as `INSERT_ASKS` takes it: ISO 8601 text, or None (no deadline)."""
    return ask.deadline.ToDatetime(tzinfo=UTC).isoformat() if ask.HasField("deadline") else None


def ask_row(row: asyncpg.Record) -> AskRow:
    ask_id: str = row["ask_id"]
    message_id: str = row["message_id"]
    blocks = decode_blocks(row["blocks"], message_id=message_id)
    matches = [
        block.ask for block in blocks if block.HasField("ask") and block.ask.ask_id == ask_id
    ]
    if len(matches) != 1:
        raise CorruptDataError(
            f"stored message {message_id} holds {len(matches)} blocks for ask {ask_id}, expected 1"
        )
    ask = matches[0]
    apply_stored_state(ask, row, message_id)
    return AskRow(ask=ask, message_id=message_id, channel_id=row["channel_id"])


def copy_block(block: comms_pb2.MessageBlock) -> comms_pb2.MessageBlock:
    copy = comms_pb2.MessageBlock()
    copy.CopyFrom(block)
    return copy


def copy_ask_state(source: MessageRow, target: MessageRow, added: Sequence[comms_pb2.Ask]) -> None:
    """Give the asks of `target` (an update of `source`) their stored state: a minted ask
    keeps its outcome, deadline and answers as stored; an `added` one is new (PENDING)."""
    stored = {block.ask.ask_id: block.ask for block in source.blocks if block.HasField("ask")}
    new = {ask.ask_id: ask for ask in added}
    for block in target.blocks:
        if not block.HasField("ask"):
            continue
        ask = block.ask
        if ask.ask_id in new:
            set_new_ask_state(ask, new[ask.ask_id])
            continue
        before = stored[ask.ask_id]
        ask.status = before.status
        ask.on_timeout = before.on_timeout
        if before.HasField("deadline"):
            ask.deadline.CopyFrom(before.deadline)
        if before.HasField("closed_at"):
            ask.closed_at.CopyFrom(before.closed_at)
        ask.closed_by_account_id = before.closed_by_account_id
        ask.closed_by_name = before.closed_by_name
        ask.close_reason = before.close_reason
        if before.HasField("delivery"):
            ask.delivery.CopyFrom(before.delivery)
        if not before.answered_by_account_id:
            continue
        by_question = {question.question_id: question for question in before.questions}
        for question in block.ask.questions:
            old = by_question[question.question_id]
            question.chosen_option_ids[:] = old.chosen_option_ids
            question.custom_text = old.custom_text
            question.timed_out = old.timed_out
        block.ask.answered_by_account_id = before.answered_by_account_id
        block.ask.answered_at.CopyFrom(before.answered_at)
        block.ask.answered_by_name = before.answered_by_name


async def notify(
    conn: _Conn, channel_id: str, revision: int, message_id: str, ask_ids: tuple[str, ...]
) -> None:
    event = ChangeEvent(
        channel_id=channel_id, revision=revision, message_id=message_id, ask_ids=ask_ids
    )
    await conn.execute(NOTIFY, EVENTS_CHANNEL, event.to_payload())


def row_count(status: str) -> int:
    """The row count of a command status such as "DELETE 3" (asyncpg's `execute` result)."""
    return int(status.rsplit(" ", 1)[-1])


MAX_INT64: Final = 2**63 - 1

"""The largest PostgreSQL bigint (revisions are bigints)."""

PAGE_TOKEN_VERSION: Final = "p1"  # noqa: S105 - a format tag, not a secret

INBOX_TOKEN_VERSION: Final = "i1"  # noqa: S105 - a format tag, not a secret

EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def fitting(sizes: Sequence[asyncpg.Record], count: int, budget: int) -> int | None:
    """The position (created_revision or revision) of the last of `sizes`' leading rows to
    take: at most `count`, and no more than `budget` bytes of blocks in all, but always the
    first (a single message larger than the budget is still delivered). None: no rows."""
    last: int | None = None
    total = 0
    for taken, row in enumerate(sizes[:count]):
        total += int(row["bytes"])
        if taken and total > budget:
            break
        last = int(row["position"])
    return last


def encode_inbox_token(asked_at: datetime, ask_id: str) -> str:
    raw = f"{INBOX_TOKEN_VERSION}:{asked_at.isoformat()}|{ask_id}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_inbox_token(token: str) -> tuple[datetime, str]:
    """The (asked_at, ask_id) a ListPendingAsks page ended at."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        version, rest = raw.split(":", 1)
        when, ask_id = rest.split("|", 1)
        asked_at = datetime.fromisoformat(when)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        asked_at = None
        version = ask_id = ""
    if version != INBOX_TOKEN_VERSION or asked_at is None or asked_at.tzinfo is None:
        raise InvalidArgumentError(
            "invalid page_token",
            [
                FieldViolation(
                    field="page_token",
                    description="page_token is not a token returned by ListPendingAsks",
                )
            ],
        )
    return asked_at, ask_id


def encode_page_token(channel_id: str, created_revision: int) -> str:
    raw = f"{PAGE_TOKEN_VERSION}:{created_revision}:{channel_id}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_page_token(token: str, channel_id: str) -> int:
    bad = InvalidArgumentError(
        "invalid page_token",
        [
            FieldViolation(
                field="page_token",
                description="page_token is not a token returned for this channel",
            )
        ],
    )
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        version, revision, token_channel = raw.split(":", 2)
        after = int(revision)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise bad from None
    if version != PAGE_TOKEN_VERSION or token_channel != channel_id or not 0 <= after <= MAX_INT64:
        raise bad  # a revision past bigint would fail in the database, not here
    return after
