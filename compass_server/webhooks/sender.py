"""Outgoing webhooks: deliver the store's outbox (`Store.webhooks()`), signed per Standard Webhooks.

Every `poll_seconds` the worker claims due deliveries and starts an attempt for each, beside
those still running: at most MAX_IN_FLIGHT at once and PER_ENDPOINT per endpoint, so one
slow, dead or broken endpoint never holds up another workspace's deliveries
(docs/webhooks.md). An attempt builds the body at the first attempt (kept for the retries: a receiver
sees the same body under the same `webhook-id`), signs it with the endpoint's secret
(`standardwebhooks`, HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>") and POSTs it,
all within `timeout_seconds` (the whole attempt: connecting, sending, the response's status
line and headers, however slowly they trickle in); of the response it reads at most
MAX_RESPONSE_BYTES, as sent (never decompressed), and keeps nothing. A 2xx is delivered;
anything else (another status, a timeout, a refused connection, an internal address, a URL
the client cannot use) is retried after a growing delay with jitter, each retry signed afresh
with the time it is sent (receivers reject timestamps older than their tolerance, 5 minutes by
default), until `BACKOFF` runs out: then the delivery is failed. Every attempt is logged
(`compass admin webhook-deliveries`); no secret, signature or response body is ever logged or
stored. Reminders (ask.reminder) are enqueued on the same tick.

Where it connects: the URL is judged again (domain/webhook_targets.check_url) and the addresses
its host resolves to are checked when connecting (compass_server/webhooks/transport.py). Its health
(`alive`) is in /readyz and `compass_webhook_worker_up`. docs/webhooks.md has the payloads and
how a receiver verifies them.
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

from compass_core.ask_status import status_name
from compass_server.background.periodic import STALLED_SECONDS, Health, every
from compass_server.domain.errors import CompassError, InvalidArgumentError
from compass_server.domain.limits import DELIVERY_STATE_NAMES
from compass_server.domain.webhook_targets import AllowList, check_url
from compass_server.transport.netguard import RateLimitedLog
from compass_server.webhooks.transport import CheckedTransport, RefusedAddressError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from compass_server.config import Settings
    from compass_server.store import (
        AccountKind,
        DueDelivery,
        PendingAskRow,
        Store,
        WebhookOutbox,
    )
    from gen.compass.v1 import comms_pb2

logger = logging.getLogger(__name__)

BACKOFF: Final = (5.0, 30.0, 120.0, 600.0, 1800.0, 3600.0, 3600.0, 3600.0)
"""Seconds before each retry (with up to 20% jitter); after the last, the delivery fails: nine
attempts over about 3 hours 5 minutes."""
MAX_IN_FLIGHT: Final = 20
"""Attempts one process runs at once."""
PER_ENDPOINT: Final = 2
"""Attempts one process runs at once to one endpoint."""
MAX_RESPONSE_BYTES: Final = 64 * 1024
"""Of a response's body, at most this much is read (and dropped); the rest is not read."""
USER_AGENT: Final = "compass-webhooks/1"


def utc_now() -> datetime:
    return datetime.now(UTC)


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


