"""The Web Push half of the Store port (docs/answering/push.md): people's devices, the VAPID
key, the answer tokens (`PushStore`, for the application's push use cases,
`service/push.py`), and the push outbox (`PushOutbox`, for the worker, `push/sender.py`).

`compass_server.store` re-exports both: import them from there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from datetime import datetime, timedelta

    from compass_server.domain.push import NewSubscription
    from compass_server.store.rows import AccountRow, AnswerTokenRow, DuePush, PushSubscriptionRow

PushResult: TypeAlias = Literal["sent", "skipped", "retried", "failed", "gone"]
"""How one push attempt ended (also the label of `compass_push_deliveries_total`)."""


class VapidKeys(Protocol):
    async def vapid_private_key(self, candidate: str) -> str:
        """The VAPID private key every process signs with: the one stored, else `candidate`,
        stored now. Of racing first calls one stores its candidate, and all return it."""
        ...


class PushStore(VapidKeys, Protocol):
    """What the push use cases need of storage. Requests reach it checked (`domain/push.py`)."""

    async def add_push_subscription(
        self, actor: AccountRow, subscription: NewSubscription, *, most: int
    ) -> str:
        """Register a device of `actor`; the same endpoint again updates its keys and name and
        keeps its id.

        Returns:
            The subscription id.

        Raises:
            ResourceExhaustedError: `actor` already has `most` other devices.
        """
        ...

    async def list_push_subscriptions(self, actor: AccountRow) -> Sequence[PushSubscriptionRow]:
        """`actor`'s devices, oldest first."""
        ...

    async def remove_push_subscription(self, actor: AccountRow, subscription_id: str) -> None:
        """Remove one of `actor`'s devices (and the pushes still due to it).

        Raises:
            NotFoundError: no such subscription, or not `actor`'s (the same answer).
        """
        ...

    async def answer_token(self, token: str) -> AnswerTokenRow | None:
        """What an answer token stands for (looked up by its SHA-256); None when unknown."""
        ...

    async def spend_answer_token(self, token: str) -> bool:
        """Mark a token used; False when it was unknown or used already (of racing calls one
        wins)."""
        ...


class PushOutbox(VapidKeys, Protocol):
    """What the push worker needs: the due pushes, leased to one process at a time
    (store/postgres/outbox.py), answer tokens for them, and the record of each attempt."""

    async def claim(
        self,
        now: datetime,
        lease: timedelta,
        limit: int,
        *,
        per_endpoint: int,
        busy: Mapping[str, int] | None = None,
    ) -> Sequence[DuePush]:
        """Take up to `limit` due pushes for one attempt each, leased until now + lease, at
        most `per_endpoint` per device counting the `busy` ones (in flight here)."""
        ...

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
