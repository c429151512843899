"""`compass migrate`: applies pending migrations once and says which, as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg

from tests.cli.conftest import cli_env, run_cli

MIGRATIONS = sorted(
    int(p.name[:4])
    for p in (Path(__file__).parents[2] / "compass_server" / "store" / "migrations").glob("*.sql")
)


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
    assert ran.stderr.startswith(
        "compass: cannot connect to PostgreSQL at 127.0.0.1:9, database 'none'"
    ), ran.stderr
    assert "Traceback" not in ran.stderr
