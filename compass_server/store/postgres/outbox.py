"""What every notifier's outbox shares on PostgreSQL: claims, the record of an attempt, and
the reminders.

A notifier (webhooks, Web Push, email) keeps its outbox in a table of one shape:

    delivery_id text PRIMARY KEY, <key> text (its destination: a webhook, a device),
    event_type text, ask_id text, occurred_at timestamptz, payload text,
    state text ('pending' | 'delivered' | 'failed'), attempts integer,
    next_attempt_at timestamptz (when due; while in flight, the claim's lease)

filled by triggers on `asks` in the transaction of the change (migrations 0005, 0009, 0010), and
described here by an `Outbox`. Its worker (background/outbox.py) claims due rows with
`claim`: FOR UPDATE SKIP LOCKED, each leased for one attempt (several processes never attempt
one row at once, and a row whose process died is attempted again when its lease ends),
oldest first but at most `per_endpoint` per destination counting those already in flight in
the process, so one slow or failing destination cannot take every attempt. After an attempt,
`record` settles the row in the caller's transaction (delivered, due again at the retry time
of the persisted schedule, or failed) and logs it when the outbox keeps a log.

`remind` is the one reminder step for every notifier: an ask still pending a while after it
was asked (or last reminded) is told again through each of them, counted in `ask_reminders`
so a restart does not repeat it.

Table and column names come from the `Outbox` constants below, never from input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Generic, TypeVar

from compass_server.store import Claims

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime, timedelta
    from typing import TypeAlias

    import asyncpg
    from asyncpg.pool import PoolConnectionProxy

    from compass_server.store.postgres import PostgresStore

    _Conn: TypeAlias = PoolConnectionProxy[asyncpg.Record]

D = TypeVar("D")

REMINDER_LOCK_KEY: Final = 0x636D7072656D64
"""pg_try_advisory_xact_lock key: one process at a time enqueues reminders."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Outbox:
    """One notifier's outbox: its tables and what a claim returns of a row."""

    deliveries: str
    """The outbox table."""
    key: str
    """Its destination column, also the primary key of `destinations`."""
    destinations: str
    """The table of destinations (joined as `w` for `returning`)."""
    returning: str
    """The claim's RETURNING list, over the delivery `d` and its destination `w`."""
    log: str | None = None
    """A table logging each attempt (delivery_id, attempt, duration_ms, outcome), if any."""

    def claim_statement(self) -> str:
        # $1 now, $2 lease end, $3 limit, $4 destinations busy here, $5 how busy, $6 per destination
        return f"""
            UPDATE {self.deliveries} d SET next_attempt_at = $2
            FROM {self.destinations} w
            WHERE w.{self.key} = d.{self.key} AND d.delivery_id IN (
                SELECT c.delivery_id FROM (
                    SELECT due.delivery_id, due.next_attempt_at,
                           row_number() OVER (
                               PARTITION BY e.{self.key} ORDER BY due.next_attempt_at
                           ) + COALESCE(b.n, 0) AS slot
                    FROM (SELECT DISTINCT {self.key} FROM {self.deliveries}
                          WHERE state = 'pending' AND next_attempt_at <= $1) e
                    LEFT JOIN unnest($4::text[], $5::int[]) AS b (busy_key, n)
                        ON b.busy_key = e.{self.key}
                    CROSS JOIN LATERAL (
                        SELECT delivery_id, next_attempt_at FROM {self.deliveries}
                        WHERE {self.key} = e.{self.key} AND state = 'pending'
                          AND next_attempt_at <= $1
                        ORDER BY next_attempt_at, occurred_at
                        -- Per destination, lock no more than this claim can take (its room,
                        -- and the claim's limit): a row locked here but not taken is skipped
                        -- by every other claimer until this commits (with several
                        -- destinations due, up to `limit` per destination are still locked
                        -- for the oldest `limit` overall).
                        LIMIT LEAST(GREATEST($6 - COALESCE(b.n, 0), 0), $3)
                        FOR UPDATE SKIP LOCKED) due
                ) c
                WHERE c.slot <= $6
                ORDER BY c.next_attempt_at
                LIMIT $3)
            RETURNING {self.returning}"""  # noqa: S608 - identifiers are this module's constants


WEBHOOKS: Final = Outbox(
    deliveries="webhook_deliveries",
    key="webhook_id",
    destinations="webhooks",
    returning="d.delivery_id, d.webhook_id, w.url, w.secret, d.event_type, d.ask_id, "
    "d.occurred_at, d.payload, d.attempts",
    log="webhook_attempts",
)
EMAIL: Final = Outbox(
    deliveries="email_deliveries",
    key="account_id",
    destinations="accounts",
    returning="d.delivery_id, d.account_id, w.email, w.email_asks, d.event_type, d.ask_id, "
    "d.occurred_at, d.payload, d.attempts",
)
PUSH: Final = Outbox(
    deliveries="push_deliveries",
    key="subscription_id",
    destinations="push_subscriptions",
    returning="d.delivery_id, d.subscription_id, w.account_id, w.endpoint, w.p256dh, w.auth, "
    "d.event_type, d.ask_id, d.occurred_at, d.attempts",
)


