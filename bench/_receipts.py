"""Answer -> delivery receipt stored, read from the database's own clock (asks.answered_at and
asks.delivery_reported_at are both written by the server), for the answer-latency benches."""

from __future__ import annotations

from typing import TYPE_CHECKING

import asyncpg

from bench._timing import percentile

if TYPE_CHECKING:
    from collections.abc import Sequence


async def receipt_delays(
    dsn: str, *, ask_ids: Sequence[str] = (), channel_id: str = ""
) -> list[float]:
    """Seconds from each answered ask's answer to its stored receipt: the asks named, or every
    answered ask of `channel_id`."""
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT extract(epoch FROM delivery_reported_at - answered_at) AS seconds"
            " FROM asks WHERE (ask_id = ANY($1::text[]) OR channel_id = $2)"
            " AND answered_at IS NOT NULL AND delivery_reported_at IS NOT NULL",
            list(ask_ids),
            channel_id,
        )
    finally:
        await conn.close()
    return [float(row["seconds"]) for row in rows]


def receipt_line(delays: Sequence[float], answered: int) -> str:
    """The printed figure (what the closing notes and README quote)."""
    if not delays:
        return f"  answer -> receipt stored: no receipts for {answered} answers"
    return (
        f"  answer -> receipt stored: p50 {percentile(delays, 0.5) * 1e3:.2f} ms, "
        f"p99 {percentile(delays, 0.99) * 1e3:.2f} ms ({len(delays)} receipts, "
        f"{answered} answers)"
    )
