"""client.call_with_retry: which failures are retried, how often, what is logged (the one
retry of a unary call, under the Poster and asks.AgentAsks alike)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
import stamina

from compass_bridge.client import (
    MAX_BOUNDED_RETRIES,
    FatalServerError,
    GaveUpError,
    RpcError,
    SupersededError,
    call_with_retry,
)


def _failing(*errors: RpcError, result: str = "ok") -> tuple[list[int], Any]:
    """A call that raises `errors` in turn, then returns `result`; and its call count."""
    calls = [0]

    async def call() -> str:
        calls[0] += 1
        if calls[0] <= len(errors):
            raise errors[calls[0] - 1]
        return result

    return calls, call


async def test_transient_failures_are_retried_and_logged_every_tenth_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="compass_bridge")
    calls, call = _failing(*[RpcError("unavailable", "down")] * 25)
    with stamina.set_testing(True, attempts=100):  # no waits
        assert await call_with_retry("Op", call, initial_backoff=1, max_backoff=5) == "ok"
    assert calls == [26]
    said = [r.getMessage() for r in caplog.records if r.name == "compass_bridge.client"]
    assert [m.split("(attempt ")[-1] for m in said[:-1]] == ["1)", "10)", "20)"]
    # (stamina.set_testing makes every wait 0, and the log says so)
    assert said[0] == "Op failed (unavailable: down); retrying in 0.0s (attempt 1)"
    assert said[-1] == "Op succeeded after 25 retries"


async def test_internal_and_unknown_are_retried_a_bounded_number_of_times() -> None:
    errors = [RpcError("internal", "bug"), RpcError("unavailable", "down")] * 10
    calls, call = _failing(*errors)
    with stamina.set_testing(True, attempts=100), pytest.raises(GaveUpError) as caught:
        await call_with_retry("Op", call, initial_backoff=1, max_backoff=5)
    assert caught.value.error.code == "internal"
    # The transient failures in between do not count towards the bound.
    assert calls == [2 * MAX_BOUNDED_RETRIES + 1]


@pytest.mark.parametrize(
    ("code", "raised"),
    [
        ("invalid_argument", GaveUpError),
        ("already_exists", GaveUpError),
        ("unauthenticated", FatalServerError),
        ("permission_denied", FatalServerError),
    ],
)
async def test_other_failures_are_not_retried(code: str, raised: type[Exception]) -> None:
    calls, call = _failing(RpcError(code, "no"))
    with pytest.raises(raised):
        await call_with_retry("Op", call, initial_backoff=1, max_backoff=5)
    assert calls == [1]


async def test_a_superseded_call_stops_before_its_next_attempt() -> None:
    calls, call = _failing(*[RpcError("unavailable", "down")] * 3)
    with stamina.set_testing(True, attempts=100), pytest.raises(SupersededError):
        await call_with_retry(
            "Op", call, initial_backoff=1, max_backoff=5, superseded=lambda: calls[0] >= 2
        )
    assert calls == [2]


@pytest.mark.parametrize("while_", ["calling", "waiting"])
async def test_cancellation_ends_the_retries(while_: str) -> None:
    started = asyncio.Event()

    async def call() -> str:
        started.set()
        if while_ == "calling":
            await asyncio.Event().wait()
        raise RpcError("unavailable", "down")

    task = asyncio.create_task(call_with_retry("Op", call, initial_backoff=3600, max_backoff=3600))
    await started.wait()
    await asyncio.sleep(0.01)  # in the call, or in the backoff's first wait (an hour)
    task.cancel()
    async with asyncio.timeout(5):
        with pytest.raises(asyncio.CancelledError):
            await task
