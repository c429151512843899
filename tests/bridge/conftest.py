"""Fixtures for the agent-bridge tests.

Unit tests here need nothing. The end-to-end modules (test_e2e_*.py, marked e2e and
integration) run `compass serve` on a real database and the bridge as a real process; the
ones that never stop their server share one per module (`bridge_server`), each test seeding
its own world (own workspace, channel and accounts) in it.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from typing import TYPE_CHECKING

import asyncpg
import httpx
import pytest

from tests import _pg, _server

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Generator

_worlds = itertools.count(1)


async def _admin(admin_dsn: str, sql: str) -> None:
    conn = await asyncpg.connect(admin_dsn)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="module")
def bridge_database_url(pg_admin_dsn: str, migrated_template: str) -> Generator[str]:
    """A fresh migrated database for one module; dropped afterwards."""
    name = f"compass_b_{uuid.uuid4().hex[:12]}"
    asyncio.run(_admin(pg_admin_dsn, f'CREATE DATABASE "{name}" TEMPLATE "{migrated_template}"'))
    yield _pg.with_database(pg_admin_dsn, name)
    asyncio.run(_admin(pg_admin_dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="module")
def bridge_server(bridge_database_url: str) -> Generator[_server.RunningServer]:
    """`compass serve` shared by the tests of one module."""
    with _server.serve(bridge_database_url) as server:
        yield server


@pytest.fixture
async def world(bridge_server: _server.RunningServer) -> _server.SeededWorld:
    """This test's own workspace, channel and accounts in the module's server."""
    return await _server.seed_world(bridge_server.dsn, prefix=f"w{next(_worlds)}-")


@pytest.fixture
async def comms(bridge_server: _server.RunningServer) -> AsyncGenerator[httpx.AsyncClient]:
    """An HTTP client for CommsService calls (a participant's browser)."""
    async with httpx.AsyncClient(base_url=bridge_server.url, timeout=30) as client:
        yield client
