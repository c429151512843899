"""End to end with the REAL agent runtime: `@oh-my-pi/pi-coding-agent` as published on npm
(pinned in tests/realagent/omp/, installed and cached by scripts/ensure-omp), driven by a
scripted OpenAI-compatible model on 127.0.0.1, bridged by `compass agent-bridge` (a real
process) to `compass serve` (a real process on a real PostgreSQL), answered by a participant
over HTTP with Connect-JSON, as a browser does.

Nothing here is skipped: when npm cannot install the runtime, `omp_bin` fails the tests with
the installer's message.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import httpx
import pytest

from tests import _server
from tests.realagent.model_server import ensure_omp
from tests.realagent.proxy import RefusingProxy

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Generator
    from pathlib import Path

_worlds = itertools.count(1)


@pytest.fixture(scope="session")
def omp_bin() -> Path:
    """The directory holding the pinned `omp` and `bun` (installed on first use)."""
    return ensure_omp()


@pytest.fixture
async def world(module_server: _server.RunningServer) -> _server.SeededWorld:
    return await _server.seed_world(module_server.dsn, prefix=f"ra{next(_worlds)}-")


@pytest.fixture
async def comms(module_server: _server.RunningServer) -> AsyncGenerator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=module_server.url, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def proxy() -> Generator[RefusingProxy]:
    """The loopback proxy refusing every other request of a module's real agents
    (proxy.py)."""
    with RefusingProxy() as running:
        yield running
