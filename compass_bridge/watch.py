"""Waiting for an ask's outcome: WatchAsk until the ask is final, reconnecting.

Final is any status but PENDING (design record, resolved decision 11): ANSWERED, DECLINED (a
participant), WITHDRAWN or TIMED_OUT (the asking agent), EXPIRED (the server). An ask that
carries `answered_by`/`answered_at` is final too, for servers that write no status.

Shared by both transports (the omp RPC runner and the ACP client) and `compass mcp`, which
follows every state (`ask_states`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import TYPE_CHECKING, Final

from compass_bridge.client import (
    MAX_BOUNDED_RETRIES,
    AskNotPostedError,
    FatalServerError,
    RpcError,
    backoff,
    bounded,
    fatal,
)
from compass_core.ask_status import is_final

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from compass_bridge.client import AgentApi
    from gen.compass.v1 import comms_pb2

__all__ = ["ask_states", "until_final"]

logger = logging.getLogger(__name__)

_STABLE_STREAM_SECONDS: Final = 10.0  # a WatchAsk that lived this long starts a new backoff
_LOG_EVERY: Final = 10  # after the first failed reconnect, log every n-th


async def until_final(
    api: AgentApi, ask_id: str, *, initial_backoff: float, max_backoff: float
) -> comms_pb2.Ask:
    """Follow WatchAsk until `ask_id` is final; return the Ask in its first final state.

    A stream that ends early or fails transiently is reopened with capped backoff.

    Raises:
        FatalServerError: the server refuses the bridge (bad token, not a participant).
        AskNotPostedError: the ask cannot be watched (not found, or too many INTERNALs).
    """
    states = ask_states(api, ask_id, initial_backoff=initial_backoff, max_backoff=max_backoff)
    async with contextlib.aclosing(states):
        async for ask in states:
            if is_final(ask):
                return ask
    raise AskNotPostedError(f"WatchAsk {ask_id} ended without its outcome")  # pragma: no cover


async def ask_states(
    api: AgentApi, ask_id: str, *, initial_backoff: float, max_backoff: float
) -> AsyncGenerator[comms_pb2.Ask]:
    """Follow WatchAsk: yield the ask's states (the current one at once, then each change;
    a reconnect yields the current one again), ending after the first final state.

    Raises:
        FatalServerError, AskNotPostedError: as `until_final`.
    """
    bounded_failures = 0
    while True:
        # One backoff per healthy stream: after a stream that lived _STABLE_STREAM_SECONDS,
        # the next reconnect starts a new one (at once, then from `initial_backoff`).
        async for attempt in backoff(_ReconnectError, initial=initial_backoff, cap=max_backoff):
            with attempt:
                started = time.monotonic()
                try:
                    async with contextlib.aclosing(api.watch_ask(ask_id)) as states:
                        async for ask in states:
                            yield ask
                            if is_final(ask):
                                return
                    problem = "the stream ended before the outcome"
                except RpcError as exc:
                    if fatal(exc.code):
                        raise FatalServerError(f"WatchAsk {ask_id}: {exc}") from exc
                    bounded_failures += bounded(exc.code)
                    if not exc.retryable or bounded_failures > MAX_BOUNDED_RETRIES:
                        raise AskNotPostedError(f"WatchAsk {ask_id} failed: {exc}") from exc
                    problem = str(exc)
                if time.monotonic() - started >= _STABLE_STREAM_SECONDS:
                    logger.warning("WatchAsk %s: %s; reconnecting", ask_id, problem)
                    break
                if attempt.num == 1 or attempt.num % _LOG_EVERY == 0:
                    logger.warning(
                        "WatchAsk %s: %s; reconnecting in %.1fs (attempt %d)",
                        ask_id,
                        problem,
                        attempt.next_wait,
                        attempt.num,
                    )
                raise _ReconnectError(problem)


class _ReconnectError(Exception):
    """The stream ended or failed transiently: reopen it after the backoff's wait."""
