"""Web Push's half of the Store port (docs/answering/push.md): people's devices, the VAPID
key and the answer tokens (`PushStore`, for the application's push use cases,
`service/push.py`). The push outbox the worker sends is in `outboxes.py`.

`compass_server.store` re-exports them: import them from there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Sequence

    from compass_server.domain.push import NewSubscription
    from compass_server.store.rows import AccountRow, AnswerTokenRow, PushSubscriptionRow

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
