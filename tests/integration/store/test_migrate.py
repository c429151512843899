"""The migration runner: applied once, recorded with checksums, serialised, forward-only."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg
import pytest

from compass_server.store import migrate as migrate_module
from compass_server.store.migrate import MigrationError, default_directory, migrate

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

REPO_MIGRATIONS = Path(__file__).resolve().parents[3] / "compass_server" / "store" / "migrations"


@pytest.fixture
async def conn(empty_database: str) -> AsyncGenerator[asyncpg.Connection]:
    connection = await asyncpg.connect(empty_database)
    yield connection
    await connection.close()


def write(directory: Path, name: str, sql: str) -> None:
    directory.mkdir(exist_ok=True)
    (directory / name).write_text(sql)


async def recorded(conn: asyncpg.Connection) -> list[tuple[int, str, str]]:
    rows = await conn.fetch(
        "SELECT version, name, checksum FROM schema_migrations ORDER BY version"
    )
    return [(row["version"], row["name"], row["checksum"]) for row in rows]


async def test_fresh_database_gets_every_file_recorded_with_its_checksum(
    conn: asyncpg.Connection,
) -> None:
    files = sorted(REPO_MIGRATIONS.glob("*.sql"))
    applied = await migrate(conn)
    assert applied == [int(path.name[:4]) for path in files]
    assert await recorded(conn) == [
        (int(path.name[:4]), path.stem[5:], hashlib.sha256(path.read_bytes()).hexdigest())
        for path in files
    ]
    tables = {
        row["tablename"]
        for row in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    }
    assert {"accounts", "api_tokens", "workspaces", "channels", "messages", "asks"} <= tables


async def test_applying_twice_is_a_noop(database_url: str) -> None:
    # `database_url` is already migrated (from the session's template).
    connection = await asyncpg.connect(database_url)
    try:
        before = await recorded(connection)
        assert await migrate(connection) == []
        assert await migrate(connection) == []
        assert await recorded(connection) == before
    finally:
        await connection.close()


async def test_concurrent_runners_apply_each_file_once(empty_database: str, tmp_path: Path) -> None:
    # CREATE TABLE without IF NOT EXISTS fails if run twice; the sleep widens the race window.
    write(tmp_path, "0001_create.sql", "SELECT pg_sleep(0.3); CREATE TABLE t (n int);")
    write(tmp_path, "0002_insert.sql", "INSERT INTO t VALUES (1);")
    connections = [await asyncpg.connect(empty_database) for _ in range(4)]
    try:
        results = await asyncio.gather(*(migrate(c, tmp_path) for c in connections))
        applied = sorted(version for result in results for version in result)
        assert applied == [1, 2]
        assert await connections[0].fetchval("SELECT count(*) FROM t") == 1
        assert [v for v, _, _ in await recorded(connections[0])] == [1, 2]
    finally:
        for connection in connections:
            await connection.close()


async def test_refuses_a_database_that_knows_a_newer_migration(
    conn: asyncpg.Connection, tmp_path: Path
) -> None:
    write(tmp_path, "0001_a.sql", "CREATE TABLE a (n int);")
    write(tmp_path, "0002_b.sql", "CREATE TABLE b (n int);")
    await migrate(conn, tmp_path)
    (tmp_path / "0002_b.sql").unlink()
    with pytest.raises(MigrationError, match=r"\[2\].*does not know"):
        await migrate(conn, tmp_path)


async def test_refuses_an_applied_file_that_changed(
    conn: asyncpg.Connection, tmp_path: Path
) -> None:
    write(tmp_path, "0001_a.sql", "CREATE TABLE a (n int);")
    await migrate(conn, tmp_path)
    write(tmp_path, "0001_a.sql", "CREATE TABLE a (n bigint);")
    write(tmp_path, "0002_b.sql", "CREATE TABLE b (n int);")
    with pytest.raises(MigrationError, match=r"0001_a\.sql changed after it was applied"):
        await migrate(conn, tmp_path)
    # Nothing after the refusal was applied.
    assert [v for v, _, _ in await recorded(conn)] == [1]


async def test_refuses_a_new_file_older_than_an_applied_one(
    conn: asyncpg.Connection, tmp_path: Path
) -> None:
    write(tmp_path, "0001_a.sql", "CREATE TABLE a (n int);")
    write(tmp_path, "0003_c.sql", "CREATE TABLE c (n int);")
    await migrate(conn, tmp_path)
    write(tmp_path, "0002_b.sql", "CREATE TABLE b (n int);")
    with pytest.raises(MigrationError, match="forward-only"):
        await migrate(conn, tmp_path)


@pytest.mark.parametrize("name", ["1_short.sql", "0001-dash.sql", "0001_Upper.sql", "abcd_x.sql"])
async def test_refuses_a_misnamed_file(conn: asyncpg.Connection, tmp_path: Path, name: str) -> None:
    write(tmp_path, name, "SELECT 1;")
    with pytest.raises(MigrationError, match=r"NNNN_name\.sql"):
        await migrate(conn, tmp_path)


async def test_refuses_two_files_with_one_version(conn: asyncpg.Connection, tmp_path: Path) -> None:
    write(tmp_path, "0001_a.sql", "SELECT 1;")
    write(tmp_path, "0001_b.sql", "SELECT 1;")
    with pytest.raises(MigrationError, match="version 1 is used by two files"):
        await migrate(conn, tmp_path)


async def test_a_failing_file_rolls_back_alone(conn: asyncpg.Connection, tmp_path: Path) -> None:
    write(tmp_path, "0001_a.sql", "CREATE TABLE a (n int);")
    write(tmp_path, "0002_b.sql", "CREATE TABLE b (n int); SELECT no_such_function();")
    with pytest.raises(asyncpg.UndefinedFunctionError):
        await migrate(conn, tmp_path)
    assert [v for v, _, _ in await recorded(conn)] == [1]
    assert await conn.fetchval("SELECT to_regclass('b')") is None
    # The lock was released: a fixed file applies on the next run.
    write(tmp_path, "0002_b.sql", "CREATE TABLE b (n int);")
    assert await migrate(conn, tmp_path) == [2]


async def test_missing_directory_is_an_error(conn: asyncpg.Connection, tmp_path: Path) -> None:
    with pytest.raises(MigrationError, match="does not exist"):
        await migrate(conn, tmp_path / "nope")


def test_default_directory_is_the_repository_one_unless_overridden(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(migrate_module.MIGRATIONS_DIR_ENV, raising=False)
    assert default_directory() == REPO_MIGRATIONS
    monkeypatch.setenv(migrate_module.MIGRATIONS_DIR_ENV, str(tmp_path))
    assert default_directory() == tmp_path
