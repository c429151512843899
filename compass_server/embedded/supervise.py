"""Keeping a cluster running under `compass serve` and stopping it on signals."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from typing import TYPE_CHECKING

import stamina

from compass_server.embedded.common import EmbeddedPostgresError

if TYPE_CHECKING:
    from collections.abc import Generator, Iterable
    from types import FrameType

    from compass_server.embedded.cluster import LocalPostgres


logger = logging.getLogger("compass_server.embedded")


@contextlib.contextmanager
def supervised(pg: LocalPostgres, *, interval: float = 1.0) -> Generator[None]:
    """Within the block, restart `pg`'s server whenever it dies (a `kill -9`, the OOM killer)
    without having been asked to stop: checked every `interval` seconds from a thread, retried
    with backoff (2 x `interval`, doubling up to 10 s) while a restart fails. The server's
    clients see UNAVAILABLE meanwhile and recover by themselves (the pool reconnects; the
    LISTEN connection is re-established and resyncs every watch). For `compass serve`, which
    owns its cluster. Leaving the block waits for a restart in progress, not for a backoff
    wait (stamina sleeps uninterruptibly): the thread, a daemon, ends when it next wakes.
    """
    done = threading.Event()
    reviving = threading.Lock()  # held while a restart runs, and by the leaving owner

    def revive() -> None:
        for attempt in stamina.retry_context(
            on=EmbeddedPostgresError,
            attempts=None,
            timeout=None,
            wait_initial=2 * interval,
            wait_max=10.0,
            wait_jitter=0,
        ):
            with attempt, reviving:
                if done.is_set():
                    return
                try:
                    revived = pg.revive()
                except EmbeddedPostgresError as exc:
                    logger.error(
                        "could not restart PostgreSQL (retrying in %.0f s): %s",
                        attempt.next_wait,
                        exc,
                    )
                    raise
                if revived:
                    logger.warning("PostgreSQL in %s had died; restarted it", pg.config.data_dir)

    def watch() -> None:
        while not done.wait(interval):
            revive()

    thread = threading.Thread(target=watch, name="compass-pg-supervisor", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        with reviving:  # a restart in progress finishes; none starts after this
            pass


@contextlib.contextmanager
def stop_on_signals(
    pg: LocalPostgres,
    signals: Iterable[int] = (signal.SIGINT, signal.SIGTERM),
    *,
    unless_owned: bool = False,
) -> Generator[None]:
    """Within the block, SIGINT/SIGTERM first stop `pg`'s server (`unless_owned`: only while
    no process owns it, `LocalPostgres.stop_unless_owned`), then do what they did before
    (KeyboardInterrupt for SIGINT's default; SystemExit(128 + signum) where the previous
    disposition was the OS default or ignore). Previous handlers are restored on exit.

    For long-running owners (`compass serve`). uvicorn installs its own handlers while serving
    and re-raises the signal after its graceful shutdown, which then lands here. Main thread
    only (a `signal` module rule).
    """
    previous: dict[int, object] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        try:
            if unless_owned:
                pg.stop_unless_owned()
            else:
                pg.stop()
        except Exception:  # we are exiting anyway: report, then continue to exit
            logger.exception("could not stop PostgreSQL in %s", pg.config.data_dir)
        prior = previous.get(signum)
        if callable(prior):
            prior(signum, frame)
            return
        raise SystemExit(128 + signum)

    try:
        for signum in signals:
            previous[signum] = signal.signal(signum, handler)
        yield
    finally:
        for signum, prior in previous.items():
            if callable(prior) or isinstance(prior, int):
                signal.signal(signum, prior)  # pyright: ignore[reportArgumentType] -- an int here is a Handlers value
