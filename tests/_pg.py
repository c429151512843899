"""Where the tests get PostgreSQL from (SPEC §6): the tiers, in order.

1. `COMPASS_TEST_DATABASE_URL` when set (CI: the machine's server on 127.0.0.1:5432).
2. testcontainers' PostgreSQL when a Docker daemon answers.
3. An ephemeral local server (compass_server.embedded).

PLACEHOLDER: only tier 1 exists so far; the store issue completes tiers 2 and 3.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Generator


@contextlib.contextmanager
def test_server() -> Generator[str]:
    """Yield an admin DSN (may CREATE DATABASE) of a server the tests may use."""
    url = os.environ.get("COMPASS_TEST_DATABASE_URL")
    if not url:
        raise RuntimeError("set COMPASS_TEST_DATABASE_URL (other tiers not built yet)")
    yield url


def with_database(dsn: str, database: str) -> str:
    """The same server and credentials as `dsn`, on another database."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))
