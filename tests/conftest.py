"""Shared fixtures: one PostgreSQL server per test session, a fresh database per test."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import TYPE_CHECKING

import pytest
import stamina.instrumentation

from tests import _pg, _server

if TYPE_CHECKING:
    from collections.abc import Generator

    from tests._pgbouncer import Bouncer

# As `compass` runs (compass_server.cli.main._quiet_stamina): the retry loops log for themselves.
stamina.instrumentation.set_on_retry_hooks(())


@pytest.fixture(scope="session")
def pg_admin_dsn() -> Generator[str]:
    """DSN of the session's PostgreSQL server, with a role allowed to create databases."""
    with _pg.test_server() as dsn:
        yield dsn


@pytest.fixture(scope="session")
def pgbouncer(pg_admin_dsn: str) -> Generator[Bouncer]:
    """Debian's PgBouncer in transaction mode in front of the session's PostgreSQL."""
    from tests import _pgbouncer

    with _pgbouncer.running(pg_admin_dsn) as bouncer:
        yield bouncer


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
    with _fresh_database(pg_admin_dsn, "compass_t", template=migrated_template) as dsn:
        yield dsn


@pytest.fixture(scope="module")
def module_database_url(pg_admin_dsn: str, migrated_template: str) -> Generator[str]:
    """A fresh migrated database shared by the tests of one module; dropped afterwards."""
    with _fresh_database(pg_admin_dsn, "compass_m", template=migrated_template) as dsn:
        yield dsn


@pytest.fixture
def empty_database(pg_admin_dsn: str) -> Generator[str]:
    """DSN of a database with no tables at all (for the migration runner); dropped afterwards."""
    with _fresh_database(pg_admin_dsn, "compass_e") as dsn:
        yield dsn


@contextlib.contextmanager
def _fresh_database(admin_dsn: str, prefix: str, *, template: str = "") -> Generator[str]:
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    clause = f' TEMPLATE "{template}"' if template else ""
    asyncio.run(_admin(admin_dsn, f'CREATE DATABASE "{name}"{clause}'))
    try:
        yield _pg.with_database(admin_dsn, name)
    finally:
        asyncio.run(_drop_database(admin_dsn, name))


async def _admin(admin_dsn: str, sql: str) -> None:
    import asyncpg

    admin = await asyncpg.connect(admin_dsn)
    try:
        await admin.execute(sql)
    finally:
        await admin.close()


async def _create_template(admin_dsn: str, name: str) -> None:
    import asyncpg

    from compass_server.store.migrate import migrate

    await _admin(admin_dsn, f'CREATE DATABASE "{name}"')
    conn = await asyncpg.connect(_pg.with_database(admin_dsn, name))
    try:
        await migrate(conn)
    finally:
        await conn.close()


async def _drop_database(admin_dsn: str, name: str) -> None:
    await _admin(admin_dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def compass_server(database_url: str) -> Generator[_server.RunningServer]:
    """`compass serve` in a subprocess on this test's fresh database, over real HTTP."""
    with _server.serve(database_url) as server:
        yield server


@pytest.fixture
async def seeded(compass_server: _server.RunningServer) -> _server.SeededWorld:
    """Accounts (with tokens), workspaces and channels in `compass_server`'s database."""
    return await _server.seed_world(compass_server.dsn)


@pytest.fixture(scope="module")
def module_server(module_database_url: str) -> Generator[_server.RunningServer]:
    """`compass serve` on the module's database, shared by the tests of one module."""
    with _server.serve(module_database_url) as server:
        yield server