class WebhookSender:
    """Delivers the outbox of one database, until cancelled."""

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
        self._outbox = outbox
        self._asks = asks
        self._public_url = public_url if public_url.endswith("/") else public_url + "/"
        self._poll = poll_seconds
        self._timeout = timeout_seconds
        self._backoff = tuple(backoff)
        self._reminder_after = reminder_after
        self._reminder_max = reminder_max
        self._allow = allow or AllowList()
        self._clock = clock
        self._transport = transport
        self._on_outcome = on_outcome
        self._on_error = on_error
        self._busy: dict[str, int] = {}
        """Endpoint -> its attempts in flight in this process."""
        self._attempts: set[asyncio.Task[None]] = set()
        self._errors = RateLimitedLog(logger, interval=60.0)
        self.health = Health(stalled_after=STALLED_SECONDS + poll_seconds)
        """Whether the rounds run (/readyz and `compass_webhook_worker_up`)."""
        self.idle = asyncio.Event()
        """Set whenever a round found nothing due and nothing in flight (tests wait on it)."""

    @property
    def first_round(self) -> asyncio.Event:
        """Set once the first round has ended (/readyz waits a moment for it at start)."""
        return self.health.first_round

    def alive(self) -> bool:
        """Whether the worker runs and finished a round lately (for /readyz and /metrics)."""
        return self.health.alive()

    async def run(self) -> None:
        """Deliver until cancelled: a round (`tick`) every `poll_seconds`, at once again
        while rounds find work (background/periodic.py: its log policy and health)."""
        async with httpx.AsyncClient(
            transport=self._transport or CheckedTransport(self._allow),
            timeout=self._timeout,
            follow_redirects=False,
            headers={"user-agent": USER_AGENT, "accept-encoding": "identity"},
            trust_env=False,
        ) as client:
            try:
                await every(
                    self._poll,
                    lambda: self.tick(client),
                    name="webhook delivery round",
                    logger=logger,
                    health=self.health,
                    wait=self._after_round,
                    on_unexpected=self._on_error,
                )
            finally:
                for task in self._attempts:
                    task.cancel()
                if self._attempts:
                    await asyncio.wait(self._attempts)

    async def _after_round(self, busy: object) -> None:
        """After a round that started attempts, the next one at once; else wait (`busy` is
        None after a failed round)."""
        if busy is True:
            return
        if not self._attempts:
            self.idle.set()
        await self._pause()

    async def _pause(self) -> None:
        """Sleep a poll interval, or less when an attempt ends (its slot is free again)."""
        if self._attempts:
            await asyncio.wait(
                self._attempts, timeout=self._poll, return_when=asyncio.FIRST_COMPLETED
            )
        else:
            await asyncio.sleep(self._poll)

    async def tick(self, client: httpx.AsyncClient) -> bool:
        """Enqueue due reminders, then start attempts for the due deliveries there is room
        for; True if any were started."""
        now = self._clock()
        if self._reminder_after is not None:
            await self._outbox.remind(now, self._reminder_after, self._reminder_max)
        room = MAX_IN_FLIGHT - len(self._attempts)
        if room <= 0:
            return False
        # The lease outlasts the whole attempt (which timeout_seconds bounds) and recording
        # it: no other process attempts a delivery still in flight here.
        lease = timedelta(seconds=self._timeout * 2 + 5)
        due = await self._outbox.claim(now, lease, room, per_endpoint=PER_ENDPOINT, busy=self._busy)
        if due:
            self.idle.clear()
        for delivery in due:
            self._busy[delivery.webhook_id] = self._busy.get(delivery.webhook_id, 0) + 1
            task = asyncio.create_task(
                self._attempt_safely(client, delivery), name="compass-webhook-attempt"
            )
            self._attempts.add(task)
            task.add_done_callback(self._attempts.discard)
        return bool(due)

    async def _attempt_safely(self, client: httpx.AsyncClient, delivery: DueDelivery) -> None:
        try:
            await self._attempt(client, delivery)
        except CompassError as exc:  # the database went away while recording: the lease ends
            logger.warning(
                "webhook delivery %s not recorded: %s", delivery.delivery_id, exc.message
            )
        except Exception:  # one delivery's trouble is not the worker's
            self._errors.emit("a webhook delivery attempt failed unexpectedly")
            logger.debug("webhook attempt failure", exc_info=True)
            if self._on_error is not None:
                self._on_error()
        finally:
            left = self._busy.get(delivery.webhook_id, 1) - 1
            if left > 0:
                self._busy[delivery.webhook_id] = left
            else:
                self._busy.pop(delivery.webhook_id, None)

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
        started = time.monotonic()
        outcome, delivered, final = await self._post(client, delivery, payload, sent_at)
        duration_ms = round((time.monotonic() - started) * 1000)
        retry_at = None
        if not delivered and not final and delivery.attempts < len(self._backoff):
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

    async def _post(
        self, client: httpx.AsyncClient, delivery: DueDelivery, payload: str, sent_at: datetime
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
        try:
            async with asyncio.timeout(self._timeout):  # the whole attempt, not each read
                request = client.build_request(
                    "POST", url, content=payload.encode(), headers=headers
                )
                response = await client.send(request, stream=True)
                try:
                    read = 0
                    async for chunk in response.aiter_raw():  # as sent: never decompressed
                        read += len(chunk)
                        if read >= MAX_RESPONSE_BYTES:
                            break
                finally:
                    await response.aclose()
        except TimeoutError:
            return "timeout", False, False
        except httpx.TimeoutException:
            return "timeout", False, False
        except httpx.ConnectError as exc:
            if isinstance(exc.__cause__, RefusedAddressError):
                return "refused: internal address", False, False
            return "connection failed", False, False
        except httpx.HTTPError:
            return "connection failed", False, False
        delivered = 200 <= response.status_code < 300
        return f"http {response.status_code}", delivered, False

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
