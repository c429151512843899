"""The change feed: LISTEN on the events channel, reconnecting."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Final

import asyncpg
import stamina

from compass_server.store import (
    ACCOUNTS_CHANNEL,
    EVENTS_CHANNEL,
    ChangeEvent,
)
from compass_server.store.postgres.base import (
    APPLICATION_NAME,
    CONNECTION_TROUBLE,
    PostgresBase,
    logger,
)
from compass_server.store.postgres.sql import PING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    from asyncpg.pool import PoolConnectionProxy

    _Conn: TypeAlias = PoolConnectionProxy[asyncpg.Record]


HEALTHY_SECONDS: Final = 10.0
"""A LISTEN connection that stayed up this long was healthy: once it is lost, reconnecting
starts a new backoff (at once, then from `retry_delay`); one lost sooner backs off further."""


class _ReconnectError(Exception):
    """The listener could not connect, or lost its connection: connect again after a wait."""


class ListenerMixin(PostgresBase):
    """The change feed of PostgresStore."""

    # -- change feed -------------------------------------------------------------------------

    async def listen(
        self,
        on_change: Callable[[ChangeEvent], None],
        on_resync: Callable[[], None],
        *,
        retry_delay: float = 0.5,
        max_retry_delay: float = 10.0,
        health_check_seconds: float = 15.0,
        on_lost: Callable[[], None] = lambda: None,
        on_account: Callable[[str], None] = lambda _account_id: None,
    ) -> None:
        """See `Store.listen`.

        Args:
            retry_delay: first wait before reconnecting; doubles up to `max_retry_delay`
                (plus a jitter of up to `retry_delay`). A connection that stayed up
                `HEALTHY_SECONDS` starts the backoff afresh, reconnecting at once.
            health_check_seconds: how often the idle connection is probed, so a silently
                dropped connection is noticed.
        """

        def deliver(_conn: object, _pid: int, _channel: str, payload: object) -> None:
            try:
                event = ChangeEvent.from_payload(str(payload))
            except ValueError:
                logger.exception("unreadable change notification %r; resyncing", payload)
                on_resync()
                return
            on_change(event)

        def deliver_account(_conn: object, _pid: int, _channel: str, payload: object) -> None:
            on_account(str(payload))

        while True:
            # One backoff per healthy connection (HEALTHY_SECONDS); until one, every failed
            # connect and every connection lost soon after it was made waits longer.
            async for attempt in stamina.retry_context(
                on=_ReconnectError,
                attempts=None,
                timeout=None,
                wait_initial=retry_delay,
                wait_max=max_retry_delay,
                wait_jitter=retry_delay,
            ):
                with attempt:
                    try:
                        conn = await asyncpg.connect(
                            self._listen_dsn,
                            timeout=self._timeout,
                            server_settings={"application_name": f"{APPLICATION_NAME}-listener"},
                        )
                    except CONNECTION_TROUBLE as exc:
                        logger.warning(
                            "change listener cannot connect (%s); retrying in %.1fs",
                            type(exc).__name__,
                            attempt.next_wait,
                        )
                        raise _ReconnectError from exc
                    connected = time.monotonic()
                    try:
                        await conn.add_listener(ACCOUNTS_CHANNEL, deliver_account)
                        await self._listen_on(conn, deliver, on_resync, health_check_seconds)
                    except CONNECTION_TROUBLE as exc:
                        logger.warning(
                            "change listener lost its connection (%s)", type(exc).__name__
                        )
                    finally:
                        conn.terminate()
                        on_lost()
                    if time.monotonic() - connected >= HEALTHY_SECONDS:
                        logger.warning("change listener disconnected; reconnecting")
                        break  # a new backoff
                    logger.warning(
                        "change listener disconnected; reconnecting in %.1fs", attempt.next_wait
                    )
                    raise _ReconnectError

    async def _listen_on(
        self,
        conn: asyncpg.Connection[asyncpg.Record],
        deliver: Callable[[object, int, str, object], None],
        on_resync: Callable[[], None],
        health_check_seconds: float,
    ) -> None:
        # Returns when the connection is lost; raises when a health probe fails.
        lost = asyncio.Event()
        conn.add_termination_listener(lambda _conn: lost.set())
        await conn.add_listener(EVENTS_CHANNEL, deliver)
        on_resync()
        while not lost.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(lost.wait(), timeout=health_check_seconds)
                return
            await conn.fetchval(PING, timeout=self._timeout)
