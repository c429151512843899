"""Web Push on PostgreSQL (migrations/0009_push.sql): people's devices, the VAPID key kept
when none is configured, the one-time answer tokens, and the push outbox, which shares the
webhooks' claim and record statements (store/postgres/outbox.py).

The outbox is filled by triggers on `asks`; the worker (compass_server/push/sender.py) claims
due pushes, mints each 'ask' push an answer token, and records here what its push service
said: a success or an error on the device's row (ListPushSubscriptions shows them), and the
device removed with its pushes when its push service says it is gone (404, 410).
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Final

from compass_server.domain.errors import NotFoundError, ResourceExhaustedError
from compass_server.store import AnswerTokenRow, DuePush, PushOutbox, PushStore, PushSubscriptionRow
from compass_server.store.postgres import outbox
from compass_server.store.postgres.base import new_id, token_hash
from compass_server.store.postgres.rows import account_row
from compass_server.store.postgres.sql import ACCOUNT_COLUMNS

if TYPE_CHECKING:
    from datetime import datetime

    import asyncpg

    from compass_server.domain.push import NewSubscription
    from compass_server.store import AccountRow
    from compass_server.store.push import PushResult

ANSWER_TOKEN_PREFIX: Final = "cmpa_"  # noqa: S105 - a public prefix, not a secret
MAX_ERROR_LENGTH: Final = 300
_COLUMNS: Final = (
    "subscription_id, account_id, device_name, created_at, last_success_at, last_error"
)


class PostgresPushStore(outbox.OutboxTable[DuePush], PushStore, PushOutbox):
    """The push tables of one PostgresStore (sharing its pool); its outbox's claims:
    store/postgres/outbox.py."""

    table = outbox.PUSH

    # -- the VAPID key -------------------------------------------------------------------------

    async def vapid_private_key(self, candidate: str) -> str:
        async with self._store.transaction() as conn:
            await conn.execute(
                """INSERT INTO push_vapid_keys (singleton, private_key) VALUES (true, $1)
                   ON CONFLICT (singleton) DO NOTHING""",
                candidate,
            )
            stored = await conn.fetchval("SELECT private_key FROM push_vapid_keys")
        return str(stored)

    # -- devices -------------------------------------------------------------------------------

    async def add_push_subscription(
        self, actor: AccountRow, subscription: NewSubscription, *, most: int
    ) -> str:
        async with self._store.transaction() as conn:
            # One account's adds are serialised, so two at once cannot both be the 20th.
            await conn.execute(
                "SELECT 1 FROM accounts WHERE account_id = $1 FOR NO KEY UPDATE",
                actor.account_id,
            )
            found = await conn.fetchval(
                """UPDATE push_subscriptions SET p256dh = $3, auth = $4, device_name = $5
                   WHERE account_id = $1 AND endpoint = $2 RETURNING subscription_id""",
                actor.account_id,
                subscription.endpoint,
                subscription.p256dh,
                subscription.auth,
                subscription.device_name,
            )
            if found is not None:
                return str(found)
            held = await conn.fetchval(
                "SELECT count(*) FROM push_subscriptions WHERE account_id = $1",
                actor.account_id,
            )
            if int(held) >= most:
                raise ResourceExhaustedError(
                    f"this account already has {most} devices for notifications; remove one first"
                )
            subscription_id = new_id("psub")
            await conn.execute(
                """INSERT INTO push_subscriptions
                       (subscription_id, account_id, endpoint, p256dh, auth, device_name)
                   VALUES ($1, $2, $3, $4, $5, $6)""",
                subscription_id,
                actor.account_id,
                subscription.endpoint,
                subscription.p256dh,
                subscription.auth,
                subscription.device_name,
            )
        return subscription_id

    async def list_push_subscriptions(self, actor: AccountRow) -> list[PushSubscriptionRow]:
        async with self._store.connection() as conn:
            rows = await conn.fetch(
                f"""SELECT {_COLUMNS} FROM push_subscriptions WHERE account_id = $1
                    ORDER BY created_at, subscription_id""",  # noqa: S608 - a constant
                actor.account_id,
            )
        return [_subscription(r) for r in rows]

    async def remove_push_subscription(self, actor: AccountRow, subscription_id: str) -> None:
        async with self._store.transaction() as conn:
            status = await conn.execute(
                "DELETE FROM push_subscriptions WHERE subscription_id = $1 AND account_id = $2",
                subscription_id,
                actor.account_id,
            )
        if status == "DELETE 0":
            raise NotFoundError("push subscription not found")

    # -- answer tokens -------------------------------------------------------------------------

    async def new_answer_token(self, ask_id: str, account_id: str) -> str:
        token = ANSWER_TOKEN_PREFIX + secrets.token_urlsafe(32)
        async with self._store.connection() as conn:
            await conn.execute(
                """INSERT INTO push_answer_tokens (token_hash, ask_id, account_id)
                   VALUES ($1, $2, $3)""",
                token_hash(token),
                ask_id,
                account_id,
            )
        return token

    async def answer_token(self, token: str) -> AnswerTokenRow | None:
        async with self._store.connection() as conn:
            row = await conn.fetchrow(
                f"""SELECT t.ask_id, t.used_at IS NOT NULL AS used,
                           {", ".join(f"a.{c.strip()}" for c in ACCOUNT_COLUMNS.split(","))}
                    FROM push_answer_tokens t JOIN accounts a ON a.account_id = t.account_id
                    WHERE t.token_hash = $1""",  # noqa: S608 - a constant
                token_hash(token),
            )
        if row is None:
            return None
        return AnswerTokenRow(ask_id=row["ask_id"], account=account_row(row), used=row["used"])

    async def spend_answer_token(self, token: str) -> bool:
        async with self._store.connection() as conn:
            status = await conn.execute(
                """UPDATE push_answer_tokens SET used_at = now()
                   WHERE token_hash = $1 AND used_at IS NULL""",
                token_hash(token),
            )
        return status == "UPDATE 1"

    async def purge(self, before: datetime) -> int:
        async with self._store.connection() as conn:
            status = await conn.execute(
                """DELETE FROM push_answer_tokens t USING asks a
                   WHERE a.ask_id = t.ask_id AND a.status <> 'pending' AND t.created_at < $1""",
                before,
            )
        return int(status.rsplit(" ", 1)[-1])

    # -- the outbox ----------------------------------------------------------------------------

    def due(self, row: asyncpg.Record) -> DuePush:
        return DuePush(
            delivery_id=row["delivery_id"],
            subscription_id=row["subscription_id"],
            account_id=row["account_id"],
            endpoint=row["endpoint"],
            p256dh=row["p256dh"],
            auth=row["auth"],
            event_type=row["event_type"],
            ask_id=row["ask_id"],
            occurred_at=row["occurred_at"],
            attempts=int(row["attempts"]),
        )

    async def record(
        self, push: DuePush, *, result: PushResult, outcome: str, retry_at: datetime | None
    ) -> None:
        async with self._store.transaction() as conn:
            if result == "gone":
                await conn.execute(
                    "DELETE FROM push_subscriptions WHERE subscription_id = $1",
                    push.subscription_id,
                )
                return
            await outbox.record(
                conn,
                outbox.PUSH,
                push.delivery_id,
                attempt=push.attempts + 1,
                state=outbox.settled_state(
                    delivered=result in {"sent", "skipped"},
                    retry_at=retry_at if result == "retried" else None,
                ),
                payload=None,
                retry_at=retry_at if result == "retried" else None,
                duration_ms=0,
                outcome=outcome,
            )
            if result == "sent":
                await conn.execute(
                    """UPDATE push_subscriptions SET last_success_at = now(), last_error = ''
                       WHERE subscription_id = $1""",
                    push.subscription_id,
                )
            elif result != "skipped":
                await conn.execute(
                    "UPDATE push_subscriptions SET last_error = $2 WHERE subscription_id = $1",
                    push.subscription_id,
                    outcome[:MAX_ERROR_LENGTH],
                )


def _subscription(row: asyncpg.Record) -> PushSubscriptionRow:
    return PushSubscriptionRow(
        subscription_id=row["subscription_id"],
        account_id=row["account_id"],
        device_name=row["device_name"],
        created_at=row["created_at"],
        last_success_at=row["last_success_at"],
        last_error=row["last_error"],
    )
