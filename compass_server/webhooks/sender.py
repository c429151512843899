"""Outgoing webhooks: deliver the store's outbox (`Store.webhooks()`), signed per Standard Webhooks.

Every `poll_seconds` the worker claims due deliveries and starts an attempt for each, beside
those still running: at most MAX_IN_FLIGHT at once and PER_ENDPOINT per endpoint, so one
slow, dead or broken endpoint never holds up another workspace's deliveries
(docs/webhooks.md; the rounds are every notifier's, background/outbox.py). An attempt builds the body at the first attempt (kept for the retries: a receiver
sees the same body under the same `webhook-id`), signs it with the endpoint's secret
(`standardwebhooks`, HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>") and POSTs it,
all within `timeout_seconds` (the whole attempt: connecting, sending, the response's status
line and headers, however slowly they trickle in: webhooks/transport.post); of the response
it reads at most MAX_RESPONSE_BYTES, as sent (never decompressed), and keeps nothing. A 2xx is delivered;
anything else (another status, a timeout, a refused connection, an internal address, a URL
the client cannot use) is retried after a growing delay with jitter, each retry signed afresh
with the time it is sent (receivers reject timestamps older than their tolerance, 5 minutes by
default), until `BACKOFF` runs out: then the delivery is failed. Every attempt is logged
(`compass admin webhook-deliveries`); no secret, signature or response body is ever logged or
stored. Reminders (ask.reminder, and a push's re-push) are enqueued on the same rounds.

Where it connects: the URL is judged again (domain/webhook_targets.check_url) and the addresses
its host resolves to are checked when connecting (compass_server/webhooks/transport.py). Its health
(`alive`) is in /readyz and `compass_webhook_worker_up`. docs/webhooks.md has the payloads and
how a receiver verifies them.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, timedelta
from typing import TYPE_CHECKING, Final, Protocol

from standardwebhooks.webhooks import Webhook

from compass_core.ask_status import status_name
from compass_server.background.outbox import retry_time, utc_now
from compass_server.domain.errors import InvalidArgumentError
from compass_server.domain.limits import DELIVERY_STATE_NAMES
from compass_server.domain.webhook_targets import AllowList, check_url
from compass_server.store import DueDelivery
from compass_server.webhooks.transport import MAX_RESPONSE_BYTES, HttpOutboxWorker

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime

    import httpx

    from compass_server.config import Settings
    from compass_server.store import AccountKind, PendingAskRow, Store, WebhookOutbox
    from gen.compass.v1 import comms_pb2

__all__ = ["BACKOFF", "MAX_RESPONSE_BYTES", "PER_ENDPOINT", "WebhookSender", "event_payload"]

logger = logging.getLogger(__name__)

BACKOFF: Final = (5.0, 30.0, 120.0, 600.0, 1800.0, 3600.0, 3600.0, 3600.0)
"""Seconds before each retry (with up to 20% jitter); after the last, the delivery fails: nine
attempts over about 3 hours 5 minutes."""
PER_ENDPOINT: Final = 2
"""Attempts one process runs at once to one endpoint."""
USER_AGENT: Final = "compass-webhooks/1"


class AskSource(Protocol):
    """Where the worker reads an ask to tell of (the Store)."""

    async def notified_ask(self, ask_id: str) -> tuple[PendingAskRow, str, AccountKind] | None:
        """(the ask with its channel and author, its workspace id, the author's kind)."""
        ...


def from_settings(
    settings: Settings,
    store: Store,
    *,
    on_outcome: Callable[[str], None] | None = None,
    on_error: Callable[[], None] | None = None,
) -> WebhookSender | None:
    """The webhook worker of `store`, as `settings` say; None when the store keeps no outbox
    (`Store.webhooks()`: the in-memory one)."""
    outbox = store.webhooks()
    if outbox is None:
        return None
    after = settings.reminder_after_seconds
    return WebhookSender(
        outbox,
        store,
        public_url=settings.public_url or f"http://{settings.host}:{settings.port}/",
        poll_seconds=settings.webhook_poll_seconds,
        timeout_seconds=settings.webhook_timeout_seconds,
        backoff=settings.webhook_backoff_seconds or BACKOFF,
        reminder_after=timedelta(seconds=after) if after > 0 and settings.reminder_max else None,
        reminder_max=settings.reminder_max,
        allow=settings.webhook_allow,
        on_outcome=on_outcome,
        on_error=on_error,
    )


class WebhookSender(HttpOutboxWorker[DueDelivery]):
    """Delivers the outbox of one database, until cancelled (its rounds:
    background/outbox.OutboxWorker; its client: webhooks/transport.HttpOutboxWorker)."""

    def __init__(
        self,
        outbox: WebhookOutbox,
        asks: AskSource,
        *,
        public_url: str,
        poll_seconds: float = 1.0,
        timeout_seconds: float = 10.0,
        backoff: Sequence[float] = BACKOFF,
        reminder_after: timedelta | None = None,
        reminder_max: int = 3,
        allow: AllowList | None = None,
        clock: Callable[[], datetime] = utc_now,
        transport: httpx.AsyncBaseTransport | None = None,
        on_outcome: Callable[[str], None] | None = None,
        on_error: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(
            outbox,
            allow=allow or AllowList(),
            user_agent=USER_AGENT,
            timeout_seconds=timeout_seconds,
            transport=transport,
            name="webhook delivery",
            logger=logger,
            poll_seconds=poll_seconds,
            per_endpoint=PER_ENDPOINT,
            clock=clock,
            on_error=on_error,
        )
        self._webhooks = outbox
        self._asks = asks
        self._public_url = public_url if public_url.endswith("/") else public_url + "/"
        self._backoff = tuple(backoff)
        self._reminder_after = reminder_after
        self._reminder_max = reminder_max
        self._on_outcome = on_outcome

    def destination(self, delivery: DueDelivery) -> str:
        return delivery.webhook_id

    async def before_claim(self, now: datetime) -> None:
        """Reminders are enqueued on the same rounds, for every notifier (the outbox's
        `remind`: webhooks' ask.reminder, a re-push to devices)."""
        if self._reminder_after is not None:
            await self._webhooks.remind(now, self._reminder_after, self._reminder_max)

    async def attempt(self, delivery: DueDelivery) -> None:
        payload = delivery.payload or await self._payload(delivery)
        if payload is None:  # the ask is gone: nothing to tell
            await self._webhooks.record(
                delivery,
                payload="{}",
                duration_ms=0,
                outcome="ask not found",
                delivered=False,
                retry_at=None,
            )
            return
        sent_at = self._clock()
        started = time.monotonic()
        outcome, delivered, final = await self._post(delivery, payload, sent_at)
        duration_ms = round((time.monotonic() - started) * 1000)
        retry_at = None
        if not delivered and not final:
            retry_at = retry_time(self._backoff, delivery.attempts, sent_at)
        await self._webhooks.record(
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

    async def _post(
        self, delivery: DueDelivery, payload: str, sent_at: datetime
    ) -> tuple[str, bool, bool]:
        """One POST: (outcome for the log, delivered, final: never worth a retry)."""
        try:
            url = check_url(delivery.url, self._allow)
        except InvalidArgumentError as exc:
            # Stored before this check existed, or the allow-list changed since: judged now.
            refused_for_good = "internal" not in exc.message
            return f"refused: {exc.message}", False, refused_for_good
        headers = {
            "content-type": "application/json",
            "webhook-id": delivery.delivery_id,
            "webhook-timestamp": str(int(sent_at.timestamp())),
            "webhook-signature": Webhook(delivery.secret).sign(
                delivery.delivery_id, sent_at, payload
            ),
        }
        posted = await self.post(url, content=payload.encode(), headers=headers)
        delivered = posted.status is not None and 200 <= posted.status < 300
        return posted.outcome, delivered, False

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
        "status": status_name(ask.status),
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
