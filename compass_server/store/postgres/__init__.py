"""PostgreSQL implementation of the Store port (asyncpg).

Concurrency design: every write to a channel (append, update, answer) first locks the
channel's row (`FOR NO KEY UPDATE`) and bumps `channels.revision` under that lock. So writes
to one channel are serialised, revisions commit in increasing order (a watcher resuming after
revision N never misses a later-committing smaller revision), and of several concurrent
answers to one ask exactly one finds it unanswered. Reads that need several queries run in one
read-only REPEATABLE READ transaction, so they see one snapshot.

An answer is written optimistically (two round trips, no explicit transaction): the ask is
read and judged without a lock, then one statement locks the channel row, bumps the revision
only if it is still the one read, and writes. Since every write to a channel bumps it, an
unchanged revision under the lock means nothing changed since the read. A changed revision,
or answers that do not fit the ask as read, take the locked path: lock the channel, read the
ask again, judge it, write. So every write, and every refusal of answers that do not fit, is
decided on the ask as it is under the lock; "already answered" (and an identical retry) may
be decided on the read, as an answered ask stays answered.

An ask's outcome (DeclineAsk, CloseAsk, the deadline sweep) is written on the locked path
only: lock the channel, read the ask, judge it, write it if still PENDING, bump the revision,
notify. So among racing RespondToAsk, DeclineAsk, CloseAsk and sweeps exactly one finds the
ask pending (docs/ask-outcomes.md). A sweep runs in one transaction holding a PostgreSQL
advisory lock (`SWEEPER_LOCK_KEY`, taken with pg_try_advisory_xact_lock): one process per
database sweeps at a time, and the lock ends with the transaction.

All asyncpg and connection errors are translated into domain errors in
`base.translate_errors`, the only place that knows asyncpg's exception classes.

The package: `base` (pool, transactions, error translation, ids), `sql` (the statements),
`rows` (rows -> dataclasses, answer state, page tokens), and one mixin per side of the store
(`accounts`, `messages`, `answers`, `listener`, `mcp`) that `PostgresStore` combines."""

from __future__ import annotations

from compass_server.store import Store
from compass_server.store.postgres.accounts import AccountsMixin
from compass_server.store.postgres.answers import AnswersMixin
from compass_server.store.postgres.base import PAGE_BYTES, REPLAY_BYTES, TOKEN_PREFIX, new_id
from compass_server.store.postgres.email import PostgresEmailStore
from compass_server.store.postgres.listener import ListenerMixin
from compass_server.store.postgres.mcp import McpMixin
from compass_server.store.postgres.messages import MessagesMixin
from compass_server.store.postgres.push import PostgresPushStore
from compass_server.store.postgres.sql import SWEEPER_LOCK_KEY
from compass_server.store.postgres.webhooks import WebhookStore

__all__ = [
    "PAGE_BYTES",
    "REPLAY_BYTES",
    "SWEEPER_LOCK_KEY",
    "TOKEN_PREFIX",
    "PostgresStore",
    "new_id",
]


class PostgresStore(AccountsMixin, McpMixin, MessagesMixin, AnswersMixin, ListenerMixin, Store):
    """The Store on PostgreSQL. Use as `async with PostgresStore(dsn) as store:`.

    No I/O happens until `__aenter__`, which creates the connection pool.
    """

    def webhooks(self) -> WebhookStore:
        """The webhook tables, on this store's pool (their outbox is filled by triggers)."""
        return WebhookStore(self)

    def push(self) -> PostgresPushStore:
        """The Web Push tables, on this store's pool (their outbox is filled by triggers)."""
        return PostgresPushStore(self)

    def push_outbox(self) -> PostgresPushStore:
        return PostgresPushStore(self)

    def email(self) -> PostgresEmailStore:
        """People's addresses and the email tokens, on this store's pool."""
        return PostgresEmailStore(self)

    def email_outbox(self) -> PostgresEmailStore:
        return PostgresEmailStore(self)
