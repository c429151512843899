"""`compass migrate`: applies pending migrations once and says which, as JSON."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg

from tests import _pg
from tests.cli.conftest import cli_env, run_cli

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

import pytest

MIGRATIONS = sorted(
    int(p.name[:4]) for p in (Path(__file__).parents[2] / "migrations").glob("*.sql")
)


@pytest.fixture
async def empty_database(pg_admin_dsn: str) -> AsyncGenerator[str]:
    name = f"compass_cli_{uuid.uuid4().hex[:12]}"
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


async def test_migrate_applies_every_migration_once(empty_database: str) -> None:
    assert MIGRATIONS
    env = cli_env(COMPASS_DATABASE_URL=empty_database)
    first = run_cli(["migrate"], env)
    assert first.code == 0, first
    assert json.loads(first.stdout) == {"applied": MIGRATIONS}
    again = run_cli(["migrate"], env)
    assert again.code == 0, again
    assert json.loads(again.stdout) == {"applied": []}
    conn = await asyncpg.connect(empty_database)
    try:
        versions = [
            row["version"]
            for row in await conn.fetch("SELECT version FROM schema_migrations ORDER BY version")
        ]
        tables = {
            row["tablename"]
            for row in await conn.fetch(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            )
        }
    finally:
        await conn.close()
    assert versions == MIGRATIONS
    assert {"accounts", "api_tokens", "workspaces", "channels", "messages", "asks"} <= tables


def test_migrate_reports_an_unreachable_database_in_one_line() -> None:
    env = cli_env(
        COMPASS_DATABASE_URL="postgresql://nobody@127.0.0.1:9/none", COMPASS_DB_TIMEOUT_SECONDS="2"
    )
    ran = run_cli(["migrate"], env)
    assert ran.code == 1, ran
    assert ran.stdout == ""
    assert ran.stderr.startswith("compass: cannot connect to the database"), ran.stderr
    assert "Traceback" not in ran.stderr
