"""Outgoing webhooks: deliver the outbox (store/webhooks.py), signed per Standard Webhooks.

Every `poll_seconds` the worker claims the due deliveries, builds each one's body at its first
attempt (kept for the retries: a receiver sees the same body under the same `webhook-id`),
signs it with the endpoint's secret (`standardwebhooks`, HMAC-SHA256 over
"<webhook-id>.<webhook-timestamp>.<body>") and POSTs it. A 2xx is delivered; anything else
(another status, a timeout, a refused connection) is retried after a growing delay with
jitter, each retry signed afresh with the time it is sent (receivers reject timestamps older
than their tolerance, 5 minutes by default), until `BACKOFF` runs out: then the delivery is
failed. Every attempt is logged (`compass admin webhook-deliveries`); no secret, signature or
response body is ever logged or stored. Reminders (ask.reminder) are enqueued on the same tick.
docs/webhooks.md has the payloads and how a receiver verifies them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final, Protocol

import httpx
from standardwebhooks.webhooks import Webhook

from compass_server.domain.errors import CompassError
from compass_server.domain.limits import DELIVERY_STATE_NAMES
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from compass_server.store import AccountKind, PendingAskRow
    from compass_server.store.webhooks import DueDelivery, WebhookStore

logger = logging.getLogger(__name__)

BACKOFF: Final = (5.0, 30.0, 120.0, 600.0, 1800.0, 3600.0, 3600.0, 3600.0)
"""Seconds before each retry (with up to 20% jitter); after the last, the delivery fails: nine
attempts over about 3 hours 5 minutes."""
CLAIM_LIMIT: Final = 20
USER_AGENT: Final = "compass-webhooks/1"


def utc_now() -> datetime:
    return datetime.now(UTC)


class AskSource(Protocol):
    """Where the worker reads an ask to tell of (PostgresStore)."""

    async def notified_ask(self, ask_id: str) -> tuple[PendingAskRow, str, AccountKind] | None:
        """(the ask with its channel and author, its workspace id, the author's kind)."""
        ...


class WebhookSender:
    """Delivers the outbox of one database, until cancelled."""

    def __init__(
        self,
        outbox: WebhookStore,
        asks: AskSource,
        *,
        public_url: str,
        poll_seconds: float = 1.0,
        timeout_seconds: float = 10.0,
        backoff: Sequence[float] = BACKOFF,
        reminder_after: timedelta | None = None,
        reminder_max: int = 3,
        clock: Callable[[], datetime] = utc_now,
        transport: httpx.AsyncBaseTransport | None = None,
        on_outcome: Callable[[str], None] | None = None,
    ) -> None:
        self._outbox = outbox
        self._asks = asks
        self._public_url = public_url if public_url.endswith("/") else public_url + "/"
        self._poll = poll_seconds
        self._timeout = timeout_seconds
        self._backoff = tuple(backoff)
        self._reminder_after = reminder_after
        self._reminder_max = reminder_max
        self._clock = clock
        self._transport = transport
        self._on_outcome = on_outcome
        self.idle = asyncio.Event()
        """Set whenever a tick found nothing due (tests wait on it)."""

    async def run(self) -> None:
        async with httpx.AsyncClient(
            transport=self._transport,
            timeout=self._timeout,
            follow_redirects=False,
            headers={"user-agent": USER_AGENT},
        ) as client:
            while True:
                try:
                    busy = await self.tick(client)
                except CompassError as exc:  # the database is away: try again next tick
                    logger.warning("webhook delivery paused: %s", exc.message)
                    busy = False
                if not busy:
                    self.idle.set()
                    await asyncio.sleep(self._poll)

    async def tick(self, client: httpx.AsyncClient) -> bool:
        """Enqueue due reminders, then attempt the due deliveries; True if there were any."""
        now = self._clock()
        if self._reminder_after is not None:
            await self._outbox.remind(now, self._reminder_after, self._reminder_max)
        lease = timedelta(seconds=self._timeout * 2 + 5)
        due = await self._outbox.claim(now, lease, CLAIM_LIMIT)
        if due:
            self.idle.clear()
        await asyncio.gather(*(self._attempt(client, d) for d in due))
        return bool(due)

    async def _attempt(self, client: httpx.AsyncClient, delivery: DueDelivery) -> None:
        payload = delivery.payload or await self._payload(delivery)
        if payload is None:  # the ask is gone: nothing to tell
            await self._outbox.record(
                delivery,
                payload="{}",
                duration_ms=0,
                outcome="ask not found",
                delivered=False,
                retry_at=None,
            )
            return
        sent_at = self._clock()
        headers = {
            "content-type": "application/json",
            "webhook-id": delivery.delivery_id,
            "webhook-timestamp": str(int(sent_at.timestamp())),
            "webhook-signature": Webhook(delivery.secret).sign(
                delivery.delivery_id, sent_at, payload
            ),
        }
        started = time.monotonic()
        try:
            response = await client.post(delivery.url, content=payload.encode(), headers=headers)
            outcome = f"http {response.status_code}"
            delivered = 200 <= response.status_code < 300
        except httpx.TimeoutException:
            outcome, delivered = "timeout", False
        except httpx.HTTPError:
            outcome, delivered = "connection failed", False
        duration_ms = round((time.monotonic() - started) * 1000)
        retry_at = None
        if not delivered and delivery.attempts < len(self._backoff):
            delay = self._backoff[delivery.attempts]
            retry_at = sent_at + timedelta(seconds=delay * (1 + random.random() * 0.2))  # noqa: S311 - jitter, not secrecy
        await self._outbox.record(
            delivery,
            payload=payload,
            duration_ms=duration_ms,
            outcome=outcome,
            delivered=delivered,
            retry_at=retry_at,
        )
        kind = "delivered" if delivered else ("retry" if retry_at is not None else "failed")
        if self._on_outcome is not None:
            self._on_outcome(kind)
        # The id and the outcome only: never the secret, the signature or the body.
        logger.info(
            "webhook %s %s attempt %d: %s (%s)",
            delivery.delivery_id,
            delivery.event_type,
            delivery.attempts + 1,
            outcome,
            kind,
        )

    async def _payload(self, delivery: DueDelivery) -> str | None:
        found = await self._asks.notified_ask(delivery.ask_id)
        if found is None:
            return None
        row, workspace_id, author_kind = found
        body = event_payload(
            delivery.event_type,
            delivery.occurred_at,
            row,
            workspace_id,
            author_kind,
            self._public_url,
        )
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def event_payload(
    event_type: str,
    occurred_at: datetime,
    row: PendingAskRow,
    workspace_id: str,
    author_kind: AccountKind,
    public_url: str,
) -> dict[str, object]:
    """The Standard Webhooks body of one event: {type, timestamp, data}. Never the answers'
    content (they go to a third party): only the outcome and who gave it. `ask.not_delivered`
    adds the receipt's state, who reported it and when, but never its detail (which may quote
    the participant's text) nor its payload (what was handed to the agent)."""
    ask = row.ask.ask
    data: dict[str, object] = {
        "ask_id": ask.ask_id,
        "workspace_id": workspace_id,
        "channel_id": row.ask.channel_id,
        "channel_name": row.channel_name,
        "message_id": row.ask.message_id,
        "asked_by": {
            "account_id": row.author_account_id,
            "name": row.author_name,
            "kind": author_kind.value,
        },
        "asked_at": row.asked_at.isoformat(),
        "status": comms_pb2.AskStatus.Name(ask.status).removeprefix("ASK_STATUS_").lower(),
        "questions": [_question(q) for q in ask.questions],
        "link": f"{public_url}#/ask/{ask.ask_id}",
    }
    if ask.HasField("deadline"):
        data["deadline"] = ask.deadline.ToDatetime(UTC).isoformat()
    if ask.answered_by_account_id:
        data["answered_by"] = {
            "account_id": ask.answered_by_account_id,
            "name": ask.answered_by_name,
        }
        data["answered_at"] = ask.answered_at.ToDatetime(UTC).isoformat()
    if ask.closed_by_account_id or ask.HasField("closed_at"):
        data["closed_by"] = {"account_id": ask.closed_by_account_id, "name": ask.closed_by_name}
        data["closed_at"] = ask.closed_at.ToDatetime(UTC).isoformat()
    if event_type == "ask.not_delivered" and ask.HasField("delivery"):
        receipt = ask.delivery
        data["delivery"] = {
            "state": DELIVERY_STATE_NAMES.get(receipt.state, "unknown"),
            "reported_by": {
                "account_id": receipt.reported_by_account_id,
                "name": receipt.reported_by_name,
            },
            "reported_at": receipt.reported_at.ToDatetime(UTC).isoformat(),
        }
    return {"type": event_type, "timestamp": occurred_at.isoformat(), "data": data}


def _question(question: comms_pb2.AskQuestion) -> dict[str, object]:
    entry: dict[str, object] = {
        "question_id": question.question_id,
        "header": question.header,
        "question": question.question,
        "allow_multiple": question.allow_multiple,
        "options": [
            {"id": o.id, "label": o.label, "description": o.description} for o in question.options
        ],
    }
    if question.HasField("recommended"):
        entry["recommended"] = question.recommended
    return entry
