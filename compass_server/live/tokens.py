"""The token lookup of one process, cached: an answer without a database round trip for the
caller's token (docs/operating/capacity.md).

A bearer token is looked up in the store once, and the account it found is reused for at most
`max_age` seconds. What can end a token's access (an account disabled, its sessions revoked)
notifies every process at its commit (`ACCOUNTS_CHANNEL`); the change listener hands the
account id to `forget_account`, which drops that account's entries, so the next request looks
its token up again. Anything that ends access without the notification (a token row deleted by
hand) is bounded by `max_age`, the same bound as the re-check of live streams
(live/revocation.py). While the listener is down (`listening()` false) the cache is bypassed:
every request is looked up, as without a cache, and everything cached is dropped when the
listener is lost and again when it is back (notifications may have been missed).

Only accepted tokens are cached (an unknown or disabled one is looked up each time, as
before), keyed by their SHA-256, never the token itself. A lookup that began before a
notification is not cached when it ends after it (`_generation`), so a forgotten account
cannot come back from a lookup already under way.
"""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Final, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

MAX_ENTRIES: Final = 10_000
"""Tokens cached at once; past it the cache starts over (a lookup each refills it)."""


class _HasAccountId(Protocol):
    @property
    def account_id(self) -> str: ...


A = TypeVar("A", bound=_HasAccountId)


class TokenCache(Generic[A]):
    """`authenticate(token)` of one process: the store's lookup, reused for `max_age` s."""

    def __init__(
        self,
        lookup: Callable[[str], Awaitable[A | None]],
        *,
        max_age: float,
        listening: Callable[[], bool],
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = MAX_ENTRIES,
    ) -> None:
        """
        Args:
            lookup: the store's `authenticate` (the account, or None).
            max_age: seconds an answer of `lookup` is reused at most (0: never).
            listening: whether the change listener stands (else the cache is bypassed).
            clock: monotonic seconds (tests pass their own).
            max_entries: tokens cached at once.
        """
        self._lookup = lookup
        self._max_age = max_age
        self._listening = listening
        self._clock = clock
        self._max_entries = max_entries
        self._entries: dict[bytes, tuple[A, float]] = {}
        self._generation = 0
        self.hits = 0
        """Lookups answered from the cache (tests and benches read it)."""

    async def authenticate(self, token: str) -> A | None:
        """The enabled account `token` belongs to, or None (as the store's lookup)."""
        if self._max_age <= 0 or not self._listening():
            return await self._lookup(token)
        key = hashlib.sha256(token.encode()).digest()
        now = self._clock()
        cached = self._entries.get(key)
        if cached is not None:
            if cached[1] > now:
                self.hits += 1
                return cached[0]
            del self._entries[key]
        generation = self._generation
        account = await self._lookup(token)
        if account is not None and generation == self._generation and self._listening():
            if len(self._entries) >= self._max_entries:
                self._entries.clear()
            self._entries[key] = (account, now + self._max_age)
        return account

    def forget_account(self, account_id: str) -> None:
        """Drop every cached token of `account_id` (it may have lost access)."""
        self._generation += 1
        for key in [
            k for k, (account, _) in self._entries.items() if account.account_id == account_id
        ]:
            del self._entries[key]

    def clear(self) -> None:
        """Drop everything (the listener was lost or resubscribed: notifications may be missed)."""
        self._generation += 1
        self._entries.clear()
