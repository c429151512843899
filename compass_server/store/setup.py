"""Setting up a database from the command line: create the embedded one, apply migrations,
and say in one line why a connection failed (never with the password)."""

from __future__ import annotations

import socket
from urllib.parse import parse_qs, unquote, urlsplit

import asyncpg

from compass_server.store.migrate import migrate

MALFORMED_URL = (
    "COMPASS_DATABASE_URL is not a valid PostgreSQL URL; use "
    "postgresql://USER:PASSWORD@HOST:5432/DATABASE"
)


class DatabaseSetupError(Exception):
    """The database cannot be set up; the message says what to do (for people)."""


async def ensure_database(admin_dsn: str, name: str) -> None:
    """Create database `name` on the server of `admin_dsn` unless it exists."""
    conn = await asyncpg.connect(admin_dsn)
    try:
        exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
        if not exists:
            await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


async def migrate_database(dsn: str) -> list[int]:
    """Apply pending migrations to `dsn`; the versions applied.

    Raises:
        DatabaseSetupError: a malformed URL, or no connection (naming host, port, database
            and user, and why).
    """
    target = describe_dsn(dsn)
    try:
        conn = await asyncpg.connect(dsn, timeout=10)
    except (ValueError, TypeError, asyncpg.ClientConfigurationError) as exc:
        raise DatabaseSetupError(MALFORMED_URL) from exc
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise DatabaseSetupError(
            f"cannot connect to PostgreSQL at {target}: {_why(exc)}. Check that PostgreSQL "
            "runs there and that COMPASS_DATABASE_URL names the right host, port, database "
            "and user"
        ) from exc
    try:
        return await migrate(conn)
    finally:
        await conn.close()


def describe_dsn(dsn: str) -> str:
    """Host, port, database and user of a PostgreSQL URL, for messages (never the password).

    Raises:
        DatabaseSetupError: `dsn` is not a postgresql:// URL with a valid port.
    """
    try:
        parts = urlsplit(dsn)
        port = parts.port
    except ValueError:
        raise DatabaseSetupError(MALFORMED_URL) from None
    if parts.scheme not in ("postgresql", "postgres"):
        raise DatabaseSetupError(MALFORMED_URL)
    query = parse_qs(parts.query)
    host = parts.hostname or (query.get("host") or ["localhost"])[0]
    database = unquote(parts.path.lstrip("/")) or (query.get("dbname") or [""])[0]
    user = parts.username or (query.get("user") or [""])[0]
    shown = f"{unquote(host)}:{port or 5432}"
    if database:
        shown += f", database {database!r}"
    if user:
        shown += f", user {unquote(user)!r}"
    return shown


def _why(exc: BaseException) -> str:
    """A few words on why a connection failed (the exception's class alone says little)."""
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return "unknown host"
    if isinstance(exc, TimeoutError):
        return "no answer within 10 s"
    if isinstance(exc, asyncpg.InvalidCatalogNameError):
        return "that database does not exist"
    if isinstance(
        exc, asyncpg.InvalidPasswordError | asyncpg.InvalidAuthorizationSpecificationError
    ):
        return "the user or password was not accepted"
    if isinstance(exc, asyncpg.PostgresError):
        return f"the server refused ({exc.sqlstate})"
    return f"{type(exc).__name__}"
