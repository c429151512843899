"""The deadline sweeper: closes as EXPIRED the pending asks nobody answered in time.

Every `interval` seconds it asks the store to expire what is due (`Store.expire_due`): asks
whose deadline passed with on_timeout FAIL or UNSPECIFIED (the server owns that deadline), and
PICK_RECOMMENDED asks whose deadline passed by more than `grace` (the runtime owns it and
reports TIMED_OUT itself; no report within the grace means its bridge is gone). The store
sweeps only while it holds a PostgreSQL advisory lock, so with several `compass serve`
processes on one database one sweeps at a time, and each ask expires exactly once (the write
re-checks PENDING under the channel lock). Design record, resolved decision 11.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

from compass_server.background.periodic import STALLED_SECONDS, Health, every

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from compass_server.store import Store

logger = logging.getLogger(__name__)

DEFAULT_INTERVAL_SECONDS: Final = 1.0
"""How often the sweeper looks for due asks."""
DEFAULT_GRACE_SECONDS: Final = 60.0
"""How long after a PICK_RECOMMENDED ask's deadline the server waits for the runtime's
TIMED_OUT report before it expires the ask itself."""


def utc_now() -> datetime:
    return datetime.now(UTC)


class Sweeper:
    """Expires due asks of one store, every `interval` seconds, until cancelled."""

    def __init__(
        self,
        store: Store,
        *,
        interval: float = DEFAULT_INTERVAL_SECONDS,
        grace: timedelta = timedelta(seconds=DEFAULT_GRACE_SECONDS),
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        """
        Args:
            store: where the asks are.
            interval: seconds between sweeps.
            grace: the PICK_RECOMMENDED grace period.
            clock: "now" (timezone-aware); tests inject their own.
        """
        self._store = store
        self._interval = interval
        self._grace = grace
        self._clock = clock
        self.on_swept: Callable[[Sequence[str] | None], None] = lambda _ids: None
        """Told after each sweep of the asks it expired (None: the sweep failed)."""
        self.health = Health(stalled_after=STALLED_SECONDS + interval)
        """Whether `run` sweeps."""

    async def sweep_once(self) -> Sequence[str]:
        """One sweep.

        Returns:
            The ask ids it expired (empty when another process holds the sweeper lock).
        """
        try:
            expired = await self._store.expire_due(self._clock(), self._grace)
        except Exception:
            self.on_swept(None)
            raise
        self.on_swept(expired)
        return expired

    async def run(self) -> None:
        """Sweep at once, then every `interval` seconds until cancelled; a failed sweep is
        logged and the next one tries again (the database may be restarting)."""
        await every(
            self._interval, self.sweep_once, name="ask sweep", logger=logger, health=self.health
        )
