"""Fixtures for the agent-bridge tests.

Unit tests here need nothing. The end-to-end modules (test_e2e_*.py, marked e2e and
integration) run `compass serve` on a real database and the bridge as a real process; the
ones that never stop their server share one per module (`module_server`), each test seeding
its own world (own workspace, channel and accounts) in it.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import httpx
import pytest

from tests import _server

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

_worlds = itertools.count(1)


@pytest.fixture
async def world(module_server: _server.RunningServer) -> _server.SeededWorld:
    """This test's own workspace, channel and accounts in the module's server."""
    return await _server.seed_world(module_server.dsn, prefix=f"w{next(_worlds)}-")


@pytest.fixture
async def comms(module_server: _server.RunningServer) -> AsyncGenerator[httpx.AsyncClient]:
    """An HTTP client for CommsService calls (a participant's browser)."""
    async with httpx.AsyncClient(base_url=module_server.url, timeout=30) as client:
        yield client
