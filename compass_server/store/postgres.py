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

All asyncpg and connection errors are translated into domain errors in `_translate_errors`,
the only place that knows asyncpg's exception classes.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import logging
import secrets
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

import asyncpg

from compass_server import domain
from compass_server.domain.errors import (
    AlreadyExistsError,
    CompassError,
    ConflictError,
    CorruptDataError,
    FailedPreconditionError,
    FieldViolation,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    UnavailableError,
)
from compass_server.store import (
    DEFAULT_PAGE_SIZE,
    EVENTS_CHANNEL,
    MAX_PAGE_SIZE,
    MAX_REPLAY_LIMIT,
    AccountKind,
    AccountRow,
    AskRow,
    ChangeEvent,
    ChannelRow,
    MessagePage,
    MessageRow,
    PendingAskPage,
    PendingAskRow,
    ReplayBatch,
    Store,
    WorkspaceRow,
)
from compass_server.store.blocks import (
    apply_answer_state,
    decode_blocks,
    encode_answers,
    encode_blocks,
)
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable, Generator, Sequence
    from types import TracebackType
    from typing import Self, TypeAlias

    from asyncpg.pool import PoolConnectionProxy

    _Conn: TypeAlias = PoolConnectionProxy[asyncpg.Record]

logger = logging.getLogger(__name__)

TOKEN_PREFIX: Final = "cmp_"  # noqa: S105 - a public prefix, not a secret
PAGE_BYTES: Final = 2 << 20
"""Default byte budget of one ListMessages page (stored blocks, as JSON text)."""
REPLAY_BYTES: Final = 256 << 10
"""Default byte budget of one WatchChannel replay batch."""
SIGN_IN_CODE_PREFIX: Final = "cmpl_"
"""Starts every one-time sign-in code (a public prefix, not a secret)."""
MAX_SIGN_IN_CODE: Final = 100
"""Longer strings are not codes of ours: refused before any hashing or I/O."""
_MAX_TOKEN_LENGTH: Final = 200
_MINT_ATTEMPTS: Final = 5
_APPLICATION_NAME: Final = "compass"


def new_id(prefix: str) -> str:
    """A fresh random id: `prefix_` + 26 lowercase base32 characters (128 bits)."""
    return f"{prefix}_{base64.b32encode(secrets.token_bytes(16)).decode().rstrip('=').lower()}"


def _token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


# ---------------------------------------------------------------------------------------------
# Error translation: the one place asyncpg exceptions become domain errors.

_UNIQUE_MESSAGES: Final = {
    "workspaces_name_key": "a workspace with this name already exists",
    "channels_workspace_name_key": "a channel with this name already exists in the workspace",
    "messages_client_message_id_key": "a message with this client_message_id already exists in the channel",
}
_FOREIGN_KEY_MESSAGES: Final = {
    "channels_workspace_id_fkey": "workspace not found",
    "workspace_members_workspace_id_fkey": "workspace not found",
    "workspace_members_account_id_fkey": "account not found",
    "channel_participants_channel_id_fkey": "channel not found",
    "channel_participants_account_id_fkey": "account not found",
}
_UNAVAILABLE: Final = (
    asyncpg.PostgresConnectionError,  # class 08: connection lost/refused mid-operation
    asyncpg.OperatorInterventionError,  # class 57: admin shutdown, crash, cannot connect now
    asyncpg.InsufficientResourcesError,  # class 53: too many connections, disk full
    asyncpg.ReadOnlySQLTransactionError,  # a standby during failover
    OSError,  # refused/reset sockets, and TimeoutError (pool acquire, connect, command)
)


#: What ends (or prevents) a connection outside a request: the listener reconnects on it,
#: shutdown terminates the pool on it.
_CONNECTION_TROUBLE: Final = (
    OSError,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
)


@contextlib.contextmanager
def _translate_errors() -> Generator[None]:
    try:
        yield
    except CompassError:
        raise
    except asyncpg.UniqueViolationError as exc:
        raise AlreadyExistsError(
            _UNIQUE_MESSAGES.get(exc.constraint_name or "", "already exists")
        ) from exc
    except asyncpg.ForeignKeyViolationError as exc:
        raise NotFoundError(
            _FOREIGN_KEY_MESSAGES.get(exc.constraint_name or "", "referenced record not found")
        ) from exc
    except (asyncpg.SerializationError, asyncpg.DeadlockDetectedError) as exc:
        raise ConflictError("concurrent update; retry") from exc
    except (asyncpg.UntranslatableCharacterError, asyncpg.CharacterNotInRepertoireError) as exc:
        # The domain checks refuse NUL up front; this catches any other text PostgreSQL
        # cannot store (e.g. an unpaired surrogate) without letting it become INTERNAL.
        raise InvalidArgumentError(
            "the request holds text the database cannot store (NUL or invalid Unicode)"
        ) from exc
    except _UNAVAILABLE as exc:
        raise UnavailableError("database unavailable") from exc
    except asyncpg.InternalClientError as exc:
        # Seen when the server ends a session between two calls ("cannot switch to state
        # N; another operation is in progress", MagicStack/asyncpg#1069): a lost connection.
        raise UnavailableError("database unavailable") from exc
    except asyncpg.InterfaceError as exc:
        # A connection closed under us ("connection is closed") or a pool shutting down
        # ("pool is closing"); any other InterfaceError is a programming error: re-raised.
        if "clos" in str(exc):
            raise UnavailableError("database unavailable") from exc
        raise


# ---------------------------------------------------------------------------------------------
# SQL

_ACCOUNT_COLUMNS: Final = "account_id, kind, name, disabled, created_at"
_CHANNEL_COLUMNS: Final = "channel_id, workspace_id, name, revision, created_at"
_MESSAGE_COLUMNS: Final = (
    "message_id, channel_id, author_account_id, client_message_id, blocks, "
    "created_revision, revision, created_at, updated_at, "
    # Who wrote it, by name and kind (accounts are never deleted; the primary key finds it).
    "(SELECT row(au.name, au.kind) FROM accounts au "
    "WHERE au.account_id = messages.author_account_id) AS author"
)

_PING: Final = "SELECT 1"
_NOTIFY: Final = "SELECT pg_notify($1, $2)"

