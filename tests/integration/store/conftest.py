"""Fixtures for the PostgreSQL store tests: an open store on a fresh database, a seeded world."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import asyncpg
import pytest

from compass_server.store.postgres import PostgresStore
from tests import _pg
from tests.integration.store._seed import World, seed

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator


@pytest.fixture
async def store(database_url: str) -> AsyncGenerator[PostgresStore]:
    async with PostgresStore(database_url, pool_min=1, pool_max=10, timeout=10.0) as opened:
        yield opened


@pytest.fixture
async def world(store: PostgresStore) -> World:
    return await seed(store)


@pytest.fixture
async def empty_database(pg_admin_dsn: str) -> AsyncGenerator[str]:
    """DSN of a database with no tables at all (for the migration runner)."""
    name = f"compass_e_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(pg_admin_dsn)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    yield _pg.with_database(pg_admin_dsn, name)
    admin = await asyncpg.connect(pg_admin_dsn)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()
