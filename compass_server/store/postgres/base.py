"""The PostgreSQL store's connection handling: pool, transactions, error translation, ids."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
import secrets
from typing import TYPE_CHECKING, Final

import asyncpg

from compass_server.domain.errors import (
    AlreadyExistsError,
    CompassError,
    ConflictError,
    InvalidArgumentError,
    NotFoundError,
    UnavailableError,
)
from compass_server.store.postgres.sql import (
    PING,
)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable, Generator
    from types import TracebackType
    from typing import Self, TypeAlias

    from asyncpg.pool import PoolConnectionProxy

    _Conn: TypeAlias = PoolConnectionProxy[asyncpg.Record]

logger = logging.getLogger("compass_server.store.postgres")


TOKEN_PREFIX: Final = "cmp_"  # noqa: S105 - a public prefix, not a secret

PAGE_BYTES: Final = 2 << 20

REPLAY_BYTES: Final = 256 << 10

SIGN_IN_CODE_PREFIX: Final = "cmpl_"

MAX_SIGN_IN_CODE: Final = 100

MINT_ATTEMPTS: Final = 5

APPLICATION_NAME: Final = "compass"


def new_id(prefix: str) -> str:
    """A fresh random id: `prefix_` + 26 lowercase base32 characters (128 bits)."""
    return f"{prefix}_{base64.b32encode(secrets.token_bytes(16)).decode().rstrip('=').lower()}"


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


# ---------------------------------------------------------------------------------------------
# Error translation: the one place asyncpg exceptions become domain errors.

UNIQUE_MESSAGES: Final = {
    "workspaces_name_key": "a workspace with this name already exists",
    "channels_workspace_name_key": "a channel with this name already exists in the workspace",
    "messages_client_message_id_key": "a message with this client_message_id already exists in the channel",
}

FOREIGN_KEY_MESSAGES: Final = {
    "channels_workspace_id_fkey": "workspace not found",
    "workspace_members_workspace_id_fkey": "workspace not found",
    "workspace_members_account_id_fkey": "account not found",
    "channel_participants_channel_id_fkey": "channel not found",
    "channel_participants_account_id_fkey": "account not found",
}

UNAVAILABLE: Final = (
    asyncpg.PostgresConnectionError,  # class 08: connection lost/refused mid-operation
    asyncpg.OperatorInterventionError,  # class 57: admin shutdown, crash, cannot connect now
    asyncpg.InsufficientResourcesError,  # class 53: too many connections, disk full
    asyncpg.ReadOnlySQLTransactionError,  # a standby during failover
    OSError,  # refused/reset sockets, and TimeoutError (pool acquire, connect, command)
)


#: What ends (or prevents) a connection outside a request: the listener reconnects on it,
#: shutdown terminates the pool on it.
CONNECTION_TROUBLE: Final = (
    OSError,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
)


@contextlib.contextmanager
def translate_errors() -> Generator[None]:
    try:
        yield
    except CompassError:
        raise
    except asyncpg.UniqueViolationError as exc:
        raise AlreadyExistsError(
            UNIQUE_MESSAGES.get(exc.constraint_name or "", "already exists")
        ) from exc
    except asyncpg.ForeignKeyViolationError as exc:
        raise NotFoundError(
            FOREIGN_KEY_MESSAGES.get(exc.constraint_name or "", "referenced record not found")
        ) from exc
    except (asyncpg.SerializationError, asyncpg.DeadlockDetectedError) as exc:
        raise ConflictError("concurrent update; retry") from exc
    except asyncpg.CheckViolationError as exc:
        # The checks in front should have refused the value; never let the server's DETAIL
        # ("Failing row contains (...)", a webhook secret among it) reach a message or a log.
        raise InvalidArgumentError(
            f"the database refused the value (constraint {exc.constraint_name or 'unknown'})"
        ) from None
    except (asyncpg.UntranslatableCharacterError, asyncpg.CharacterNotInRepertoireError) as exc:
        # The domain checks refuse NUL up front; this catches any other text PostgreSQL
        # cannot store (e.g. an unpaired surrogate) without letting it become INTERNAL.
        raise InvalidArgumentError(
            "the request holds text the database cannot store (NUL or invalid Unicode)"
        ) from exc
    except UNAVAILABLE as exc:
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
# The store


def dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


async def init_connection(conn: asyncpg.Connection[asyncpg.Record]) -> None:
    # JSONB in and out as Python values; the codec is per connection, hence the pool's init=.
    await conn.set_type_codec("jsonb", encoder=dumps, decoder=json.loads, schema="pg_catalog")


async def reset_connection(_conn: asyncpg.Connection[asyncpg.Record]) -> None:
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


class PostgresBase:
    """Pool and transactions of a PostgresStore (see compass_server.store.postgres)."""

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
        listen_dsn: str | None = None,
        statement_cache_size: int = 100,
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
            listen_dsn: where the change listener's LISTEN connection goes, when not `dsn`:
                PostgreSQL itself while the pool goes through a pooler in transaction mode
                (which gives a session's LISTEN no connection to live on).
            statement_cache_size: asyncpg's prepared-statement cache per connection; 0
                behind a pooler in transaction mode that does not track prepared statements
                (PgBouncer < 1.21): asyncpg then prepares each statement unnamed.
        """
        self._page_bytes = page_bytes
        self._replay_bytes = replay_bytes
        self._dsn = dsn
        self._listen_dsn = listen_dsn or dsn
        self._statement_cache_size = statement_cache_size
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
        with translate_errors():
            self._pool = await asyncpg.create_pool(
                self._dsn,
                min_size=self._pool_min,
                max_size=self._pool_max,
                timeout=self._timeout,
                command_timeout=self._timeout,
                statement_cache_size=self._statement_cache_size,
                init=init_connection,
                reset=reset_connection,
                server_settings={"application_name": APPLICATION_NAME},
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
        except CONNECTION_TROUBLE:
            # A connection still busy (or the server gone) must not block shutdown.
            pool.terminate()

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncGenerator[_Conn]:
        if self._pool is None:
            raise RuntimeError("PostgresStore is not open; use `async with`")
        with translate_errors():
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
        for _ in range(MINT_ATTEMPTS):
            row = await conn.fetchrow(query, self._new_id(prefix), *args)
            if row is not None:
                return row
        raise RuntimeError(f"could not mint a unique {prefix} id in {MINT_ATTEMPTS} attempts")

    # -- lifecycle ---------------------------------------------------------------------------

    async def ping(self) -> None:
        async with self._connection() as conn:
            await conn.fetchval(PING)

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