_INSERT_WORKSPACE: Final = """
    INSERT INTO workspaces (workspace_id, name)
    VALUES ($1, $2)
    ON CONFLICT (workspace_id) DO NOTHING
    RETURNING workspace_id, name, created_at
"""
_INSERT_CHANNEL: Final = f"""
    INSERT INTO channels (channel_id, workspace_id, name)
    VALUES ($1, $2, $3)
    ON CONFLICT (channel_id) DO NOTHING
    RETURNING {_CHANNEL_COLUMNS}
"""  # noqa: S608 -- only our own column list is interpolated
_INSERT_ACCOUNT: Final = f"""
    INSERT INTO accounts (account_id, kind, name)
    VALUES ($1, $2, $3)
    ON CONFLICT (account_id) DO NOTHING
    RETURNING {_ACCOUNT_COLUMNS}
"""  # noqa: S608 -- only our own column list is interpolated
_ANY_ACCOUNT: Final = "SELECT EXISTS (SELECT 1 FROM accounts)"
_INSERT_TOKEN: Final = "INSERT INTO api_tokens (token_hash, account_id) VALUES ($1, $2)"  # noqa: S105 - SQL, not a secret
_SELECT_ACCOUNT: Final = f"SELECT {_ACCOUNT_COLUMNS} FROM accounts WHERE account_id = $1"  # noqa: S608 -- only our own column list is interpolated
_DISABLE_ACCOUNT: Final = f"""
    UPDATE accounts SET disabled = true
    WHERE account_id = $1
    RETURNING {_ACCOUNT_COLUMNS}
"""  # noqa: S608 -- only our own column list is interpolated
_INSERT_SESSION_TOKEN: Final = (
    "INSERT INTO api_tokens (token_hash, account_id, kind) VALUES ($1, $2, 'session')"  # noqa: S105 - SQL, not a secret
)
_INSERT_SIGN_IN_LINK: Final = """
    INSERT INTO sign_in_links (code_hash, account_id, expires_at)
    VALUES ($1, $2, now() + $3::interval)
    RETURNING expires_at
"""
# Used once: the UPDATE takes the row, so two exchanges of one code cannot both succeed.
_USE_SIGN_IN_LINK: Final = f"""
    WITH used AS (
        UPDATE sign_in_links SET used_at = now()
        WHERE code_hash = $1 AND used_at IS NULL AND revoked_at IS NULL AND expires_at > now()
        RETURNING account_id
    )
    SELECT {_ACCOUNT_COLUMNS} FROM accounts WHERE account_id = (SELECT account_id FROM used)
"""  # noqa: S608 -- only our own column list is interpolated
_DELETE_SESSIONS: Final = "DELETE FROM api_tokens WHERE account_id = $1 AND kind = 'session'"
_VOID_SIGN_IN_LINKS: Final = """
    UPDATE sign_in_links SET revoked_at = now()
    WHERE account_id = $1 AND used_at IS NULL AND revoked_at IS NULL
"""
_SELECT_VALID_TOKEN_HASHES: Final = """
    SELECT t.token_hash
    FROM api_tokens t
    JOIN accounts a ON a.account_id = t.account_id
    WHERE t.token_hash = ANY($1::bytea[]) AND NOT a.disabled
"""  # noqa: S105 - SQL, not a secret
_SELECT_ACCOUNT_BY_TOKEN: Final = """
    SELECT t.token_hash, a.account_id, a.kind, a.name, a.disabled, a.created_at
    FROM api_tokens t
    JOIN accounts a ON a.account_id = t.account_id
    WHERE t.token_hash = $1
"""  # noqa: S105 - SQL, not a secret
_INSERT_MEMBER: Final = """
    INSERT INTO workspace_members (workspace_id, account_id)
    VALUES ($1, $2)
    ON CONFLICT DO NOTHING
"""
_INSERT_MEMBER_OF_CHANNEL: Final = """
    INSERT INTO workspace_members (workspace_id, account_id)
    SELECT workspace_id, $2 FROM channels WHERE channel_id = $1
    ON CONFLICT DO NOTHING
"""
_INSERT_PARTICIPANT: Final = """
    INSERT INTO channel_participants (channel_id, account_id)
    VALUES ($1, $2)
    ON CONFLICT DO NOTHING
"""

_SELECT_PARTICIPATING_CHANNELS: Final = """
    SELECT c.channel_id, c.workspace_id, c.name, c.revision, c.created_at
    FROM channel_participants p
    JOIN channels c ON c.channel_id = p.channel_id
    WHERE p.account_id = $1
    ORDER BY c.created_at, c.channel_id
"""
_SELECT_VISIBLE_CHANNEL: Final = """
    SELECT c.channel_id, c.workspace_id, c.name, c.revision, c.created_at
    FROM channels c
    JOIN workspace_members wm ON wm.workspace_id = c.workspace_id AND wm.account_id = $2
    WHERE c.channel_id = $1
"""
_SELECT_MEMBER_WORKSPACES: Final = """
    SELECT w.workspace_id, w.name, w.created_at
    FROM workspace_members wm
    JOIN workspaces w ON w.workspace_id = wm.workspace_id
    WHERE wm.account_id = $1
    ORDER BY w.name, w.workspace_id
"""
# Pages and replay batches are bounded by bytes as well as by count (issue 12 F1: one
# ListMessages of 500 x 1 MB messages took the server to ~1 GB). The sizes are read first
# (only integers come back), then only the rows that fit, in the same snapshot.
_SELECT_PAGE_SIZES: Final = """
    SELECT created_revision AS position, octet_length(blocks::text) AS bytes
    FROM messages
    WHERE channel_id = $1 AND created_revision > $2
    ORDER BY created_revision
    LIMIT $3
"""
_SELECT_MESSAGE_PAGE: Final = f"""
    SELECT {_MESSAGE_COLUMNS}
    FROM messages
    WHERE channel_id = $1 AND created_revision > $2 AND created_revision <= $3
    ORDER BY created_revision
"""  # noqa: S608 -- only our own column list is interpolated
_SELECT_REPLAY_SIZES: Final = """
    SELECT revision AS position, octet_length(blocks::text) AS bytes
    FROM messages
    WHERE channel_id = $1 AND revision > $2
    ORDER BY revision
    LIMIT $3
"""
_SELECT_MESSAGES_AFTER: Final = f"""
    SELECT {_MESSAGE_COLUMNS}
    FROM messages
    WHERE channel_id = $1 AND revision > $2 AND revision <= $3
    ORDER BY revision
"""  # noqa: S608 -- only our own column list is interpolated
_SELECT_MESSAGE: Final = f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE message_id = $1"  # noqa: S608 -- only our own column list is interpolated
_SELECT_MESSAGE_BY_CLIENT_ID: Final = f"""
    SELECT {_MESSAGE_COLUMNS}
    FROM messages
    WHERE channel_id = $1 AND client_message_id = $2
"""  # noqa: S608 -- only our own column list is interpolated
# The state of an ask the `asks` row holds (merged into its block on every read).
_ASK_STATE_COLUMNS: Final = """
    a.answers, a.answered_by_account_id, a.answered_at, ans.name AS answered_by_name,
    a.status, a.deadline, a.on_timeout, a.closed_by_account_id, a.closed_at,
    cls.name AS closed_by_name, a.close_reason
"""
_ASK_STATE_JOINS: Final = """
    LEFT JOIN accounts ans ON ans.account_id = a.answered_by_account_id
    LEFT JOIN accounts cls ON cls.account_id = a.closed_by_account_id
"""
_SELECT_ASK_STATE_OF_MESSAGES: Final = f"""
    SELECT a.ask_id, a.message_id, {_ASK_STATE_COLUMNS}
    FROM asks a
    {_ASK_STATE_JOINS}
    WHERE a.message_id = ANY($1::text[])
"""  # noqa: S608 -- only our own column lists are interpolated
_SELECT_PENDING_ASKS: Final = f"""
    SELECT a.ask_id, a.message_id, a.channel_id, c.name AS channel_name, m.blocks,
           m.author_account_id, au.name AS author_name, a.created_at AS asked_at,
           {_ASK_STATE_COLUMNS}
    FROM asks a
    JOIN channel_participants p ON p.channel_id = a.channel_id AND p.account_id = $1
    JOIN channels c ON c.channel_id = a.channel_id
    JOIN messages m ON m.message_id = a.message_id
    JOIN accounts au ON au.account_id = m.author_account_id
    {_ASK_STATE_JOINS}
    WHERE a.status = 'pending' AND (a.created_at, a.ask_id) > ($2::timestamptz, $3::text)
    ORDER BY a.created_at, a.ask_id
    LIMIT $4
"""  # noqa: S608 -- only our own column lists are interpolated
_SELECT_NOTIFIED_ASK: Final = f"""
    SELECT a.ask_id, a.message_id, a.channel_id, c.name AS channel_name, c.workspace_id,
           m.blocks, m.author_account_id, au.name AS author_name, au.kind AS author_kind,
           a.created_at AS asked_at,
           {_ASK_STATE_COLUMNS}
    FROM asks a
    JOIN channels c ON c.channel_id = a.channel_id
    JOIN messages m ON m.message_id = a.message_id
    JOIN accounts au ON au.account_id = m.author_account_id
    {_ASK_STATE_JOINS}
    WHERE a.ask_id = $1
"""  # noqa: S608 -- only our own column lists are interpolated
_SELECT_ASK: Final = f"""
    SELECT a.ask_id, a.message_id, a.channel_id, m.blocks, m.author_account_id,
           {_ASK_STATE_COLUMNS},
           EXISTS (
               SELECT 1 FROM channel_participants p
               WHERE p.channel_id = a.channel_id AND p.account_id = $2
           ) AS participant,
           c.revision AS channel_revision
    FROM asks a
    JOIN messages m ON m.message_id = a.message_id
    JOIN channels c ON c.channel_id = a.channel_id
    JOIN workspace_members wm ON wm.workspace_id = c.workspace_id AND wm.account_id = $2
    {_ASK_STATE_JOINS}
    WHERE a.ask_id = $1
"""  # noqa: S608 -- only our own column lists are interpolated

