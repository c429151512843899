"""The MCP front door's side of the store: asks named by their tool call, and the calls
waiting for them (migration 0007)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from compass_server.domain.errors import NotFoundError
from compass_server.store.postgres.answers import close_swept
from compass_server.store.postgres.base import logger
from compass_server.store.postgres.messages import MessagesMixin, lock_channel_to_post
from compass_server.store.postgres.rows import ask_row
from compass_server.store.postgres.sql import (
    SELECT_ASK,
    SWEEPER_LOCK_KEY,
    TRY_SWEEPER_LOCK,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from compass_server.store import AccountRow, AskRow
    from gen.compass.v1 import comms_pb2

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
    ON CONFLICT (ask_id, waiter_id) DO UPDATE SET expires_at = excluded.expires_at
"""

FORGET_MCP_WAITERS: Final = """
    DELETE FROM mcp_waiters w
    USING mcp_asks k
    WHERE w.ask_id = $1 AND k.ask_id = w.ask_id AND k.account_id = $2
"""

# $1 ask_id, $2 account_id, $3 waiter_id, $4 seconds
LEAVE_MCP_WAIT: Final = """
    UPDATE mcp_waiters w
    SET expires_at = now() + make_interval(secs => $4)
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
            row = await conn.fetchrow(SELECT_ASK, ask_id, actor.account_id)
        if row is None:  # pragma: no cover - read in the transaction that found or made it
            raise NotFoundError("ask not found")
        return ask_row(row), created

    async def hold_mcp_wait(
        self, actor: AccountRow, ask_id: str, waiter_id: str, seconds: float
    ) -> None:
        async with self._connection() as conn:
            await conn.execute(HOLD_MCP_WAIT, ask_id, actor.account_id, waiter_id, seconds)

    async def release_mcp_wait(
        self, actor: AccountRow, ask_id: str, waiter_id: str, *, grace: float | None
    ) -> None:
        async with self._connection() as conn:
            if grace is None:
                await conn.execute(FORGET_MCP_WAITERS, ask_id, actor.account_id)
            else:
                await conn.execute(LEAVE_MCP_WAIT, ask_id, actor.account_id, waiter_id, grace)

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
