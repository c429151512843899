"""embedded.supervised: the restart loop of `compass serve`'s own PostgreSQL, with a fake
cluster (tests/cli/test_serve_embedded.py kills a real postmaster)."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
import stamina

from compass_server.embedded import EmbeddedPostgresError, supervised


@dataclass
class FakeCluster:
    """revive() fails `failures` times, then restarts the server once; then it runs."""

    failures: int
    calls: int = 0
    config: Any = field(default_factory=lambda: type("Config", (), {"data_dir": Path("/pg")}))
    restarted: threading.Event = field(default_factory=threading.Event)

    def revive(self) -> bool:
        self.calls += 1
        if self.calls <= self.failures:
            raise EmbeddedPostgresError("pg_ctl start failed")
        if self.restarted.is_set():
            return False
        self.restarted.set()
        return True


def test_a_failing_restart_is_retried_with_backoff_until_it_works(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="compass_server.embedded")
    pg = FakeCluster(failures=3)
    with stamina.set_testing(True, attempts=10), supervised(cast("Any", pg), interval=0.01):
        assert pg.restarted.wait(5)
        threading.Event().wait(0.05)  # more checks: the server runs, nothing to do
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == ["could not restart PostgreSQL (retrying in 0 s): pg_ctl start failed"] * 3
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["PostgreSQL in /pg had died; restarted it"]
    assert pg.calls > 4


def test_the_backoff_doubles_from_twice_the_interval_up_to_ten_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)  # stamina's sync waits (not Event.wait)
    pg = FakeCluster(failures=12)
    with supervised(cast("Any", pg), interval=0.01):
        assert pg.restarted.wait(5)
    assert waits == pytest.approx([0.02 * 2**n for n in range(9)] + [10.0] * 3)


def test_leaving_does_not_wait_out_the_backoff_of_a_failing_restart() -> None:
    # A restart failing forever: the loop sleeps up to 10 s between attempts. Shutting down
    # must not wait for that sleep, only for a restart in progress (none here).
    pg = FakeCluster(failures=10**9)
    with supervised(cast("Any", pg), interval=0.5):
        while pg.calls < 2:  # two failures: the loop now waits 2 s before the next attempt
            threading.Event().wait(0.01)
        started = time.monotonic()
    assert time.monotonic() - started < 0.5
    calls = pg.calls
    threading.Event().wait(2.5)  # past that wait: the loop must not revive after leaving
    assert pg.calls == calls


def test_leaving_waits_for_a_restart_in_progress() -> None:
    entered, release = threading.Event(), threading.Event()
    finished: list[bool] = []

    class Slow(FakeCluster):
        def revive(self) -> bool:
            entered.set()
            release.wait(5)
            finished.append(True)
            return False

    pg = Slow(failures=0)
    with supervised(cast("Any", pg), interval=0.01):
        assert entered.wait(5)
        threading.Timer(0.2, release.set).start()
    assert finished == [True]  # the block ended only after the restart returned