# Locks the channel row first: every write to a channel goes through here (see module doc).
_LOCK_CHANNEL_FOR_ACTOR: Final = """
    SELECT c.revision,
           EXISTS (
               SELECT 1 FROM workspace_members wm
               WHERE wm.workspace_id = c.workspace_id AND wm.account_id = $2
           ) AS member,
           EXISTS (
               SELECT 1 FROM channel_participants p
               WHERE p.channel_id = c.channel_id AND p.account_id = $2
           ) AS participant
    FROM channels c
    WHERE c.channel_id = $1
    FOR NO KEY UPDATE
"""
_LOCK_CHANNEL: Final = "SELECT revision FROM channels WHERE channel_id = $1 FOR NO KEY UPDATE"
_BUMP_REVISION: Final = """
    UPDATE channels SET revision = revision + 1
    WHERE channel_id = $1
    RETURNING revision
"""
_SELECT_MESSAGE_FOR_ACTOR: Final = """
    SELECT m.channel_id, m.author_account_id
    FROM messages m
    JOIN channels c ON c.channel_id = m.channel_id
    JOIN workspace_members wm ON wm.workspace_id = c.workspace_id AND wm.account_id = $2
    WHERE m.message_id = $1
"""
_INSERT_MESSAGE: Final = """
    INSERT INTO messages (message_id, channel_id, author_account_id, client_message_id,
                          blocks, created_revision, revision)
    VALUES ($1, $2, $3, $4, $5, $6, $6)   -- $1 message_id, $2 channel_id, $3 author,
                                          -- $4 client_message_id, $5 blocks, $6 revision
    ON CONFLICT (message_id) DO NOTHING
    RETURNING message_id, created_at, updated_at
"""
# $1 ask ids, $4 their deadlines (ISO 8601 text or NULL: a timestamptz[] parameter would make
# asyncpg introspect its type, which leaves `jit` set on the session), $5 their on_timeout
# policies (parallel arrays).
_INSERT_ASKS: Final = """
    INSERT INTO asks (ask_id, message_id, channel_id, deadline, on_timeout)
    SELECT t.ask_id, $2, $3, t.deadline::timestamptz, t.on_timeout
    FROM unnest($1::text[], $4::text[], $5::text[]) AS t(ask_id, deadline, on_timeout)
    ON CONFLICT (ask_id) DO NOTHING
    RETURNING ask_id
"""
_UPDATE_MESSAGE_BLOCKS: Final = """
    UPDATE messages SET blocks = $2
    WHERE message_id = $1
"""
_REPLACE_MESSAGE: Final = """
    UPDATE messages SET blocks = $2, revision = $3, updated_at = now()
    WHERE message_id = $1
    RETURNING created_at, updated_at
"""
# answer_ask's write in one statement, so in one round trip and (outside a transaction) one
# transaction: bump the channel revision, if it is still $2, under the channel row's lock
# (which `bumped` takes first: the other parts join it); answer the ask; touch its message at
# the new revision; notify, the database completing the payload text with the revision
# ($8 || revision || $9, see ChangeEvent.payload_around_revision). No row when the revision
# was no longer $2: nothing is written. A revision unchanged under the lock means nothing in
# the channel changed since it was read (every write to a channel bumps it under that lock),
# so the ask is still unanswered as read and `answered` always has its row.
_ANSWER_ASK: Final = """
    WITH bumped AS (
        UPDATE channels SET revision = revision + 1
        WHERE channel_id = $1 AND revision = $2
        RETURNING revision
    ), answered AS (
        UPDATE asks SET status = 'answered', answers = $4, answered_by_account_id = $5,
                        answered_at = now()
        FROM bumped
        WHERE ask_id = $3 AND status = 'pending'
        RETURNING answered_at
    ), touched AS (
        UPDATE messages SET revision = bumped.revision, updated_at = now()
        FROM bumped
        WHERE message_id = $6
    )
    SELECT answered.answered_at,
           pg_notify($7, $8::text || bumped.revision::text || $9::text)
    FROM bumped, answered
"""
# Closes a pending ask without a participant's answer (the caller holds the channel lock):
# $2 status, $3 who closed it (NULL: the server), $4 reason, $5 the runtime's answers
# (TIMED_OUT; NULL otherwise) recorded as answered by $3.
_CLOSE_ASK: Final = """
    UPDATE asks
    SET status = $2, closed_by_account_id = $3, closed_at = now(), close_reason = $4,
        answers = $5,
        answered_by_account_id = CASE WHEN $5::jsonb IS NULL THEN NULL ELSE $3 END,
        answered_at = CASE WHEN $5::jsonb IS NULL THEN NULL ELSE now() END
    WHERE ask_id = $1 AND status = 'pending'
    RETURNING closed_at
"""
_TOUCH_MESSAGE: Final = """
    UPDATE messages SET revision = $2, updated_at = now()
    WHERE message_id = $1
"""
#: Key of the advisory lock held by the one sweeper of a database ("cmpswp" in ASCII).
SWEEPER_LOCK_KEY: Final = 0x636D7073777070
_TRY_SWEEPER_LOCK: Final = "SELECT pg_try_advisory_xact_lock($1)"
# Pending asks past their deadline ($1 now), PICK_RECOMMENDED ones past it by the grace ($2
# seconds): the runtime owns that deadline and reports TIMED_OUT itself while it lives.
_SELECT_DUE_ASKS: Final = """
    SELECT ask_id, channel_id, message_id
    FROM asks
    WHERE status = 'pending' AND deadline IS NOT NULL AND deadline <= $1
      AND (on_timeout <> 'pick_recommended' OR deadline <= $1 - make_interval(secs => $2))
    ORDER BY channel_id, deadline, ask_id
    LIMIT $3
"""


