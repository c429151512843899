"""Seeing the store's connections wait for a row lock (pg_stat_activity): the sentinel for "the
call is inside its transaction now"."""

from __future__ import annotations

import asyncpg


async def waiting_backends(database_url: str) -> list[int]:
    """The pids of the store's connections (application_name 'compass') waiting for a lock."""
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch(
            """SELECT pid FROM pg_stat_activity
               WHERE datname = current_database() AND application_name = 'compass'
                 AND wait_event_type = 'Lock'"""
        )
    finally:
        await conn.close()
    return [row["pid"] for row in rows]
