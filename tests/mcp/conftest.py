"""The MCP front door from outside, over real HTTP and real processes: the official `mcp`
SDK's client on /mcp and on `compass mcp` (stdio), and real MCP clients as published on npm
(the TypeScript SDK's client, Gemini CLI, Claude Code, Codex). One `compass serve` per module, with
progress, grace periods and sweeps in tenths of a second (`_mcp.FAST`); a seeded world per
test."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import pytest

from tests import _server
from tests.mcp import _mcp

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Generator

_worlds = itertools.count(1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/mcp/" in item.nodeid:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Generator[_server.RunningServer]:
    with _server.serve(module_database_url, env=_mcp.FAST) as running:
        yield running


@pytest.fixture
async def world(server: _server.RunningServer) -> _server.SeededWorld:
    return await _server.seed_world(server.dsn, prefix=f"mcp{next(_worlds)}-")


@pytest.fixture
async def person(
    server: _server.RunningServer, world: _server.SeededWorld
) -> AsyncGenerator[_mcp.Person]:
    ada = _mcp.Person(server, world.human.token)
    yield ada
    await ada.close()
