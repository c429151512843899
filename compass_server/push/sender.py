"""The push worker: sends the push outbox (`Store.push_outbox()`) to people's devices through
their browsers' push services, as Web Push (RFC 8030) with an encrypted payload (RFC 8291,
aes128gcm) and a VAPID signature (RFC 8292).

Its rounds are every notifier's (background/outbox.OutboxWorker): due pushes claimed once
across processes and leased, at most one in flight per device (a device's pushes go in
order: an ask's closing never overtakes its notice here) and MAX_IN_FLIGHT in all, so a slow
or failing push service delays only its own devices. An attempt:

1. reads the ask; an 'ask' (or 'ask.reminder') push of an ask that has ended meanwhile is
   skipped (its 'ask_closed' follows);
2. builds the JSON (domain/push.py; an 'ask' push carries a fresh one-time answer token,
   bound to the ask and the device's person, of which only the hash is stored);
3. encrypts it to the device's keys (http-ece), signs a VAPID JWT for the endpoint's origin,
   and POSTs it over the webhooks' checked transport (webhooks/transport.py: the endpoint's
   addresses are checked when connecting; internal ones need COMPASS_PUSH_ALLOW_HOSTS), with
   `TTL`, `Urgency: high` for an ask (normal for its closing) and a `Topic` per ask (a push
   service replaces a push still waiting for an offline device with the newer one);
4. records what the push service said: 2xx sent (the device's last success), 404/410 gone
   (the device is removed with its pushes), 429/5xx/no answer retried on the webhooks'
   schedule (COMPASS_WEBHOOK_BACKOFF_SECONDS), any other 4xx failed; the device keeps the
   last error for its person to see.

Nothing of a payload, token, key or endpoint is logged: the delivery id, event and outcome.
"""

from __future__ import annotations

import hashlib
import logging
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

import http_ece
from cryptography.hazmat.primitives.asymmetric import ec

from compass_server.background.outbox import Forget, retry_time, utc_now
from compass_server.domain.errors import InvalidArgumentError
from compass_server.domain.push import PUSH_SETTING, ask_payload, closed_payload
from compass_server.domain.vapid import b64url, b64url_decode, default_subject
from compass_server.domain.webhook_targets import AllowList, check_url
from compass_server.store import DuePush
from compass_server.webhooks.sender import BACKOFF
from compass_server.webhooks.transport import HttpOutboxWorker
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import httpx

    from compass_server.config import Settings
    from compass_server.push.keys import VapidSource
    from compass_server.store import PushOutbox, Store
    from compass_server.store.push import PushResult
    from compass_server.webhooks.sender import AskSource

__all__ = ["PushSender", "encrypt", "from_settings", "topic"]

logger = logging.getLogger(__name__)

PER_DEVICE: Final = 1
"""Pushes in flight to one device at once, per process: its pushes go in order."""
ASK_TTL_SECONDS: Final = 24 * 3600
"""How long a push service keeps an ask's push for a device that is offline (less when the
ask's deadline is sooner)."""
CLOSED_TTL_SECONDS: Final = 24 * 3600
TOKEN_KEEP: Final = timedelta(days=1)
"""Answer tokens of ended asks are forgotten this long after they were made (a tap on an old
notice then says "unknown" rather than "already answered")."""
USER_AGENT: Final = "compass-push/1"


def encrypt(plaintext: bytes, p256dh: str, auth: str) -> bytes:
    """`plaintext` encrypted to a subscriber's keys (RFC 8291, aes128gcm), with a fresh
    sender key pair and salt; the body of a push."""
    return http_ece.encrypt(
        plaintext,
        private_key=ec.generate_private_key(ec.SECP256R1()),
        dh=b64url_decode(p256dh),
        auth_secret=b64url_decode(auth),
        version="aes128gcm",
    )


def topic(ask_id: str) -> str:
    """The `Topic` of an ask's pushes (RFC 8030 §5.4: at most 32 base64url characters)."""
    return b64url(hashlib.sha256(ask_id.encode()).digest())[:32]


def from_settings(
    settings: Settings,
    store: Store,
    keys: VapidSource,
    *,
    public_url: Callable[[], str] | None = None,
    on_outcome: Callable[[PushResult], None] | None = None,
    on_latency: Callable[[float], None] | None = None,
    on_error: Callable[[], None] | None = None,
) -> PushSender | None:
    """The push worker of `store`, as `settings` say (its poll, timeout and retry schedule
    are the webhooks'); None when the store keeps no push outbox (the in-memory one).
    `public_url` says where people open Compass when it is known only once the server
    listens (else `settings.base_url`)."""
    outbox = store.push_outbox()
    if outbox is None:
        return None
    return PushSender(
        outbox,
        store,
        keys,
        public_url=public_url or (lambda: settings.base_url),
        subject=settings.vapid_subject or default_subject(settings.base_url),
        poll_seconds=settings.webhook_poll_seconds,
        timeout_seconds=settings.webhook_timeout_seconds,
        backoff=settings.webhook_backoff_seconds or BACKOFF,
        allow=settings.push_allow,
        on_outcome=on_outcome,
        on_latency=on_latency,
        on_error=on_error,
    )


