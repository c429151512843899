"""/healthz and /readyz (docs/operating/metrics.md; the probes of deploy/).

/healthz says the process answers. /readyz asks each of its health sources in turn and
answers 200 when none is "down", else 503, with every source's state under its own key:
`{"status": "ok", "database": "ok", "listener": "ok", "webhooks": "ok"}`. A source is "ok",
"down", or "off" (not run by this process: the webhook worker of a store without an outbox),
and a source that has just started gets a moment (`GRACE_SECONDS`) before it counts as down.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Final, Literal, Protocol

from starlette.responses import JSONResponse

from compass_server.domain.errors import UnavailableError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from starlette.requests import Request

    from compass_server.background.periodic import Health
    from compass_server.live.feed import ChangeFeed

GRACE_SECONDS: Final = 1.0
"""How long /readyz waits for a source that is just starting (or reconnecting, for the change
listener that never stood yet) before it says "down"."""

State = Literal["ok", "down", "off"]


class HealthSource(Protocol):
    """One thing /readyz reports on."""

    key: str
    """Its key in /readyz's answer."""

    async def state(self) -> State:
        """ "ok", "down", or "off" (not run here; never makes the process unready)."""
        ...


class DatabaseHealth:
    """The database answers (`Store.ping`)."""

    key = "database"

    def __init__(self, ping: Callable[[], Awaitable[None]]) -> None:
        self._ping = ping

    async def state(self) -> State:
        try:
            await self._ping()
        except UnavailableError:
            return "down"
        return "ok"


class ListenerHealth:
    """The change listener's subscription stands (`live/feed.py`)."""

    key = "listener"

    def __init__(self, feed: ChangeFeed, *, grace: float = GRACE_SECONDS) -> None:
        self._feed = feed
        self._grace = grace

    async def state(self) -> State:
        if not self._feed.subscribed_once:  # just started: a moment's grace
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._feed.up.wait(), self._grace)
        return "ok" if self._feed.up.is_set() else "down"


class JobHealth:
    """A periodic job's loop turns (`background/periodic.Health`); "off" without the job."""

    def __init__(self, key: str, health: Health | None, *, grace: float = GRACE_SECONDS) -> None:
        self.key = key
        self._health = health
        self._grace = grace

    async def state(self) -> State:
        health = self._health
        if health is None:
            return "off"
        if not health.alive() and health.starting:  # its first round, just after start
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(health.first_round.wait(), self._grace)
        return "ok" if health.alive() else "down"


async def healthz(_request: Request) -> JSONResponse:
    """GET /healthz: the process answers."""
    return JSONResponse({"status": "ok"})


class Readiness:
    """GET /readyz over `sources`, asked in their order."""

    def __init__(self, sources: Sequence[HealthSource]) -> None:
        self._sources = tuple(sources)

    async def readyz(self, _request: Request) -> JSONResponse:
        states: dict[str, State] = {}
        for source in self._sources:
            states[source.key] = await source.state()
        ready = "down" not in states.values()
        return JSONResponse(
            {"status": "ok" if ready else "unavailable", **states},
            status_code=200 if ready else 503,
        )
