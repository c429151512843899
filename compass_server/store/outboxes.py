"""The notifiers' outboxes in the Store port: what their workers need (docs/webhooks.md,
docs/answering/push.md). Each is claimed the same way (`Claims`: store/postgres/outbox.py
implements it once, background/outbox.py runs the rounds on it); each records its attempts
its own way.

`compass_server.store` re-exports them: import them from there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar

from compass_server.store.push import VapidKeys
from compass_server.store.rows import DueDelivery, DuePush

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from datetime import datetime, timedelta

    from compass_server.store.push import PushResult

D_co = TypeVar("D_co", covariant=True)


class Claims(Protocol[D_co]):
    """An outbox's claims: due deliveries, each leased to one process for one attempt."""

    async def claim(
        self,
        now: datetime,
        lease: timedelta,
        limit: int,
        *,
        per_endpoint: int,
        busy: Mapping[str, int] | None = None,
    ) -> Sequence[D_co]:
        """Take up to `limit` due deliveries for one attempt each, leased until now + lease,
        oldest first but at most `per_endpoint` per destination counting the `busy` ones (its
        attempts in flight in this process): one destination with a backlog, or a slow one,
        cannot take every attempt the worker makes."""
        ...


class WebhookOutbox(Claims[DueDelivery], Protocol):
    """What the webhook worker (`webhooks/sender.py`) needs of the outbox: the deliveries due,
    leased to one process at a time, the record of each attempt, and the reminders."""

    async def remind(self, now: datetime, after: timedelta, most: int) -> Sequence[str]:
        """Enqueue reminders for the asks pending longer than `after` since they were asked
        or last reminded, at most `most` times per ask, for every notifier (ask.reminder to
        webhooks, a re-push to devices: store/postgres/outbox.remind). Returns the ask ids
        reminded of."""
        ...

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
        """Log one attempt and settle the delivery: delivered, retried at `retry_at`, or
        failed (not delivered and no `retry_at`)."""
        ...


class PushOutbox(Claims[DuePush], VapidKeys, Protocol):
    """What the push worker needs: the due pushes, leased to one process at a time
    (store/postgres/outbox.py), answer tokens for them, and the record of each attempt."""

    async def new_answer_token(self, ask_id: str, account_id: str) -> str:
        """A new one-time token answering `ask_id` as `account_id` (only its hash is kept)."""
        ...

    async def record(
        self, push: DuePush, *, result: PushResult, outcome: str, retry_at: datetime | None
    ) -> None:
        """Settle one attempt: "sent" (the device's last success is now), "skipped" (nothing
        to tell any more: the ask ended before its push left), "retried" (due again at
        `retry_at`), "failed" (given up); both of these keep `outcome` as the device's last
        error; "gone" removes the device with its pushes (its push service said 404 or 410)."""
        ...

    async def purge(self, before: datetime) -> int:
        """Forget the answer tokens of asks that ended, made before `before`. Returns how
        many."""
        ...
