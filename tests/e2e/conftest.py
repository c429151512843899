"""Everything under tests/e2e talks to `compass serve` over real HTTP.

Besides the per-test `compass_server`/`seeded` fixtures of tests/conftest.py, this offers one
server per test module (`module_server`, `module_world`) for modules whose tests only read
or each use their own asks: starting a server costs about a second, and CI has 2 cores.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import httpx
import pytest

from tests import _server

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in item.nodeid:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="module")
def module_world(module_server: _server.RunningServer) -> _server.SeededWorld:
    """A SeededWorld in the module server's database."""
    return asyncio.run(_server.seed_world(module_server.dsn))


@pytest.fixture
async def http(module_server: _server.RunningServer) -> AsyncGenerator[httpx.AsyncClient]:
    """An HTTP client for the module's server."""
    async with httpx.AsyncClient(base_url=module_server.url, timeout=30) as client:
        yield client