async def claim(
    conn: _Conn,
    outbox: Outbox,
    now: datetime,
    lease: timedelta,
    limit: int,
    *,
    per_endpoint: int,
    busy: Mapping[str, int] | None = None,
) -> list[asyncpg.Record]:
    """Take up to `limit` due deliveries of `outbox` for one attempt each, leased until
    now + lease, oldest first but at most `per_endpoint` per destination counting the `busy`
    ones (in flight in this process). Run it in a transaction."""
    busy = busy or {}
    return await conn.fetch(
        outbox.claim_statement(),
        now,
        now + lease,
        limit,
        list(busy),
        list(busy.values()),
        per_endpoint,
    )


async def record(
    conn: _Conn,
    outbox: Outbox,
    delivery_id: str,
    *,
    attempt: int,
    state: str,
    payload: str | None,
    retry_at: datetime | None,
    duration_ms: int,
    outcome: str,
) -> None:
    """Settle one attempt (`attempt` is its number, from 1): the delivery's `state`
    ('delivered', 'pending' again at `retry_at`, 'failed'), its payload kept from the first
    attempt, and the outbox's log when it keeps one."""
    if outbox.log is not None:
        await conn.execute(
            f"""INSERT INTO {outbox.log} (delivery_id, attempt, duration_ms, outcome)
                VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING""",  # noqa: S608 - a constant
            delivery_id,
            attempt,
            duration_ms,
            outcome,
        )
    await conn.execute(
        f"""UPDATE {outbox.deliveries}
            SET attempts = $2, state = $3, payload = COALESCE(payload, $4),
                next_attempt_at = COALESCE($5, next_attempt_at)
            WHERE delivery_id = $1""",  # noqa: S608 - a constant
        delivery_id,
        attempt,
        state,
        payload,
        retry_at,
    )


class OutboxTable(Claims[D], Generic[D]):
    """A notifier's outbox on one PostgresStore (sharing its pool): its claims, as the port's
    `Claims` says (store/postgres/webhooks.py and push.py subclass it)."""

    table: Outbox
    """The table it claims from."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    def due(self, row: asyncpg.Record) -> D:
        """A claimed row (`table.returning`) as the worker's delivery."""
        raise NotImplementedError

    async def claim(
        self,
        now: datetime,
        lease: timedelta,
        limit: int,
        *,
        per_endpoint: int,
        busy: Mapping[str, int] | None = None,
    ) -> list[D]:
        async with self._store.transaction() as conn:
            rows = await claim(
                conn, self.table, now, lease, limit, per_endpoint=per_endpoint, busy=busy
            )
        return [self.due(row) for row in rows]


def settled_state(*, delivered: bool, retry_at: datetime | None) -> str:
    """The state an attempt leaves its delivery in."""
    return "delivered" if delivered else ("pending" if retry_at is not None else "failed")


async def remind(
    store: PostgresStore, now: datetime, after: timedelta, most: int, limit: int = 100
) -> list[str]:
    """Tell again of the pending asks waiting longer than `after` since they were asked or
    last reminded, at most `most` times per ask, through every notifier: `ask.reminder` to
    the webhooks subscribed to it, a re-push to the devices that were pushed the ask. One
    process at a time (an advisory lock); asks nobody would be told of are not counted.

    Returns:
        The ask ids reminded of.
    """
    async with store.transaction() as conn:
        if not await conn.fetchval("SELECT pg_try_advisory_xact_lock($1)", REMINDER_LOCK_KEY):
            return []
        rows = await conn.fetch(
            """SELECT a.ask_id FROM asks a
               LEFT JOIN ask_reminders r ON r.ask_id = a.ask_id
               WHERE a.status = 'pending'
                 AND COALESCE(r.sent, 0) < $3
                 AND COALESCE(r.last_at, a.created_at) <= $1::timestamptz - $2::interval
                 AND (EXISTS (
                          SELECT 1 FROM webhooks w JOIN channels c
                              ON c.workspace_id = w.workspace_id
                          WHERE c.channel_id = a.channel_id AND 'ask.reminder' = ANY (w.events))
                      OR EXISTS (
                          SELECT 1 FROM push_deliveries d
                          WHERE d.ask_id = a.ask_id AND d.event_type = 'ask'))
               ORDER BY COALESCE(r.last_at, a.created_at)
               LIMIT $4""",
            now,
            after,
            most,
            limit,
        )
        for row in rows:
            await conn.execute(
                """SELECT compass_enqueue_webhooks(a, 'ask.reminder'),
                          compass_enqueue_push(a, 'ask.reminder')
                   FROM asks a WHERE a.ask_id = $1""",
                row["ask_id"],
            )
            await conn.execute(
                """INSERT INTO ask_reminders (ask_id, sent, last_at) VALUES ($1, 1, $2)
                   ON CONFLICT (ask_id)
                   DO UPDATE SET sent = ask_reminders.sent + 1, last_at = $2""",
                row["ask_id"],
                now,
            )
    return [str(r["ask_id"]) for r in rows]
