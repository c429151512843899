"""Email on PostgreSQL (migrations/0010_email.sql): people's addresses and their switch, the
reply and unsubscribe tokens (only their SHA-256), the Message-ID of each (ask, person)
thread, and the email outbox, which shares the webhooks' and pushes' claim and record
statements (store/postgres/outbox.py; its destination is the person's account).
"""

from __future__ import annotations

import base64
import secrets
from typing import TYPE_CHECKING, Final

from compass_server.domain.errors import FailedPreconditionError, NotFoundError
from compass_server.store import DueEmail, EmailOutbox, EmailSettingsRow, EmailStore, ReplyTokenRow
from compass_server.store.postgres import outbox
from compass_server.store.postgres.base import new_id, token_hash
from compass_server.store.postgres.rows import account_row
from compass_server.store.postgres.sql import ACCOUNT_COLUMNS

if TYPE_CHECKING:
    from datetime import datetime

    import asyncpg

    from compass_server.store import AccountRow
    from compass_server.store.email import EmailResult, ReplyKind

MAX_OUTCOME_LENGTH: Final = 300
_ACCOUNT: Final = ", ".join(f"a.{c.strip()}" for c in ACCOUNT_COLUMNS.split(","))


def new_token() -> str:
    """A fresh token: 32 lowercase base32 characters (160 bits), safe in an address's local
    part whatever a mail server does to its case."""
    return base64.b32encode(secrets.token_bytes(20)).decode().lower()


