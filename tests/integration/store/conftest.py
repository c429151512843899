"""Fixtures for the PostgreSQL store tests: an open store on a fresh database, a seeded world."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from compass_server.store.postgres import PostgresStore
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
