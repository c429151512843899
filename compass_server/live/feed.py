"""The change feed of one process: the store's notifications into the hub, and whether they
flow (for /readyz).

One `Store.listen` subscription per process (live/hub.py). Each time it is (re)established
the hub wakes every watcher to re-read (notifications may have been missed meanwhile); while
it is lost, `up` is clear and /readyz says the listener is down. The process's token cache
(live/tokens.py) hears from it too: an account whose tokens may have lost access, and every
loss and re-establishment of the subscription.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from compass_server.live.hub import ChangeHub
    from compass_server.live.tokens import TokenCache
    from compass_server.store import ChangeEvent


class Listens(Protocol):
    """What the feed needs of the store (`Store.listen`)."""

    async def listen(
        self,
        on_change: Callable[[ChangeEvent], None],
        on_resync: Callable[[], None],
        *,
        on_lost: Callable[[], None] = ...,
        on_account: Callable[[str], None] = ...,
    ) -> None: ...


class ChangeFeed:
    """Feeds `hub` from `store`'s change notifications while `run` runs."""

    def __init__(
        self,
        store: Listens,
        hub: ChangeHub,
        *,
        on_subscribed: Callable[[], None] = lambda: None,
    ) -> None:
        """
        Args:
            store: whose notifications.
            hub: told of each change, and to resync each time the subscription is made.
            on_subscribed: told each time the subscription is made (a metric).
        """
        self._store = store
        self._hub = hub
        self.tokens: TokenCache[Any] | None = None
        """The process's token cache: told of accounts that may have lost access, emptied
        whenever the subscription is lost or made."""
        self._on_subscribed = on_subscribed
        self.up = asyncio.Event()
        """Set while the subscription stands."""
        self.subscribed_once = False
        """Whether it ever stood (a process just started gets a moment's grace in /readyz)."""

    async def run(self) -> None:
        """Feed the hub until cancelled (the store reconnects by itself)."""
        tokens = self.tokens
        await self._store.listen(
            self._hub.publish,
            self._subscribed,
            on_lost=self._lost,
            on_account=(lambda _account_id: None) if tokens is None else tokens.forget_account,
        )

    def _lost(self) -> None:
        self.up.clear()
        if self.tokens is not None:
            self.tokens.clear()

    def _subscribed(self) -> None:
        if self.tokens is not None:
            self.tokens.clear()  # before `up`: nothing cached while notifications were missed
        self.up.set()
        self.subscribed_once = True
        self._on_subscribed()
        self._hub.resync()