class PushSender(HttpOutboxWorker[DuePush]):
    """Sends the push outbox of one database, until cancelled (its rounds:
    background/outbox.OutboxWorker; its client: webhooks/transport.HttpOutboxWorker)."""

    def __init__(
        self,
        outbox: PushOutbox,
        asks: AskSource,
        keys: VapidSource,
        *,
        public_url: Callable[[], str],
        subject: str,
        poll_seconds: float = 1.0,
        timeout_seconds: float = 10.0,
        backoff: Sequence[float] = BACKOFF,
        allow: AllowList | None = None,
        clock: Callable[[], datetime] = utc_now,
        transport: httpx.AsyncBaseTransport | None = None,
        on_outcome: Callable[[PushResult], None] | None = None,
        on_latency: Callable[[float], None] | None = None,
        on_error: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(
            outbox,
            allow=allow or AllowList(setting=PUSH_SETTING),
            user_agent=USER_AGENT,
            timeout_seconds=timeout_seconds,
            transport=transport,
            name="push",
            logger=logger,
            poll_seconds=poll_seconds,
            per_endpoint=PER_DEVICE,
            clock=clock,
            on_error=on_error,
            # Now and then, forget the answer tokens of asks that ended a while ago.
            forget=Forget(outbox.purge, TOKEN_KEEP),
        )
        self._pushes = outbox
        self._asks = asks
        self._keys = keys
        self._public_url = public_url
        """Where people open Compass (with a trailing slash): the links and answer_url."""
        self._subject = subject
        self._backoff = tuple(backoff)
        self._on_outcome = on_outcome
        self._on_latency = on_latency

    def destination(self, delivery: DuePush) -> str:
        return delivery.subscription_id

    async def attempt(self, delivery: DuePush) -> None:
        found = await self._asks.notified_ask(delivery.ask_id)
        if found is None:
            await self._settle(delivery, "skipped", "ask not found")
            return
        row = found[0]
        ask = row.ask.ask
        if delivery.event_type == "ask_closed":
            body, urgency, ttl = closed_payload(ask), "normal", CLOSED_TTL_SECONDS
        elif ask.status != comms_pb2.ASK_STATUS_PENDING:
            await self._settle(delivery, "skipped", "the ask ended before its push left")
            return
        else:
            token = await self._pushes.new_answer_token(ask.ask_id, delivery.account_id)
            body = ask_payload(
                ask,
                asker=row.author_name,
                channel=row.channel_name,
                public_url=self._public_url(),
                answer_token=token,
            )
            urgency, ttl = "high", self._ask_ttl(ask)
        try:
            url = check_url(delivery.endpoint, self._allow, https_only=True)
        except InvalidArgumentError as exc:
            # Stored before the allow list changed: an internal host may be allowed again.
            result: PushResult = "retried" if "internal" in exc.message else "failed"
            await self._settle(delivery, result, f"refused: {exc.message}")
            return
        key = await self._keys.key()
        sent_at = self._clock()
        headers = {
            "content-type": "application/octet-stream",
            "content-encoding": "aes128gcm",
            "ttl": str(ttl),
            "urgency": urgency,
            "topic": topic(ask.ask_id),
            "authorization": key.authorization(url, self._subject, time.time()),
        }
        posted = await self.post(
            url, content=encrypt(body, delivery.p256dh, delivery.auth), headers=headers
        )
        status = posted.status
        if status is not None and 200 <= status < 300:
            result = "sent"
            if delivery.event_type == "ask" and self._on_latency is not None:
                self._on_latency(max(0.0, (self._clock() - delivery.occurred_at).total_seconds()))
        elif status in {404, 410}:
            result = "gone"
        elif status is None or status == 429 or status >= 500:
            result = "retried"
        else:  # 400 (a malformed push), 401/403 (its VAPID refused), 413 (too large)
            result = "failed"
        await self._settle(delivery, result, posted.outcome, sent_at=sent_at)

    async def _settle(
        self,
        push: DuePush,
        result: PushResult,
        outcome: str,
        *,
        sent_at: datetime | None = None,
    ) -> None:
        retry_at = None
        if result == "retried":
            retry_at = retry_time(self._backoff, push.attempts, sent_at or self._clock())
            if retry_at is None:
                result = "failed"
        await self._pushes.record(push, result=result, outcome=outcome, retry_at=retry_at)
        if self._on_outcome is not None:
            self._on_outcome(result)
        logger.info(
            "push %s %s attempt %d: %s (%s)",
            push.delivery_id,
            push.event_type,
            push.attempts + 1,
            outcome,
            result,
        )

    @staticmethod
    def _ask_ttl(ask: comms_pb2.Ask) -> int:
        if not ask.HasField("deadline"):
            return ASK_TTL_SECONDS
        left = (ask.deadline.ToDatetime(UTC) - datetime.now(UTC)).total_seconds()
        return max(60, min(ASK_TTL_SECONDS, int(left)))
