"""The MCP front door's side of the store: asks named by their tool call, and the calls
waiting for them (migration 0007)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from compass_server.domain.errors import NotFoundError
from compass_server.store.postgres.answers import close_swept
from compass_server.store.postgres.base import logger
from compass_server.store.postgres.messages import MessagesMixin, lock_channel_to_post
from compass_server.store.postgres.rows import ask_row, notify
from compass_server.store.postgres.sql import (
    BUMP_REVISION,
    LOCK_CHANNEL,
    SELECT_ASK,
    SWEEPER_LOCK_KEY,
    TOUCH_MESSAGE,
    TRY_SWEEPER_LOCK,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import TypeAlias

    import asyncpg
    from asyncpg.pool import PoolConnectionProxy

    from compass_server.store import AccountRow, AskRow
    from gen.compass.v1 import comms_pb2

    _Conn: TypeAlias = PoolConnectionProxy[asyncpg.Record]

# The newest ask the account made in the channel with this call key, while it is still to
# be delivered: PENDING, or ANSWERED or DECLINED without a delivery receipt (the result of the
# call that made it never reached its client).
SELECT_OPEN_MCP_ASK: Final = """
    SELECT k.ask_id
    FROM mcp_asks k
    JOIN asks a ON a.ask_id = k.ask_id
    WHERE k.account_id = $1 AND k.channel_id = $2 AND k.call_key = $3
      AND (a.status = 'pending'
           OR (a.status IN ('answered', 'declined') AND a.delivery_state IS NULL))
    ORDER BY k.created_at DESC
    LIMIT 1
"""

INSERT_MCP_ASK: Final = """
    INSERT INTO mcp_asks (ask_id, channel_id, account_id, call_key) VALUES ($1, $2, $3, $4)
"""

# $1 ask_id, $2 account_id, $3 waiter_id, $4 seconds
HOLD_MCP_WAIT: Final = """
    INSERT INTO mcp_waiters (ask_id, waiter_id, expires_at)
    SELECT k.ask_id, $3, now() + make_interval(secs => $4)
    FROM mcp_asks k
    WHERE k.ask_id = $1 AND k.account_id = $2
    ON CONFLICT (ask_id, waiter_id)
    DO UPDATE SET expires_at = excluded.expires_at, left_at = NULL
"""

# The same hold, when the call waits already (its row is live): no change people see. $1-$4
# as HOLD_MCP_WAIT; a row when it renewed.
RENEW_MCP_WAIT: Final = """
    UPDATE mcp_waiters w
    SET expires_at = now() + make_interval(secs => $4)
    FROM mcp_asks k
    WHERE w.ask_id = $1 AND w.waiter_id = $3 AND k.ask_id = w.ask_id AND k.account_id = $2
      AND w.left_at IS NULL AND w.expires_at > now()
    RETURNING w.ask_id
"""

# $1 ask_id, $2 account_id: the MCP ask `actor` made, its channel and message, and whether a
# call of it is waiting now (a live row: not left, not run out).
SELECT_MCP_ASK_WAITED: Final = """
    SELECT a.channel_id, a.message_id, a.status,
           EXISTS (
               SELECT 1 FROM mcp_waiters w
               WHERE w.ask_id = a.ask_id AND w.left_at IS NULL AND w.expires_at > now()
           ) AS waited
    FROM mcp_asks k
    JOIN asks a ON a.ask_id = k.ask_id
    WHERE k.ask_id = $1 AND k.account_id = $2
"""

SELECT_WAITED: Final = """
    SELECT EXISTS (
        SELECT 1 FROM mcp_waiters w
        WHERE w.ask_id = $1 AND w.left_at IS NULL AND w.expires_at > now()
    )
"""

FORGET_MCP_WAITERS: Final = """
    DELETE FROM mcp_waiters w
    USING mcp_asks k
    WHERE w.ask_id = $1 AND k.ask_id = w.ask_id AND k.account_id = $2
"""

# $1 ask_id, $2 account_id, $3 waiter_id, $4 seconds
LEAVE_MCP_WAIT: Final = """
    UPDATE mcp_waiters w
    SET expires_at = now() + make_interval(secs => $4), left_at = now()
    FROM mcp_asks k
    WHERE w.ask_id = $1 AND w.waiter_id = $3 AND k.ask_id = w.ask_id AND k.account_id = $2
"""

# Pending MCP asks whose waiting calls all ran out, with who made them.
SELECT_ABANDONED_ASKS: Final = """
    SELECT a.ask_id, a.channel_id, a.message_id, k.account_id
    FROM (
        SELECT ask_id FROM mcp_waiters GROUP BY ask_id HAVING max(expires_at) <= now()
    ) gone
    JOIN asks a ON a.ask_id = gone.ask_id AND a.status = 'pending'
    JOIN mcp_asks k ON k.ask_id = a.ask_id
    ORDER BY a.channel_id, a.ask_id
    LIMIT $1
"""

FORGET_WAITERS_OF: Final = "DELETE FROM mcp_waiters WHERE ask_id = ANY($1::text[])"

# Waiters of asks that are final (answered, closed) and whose time ran out.
FORGET_FINAL_WAITERS: Final = """
    DELETE FROM mcp_waiters w
    USING asks a
    WHERE a.ask_id = w.ask_id AND a.status <> 'pending' AND w.expires_at <= now()
