"""Webhook endpoints, the delivery outbox and its log, and reminders, on PostgreSQL.

The outbox is filled by triggers on `asks` (migrations/0005_webhooks.sql, and
0006_delivery_receipts.sql for ask.not_delivered), in the transaction
of the change itself; this module registers endpoints, hands due deliveries to the worker
(compass_server/webhooks/sender.py) and records what each attempt did, with the statements
every notifier's outbox shares (store/postgres/outbox.py). Several server processes may
share a database: a claim takes rows with FOR UPDATE SKIP LOCKED and leases them (moves their
`next_attempt_at` past the attempt's timeout), so no delivery is attempted by two processes at
once and one whose process died is attempted again once its lease ends.
"""

from __future__ import annotations

import base64
import json
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final

from compass_core.jsonvalues import is_array, is_object
from compass_server.domain.errors import InvalidArgumentError, NotFoundError
from compass_server.domain.webhook_targets import AllowList, check_url
from compass_server.store import DueDelivery, WebhookOutbox
from compass_server.store.postgres import outbox
from compass_server.store.postgres.base import new_id

if TYPE_CHECKING:
    from collections.abc import Sequence

    import asyncpg

EVENT_TYPES: Final = (
    "ask.created",
    "ask.answered",
    "ask.closed",
    "ask.reminder",
    "ask.not_delivered",
)
"""What an endpoint can subscribe to (all by default)."""
NOTHING_INTERNAL: Final = AllowList()


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookRow:
    """A registered endpoint (never with its secret)."""

    webhook_id: str
    workspace_id: str
    url: str
    events: tuple[str, ...]
    created_at: datetime

    def to_json(self) -> dict[str, object]:
        return {
            "webhook_id": self.webhook_id,
            "workspace_id": self.workspace_id,
            "url": self.url,
            "events": list(self.events),
            "created_at": self.created_at.isoformat(),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Attempt:
    attempt: int
    at: datetime
    duration_ms: int
    outcome: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DeliveryLog:
    delivery_id: str
    event_type: str
    ask_id: str
    occurred_at: datetime
    state: str
    attempts: tuple[Attempt, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "delivery_id": self.delivery_id,
            "event_type": self.event_type,
            "ask_id": self.ask_id,
            "occurred_at": self.occurred_at.isoformat(),
            "state": self.state,
            "attempts": [
                {
                    "attempt": a.attempt,
                    "at": a.at.isoformat(),
                    "duration_ms": a.duration_ms,
                    "outcome": a.outcome,
                }
                for a in self.attempts
            ],
        }


def new_secret() -> str:
    """A Standard Webhooks signing secret: "whsec_" and the base64 of 32 random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def check_events(events: Sequence[str]) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(events)) or EVENT_TYPES
    unknown = [e for e in chosen if e not in EVENT_TYPES]
    if unknown:
        raise InvalidArgumentError(
            f"unknown event type(s) {', '.join(unknown)}; known: {', '.join(EVENT_TYPES)}"
        )
    return chosen


class WebhookStore(outbox.OutboxTable[DueDelivery], WebhookOutbox):
    """The webhook tables of one PostgresStore (sharing its pool): the outbox the worker
    delivers (`PostgresStore.webhooks()`; its claims: store/postgres/outbox.py), and the
    endpoints `compass admin` registers."""

    table = outbox.WEBHOOKS

    async def add(
        self,
        workspace_id: str,
        url: str,
        events: Sequence[str] = (),
        *,
        allow: AllowList = NOTHING_INTERNAL,
    ) -> tuple[WebhookRow, str]:
        """Register an endpoint; returns it and its secret (shown once).

        Raises:
            InvalidArgumentError: a bad URL (domain/webhook_targets.check_url, with `allow`
                naming the internal hosts it may reach) or event type.
            NotFoundError: no such workspace.
        """
        url, chosen, secret = check_url(url, allow), check_events(events), new_secret()
        async with self._store.transaction() as conn:
            if not await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM workspaces WHERE workspace_id = $1)", workspace_id
            ):
                raise NotFoundError("workspace not found")
            row = await conn.fetchrow(
                """INSERT INTO webhooks (webhook_id, workspace_id, url, secret, events)
                   VALUES ($1, $2, $3, $4, $5)
                   RETURNING webhook_id, workspace_id, url, events, created_at""",
                new_id("wh"),
                workspace_id,
                url,
                secret,
                list(chosen),
            )
        if row is None:  # RETURNING of an INSERT that raised nothing always has its row
            raise RuntimeError("the webhook insert returned no row")
        return _webhook_row(row), secret

    async def list(self, workspace_id: str) -> list[WebhookRow]:
        async with self._store.connection() as conn:
            rows = await conn.fetch(
                """SELECT webhook_id, workspace_id, url, events, created_at FROM webhooks
                   WHERE workspace_id = $1 ORDER BY created_at, webhook_id""",
                workspace_id,
            )
        return [_webhook_row(r) for r in rows]

    async def remove(self, webhook_id: str) -> None:
        """Delete an endpoint with its outbox and log. Raises NotFoundError when absent."""
        async with self._store.transaction() as conn:
            status = await conn.execute("DELETE FROM webhooks WHERE webhook_id = $1", webhook_id)
        if status == "DELETE 0":
            raise NotFoundError("webhook not found")

    async def deliveries(self, webhook_id: str, limit: int = 20) -> list[DeliveryLog]:
        """The endpoint's latest deliveries, newest first, each with its attempts."""
        async with self._store.connection() as conn:
            rows = await conn.fetch(
                """SELECT d.delivery_id, d.event_type, d.ask_id, d.occurred_at, d.state,
                          COALESCE(
                              jsonb_agg(jsonb_build_object(
                                  'attempt', a.attempt, 'at', a.at,
                                  'duration_ms', a.duration_ms, 'outcome', a.outcome)
                                  ORDER BY a.attempt) FILTER (WHERE a.attempt IS NOT NULL),
                              '[]') AS attempts
                   FROM webhook_deliveries d
                   LEFT JOIN webhook_attempts a ON a.delivery_id = d.delivery_id
                   WHERE d.webhook_id = $1
                   GROUP BY d.delivery_id
                   ORDER BY d.occurred_at DESC, d.delivery_id DESC
                   LIMIT $2""",
                webhook_id,
                limit,
            )
        return [
            DeliveryLog(
                delivery_id=r["delivery_id"],
                event_type=r["event_type"],
                ask_id=r["ask_id"],
                occurred_at=r["occurred_at"],
                state=r["state"],
                attempts=tuple(
                    Attempt(
                        attempt=int(str(a["attempt"])),
                        at=datetime.fromisoformat(str(a["at"])),
                        duration_ms=int(str(a["duration_ms"])),
                        outcome=str(a["outcome"]),
                    )
                    for a in _json_list(r["attempts"])
                ),
            )
            for r in rows
        ]

    def due(self, row: asyncpg.Record) -> DueDelivery:
        return DueDelivery(
            delivery_id=row["delivery_id"],
            webhook_id=row["webhook_id"],
            url=row["url"],
            secret=row["secret"],
            event_type=row["event_type"],
            ask_id=row["ask_id"],
            occurred_at=row["occurred_at"],
            payload=row["payload"],
            attempts=int(row["attempts"]),
        )

    async def record(
        self,
        delivery: DueDelivery,
        *,
        payload: str,
        duration_ms: int,
        outcome: str,
        delivered: bool,
        retry_at: datetime | None,
    ) -> None:
        """Log one attempt and settle the delivery: delivered, retried at `retry_at`, or failed
        (not delivered and no `retry_at`)."""
        async with self._store.transaction() as conn:
            await outbox.record(
                conn,
                outbox.WEBHOOKS,
                delivery.delivery_id,
                attempt=delivery.attempts + 1,
                state=outbox.settled_state(delivered=delivered, retry_at=retry_at),
                payload=payload,
                retry_at=retry_at,
                duration_ms=duration_ms,
                outcome=outcome,
            )

    async def remind(
        self, now: datetime, after: timedelta, most: int, limit: int = 100
    ) -> list[str]:
        """Enqueue reminders for pending asks waiting longer than `after` since they were
        asked or last reminded, at most `most` times per ask; one process at a time. The
        step is every notifier's (ask.reminder here, a re-push to devices):
        store/postgres/outbox.remind.

        Returns:
            The ask ids reminded of.
        """
        return await outbox.remind(self._store, now, after, most, limit)


def _json_list(value: object) -> list[dict[str, object]]:
    """A jsonb array from the pool (decoded by its codec, or still text)."""
    decoded: object = json.loads(value) if isinstance(value, str) else value
    if not is_array(decoded):
        raise TypeError("expected a JSON array")
    return [item for item in decoded if is_object(item)]


def _webhook_row(row: asyncpg.Record) -> WebhookRow:
    return WebhookRow(
        webhook_id=row["webhook_id"],
        workspace_id=row["workspace_id"],
        url=row["url"],
        events=tuple(row["events"]),
        created_at=row["created_at"],
    )
