"""Everything under tests/e2e talks to `compass serve` over real HTTP.

Besides the per-test `compass_server`/`seeded` fixtures of tests/conftest.py, this offers one
server per test module (`module_server`, `module_world`) for modules whose tests only read
or each use their own asks: starting a server costs about a second, and CI has 2 cores.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING

import asyncpg
import httpx
import pytest

from tests import _pg, _server

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Generator


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in item.nodeid:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.integration)


async def _admin(admin_dsn: str, sql: str) -> None:
    conn = await asyncpg.connect(admin_dsn)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="module")
def module_database_url(pg_admin_dsn: str, migrated_template: str) -> Generator[str]:
    """A fresh migrated database shared by the tests of one module; dropped afterwards."""
    name = f"compass_m_{uuid.uuid4().hex[:12]}"
    asyncio.run(_admin(pg_admin_dsn, f'CREATE DATABASE "{name}" TEMPLATE "{migrated_template}"'))
    yield _pg.with_database(pg_admin_dsn, name)
    asyncio.run(_admin(pg_admin_dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="module")
def module_server(module_database_url: str) -> Generator[_server.RunningServer]:
    """`compass serve` on the module's database."""
    with _server.serve(module_database_url) as server:
        yield server


@pytest.fixture(scope="module")
def module_world(module_server: _server.RunningServer) -> _server.SeededWorld:
    """A SeededWorld in the module server's database."""
    return asyncio.run(_server.seed_world(module_server.dsn))


@pytest.fixture
async def http(module_server: _server.RunningServer) -> AsyncGenerator[httpx.AsyncClient]:
    """An HTTP client for the module's server."""
    async with httpx.AsyncClient(base_url=module_server.url, timeout=30) as client:
        yield client