# ---------------------------------------------------------------------------------------------
# The store


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


async def _init_connection(conn: asyncpg.Connection[asyncpg.Record]) -> None:
    # JSONB in and out as Python values; the codec is per connection, hence the pool's init=.
    await conn.set_type_codec("jsonb", encoder=_dumps, decoder=json.loads, schema="pg_catalog")


async def _reset_connection(_conn: asyncpg.Connection[asyncpg.Record]) -> None:
    """What the pool does to a connection released to it, beyond what asyncpg always does
    (roll back a transaction left open, drop listener callbacks): nothing.

    asyncpg's default reset sends `SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *;
    RESET ALL;` on every release: a round trip per pooled call (2 of the 5 an answer and its
    token lookup would take) to undo session state this store never leaves on a pooled
    connection. It takes no advisory lock (the migration runner's is on a connection of its
    own), opens no cursor (and a cursor ends with its transaction, which asyncpg ends),
    LISTENs only on the listener's own connection, creates no temporary table, and sets
    nothing with SET (settings come from the connect parameters, which RESET ALL would keep
    anyway). Prepared statements are asyncpg's statement cache, kept across releases either
    way. tests/integration/store/test_pool.py checks that no store call leaves any of it.
    """


class PostgresStore(Store):
    """The Store on PostgreSQL. Use as `async with PostgresStore(dsn) as store:`.

    No I/O happens until `__aenter__`, which creates the connection pool.
    """

    def __init__(
        self,
        dsn: str,
        *,
        pool_min: int = 1,
        pool_max: int = 10,
        timeout: float = 10.0,
        id_factory: Callable[[str], str] = new_id,
        page_bytes: int = PAGE_BYTES,
        replay_bytes: int = REPLAY_BYTES,
    ) -> None:
        """
        Args:
            dsn: PostgreSQL connection URL.
            pool_min: connections opened at start and kept.
            pool_max: most connections in use at once.
            timeout: seconds for connecting, acquiring a pooled connection and each command;
                exceeding it is reported as `UnavailableError`.
            id_factory: mints ids from a prefix (tests inject collisions through it).
            page_bytes: most bytes of stored blocks one ListMessages page holds (but always
                one message).
            replay_bytes: the same for one `messages_after` batch (a WatchChannel replay
                holds one batch while its client drains it).
        """
        self._page_bytes = page_bytes
        self._replay_bytes = replay_bytes
        self._dsn = dsn
        self._pool_min = pool_min
        self._pool_max = pool_max
        self._timeout = timeout
        self._new_id = id_factory
        self._pool: asyncpg.Pool[asyncpg.Record] | None = None

    async def __aenter__(self) -> Self:
        """Create the pool.

        Raises:
            UnavailableError: the database cannot be reached.
        """
        with _translate_errors():
            self._pool = await asyncpg.create_pool(
                self._dsn,
                min_size=self._pool_min,
                max_size=self._pool_max,
                timeout=self._timeout,
                command_timeout=self._timeout,
                init=_init_connection,
                reset=_reset_connection,
                server_settings={"application_name": _APPLICATION_NAME},
            )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        try:
            await asyncio.wait_for(pool.close(), timeout=self._timeout)
        except _CONNECTION_TROUBLE:
            # A connection still busy (or the server gone) must not block shutdown.
            pool.terminate()

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncGenerator[_Conn]:
        if self._pool is None:
            raise RuntimeError("PostgresStore is not open; use `async with`")
        with _translate_errors():
            async with self._pool.acquire(timeout=self._timeout) as conn:
                try:
                    yield conn
                except asyncpg.InternalClientError:
                    # A session the server terminated can leave asyncpg's protocol in a
                    # state no later call gets out of (MagicStack/asyncpg#1069); make sure
                    # the pool never hands this connection out again.
                    conn.terminate()
                    raise

    @contextlib.asynccontextmanager
    async def _write(self) -> AsyncGenerator[_Conn]:
        async with self._connection() as conn, conn.transaction():
            yield conn

    @contextlib.asynccontextmanager
    async def _snapshot(self) -> AsyncGenerator[_Conn]:
        async with (
            self._connection() as conn,
            conn.transaction(isolation="repeatable_read", readonly=True),
        ):
            yield conn

    async def _insert_minted(
        self, conn: _Conn, prefix: str, query: str, *args: object
    ) -> asyncpg.Record:
        # The insert says ON CONFLICT (id) DO NOTHING, so a collision returns no row instead
        # of aborting the transaction, and we mint again.
        for _ in range(_MINT_ATTEMPTS):
            row = await conn.fetchrow(query, self._new_id(prefix), *args)
            if row is not None:
                return row
        raise RuntimeError(f"could not mint a unique {prefix} id in {_MINT_ATTEMPTS} attempts")

    # -- lifecycle ---------------------------------------------------------------------------

    async def ping(self) -> None:
        async with self._connection() as conn:
            await conn.fetchval(_PING)

    def pool_in_use(self) -> int | None:
        """Pool connections checked out now (None before the pool opens); for /metrics."""
        pool = self._pool
        if pool is None:
            return None
        return pool.get_size() - pool.get_idle_size()

    async def count_pending(self) -> int:
        """How many asks are PENDING now, in every channel; for /metrics."""
        async with self._connection() as conn:
            return int(await conn.fetchval("SELECT count(*) FROM asks WHERE status = 'pending'"))

    # -- accounts, workspaces, channels -------------------------------------------------------

    async def create_workspace(self, name: str) -> WorkspaceRow:
        domain.check_text("name", name, max_length=domain.MAX_NAME_LENGTH)
        async with self._connection() as conn:
            row = await self._insert_minted(conn, "ws", _INSERT_WORKSPACE, name)
        return WorkspaceRow(
            workspace_id=row["workspace_id"], name=row["name"], created_at=row["created_at"]
        )

    async def create_channel(self, workspace_id: str, name: str) -> ChannelRow:
        domain.check_text("name", name, max_length=domain.MAX_NAME_LENGTH)
        async with self._connection() as conn:
            row = await self._insert_minted(conn, "ch", _INSERT_CHANNEL, workspace_id, name)
        return _channel_row(row)

    async def create_account(self, kind: AccountKind, name: str) -> tuple[AccountRow, str]:
        domain.check_text("name", name, max_length=domain.MAX_NAME_LENGTH)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        async with self._write() as conn:
            row = await self._insert_minted(conn, "acct", _INSERT_ACCOUNT, kind.value, name)
            await conn.execute(_INSERT_TOKEN, _token_hash(token), row["account_id"])
        return _account_row(row), token

    async def get_account(self, account_id: str) -> AccountRow:
        async with self._connection() as conn:
            row = await conn.fetchrow(_SELECT_ACCOUNT, account_id)
        if row is None:
            raise NotFoundError("account not found")
        return _account_row(row)

    async def valid_tokens(self, tokens: Sequence[str]) -> set[str]:
        by_hash = {_token_hash(token): token for token in tokens}
        async with self._connection() as conn:
            rows = await conn.fetch(_SELECT_VALID_TOKEN_HASHES, list(by_hash))
        return {by_hash[bytes(row["token_hash"])] for row in rows}

    async def create_sign_in_link(self, account_id: str, ttl: timedelta) -> tuple[str, datetime]:
        account = await self.get_account(account_id)
        if account.disabled or account.kind is not AccountKind.HUMAN:
            raise FailedPreconditionError("sign-in links are for enabled accounts of people")
        code = SIGN_IN_CODE_PREFIX + secrets.token_urlsafe(32)
        async with self._connection() as conn:
            expires_at = await conn.fetchval(
                _INSERT_SIGN_IN_LINK, _token_hash(code), account_id, ttl
            )
        return code, expires_at

    async def exchange_sign_in_link(self, code: str) -> tuple[AccountRow, str] | None:
        if not code.startswith(SIGN_IN_CODE_PREFIX) or len(code) > MAX_SIGN_IN_CODE:
            return None
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        async with self._write() as conn:
            row = await conn.fetchrow(_USE_SIGN_IN_LINK, _token_hash(code))
            if row is None:
                return None
            account = _account_row(row)
            if account.disabled or account.kind is not AccountKind.HUMAN:
                return None  # the code stays used: it was spent on an account that may not sign in
            await conn.execute(_INSERT_SESSION_TOKEN, _token_hash(token), account.account_id)
        return account, token

    async def revoke_sessions(self, account_id: str) -> tuple[int, int]:
        async with self._write() as conn:
            if await conn.fetchrow(_SELECT_ACCOUNT, account_id) is None:
                raise NotFoundError("account not found")
            sessions = await conn.execute(_DELETE_SESSIONS, account_id)
            links = await conn.execute(_VOID_SIGN_IN_LINKS, account_id)
        return _row_count(sessions), _row_count(links)

    async def disable_account(self, account_id: str) -> AccountRow:
        async with self._connection() as conn:
            row = await conn.fetchrow(_DISABLE_ACCOUNT, account_id)
        if row is None:
            raise NotFoundError("account not found")
        return _account_row(row)

    async def add_workspace_member(self, workspace_id: str, account_id: str) -> None:
        async with self._connection() as conn:
            await conn.execute(_INSERT_MEMBER, workspace_id, account_id)

    async def add_participant(self, channel_id: str, account_id: str) -> None:
        async with self._write() as conn:
            await conn.execute(_INSERT_MEMBER_OF_CHANNEL, channel_id, account_id)
            await conn.execute(_INSERT_PARTICIPANT, channel_id, account_id)

    async def has_accounts(self) -> bool:
        async with self._connection() as conn:
            return bool(await conn.fetchval(_ANY_ACCOUNT))

    async def authenticate(self, token: str) -> AccountRow | None:
        if not token.startswith(TOKEN_PREFIX) or len(token) > _MAX_TOKEN_LENGTH:
            return None
        digest = _token_hash(token)
        async with self._connection() as conn:
            row = await conn.fetchrow(_SELECT_ACCOUNT_BY_TOKEN, digest)
        # The lookup is by hash, so timing reveals nothing about the token; the explicit
        # constant-time comparison keeps it that way should the lookup ever change.
        if row is None or not hmac.compare_digest(bytes(row["token_hash"]), digest):
            return None
        account = _account_row(row)
        return None if account.disabled else account

    # -- reads -------------------------------------------------------------------------------

    async def list_channels(self, actor: AccountRow) -> Sequence[ChannelRow]:
        async with self._connection() as conn:
            rows = await conn.fetch(_SELECT_PARTICIPATING_CHANNELS, actor.account_id)
        return [_channel_row(row) for row in rows]

    async def list_workspaces(self, actor: AccountRow) -> Sequence[WorkspaceRow]:
        async with self._connection() as conn:
            rows = await conn.fetch(_SELECT_MEMBER_WORKSPACES, actor.account_id)
        return [
            WorkspaceRow(workspace_id=r["workspace_id"], name=r["name"], created_at=r["created_at"])
            for r in rows
        ]

    async def list_pending_asks(
        self, actor: AccountRow, *, page_size: int = 0, page_token: str = ""
    ) -> PendingAskPage:
        size = _page_size(page_size)
        after = _decode_inbox_token(page_token) if page_token else (_EPOCH, "")
        async with self._connection() as conn:
            rows = await conn.fetch(_SELECT_PENDING_ASKS, actor.account_id, *after, size + 1)
        asks = tuple(
            PendingAskRow(
                ask=_ask_row(row),
                channel_name=row["channel_name"],
                author_account_id=row["author_account_id"],
                author_name=row["author_name"],
                asked_at=row["asked_at"],
            )
            for row in rows[:size]
        )
        next_token = (
            _encode_inbox_token(asks[-1].asked_at, asks[-1].ask.ask.ask_id)
            if len(rows) > size
            else ""
        )
        return PendingAskPage(asks=asks, next_page_token=next_token)

    async def notified_ask(self, ask_id: str) -> tuple[PendingAskRow, str, AccountKind] | None:
        """An ask as webhooks tell of it, whoever may see it: (the ask with its channel and
        author, the workspace id, the author's kind); None when there is no such ask."""
        async with self._connection() as conn:
            row = await conn.fetchrow(_SELECT_NOTIFIED_ASK, ask_id)
        if row is None:
            return None
        pending = PendingAskRow(
            ask=_ask_row(row),
            channel_name=row["channel_name"],
            author_account_id=row["author_account_id"],
            author_name=row["author_name"],
            asked_at=row["asked_at"],
        )
        return pending, str(row["workspace_id"]), AccountKind(row["author_kind"])

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncGenerator[_Conn]:
        """A pooled connection in a transaction, for the store package's other modules
        (store/webhooks.py); errors are translated as for every store call."""
        async with self._write() as conn:
            yield conn

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncGenerator[_Conn]:
        """A pooled connection (no transaction), for the store package's other modules."""
        async with self._connection() as conn:
            yield conn

    async def get_channel(self, actor: AccountRow, channel_id: str) -> ChannelRow:
        async with self._connection() as conn:
            return await _visible_channel(conn, actor, channel_id)

    async def list_messages(
        self, actor: AccountRow, channel_id: str, *, page_size: int = 0, page_token: str = ""
    ) -> MessagePage:
        size = _page_size(page_size)
        after = _decode_page_token(page_token, channel_id) if page_token else 0
        async with self._snapshot() as conn:
            await _visible_channel(conn, actor, channel_id)
            sizes = await conn.fetch(_SELECT_PAGE_SIZES, channel_id, after, size + 1)
            last = _fitting(sizes, size, self._page_bytes)
            if last is None:
                return MessagePage(messages=(), next_page_token="")
            rows = await conn.fetch(_SELECT_MESSAGE_PAGE, channel_id, after, last)
            messages = await _message_rows(conn, rows)
        more = len(sizes) > len(messages)
        next_token = _encode_page_token(channel_id, last) if more else ""
        return MessagePage(messages=tuple(messages), next_page_token=next_token)

    async def messages_after(
        self, actor: AccountRow, channel_id: str, after_revision: int, *, limit: int = 100
    ) -> ReplayBatch:
        violations: list[FieldViolation] = []
        if after_revision < 0:
            violations.append(
                FieldViolation(
                    field="after_revision", description="after_revision must not be negative"
                )
            )
        if not 1 <= limit <= MAX_REPLAY_LIMIT:
            violations.append(
                FieldViolation(
                    field="limit", description=f"limit must be between 1 and {MAX_REPLAY_LIMIT}"
                )
            )
        if violations:
            raise InvalidArgumentError("invalid replay request", violations)
        async with self._snapshot() as conn:
            await _visible_channel(conn, actor, channel_id)
            sizes = await conn.fetch(_SELECT_REPLAY_SIZES, channel_id, after_revision, limit + 1)
            last = _fitting(sizes, limit, self._replay_bytes)
            if last is None:
                return ReplayBatch()
            rows = await conn.fetch(_SELECT_MESSAGES_AFTER, channel_id, after_revision, last)
            batch = ReplayBatch(await _message_rows(conn, rows))
        batch.more = len(sizes) > len(batch)
        return batch

    async def get_ask(self, actor: AccountRow, ask_id: str) -> AskRow:
        async with self._connection() as conn:
            row = await conn.fetchrow(_SELECT_ASK, ask_id, actor.account_id)
        # An agent sees only the asks of channels it takes part in (its WatchAsk): being in
        # the workspace is not enough to follow another agent's questions and answers.
        if row is None or (actor.kind is AccountKind.AGENT and not row["participant"]):
            raise NotFoundError("ask not found")
        return _ask_row(row)

    # -- writes ------------------------------------------------------------------------------

    async def append_message(
        self,
        actor: AccountRow,
        channel_id: str,
        blocks: Sequence[comms_pb2.MessageBlock],
        *,
        client_message_id: str = "",
    ) -> MessageRow:
        domain.check_text(
            "client_message_id", client_message_id, max_length=domain.MAX_ID_LENGTH, required=False
        )
        domain.check_blocks(blocks, minted=False)
        async with self._write() as conn:
            lock = await conn.fetchrow(_LOCK_CHANNEL_FOR_ACTOR, channel_id, actor.account_id)
            if lock is None or not lock["member"]:
                raise NotFoundError("channel not found")
            if not lock["participant"]:
                raise PermissionDeniedError("only participants of the channel may post in it")
            if client_message_id:
                existing = await conn.fetchrow(
                    _SELECT_MESSAGE_BY_CLIENT_ID, channel_id, client_message_id
                )
                if existing is not None:
                    return await _idempotent_repeat(conn, existing, actor, blocks)
            minted = [_copy_block(block) for block in blocks]
            asks = [block.ask for block in minted if block.HasField("ask")]
            for ask in asks:
                ask.ask_id = self._new_id("ask")
            revision = int(await conn.fetchval(_BUMP_REVISION, channel_id))
            row = await self._insert_minted(
                conn,
                "msg",
                _INSERT_MESSAGE,
                channel_id,
                actor.account_id,
                client_message_id or None,
                encode_blocks(minted),
                revision,
            )
            message_id = str(row["message_id"])
            if asks:
                await self._insert_asks(conn, message_id, channel_id, minted, asks)
            ask_ids = tuple(ask.ask_id for ask in asks)
            await _notify(conn, channel_id, revision, message_id, ask_ids)
        # Decoded from what was stored, so the caller sees exactly what a read returns.
        stored_blocks = decode_blocks(encode_blocks(minted), message_id=message_id)
        sent = {ask.ask_id: ask for ask in asks}
        for block in stored_blocks:
            if block.HasField("ask"):
                _set_new_ask_state(block.ask, sent[block.ask.ask_id])
        return MessageRow(
            message_id=message_id,
            channel_id=channel_id,
            author_account_id=actor.account_id,
            author_name=actor.name,
            author_kind=actor.kind,
            client_message_id=client_message_id,
            blocks=tuple(stored_blocks),
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            revision=revision,
        )

    async def _insert_asks(
        self,
        conn: _Conn,
        message_id: str,
        channel_id: str,
        blocks: list[comms_pb2.MessageBlock],
        asks: list[comms_pb2.Ask],
    ) -> None:
        # `asks` are the ask messages inside `blocks`, already carrying fresh ids.
        pending = list(asks)
        for _ in range(_MINT_ATTEMPTS):
            inserted = {
                str(row["ask_id"])
                for row in await conn.fetch(
                    _INSERT_ASKS,
                    [ask.ask_id for ask in pending],
                    message_id,
                    channel_id,
                    [_deadline(ask) for ask in pending],
                    [domain.TIMEOUT_POLICY_NAMES[ask.on_timeout] for ask in pending],
                )
            }
            pending = [ask for ask in pending if ask.ask_id not in inserted]
            if not pending:
                return
            # Astronomically unlikely: an id collided with an existing ask. Mint again and
            # rewrite the stored blocks to carry the new ids.
            for ask in pending:
                ask.ask_id = self._new_id("ask")
            await conn.execute(_UPDATE_MESSAGE_BLOCKS, message_id, encode_blocks(blocks))
        raise RuntimeError(f"could not mint unique ask ids in {_MINT_ATTEMPTS} attempts")

    async def update_message(
        self, actor: AccountRow, message_id: str, blocks: Sequence[comms_pb2.MessageBlock]
    ) -> MessageRow:
        # The invariants that need no stored state first, so a bad frame fails without I/O;
        # which ask ids it must carry depends on the stored asks, checked under the lock.
        domain.check_blocks(blocks, minted=None)
        async with self._write() as conn:
            found = await conn.fetchrow(_SELECT_MESSAGE_FOR_ACTOR, message_id, actor.account_id)
            if found is None:
                raise NotFoundError("message not found")
            if found["author_account_id"] != actor.account_id:
                raise PermissionDeniedError("only the author of a message may update it")
            channel_id = str(found["channel_id"])
            await conn.fetchval(_LOCK_CHANNEL, channel_id)
            # Re-read under the channel lock: a concurrent update may have added asks since
            # the lookup above, and the frame must then carry their ids (or be refused).
            stored_row = await conn.fetchrow(_SELECT_MESSAGE, message_id)
            if stored_row is None:  # pragma: no cover - messages are never deleted
                raise NotFoundError("message not found")
            (stored,) = await _message_rows(conn, [stored_row])
            stored_asks = [block.ask for block in stored.blocks if block.HasField("ask")]
            domain.check_ask_update(stored_asks, blocks)
            replaced = [_copy_block(block) for block in blocks]
            added = [block.ask for block in replaced if block.HasField("ask")][len(stored_asks) :]
            if not added and encode_blocks(replaced) == encode_blocks(stored.blocks):
                return stored  # nothing changed: no new revision, no notification
            for ask in added:
                ask.ask_id = self._new_id("ask")
            revision = int(await conn.fetchval(_BUMP_REVISION, channel_id))
            row = await conn.fetchrow(
                _REPLACE_MESSAGE, message_id, encode_blocks(replaced), revision
            )
            if row is None:  # pragma: no cover - the row is locked through its channel
                raise NotFoundError("message not found")
            if added:
                # Re-mints (and rewrites the stored blocks) on the rare id collision.
                await self._insert_asks(conn, message_id, channel_id, replaced, added)
            updated = MessageRow(
                message_id=message_id,
                channel_id=channel_id,
                author_account_id=stored.author_account_id,
                author_name=stored.author_name,
                author_kind=stored.author_kind,
                client_message_id=stored.client_message_id,
                # Decoded from what was stored, so the caller sees exactly what a read returns.
                blocks=tuple(decode_blocks(encode_blocks(replaced), message_id=message_id)),
                created_at=row["created_at"],
                updated_at=row["updated_at"],
                revision=revision,
            )
            _copy_ask_state(stored, updated, added)
            await _notify(conn, channel_id, revision, message_id, updated.ask_ids)
        return updated

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
            row = await conn.fetchrow(_SELECT_ASK, ask_id, actor.account_id)
            current, revision = _guard_answer(row, actor, answers)  # steps 3-5
            if current.final:
                return current  # an identical retry
            written = None
            if not domain.validate_answers(current.ask, answers):  # step 6
                written = await _write_answer(conn, actor, current, answers, revision=revision)
            if written is None:
                # Something changed (a concurrent answer may have won, an update may have
                # changed the questions), or the answers do not fit the ask as read: judge
                # again under the channel lock, where nothing can change it.
                async with conn.transaction():
                    revision = await conn.fetchval(_LOCK_CHANNEL, current.channel_id)
                    row = await conn.fetchrow(_SELECT_ASK, ask_id, actor.account_id)
                    current, _ = _guard_answer(row, actor, answers)
                    if current.final:
                        return current
                    violations = domain.validate_answers(current.ask, answers)
                    if violations:
                        raise InvalidArgumentError("the answers do not fit the ask", violations)
                    written = await _write_answer(conn, actor, current, answers, revision=revision)
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
            row = await conn.fetchrow(_SELECT_ASK, ask_id, actor.account_id)
            if row is None:
                raise NotFoundError("ask not found")
            if not row["participant"]:
                raise PermissionDeniedError("only participants of the ask's channel may decline it")
            return await _close_locked(
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
            row = await conn.fetchrow(_SELECT_ASK, ask_id, actor.account_id)
            # Only the agent account that appended the ask may close it; to anyone else it
            # is as absent as a missing ask.
            if row is None or row["author_account_id"] != actor.account_id:
                raise NotFoundError("ask not found")
            return await _close_locked(
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
            if not await conn.fetchval(_TRY_SWEEPER_LOCK, SWEEPER_LOCK_KEY):
                return expired
            due = await conn.fetch(_SELECT_DUE_ASKS, now, grace.total_seconds(), limit)
            for ask in due:
                # The channel lock first, like every write (ordered by channel: no cycles).
                await conn.fetchval(_LOCK_CHANNEL, ask["channel_id"])
                closed_at = await conn.fetchval(
                    _CLOSE_ASK, ask["ask_id"], "expired", None, "", None
                )
                if closed_at is None:
                    continue  # answered or closed since the scan
                revision = int(await conn.fetchval(_BUMP_REVISION, ask["channel_id"]))
                await conn.execute(_TOUCH_MESSAGE, ask["message_id"], revision)
                await _notify(
                    conn, ask["channel_id"], revision, ask["message_id"], (ask["ask_id"],)
                )
                expired.append(str(ask["ask_id"]))
        if expired:
            logger.info("expired %d ask(s) past their deadline: %s", len(expired), expired)
        return expired

    # -- change feed -------------------------------------------------------------------------

    async def listen(
        self,
        on_change: Callable[[ChangeEvent], None],
        on_resync: Callable[[], None],
        *,
        retry_delay: float = 0.5,
        max_retry_delay: float = 10.0,
        health_check_seconds: float = 15.0,
        on_lost: Callable[[], None] = lambda: None,
    ) -> None:
        """See `Store.listen`.

        Args:
            retry_delay: first wait before reconnecting; doubles up to `max_retry_delay`.
            health_check_seconds: how often the idle connection is probed, so a silently
                dropped connection is noticed.
        """

        def deliver(_conn: object, _pid: int, _channel: str, payload: object) -> None:
            try:
                event = ChangeEvent.from_payload(str(payload))
            except ValueError:
                logger.exception("unreadable change notification %r; resyncing", payload)
                on_resync()
                return
            on_change(event)

        delay = retry_delay
        while True:
            try:
                conn = await asyncpg.connect(
                    self._dsn,
                    timeout=self._timeout,
                    server_settings={"application_name": f"{_APPLICATION_NAME}-listener"},
                )
            except _CONNECTION_TROUBLE as exc:
                logger.warning(
                    "change listener cannot connect (%s); retrying in %.1fs",
                    type(exc).__name__,
                    delay,
                )
            else:
                try:
                    await self._listen_on(conn, deliver, on_resync, health_check_seconds)
                    delay = retry_delay  # it was connected: start backing off afresh
                except _CONNECTION_TROUBLE as exc:
                    logger.warning("change listener lost its connection (%s)", type(exc).__name__)
                finally:
                    conn.terminate()
                    on_lost()
                logger.warning("change listener disconnected; reconnecting in %.1fs", delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, max_retry_delay)

    async def _listen_on(
        self,
        conn: asyncpg.Connection[asyncpg.Record],
        deliver: Callable[[object, int, str, object], None],
        on_resync: Callable[[], None],
        health_check_seconds: float,
    ) -> None:
        # Returns when the connection is lost; raises when a health probe fails.
        lost = asyncio.Event()
        conn.add_termination_listener(lambda _conn: lost.set())
        await conn.add_listener(EVENTS_CHANNEL, deliver)
        on_resync()
        while not lost.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(lost.wait(), timeout=health_check_seconds)
                return
            await conn.fetchval(_PING, timeout=self._timeout)


# ---------------------------------------------------------------------------------------------
# Row conversion and helpers


def _account_row(row: asyncpg.Record) -> AccountRow:
    return AccountRow(
        account_id=row["account_id"],
        kind=AccountKind(row["kind"]),
        name=row["name"],
        disabled=row["disabled"],
        created_at=row["created_at"],
    )


def _channel_row(row: asyncpg.Record) -> ChannelRow:
    return ChannelRow(
        channel_id=row["channel_id"],
        workspace_id=row["workspace_id"],
        name=row["name"],
        revision=row["revision"],
        created_at=row["created_at"],
    )


async def _visible_channel(conn: _Conn, actor: AccountRow, channel_id: str) -> ChannelRow:
    row = await conn.fetchrow(_SELECT_VISIBLE_CHANNEL, channel_id, actor.account_id)
    if row is None:
        raise NotFoundError("channel not found")
    return _channel_row(row)


async def _message_rows(conn: _Conn, rows: Sequence[asyncpg.Record]) -> list[MessageRow]:
    if not rows:
        return []
    answers: dict[str, list[asyncpg.Record]] = {}
    for answer in await conn.fetch(
        _SELECT_ASK_STATE_OF_MESSAGES, [row["message_id"] for row in rows]
    ):
        answers.setdefault(answer["message_id"], []).append(answer)
    return [_message_row(row, answers.get(row["message_id"], [])) for row in rows]


def _message_row(row: asyncpg.Record, answers: Sequence[asyncpg.Record]) -> MessageRow:
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
        _apply_stored_state(ask, answer, message_id)
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


def _apply_stored_state(ask: comms_pb2.Ask, record: asyncpg.Record, message_id: str) -> None:
    """Merge the state read from the asks table (`_ASK_STATE_COLUMNS`) into `ask`: its
    answers and who gave them, its status, deadline, timeout policy and who closed it."""
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


def _set_new_ask_state(target: comms_pb2.Ask, sent: comms_pb2.Ask) -> None:
    """The state of an ask just inserted: PENDING, with the deadline and policy `sent`."""
    target.status = comms_pb2.ASK_STATUS_PENDING
    target.on_timeout = sent.on_timeout
    if sent.HasField("deadline"):
        # As PostgreSQL keeps it (microseconds), so the caller sees what a read returns.
        target.deadline.FromDatetime(sent.deadline.ToDatetime(tzinfo=UTC))


def _deadline(ask: comms_pb2.Ask) -> str | None:
    """The ask's deadline as `_INSERT_ASKS` takes it: ISO 8601 text, or None (no deadline)."""
    return ask.deadline.ToDatetime(tzinfo=UTC).isoformat() if ask.HasField("deadline") else None


def _ask_row(row: asyncpg.Record) -> AskRow:
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
    _apply_stored_state(ask, row, message_id)
    return AskRow(ask=ask, message_id=message_id, channel_id=row["channel_id"])


def _guard_answer(
    row: asyncpg.Record | None,
    actor: AccountRow,
    answers: Sequence[comms_pb2.AskQuestionAnswer],
) -> tuple[AskRow, int]:
    """SPEC §4 steps 3-5 on an ask as `_SELECT_ASK` read it (None: not found).

    Returns:
        The ask (unanswered, or answered and `answers` are an identical retry by `actor`),
        and its channel's revision as read.
    """
    if row is None:  # step 3
        raise NotFoundError("ask not found")
    if not row["participant"]:  # step 4
        raise PermissionDeniedError("only participants of the ask's channel may answer it")
    current = _ask_row(row)
    if current.final and not (  # step 5
        current.ask.status == comms_pb2.ASK_STATUS_ANSWERED
        and domain.is_identical_answer(current.ask, actor.account_id, answers)
    ):
        raise FailedPreconditionError(domain.outcome_message(current.ask))
    return current, int(row["channel_revision"])


async def _write_answer(
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
        _ANSWER_ASK,
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


async def _close_locked(
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
    """Close the ask `_SELECT_ASK` read as `row` (in a transaction): lock its channel, read
    it again, let `judge` decide (True: write; False: an identical retry, return it as is;
    or raise), then write the outcome, bump the revision and notify."""
    await conn.fetchval(_LOCK_CHANNEL, row["channel_id"])
    ask_id: str = row["ask_id"]
    locked = await conn.fetchrow(_SELECT_ASK, ask_id, actor.account_id)
    if locked is None:  # pragma: no cover - asks are never deleted
        raise NotFoundError("ask not found")
    current = _ask_row(locked)
    if not judge(current):
        return current
    closed_at = await conn.fetchval(_CLOSE_ASK, ask_id, status, closed_by, reason, answers())
    if closed_at is None:  # pragma: no cover - judged pending under the channel lock
        raise FailedPreconditionError("the ask is no longer pending")
    revision = int(await conn.fetchval(_BUMP_REVISION, current.channel_id))
    await conn.execute(_TOUCH_MESSAGE, current.message_id, revision)
    await _notify(conn, current.channel_id, revision, current.message_id, (ask_id,))
    closed = await conn.fetchrow(_SELECT_ASK, ask_id, actor.account_id)
    if closed is None:  # pragma: no cover - asks are never deleted
        raise NotFoundError("ask not found")
    return _ask_row(closed)


def _copy_block(block: comms_pb2.MessageBlock) -> comms_pb2.MessageBlock:
    copy = comms_pb2.MessageBlock()
    copy.CopyFrom(block)
    return copy


async def _idempotent_repeat(
    conn: _Conn,
    existing: asyncpg.Record,
    actor: AccountRow,
    blocks: Sequence[comms_pb2.MessageBlock],
) -> MessageRow:
    (stored,) = await _message_rows(conn, [existing])
    same = stored.author_account_id == actor.account_id and encode_blocks(
        blocks, keep_ask_ids=False
    ) == encode_blocks(stored.blocks, keep_ask_ids=False)
    if not same:
        raise AlreadyExistsError(_UNIQUE_MESSAGES["messages_client_message_id_key"])
    return stored


def _copy_ask_state(source: MessageRow, target: MessageRow, added: Sequence[comms_pb2.Ask]) -> None:
    """Give the asks of `target` (an update of `source`) their stored state: a minted ask
    keeps its outcome, deadline and answers as stored; an `added` one is new (PENDING)."""
    stored = {block.ask.ask_id: block.ask for block in source.blocks if block.HasField("ask")}
    new = {ask.ask_id: ask for ask in added}
    for block in target.blocks:
        if not block.HasField("ask"):
            continue
        ask = block.ask
        if ask.ask_id in new:
            _set_new_ask_state(ask, new[ask.ask_id])
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


async def _notify(
    conn: _Conn, channel_id: str, revision: int, message_id: str, ask_ids: tuple[str, ...]
) -> None:
    event = ChangeEvent(
        channel_id=channel_id, revision=revision, message_id=message_id, ask_ids=ask_ids
    )
    await conn.execute(_NOTIFY, EVENTS_CHANNEL, event.to_payload())


def _row_count(status: str) -> int:
    """The row count of a command status such as "DELETE 3" (asyncpg's `execute` result)."""
    return int(status.rsplit(" ", 1)[-1])


MAX_INT64: Final = 2**63 - 1
"""The largest PostgreSQL bigint (revisions are bigints)."""
_PAGE_TOKEN_VERSION: Final = "p1"  # noqa: S105 - a format tag, not a secret
_INBOX_TOKEN_VERSION: Final = "i1"  # noqa: S105 - a format tag, not a secret
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def _fitting(sizes: Sequence[asyncpg.Record], count: int, budget: int) -> int | None:
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


def _page_size(page_size: int) -> int:
    """A request's page size: 0 for the default, capped at MAX_PAGE_SIZE; negative refused."""
    if page_size < 0:
        raise InvalidArgumentError(
            "invalid page_size",
            [FieldViolation(field="page_size", description="page_size must not be negative")],
        )
    return min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)


def _encode_inbox_token(asked_at: datetime, ask_id: str) -> str:
    raw = f"{_INBOX_TOKEN_VERSION}:{asked_at.isoformat()}|{ask_id}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_inbox_token(token: str) -> tuple[datetime, str]:
    """The (asked_at, ask_id) a ListPendingAsks page ended at."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        version, rest = raw.split(":", 1)
        when, ask_id = rest.split("|", 1)
        asked_at = datetime.fromisoformat(when)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        asked_at = None
        version = ask_id = ""
    if version != _INBOX_TOKEN_VERSION or asked_at is None or asked_at.tzinfo is None:
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


def _encode_page_token(channel_id: str, created_revision: int) -> str:
    raw = f"{_PAGE_TOKEN_VERSION}:{created_revision}:{channel_id}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_page_token(token: str, channel_id: str) -> int:
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
    if version != _PAGE_TOKEN_VERSION or token_channel != channel_id or not 0 <= after <= MAX_INT64:
        raise bad  # a revision past bigint would fail in the database, not here
    return after