class PostgresEmailStore(outbox.OutboxTable[DueEmail], EmailStore, EmailOutbox):
    """The email tables of one PostgresStore (sharing its pool); its outbox's claims:
    store/postgres/outbox.py."""

    table = outbox.EMAIL

    # -- addresses -----------------------------------------------------------------------------

    async def set_email(self, account_id: str, email: str | None) -> EmailSettingsRow:
        async with self._store.transaction() as conn:
            kind = await conn.fetchval(
                "SELECT kind FROM accounts WHERE account_id = $1 FOR NO KEY UPDATE", account_id
            )
            if kind is None:
                raise NotFoundError("account not found")
            if kind != "human":
                raise FailedPreconditionError("only people's accounts have an email address")
            row = await conn.fetchrow(
                """UPDATE accounts SET email = $2 WHERE account_id = $1
                   RETURNING account_id, email, email_asks""",
                account_id,
                email,
            )
        if row is None:  # deleted meanwhile
            raise NotFoundError("account not found")
        return _settings(row)

    async def email_settings(self, account_id: str) -> EmailSettingsRow:
        async with self._store.connection() as conn:
            row = await conn.fetchrow(
                "SELECT account_id, email, email_asks FROM accounts WHERE account_id = $1",
                account_id,
            )
        if row is None:
            raise NotFoundError("account not found")
        return _settings(row)

    async def set_email_asks(self, account: AccountRow, on: bool) -> EmailSettingsRow:
        async with self._store.connection() as conn:
            row = await conn.fetchrow(
                """UPDATE accounts SET email_asks = $2 WHERE account_id = $1
                   RETURNING account_id, email, email_asks""",
                account.account_id,
                on,
            )
        if row is None:
            raise NotFoundError("account not found")
        return _settings(row)

    async def unsubscribe(self, token: str) -> str | None:
        async with self._store.connection() as conn:
            found = await conn.fetchval(
                """UPDATE accounts a SET email_asks = false FROM email_unsubscribe_tokens t
                   WHERE t.token_hash = $1 AND a.account_id = t.account_id
                   RETURNING a.account_id""",
                token_hash(token),
            )
        return None if found is None else str(found)

    # -- reply tokens --------------------------------------------------------------------------

    async def reply_token(self, token: str) -> ReplyTokenRow | None:
        async with self._store.connection() as conn:
            row = await conn.fetchrow(
                f"""SELECT t.ask_id, t.used_at IS NOT NULL AS used, a.email AS email,
                           th.message_id AS thread_id, {_ACCOUNT}
                    FROM email_reply_tokens t
                    JOIN accounts a ON a.account_id = t.account_id
                    LEFT JOIN email_threads th
                        ON th.ask_id = t.ask_id AND th.account_id = t.account_id
                    WHERE t.token_hash = $1""",  # noqa: S608 - a constant
                token_hash(token),
            )
        if row is None:
            return None
        return ReplyTokenRow(
            ask_id=row["ask_id"],
            account=account_row(row),
            email=row["email"],
            used=row["used"],
            thread_id=row["thread_id"],
        )

    async def spend_reply_tokens(self, ask_id: str, account_id: str) -> bool:
        async with self._store.connection() as conn:
            status = await conn.execute(
                """UPDATE email_reply_tokens SET used_at = now()
                   WHERE ask_id = $1 AND account_id = $2 AND used_at IS NULL""",
                ask_id,
                account_id,
            )
        return status != "UPDATE 0"

    async def queue_reply(
        self, ask_id: str, account_id: str, kind: ReplyKind, payload: str, *, most: int
    ) -> str | None:
        delivery_id = new_id("mail")
        async with self._store.transaction() as conn:
            # One thread's replies are counted one at a time (the person's row is locked).
            await conn.execute(
                "SELECT 1 FROM accounts WHERE account_id = $1 FOR NO KEY UPDATE", account_id
            )
            sent = await conn.fetchval(
                """SELECT count(*) FROM email_deliveries
                   WHERE ask_id = $1 AND account_id = $2 AND event_type <> 'ask'""",
                ask_id,
                account_id,
            )
            if int(sent) >= most:
                return None
            await conn.execute(
                """INSERT INTO email_deliveries (delivery_id, account_id, event_type, ask_id,
                                                 payload)
                   VALUES ($1, $2, $3, $4, $5)""",
                delivery_id,
                account_id,
                kind,
                ask_id,
                payload,
            )
        return delivery_id

    # -- what the sender mints -----------------------------------------------------------------

    async def new_reply_token(self, ask_id: str, account_id: str) -> str:
        token = new_token()
        async with self._store.connection() as conn:
            await conn.execute(
                """INSERT INTO email_reply_tokens (token_hash, ask_id, account_id)
                   VALUES ($1, $2, $3)""",
                token_hash(token),
                ask_id,
                account_id,
            )
        return token

    async def new_unsubscribe_token(self, account_id: str) -> str:
        token = new_token()
        async with self._store.connection() as conn:
            await conn.execute(
                """INSERT INTO email_unsubscribe_tokens (token_hash, account_id)
                   VALUES ($1, $2)""",
                token_hash(token),
                account_id,
            )
        return token

    async def thread_id(self, ask_id: str, account_id: str, candidate: str) -> str:
        async with self._store.transaction() as conn:
            await conn.execute(
                """INSERT INTO email_threads (ask_id, account_id, message_id)
                   VALUES ($1, $2, $3) ON CONFLICT (ask_id, account_id) DO NOTHING""",
                ask_id,
                account_id,
                candidate,
            )
            kept = await conn.fetchval(
                "SELECT message_id FROM email_threads WHERE ask_id = $1 AND account_id = $2",
                ask_id,
                account_id,
            )
        return str(kept)

    async def purge(self, before: datetime) -> int:
        async with self._store.connection() as conn:
            status = await conn.execute(
                """DELETE FROM email_reply_tokens t USING asks a
                   WHERE a.ask_id = t.ask_id AND a.status <> 'pending' AND t.created_at < $1""",
                before,
            )
        return int(status.rsplit(" ", 1)[-1])

    # -- the outbox ----------------------------------------------------------------------------

    def due(self, row: asyncpg.Record) -> DueEmail:
        return DueEmail(
            delivery_id=row["delivery_id"],
            account_id=row["account_id"],
            email=row["email"],
            email_asks=row["email_asks"],
            event_type=row["event_type"],
            ask_id=row["ask_id"],
            occurred_at=row["occurred_at"],
            payload=row["payload"],
            attempts=int(row["attempts"]),
        )

    async def defer(self, mail: DueEmail, until: datetime) -> None:
        async with self._store.connection() as conn:
            await conn.execute(
                """UPDATE email_deliveries SET next_attempt_at = $2
                   WHERE delivery_id = $1 AND state = 'pending'""",
                mail.delivery_id,
                until,
            )

    async def record(
        self, mail: DueEmail, *, result: EmailResult, outcome: str, retry_at: datetime | None
    ) -> None:
        retry = retry_at if result == "retried" else None
        async with self._store.transaction() as conn:
            await outbox.record(
                conn,
                outbox.EMAIL,
                mail.delivery_id,
                attempt=mail.attempts + 1,
                state=outbox.settled_state(delivered=result in {"sent", "skipped"}, retry_at=retry),
                payload=None,
                retry_at=retry,
                duration_ms=0,
                outcome=outcome,
            )
            await conn.execute(
                "UPDATE email_deliveries SET last_outcome = $2 WHERE delivery_id = $1",
                mail.delivery_id,
                outcome[:MAX_OUTCOME_LENGTH],
            )


def _settings(row: asyncpg.Record) -> EmailSettingsRow:
    return EmailSettingsRow(
        account_id=row["account_id"], email=row["email"], email_asks=row["email_asks"]
    )
