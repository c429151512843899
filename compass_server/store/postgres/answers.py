"""Answers and outcomes: RespondToAsk, DeclineAsk, CloseAsk, the deadline sweep and delivery
receipts (ReportDelivery)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from compass_server import domain
from compass_server.domain.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
)
from compass_server.store import (
    EVENTS_CHANNEL,
    AccountKind,
    AccountRow,
    AskRow,
    ChangeEvent,
)
from compass_server.store.blocks import (
    apply_answer_state,
    encode_answers,
    outcome_answers,
)
from compass_server.store.postgres.base import PostgresBase, logger
from compass_server.store.postgres.rows import ask_row, notify
from compass_server.store.postgres.sql import (
    ANSWER_ASK,
    BUMP_REVISION,
    CLOSE_ASK,
    LOCK_CHANNEL,
    REPORT_DELIVERY,
    SELECT_ASK,
    SELECT_DUE_ASKS,
    SWEEPER_LOCK_KEY,
    TOUCH_MESSAGE,
    TRY_SWEEPER_LOCK,
)
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime, timedelta
    from typing import TypeAlias

    import asyncpg
    from asyncpg.pool import PoolConnectionProxy

    from compass_server.domain.verdicts import DeliveryJudge, Judge, Outcome

    _Conn: TypeAlias = PoolConnectionProxy[asyncpg.Record]


def _state(outcome: Outcome) -> list[object]:
    """The stored answer state of an ANSWERED outcome."""
    return encode_answers(outcome.answers or ())


def _answered(
    current: AskRow, actor: AccountRow, state: list[object], answered_at: datetime
) -> AskRow:
    """`current`, decoded for this call alone, made the answered ask in place."""
    apply_answer_state(
        current.ask,
        state,
        answered_by_account_id=actor.account_id,
        answered_at=answered_at,
        answered_by_name=actor.name,
        message_id=current.message_id,
    )
    current.ask.status = comms_pb2.ASK_STATUS_ANSWERED
    return current


def visible_participant(row: asyncpg.Record | None, *, verb: str) -> asyncpg.Record:
    """docs/spec.md §4 steps 3-4 on an ask as `SELECT_ASK` read it (None: not found): the row, when
    `verb`ing it is allowed."""
    if row is None:  # step 3
        raise NotFoundError("ask not found")
    if not row["participant"]:  # step 4
        raise PermissionDeniedError(f"only participants of the ask's channel may {verb} it")
    return row


async def write_answer(
    conn: _Conn, actor: AccountRow, ask: AskRow, state: list[object], *, revision: int
) -> datetime | None:
    """docs/spec.md §4 step 7: store the answer state `state` if the channel is still at `revision`.

    Returns:
        When it was written; None when the channel has moved on (nothing was written).
    """
    head, tail = ChangeEvent.payload_around_revision(
        channel_id=ask.channel_id, message_id=ask.message_id, ask_ids=(ask.ask.ask_id,)
    )
    return await conn.fetchval(
        ANSWER_ASK,
        ask.channel_id,
        revision,
        ask.ask.ask_id,
        state,
        actor.account_id,
        ask.message_id,
        EVENTS_CHANNEL,
        head,
        tail,
    )


def authored(row: asyncpg.Record | None, actor: AccountRow) -> asyncpg.Record:
    """ReportDelivery's visibility and authorship on an ask as `SELECT_ASK` read it: visible
    as `get_ask` sees it (an agent: in the channels it takes part in), then appended by
    `actor`."""
    if row is None or (actor.kind is AccountKind.AGENT and not row["participant"]):
        raise NotFoundError("ask not found")
    if row["author_account_id"] != actor.account_id:
        raise PermissionDeniedError(
            "only the agent account that posted the ask may report its delivery"
        )
    return row


async def locked_ask(conn: _Conn, actor: AccountRow, row: asyncpg.Record) -> AskRow:
    """The ask `SELECT_ASK` read as `row`, read again under its channel's lock (in a
    transaction): what a judge decides on."""
    await conn.fetchval(LOCK_CHANNEL, row["channel_id"])
    locked = await conn.fetchrow(SELECT_ASK, row["ask_id"], actor.account_id)
    if locked is None:  # pragma: no cover - asks are never deleted
        raise NotFoundError("ask not found")
    return ask_row(locked)


async def changed(conn: _Conn, actor: AccountRow, current: AskRow) -> AskRow:
    """After a write to the ask `current` under its channel lock: bump the revision, touch
    its message, notify, and read the ask as written."""
    ask_id = current.ask.ask_id
    revision = int(await conn.fetchval(BUMP_REVISION, current.channel_id))
    await conn.execute(TOUCH_MESSAGE, current.message_id, revision)
    await notify(conn, current.channel_id, revision, current.message_id, (ask_id,))
    written = await conn.fetchrow(SELECT_ASK, ask_id, actor.account_id)
    if written is None:  # pragma: no cover - asks are never deleted
        raise NotFoundError("ask not found")
    return ask_row(written)


async def close_locked(conn: _Conn, actor: AccountRow, row: asyncpg.Record, judge: Judge) -> AskRow:
    """Close the ask `SELECT_ASK` read as `row` (in a transaction): lock its channel, read
    it again, let `judge` decide (an outcome to write; None: an identical retry, return it
    as is; or raise), then write the outcome, bump the revision and notify."""
    current = await locked_ask(conn, actor, row)
    outcome = judge(current.ask)
    if outcome is None:
        return current
    closed_at = await conn.fetchval(
        CLOSE_ASK,
        current.ask.ask_id,
        domain.STATUS_NAMES[outcome.status],
        actor.account_id,
        outcome.reason,
        outcome_answers(outcome),
    )
    if closed_at is None:  # pragma: no cover - judged pending under the channel lock
        raise FailedPreconditionError("the ask is no longer pending")
    return await changed(conn, actor, current)


async def close_swept(
    conn: _Conn, ask: asyncpg.Record, status: str, closed_by: str | None, reason: str
) -> bool:
    """Close the ask a sweep found (`ask`: its ask_id, channel_id and message_id) as `status`
    if it is still pending, in the sweep's transaction: lock its channel (ordered by channel:
    no cycles), write, bump the revision, notify.

    Returns:
        Whether it was closed (False: answered or closed since the scan).
    """
    await conn.fetchval(LOCK_CHANNEL, ask["channel_id"])
    closed_at = await conn.fetchval(CLOSE_ASK, ask["ask_id"], status, closed_by, reason, None)
    if closed_at is None:
        return False
    revision = int(await conn.fetchval(BUMP_REVISION, ask["channel_id"]))
    await conn.execute(TOUCH_MESSAGE, ask["message_id"], revision)
    await notify(conn, ask["channel_id"], revision, ask["message_id"], (ask["ask_id"],))
    return True


class AnswersMixin(PostgresBase):
    """The answer side of PostgresStore."""

    async def answer_ask(self, actor: AccountRow, ask_id: str, judge: Judge) -> AskRow:
        # Optimistically first, without a lock or a transaction: read and judge the ask,
        # then write in one statement that bumps the channel revision only if it is still
        # the one read, i.e. nothing in the channel changed since. Each of the two statements
        # takes a pooled connection of its own: the Python between them (decoding the ask,
        # judging the answers, and waiting for the event loop's turn under load) holds none,
        # so a busy server does not run out of pooled connections first (bench.respond).
        async with self._connection() as conn:
            row = await conn.fetchrow(SELECT_ASK, ask_id, actor.account_id)
        row = visible_participant(row, verb="answer")  # steps 3-4
        current = ask_row(row)
        try:
            outcome = judge(current.ask)  # steps 5-6
        except InvalidArgumentError:
            pass  # answers that do not fit the ask as read: judged again below
        else:
            if outcome is None:
                return current  # an identical retry
            state = _state(outcome)
            revision = int(row["channel_revision"])
            async with self._connection() as conn:
                answered_at = await write_answer(conn, actor, current, state, revision=revision)
            if answered_at is not None:
                return _answered(current, actor, state, answered_at)
        # Something changed (a concurrent answer may have won, an update may have changed
        # the questions), or the answers do not fit the ask as read: judge again under
        # the channel lock, where nothing can change it.
        async with self._connection() as conn, conn.transaction():
            revision = await conn.fetchval(LOCK_CHANNEL, current.channel_id)
            row = await conn.fetchrow(SELECT_ASK, ask_id, actor.account_id)
            current = ask_row(visible_participant(row, verb="answer"))
            outcome = judge(current.ask)
            if outcome is None:
                return current
            state = _state(outcome)
            answered_at = await write_answer(conn, actor, current, state, revision=revision)
            if answered_at is None:  # pragma: no cover - excluded by the channel lock
                raise FailedPreconditionError("the ask is already answered")
            return _answered(current, actor, state, answered_at)

    async def decline_ask(self, actor: AccountRow, ask_id: str, judge: Judge) -> AskRow:
        async with self._write() as conn:
            row = await conn.fetchrow(SELECT_ASK, ask_id, actor.account_id)
            row = visible_participant(row, verb="decline")
            return await close_locked(conn, actor, row, judge)

    async def close_ask(self, actor: AccountRow, ask_id: str, judge: Judge) -> AskRow:
        async with self._write() as conn:
            row = await conn.fetchrow(SELECT_ASK, ask_id, actor.account_id)
            # Only the agent account that appended the ask may close it; to anyone else it
            # is as absent as a missing ask.
            if row is None or row["author_account_id"] != actor.account_id:
                raise NotFoundError("ask not found")
            return await close_locked(conn, actor, row, judge)

    async def report_delivery(self, actor: AccountRow, ask_id: str, judge: DeliveryJudge) -> AskRow:
        async with self._write() as conn:
            row = authored(await conn.fetchrow(SELECT_ASK, ask_id, actor.account_id), actor)
            current = await locked_ask(conn, actor, row)
            delivery = judge(current.ask)
            if delivery is None:
                return current  # an identical repeat
            reported_at = await conn.fetchval(
                REPORT_DELIVERY,
                ask_id,
                domain.DELIVERY_STATE_NAMES[delivery.state],
                delivery.detail,
                delivery.payload,
                actor.account_id,
            )
            if reported_at is None:  # pragma: no cover - judged under the channel lock
                raise FailedPreconditionError("the ask's delivery was already reported")
            return await changed(conn, actor, current)

    async def expire_due(
        self, now: datetime, grace: timedelta, *, limit: int = 100
    ) -> Sequence[str]:
        expired: list[str] = []
        async with self._write() as conn:
            # Held until this transaction ends: one sweeper per database at a time. Another
            # process sweeping now makes this call a no-op (it sweeps again next tick).
            if not await conn.fetchval(TRY_SWEEPER_LOCK, SWEEPER_LOCK_KEY):
                return expired
            due = await conn.fetch(SELECT_DUE_ASKS, now, grace.total_seconds(), limit)
            # Each closed unless answered or closed since the scan.
            expired = [
                str(ask["ask_id"])
                for ask in due
                if await close_swept(conn, ask, "expired", None, "")
            ]
        if expired:
            logger.info("expired %d ask(s) past their deadline: %s", len(expired), expired)
        return expired