"""


async def _hold_locked(
    conn: _Conn, actor: AccountRow, ask_id: str, waiter_id: str, seconds: float
) -> None:
    """HOLD_MCP_WAIT under the ask's channel lock; when no call waited for the pending ask
    before (its agent came back), people are told: `_waiting_changed`."""
    found = await conn.fetchrow(SELECT_MCP_ASK_WAITED, ask_id, actor.account_id)
    await conn.execute(HOLD_MCP_WAIT, ask_id, actor.account_id, waiter_id, seconds)
    if found is not None and not found["waited"]:
        await _waiting_changed(conn, ask_id, found)


async def _waiting_changed(conn: _Conn, ask_id: str, found: asyncpg.Record) -> None:
    """Whether its agent waits for the pending ask changed (its Ask.withdraw_at): bump the
    channel's revision, touch the message and notify, so that watching people see it (under
    the channel lock, as every write to a channel)."""
    if found["status"] != "pending":
        return
    channel_id, message_id = found["channel_id"], found["message_id"]
    revision = int(await conn.fetchval(BUMP_REVISION, channel_id))
    await conn.execute(TOUCH_MESSAGE, message_id, revision)
    await notify(conn, channel_id, revision, message_id, (ask_id,))


class McpMixin(MessagesMixin):
    """The MCP side of PostgresStore."""

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
        async with self._write() as conn:
            await lock_channel_to_post(conn, actor, channel_id)
            ask_id = await conn.fetchval(
                SELECT_OPEN_MCP_ASK, actor.account_id, channel_id, call_key
            )
            created = ask_id is None
            if created:
                message = await self._append_locked(conn, actor, channel_id, blocks, "")
                (ask_id,) = message.ask_ids
                await conn.execute(INSERT_MCP_ASK, ask_id, channel_id, actor.account_id, call_key)
                await conn.execute(HOLD_MCP_WAIT, ask_id, actor.account_id, waiter_id, seconds)
            else:  # rejoined: its agent may be back
                await _hold_locked(conn, actor, ask_id, waiter_id, seconds)
            row = await conn.fetchrow(SELECT_ASK, ask_id, actor.account_id)
        if row is None:  # pragma: no cover - read in the transaction that found or made it
            raise NotFoundError("ask not found")
        return ask_row(row), created

    async def hold_mcp_wait(
        self, actor: AccountRow, ask_id: str, waiter_id: str, seconds: float
    ) -> None:
        # Every progress tick of every waiting call renews its hold: without a lock or a
        # transaction while the call waits already, as nothing people see changes.
        async with self._connection() as conn:
            if await conn.fetchval(RENEW_MCP_WAIT, ask_id, actor.account_id, waiter_id, seconds):
                return
        async with self._write() as conn:
            found = await conn.fetchrow(SELECT_MCP_ASK_WAITED, ask_id, actor.account_id)
            if found is None:
                return  # not an MCP ask of `actor`: nothing to hold
            await conn.fetchval(LOCK_CHANNEL, found["channel_id"])
            await _hold_locked(conn, actor, ask_id, waiter_id, seconds)

    async def release_mcp_wait(
        self, actor: AccountRow, ask_id: str, waiter_id: str, *, grace: float | None
    ) -> None:
        if grace is None:
            async with self._connection() as conn:
                await conn.execute(FORGET_MCP_WAITERS, ask_id, actor.account_id)
            return
        async with self._write() as conn:
            found = await conn.fetchrow(SELECT_MCP_ASK_WAITED, ask_id, actor.account_id)
            if found is None:
                return
            await conn.fetchval(LOCK_CHANNEL, found["channel_id"])
            waited = await conn.fetchval(SELECT_WAITED, ask_id)
            await conn.execute(LEAVE_MCP_WAIT, ask_id, actor.account_id, waiter_id, grace)
            if waited and not await conn.fetchval(SELECT_WAITED, ask_id):
                await _waiting_changed(conn, ask_id, found)

    async def withdraw_abandoned(self, reason: str, *, limit: int = 100) -> Sequence[str]:
        withdrawn: list[str] = []
        async with self._write() as conn:
            # One sweeper per database at a time (the lock of `expire_due`), so an ask is
            # judged abandoned by one process, and written once (CLOSE_ASK re-checks PENDING
            # under the channel lock).
            if not await conn.fetchval(TRY_SWEEPER_LOCK, SWEEPER_LOCK_KEY):
                return withdrawn
            gone = await conn.fetch(SELECT_ABANDONED_ASKS, limit)
            withdrawn = [
                str(ask["ask_id"])
                for ask in gone
                if await close_swept(conn, ask, "withdrawn", ask["account_id"], reason)
            ]
            await conn.execute(FORGET_WAITERS_OF, [str(ask["ask_id"]) for ask in gone])
            await conn.execute(FORGET_FINAL_WAITERS)
        if withdrawn:
            logger.info("withdrew %d MCP ask(s) nobody waits for: %s", len(withdrawn), withdrawn)
        return withdrawn
