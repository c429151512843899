"""An in-memory double of Web Push's store port (`compass_server.store.PushStore`), for the
push use cases' tests without a database (`MemoryStore.push()` hands one out).

It keeps the port's semantics as PostgreSQL implements them (store/postgres/push.py): one id
per (account, endpoint), at most `most` devices per account, only other people's devices are
invisible (NOT_FOUND), a token is known by its hash and spent once, one VAPID key for good.
`tests/integration/store/test_memory_double.py` runs the same scenario on both. `mint` makes
an answer token as the push worker would (the outbox's `new_answer_token`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from compass_server.domain.errors import NotFoundError, ResourceExhaustedError
from compass_server.store import AnswerTokenRow, PushStore, PushSubscriptionRow

if TYPE_CHECKING:
    from collections.abc import Callable

    from compass_server.domain.push import NewSubscription
    from compass_server.service.asks import Asks
    from compass_server.service.push import Push
    from compass_server.store import AccountRow


@dataclass(slots=True)
class _Device:
    row: PushSubscriptionRow
    endpoint: str
    p256dh: str
    auth: str


@dataclass(slots=True)
class MemoryPushStore(PushStore):
    account: Callable[[str], AccountRow]
    """The account of an id (the MemoryStore's)."""
    devices: dict[str, _Device] = field(default_factory=dict[str, _Device])
    tokens: dict[bytes, tuple[str, str, bool]] = field(
        default_factory=dict[bytes, tuple[str, str, bool]]
    )
    """SHA-256 -> (ask id, account id, used)."""
    key: str | None = None
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    async def vapid_private_key(self, candidate: str) -> str:
        if self.key is None:
            self.key = candidate
        return self.key

    async def add_push_subscription(
        self, actor: AccountRow, subscription: NewSubscription, *, most: int
    ) -> str:
        for device in self.devices.values():
            if (
                device.row.account_id == actor.account_id
                and device.endpoint == subscription.endpoint
            ):
                device.p256dh, device.auth = subscription.p256dh, subscription.auth
                device.row = dataclasses.replace(device.row, device_name=subscription.device_name)
                return device.row.subscription_id
        if sum(1 for d in self.devices.values() if d.row.account_id == actor.account_id) >= most:
            raise ResourceExhaustedError(
                f"this account already has {most} devices for notifications; remove one first"
            )
        row = PushSubscriptionRow(
            subscription_id=f"psub_memory{next(self._ids)}",
            account_id=actor.account_id,
            device_name=subscription.device_name,
            created_at=datetime.now(UTC),
            last_success_at=None,
            last_error="",
        )
        self.devices[row.subscription_id] = _Device(
            row, subscription.endpoint, subscription.p256dh, subscription.auth
        )
        return row.subscription_id

    async def list_push_subscriptions(self, actor: AccountRow) -> list[PushSubscriptionRow]:
        return [d.row for d in self.devices.values() if d.row.account_id == actor.account_id]

    async def remove_push_subscription(self, actor: AccountRow, subscription_id: str) -> None:
        device = self.devices.get(subscription_id)
        if device is None or device.row.account_id != actor.account_id:
            raise NotFoundError("push subscription not found")
        del self.devices[subscription_id]

    async def answer_token(self, token: str) -> AnswerTokenRow | None:
        found = self.tokens.get(hashlib.sha256(token.encode()).digest())
        if found is None:
            return None
        ask_id, account_id, used = found
        return AnswerTokenRow(ask_id=ask_id, account=self.account(account_id), used=used)

    async def spend_answer_token(self, token: str) -> bool:
        digest = hashlib.sha256(token.encode()).digest()
        found = self.tokens.get(digest)
        if found is None or found[2]:
            return False
        self.tokens[digest] = (found[0], found[1], True)
        return True

    def mint(self, ask_id: str, account_id: str) -> str:
        token = "cmpa_" + secrets.token_urlsafe(32)
        self.tokens[hashlib.sha256(token.encode()).digest()] = (ask_id, account_id, False)
        return token


class HasPush(Protocol):
    def push(self) -> PushStore: ...


def push_use_cases(store: HasPush, asks: Asks, *, configured_key: str | None = None) -> Push:
    """The push use cases over `store`'s push port and `asks` (no hosts allowed)."""
    from compass_server.domain.push import PUSH_SETTING
    from compass_server.domain.webhook_targets import AllowList
    from compass_server.push.keys import VapidSource
    from compass_server.service.push import Push as PushCases

    push = store.push()
    return PushCases(
        push, asks, VapidSource(push, configured_key), allow=AllowList(setting=PUSH_SETTING)
    )
