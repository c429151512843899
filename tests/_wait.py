"""Waiting for a condition instead of sleeping for a guess: poll it until it holds or a
deadline passes, then fail naming what never happened.

Prefer an event the code sets, or a message a fake sends, where there is one; these are for
state the test can only look at (a log, a process, a server's answer)."""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import TYPE_CHECKING, TypeVar, cast

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

T = TypeVar("T")


async def eventually(
    check: Callable[[], T | Awaitable[T | None] | None],
    what: str,
    *,
    within: float = 5.0,
    every: float = 0.01,
) -> T:
    """Call `check` (a function or a coroutine function) until it returns something truthy,
    and return that; AssertionError naming `what` after `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        got = check()
        value = cast("T", await got if inspect.isawaitable(got) else got)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {within:g}s")
        await asyncio.sleep(every)


def eventually_sync(
    check: Callable[[], T | None], what: str, *, within: float = 5.0, every: float = 0.01
) -> T:
    """`eventually` for a test that is not async."""
    deadline = time.monotonic() + within
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {within:g}s")
        time.sleep(every)
