"""Answers and outcomes: RespondToAsk, DeclineAsk, CloseAsk and the deadline sweep."""

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
    AccountRow,
    AskRow,
    ChangeEvent,
)
from compass_server.store.blocks import (
    apply_answer_state,
    encode_answers,
)
from compass_server.store.postgres.base import PostgresBase, logger
from compass_server.store.postgres.rows import ask_row, notify
from compass_server.store.postgres.sql import (
    ANSWER_ASK,
    BUMP_REVISION,
    CLOSE_ASK,
    LOCK_CHANNEL,
    SELECT_ASK,
    SELECT_DUE_ASKS,
    SWEEPER_LOCK_KEY,
    TOUCH_MESSAGE,
    TRY_SWEEPER_LOCK,
)
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime, timedelta
    from typing import TypeAlias

    import asyncpg
    from asyncpg.pool import PoolConnectionProxy

    _Conn: TypeAlias = PoolConnectionProxy[asyncpg.Record]


def guard_answer(
    row: asyncpg.Record | None,
    actor: AccountRow,
    answers: Sequence[comms_pb2.AskQuestionAnswer],
) -> tuple[AskRow, int]:
    """SPEC §4 steps 3-5 on an ask as `SELECT_ASK` read it (None: not found).

    Returns:
        The ask (unanswered, or answered and `answers` are an identical retry by `actor`),
        and its channel's revision as read.
    """
    if row is None:  # step 3
        raise NotFoundError("ask not found")
    if not row["participant"]:  # step 4
        raise PermissionDeniedError("only participants of the ask's channel may answer it")
    current = ask_row(row)
    if current.final and not (  # step 5
        current.ask.status == comms_pb2.ASK_STATUS_ANSWERED
        and domain.is_identical_answer(current.ask, actor.account_id, answers)
    ):
        raise FailedPreconditionError(domain.outcome_message(current.ask))
    return current, int(row["channel_revision"])


