"""Shared fixtures: one PostgreSQL server per test session, a fresh database per test."""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING

import pytest

from tests import _pg, _server

if TYPE_CHECKING:
    from collections.abc import Generator


@pytest.fixture(scope="session")
def pg_admin_dsn() -> Generator[str]:
    """DSN of the session's PostgreSQL server, with a role allowed to create databases."""
    with _pg.test_server() as dsn:
        yield dsn


@pytest.fixture(scope="session")
def migrated_template(pg_admin_dsn: str) -> Generator[str]:
    """Name of a database holding every migration, created once per session (and dropped)."""
    name = f"compass_tpl_{uuid.uuid4().hex[:12]}"
    asyncio.run(_create_template(pg_admin_dsn, name))
    yield name
    asyncio.run(_drop_database(pg_admin_dsn, name))


@pytest.fixture
def database_url(pg_admin_dsn: str, migrated_template: str) -> Generator[str]:
    """DSN of a fresh, migrated database that only this test uses; dropped afterwards."""
    name = f"compass_t_{uuid.uuid4().hex[:12]}"
    asyncio.run(_clone(pg_admin_dsn, migrated_template, name))
    yield _pg.with_database(pg_admin_dsn, name)
    asyncio.run(_drop_database(pg_admin_dsn, name))


async def _create_template(admin_dsn: str, name: str) -> None:
    import asyncpg

    from compass_server.store.migrate import migrate

    admin = await asyncpg.connect(admin_dsn)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    conn = await asyncpg.connect(_pg.with_database(admin_dsn, name))
    try:
        await migrate(conn)
    finally:
        await conn.close()


async def _clone(admin_dsn: str, template: str, name: str) -> None:
    import asyncpg

    admin = await asyncpg.connect(admin_dsn)
    try:
        await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    finally:
        await admin.close()


async def _drop_database(admin_dsn: str, name: str) -> None:
    import asyncpg

    admin = await asyncpg.connect(admin_dsn)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


@pytest.fixture
def compass_server(database_url: str) -> Generator[_server.RunningServer]:
    """`compass serve` in a subprocess on this test's fresh database, over real HTTP."""
    with _server.serve(database_url) as server:
        yield server


@pytest.fixture
async def seeded(compass_server: _server.RunningServer) -> _server.SeededWorld:
    """Accounts (with tokens), workspaces and channels in `compass_server`'s database."""
    return await _server.seed_world(compass_server.dsn)
