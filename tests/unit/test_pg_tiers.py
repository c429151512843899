"""Which PostgreSQL the tests use (tests/_pg.py): the tier order and the bounded Docker probe.

No network: the "daemons" here are unix sockets in a temp dir (a missing one, one that accepts
and never answers, one that answers a ping like dockerd).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests import _pg

if TYPE_CHECKING:
    from collections.abc import Generator


@pytest.fixture
def short_dir() -> Generator[Path]:
    """A directory short enough for unix socket paths (pytest's tmp_path can be too long)."""
    path = Path(tempfile.mkdtemp(prefix="cmp-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_env_url_wins_without_probing_docker() -> None:
    probes: list[str] = []

    def probe() -> bool:
        probes.append("asked")
        return True

    env = {_pg.ENV_URL: "postgresql://postgres@127.0.0.1:5432/postgres"}
    assert _pg.choose_tier(env, docker_probe=probe) is _pg.Tier.ENV
    assert probes == []


@pytest.mark.parametrize(("daemon", "tier"), [(True, _pg.Tier.CONTAINER), (False, _pg.Tier.LOCAL)])
def test_without_env_url_a_docker_daemon_decides(daemon: bool, tier: _pg.Tier) -> None:
    assert _pg.choose_tier({}, docker_probe=lambda: daemon) is tier
    # An empty variable is unset (a CI template may export it empty).
    assert _pg.choose_tier({_pg.ENV_URL: ""}, docker_probe=lambda: daemon) is tier


def test_probe_says_no_daemon_when_the_socket_is_missing(
    monkeypatch: pytest.MonkeyPatch, short_dir: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{short_dir / 'docker.sock'}")
    assert _pg.docker_available() is False


def test_probe_gives_up_on_a_stuck_daemon_within_the_bound(
    monkeypatch: pytest.MonkeyPatch, short_dir: Path
) -> None:
    # The failure SPEC §6.1 measured: a socket that accepts and never answers, which costs
    # testcontainers 60 s. The probe must give up after about PROBE_SECONDS.
    path = short_dir / "stuck.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stuck:
        stuck.bind(str(path))
        stuck.listen(8)
        monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
        began = time.monotonic()
        answer = _pg.docker_available()
        elapsed = time.monotonic() - began
    assert answer is False
    assert elapsed < 1.5, f"probe took {elapsed:.2f}s"


@contextlib.contextmanager
def _fake_dockerd(path: Path) -> Generator[list[str]]:
    """A unix socket answering every HTTP request with dockerd's ping reply; yields the
    request lines it saw."""
    seen: list[str] = []
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    server.settimeout(0.2)
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    request += chunk
                if not request:  # the probe's own connect-and-close check
                    continue
                seen.append(request.split(b"\r\n", 1)[0].decode())
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                    b"Api-Version: 1.45\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK"
                )

    worker = threading.Thread(target=serve, daemon=True)
    worker.start()
    try:
        yield seen
    finally:
        done.set()
        worker.join(2)
        server.close()


def test_probe_says_yes_when_a_daemon_answers_the_ping(
    monkeypatch: pytest.MonkeyPatch, short_dir: Path
) -> None:
    path = short_dir / "dockerd.sock"
    with _fake_dockerd(path) as seen:
        monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
        assert _pg.docker_available() is True
    assert any(line.startswith("GET ") and line.split()[1].endswith("/_ping") for line in seen)


@pytest.mark.parametrize(
    ("dsn", "expected"),
    [
        (
            "postgresql://postgres@127.0.0.1:5432/postgres",
            "postgresql://postgres@127.0.0.1:5432/compass_t_1",
        ),
        (
            "postgresql://test:s3cret@localhost:49153/test",
            "postgresql://test:s3cret@localhost:49153/compass_t_1",
        ),
        (
            "postgresql://postgres@/postgres?host=/tmp/compass-pg-x/pgdata&port=5432",
            "postgresql://postgres@/compass_t_1?host=/tmp/compass-pg-x/pgdata&port=5432",
        ),
        (
            "postgresql://postgres@?host=/run/pg&dbname=postgres&port=5433",
            "postgresql://postgres@/compass_t_1?host=/run/pg&port=5433",
        ),
    ],
)
def test_with_database_replaces_only_the_database(dsn: str, expected: str) -> None:
    assert _pg.with_database(dsn, "compass_t_1") == expected


def test_tier_line_never_shows_a_password() -> None:
    assert _pg._redact("postgresql://test:s3cret@localhost:1/test") == (  # pyright: ignore[reportPrivateUsage] -- unit under test
        "postgresql://test:***@localhost:1/test"
    )
    assert _pg._redact("postgresql://postgres@127.0.0.1:5432/postgres").endswith("/postgres")  # pyright: ignore[reportPrivateUsage] -- unit under test


def test_env_tier_yields_the_url_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "postgresql://someone@db.invalid:5432/somedb"
    monkeypatch.setenv(_pg.ENV_URL, url)
    monkeypatch.setattr(_pg, "announcement", "already chosen")  # keep the session's real tier line
    with _pg.test_server() as dsn:
        assert dsn == url
    assert os.environ[_pg.ENV_URL] == url