async def write_answer(
    conn: _Conn,
    actor: AccountRow,
    ask: AskRow,
    answers: Sequence[comms_pb2.AskQuestionAnswer],
    *,
    revision: int,
) -> tuple[list[object], datetime] | None:
    """SPEC §4 step 7 for `answers` (validated against `ask`), if the channel is still at
    `revision`.

    Returns:
        The answer state written and when; None when the channel has moved on (nothing was
        written).
    """
    state = encode_answers(domain.answered_questions(ask.ask, answers))
    head, tail = ChangeEvent.payload_around_revision(
        channel_id=ask.channel_id, message_id=ask.message_id, ask_ids=(ask.ask.ask_id,)
    )
    answered_at: datetime | None = await conn.fetchval(
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
    return None if answered_at is None else (state, answered_at)


async def close_locked(
    conn: _Conn,
    actor: AccountRow,
    row: asyncpg.Record,
    judge: Callable[[AskRow], bool],
    *,
    status: str,
    closed_by: str,
    reason: str,
    answers: Callable[[], list[object] | None] = lambda: None,
) -> AskRow:
    """Close the ask `SELECT_ASK` read as `row` (in a transaction): lock its channel, read
    it again, let `judge` decide (True: write; False: an identical retry, return it as is;
    or raise), then write the outcome, bump the revision and notify."""
    await conn.fetchval(LOCK_CHANNEL, row["channel_id"])
    ask_id: str = row["ask_id"]
    locked = await conn.fetchrow(SELECT_ASK, ask_id, actor.account_id)
    if locked is None:  # pragma: no cover - asks are never deleted
        raise NotFoundError("ask not found")
    current = ask_row(locked)
    if not judge(current):
        return current
    closed_at = await conn.fetchval(CLOSE_ASK, ask_id, status, closed_by, reason, answers())
    if closed_at is None:  # pragma: no cover - judged pending under the channel lock
        raise FailedPreconditionError("the ask is no longer pending")
    revision = int(await conn.fetchval(BUMP_REVISION, current.channel_id))
    await conn.execute(TOUCH_MESSAGE, current.message_id, revision)
    await notify(conn, current.channel_id, revision, current.message_id, (ask_id,))
    closed = await conn.fetchrow(SELECT_ASK, ask_id, actor.account_id)
    if closed is None:  # pragma: no cover - asks are never deleted
        raise NotFoundError("ask not found")
    return ask_row(closed)


class AnswersMixin(PostgresBase):
    """The answer side of PostgresStore."""

    async def answer_ask(
        self,
        actor: AccountRow,
        ask_id: str,
        answers: Sequence[comms_pb2.AskQuestionAnswer],
    ) -> AskRow:
        domain.check_answer_request(ask_id, answers)  # step 2
        async with self._connection() as conn:
            # Optimistically first, without a lock or a transaction: read and judge the ask,
            # then write in one statement that bumps the channel revision only if it is still
            # the one read, i.e. nothing in the channel changed since.
            row = await conn.fetchrow(SELECT_ASK, ask_id, actor.account_id)
            current, revision = guard_answer(row, actor, answers)  # steps 3-5
            if current.final:
                return current  # an identical retry
            written = None
            if not domain.validate_answers(current.ask, answers):  # step 6
                written = await write_answer(conn, actor, current, answers, revision=revision)
            if written is None:
                # Something changed (a concurrent answer may have won, an update may have
                # changed the questions), or the answers do not fit the ask as read: judge
                # again under the channel lock, where nothing can change it.
                async with conn.transaction():
                    revision = await conn.fetchval(LOCK_CHANNEL, current.channel_id)
                    row = await conn.fetchrow(SELECT_ASK, ask_id, actor.account_id)
                    current, _ = guard_answer(row, actor, answers)
                    if current.final:
                        return current
                    violations = domain.validate_answers(current.ask, answers)
                    if violations:
                        raise InvalidArgumentError("the answers do not fit the ask", violations)
                    written = await write_answer(conn, actor, current, answers, revision=revision)
                    if written is None:  # pragma: no cover - excluded by the channel lock
                        raise FailedPreconditionError("the ask is already answered")
        state, answered_at = written
        # `current.ask` was decoded for this call alone: it becomes the answered ask in place.
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

    async def decline_ask(self, actor: AccountRow, ask_id: str, reason: str = "") -> AskRow:
        domain.check_decline_request(ask_id, reason)

        def judge(current: AskRow) -> bool:
            if not current.final:
                return True
            if domain.is_identical_decline(current.ask, actor.account_id, reason):
                return False
            raise FailedPreconditionError(domain.outcome_message(current.ask))

        async with self._write() as conn:
            row = await conn.fetchrow(SELECT_ASK, ask_id, actor.account_id)
            if row is None:
                raise NotFoundError("ask not found")
            if not row["participant"]:
                raise PermissionDeniedError("only participants of the ask's channel may decline it")
            return await close_locked(
                conn,
                actor,
                row,
                judge,
                status="declined",
                closed_by=actor.account_id,
                reason=reason,
            )

    async def close_ask(
        self,
        actor: AccountRow,
        ask_id: str,
        status: comms_pb2.AskStatus,
        reason: str = "",
        answers: Sequence[comms_pb2.AskQuestionAnswer] = (),
    ) -> AskRow:
        domain.check_close_request(ask_id, status, reason, answers)
        timed_out = status == comms_pb2.ASK_STATUS_TIMED_OUT
        state: list[object] | None = None

        def judge(current: AskRow) -> bool:
            nonlocal state
            if current.final:
                if domain.is_identical_close(
                    current.ask, actor.account_id, status, reason, answers
                ):
                    return False
                raise FailedPreconditionError(domain.outcome_message(current.ask))
            if timed_out:
                violations = domain.validate_answers(current.ask, answers)
                if violations:
                    raise InvalidArgumentError("the answers do not fit the ask", violations)
                state = encode_answers(
                    domain.answered_questions(current.ask, answers), timed_out=True
                )
            return True

        async with self._write() as conn:
            row = await conn.fetchrow(SELECT_ASK, ask_id, actor.account_id)
            # Only the agent account that appended the ask may close it; to anyone else it
            # is as absent as a missing ask.
            if row is None or row["author_account_id"] != actor.account_id:
                raise NotFoundError("ask not found")
            return await close_locked(
                conn,
                actor,
                row,
                judge,
                status=domain.STATUS_NAMES[status],
                closed_by=actor.account_id,
                reason=reason,
                answers=lambda: state,
            )

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
            for ask in due:
                # The channel lock first, like every write (ordered by channel: no cycles).
                await conn.fetchval(LOCK_CHANNEL, ask["channel_id"])
                closed_at = await conn.fetchval(CLOSE_ASK, ask["ask_id"], "expired", None, "", None)
                if closed_at is None:
                    continue  # answered or closed since the scan
                revision = int(await conn.fetchval(BUMP_REVISION, ask["channel_id"]))
                await conn.execute(TOUCH_MESSAGE, ask["message_id"], revision)
                await notify(conn, ask["channel_id"], revision, ask["message_id"], (ask["ask_id"],))
                expired.append(str(ask["ask_id"]))
        if expired:
            logger.info("expired %d ask(s) past their deadline: %s", len(expired), expired)
        return expired
