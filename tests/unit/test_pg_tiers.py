"""Which PostgreSQL the tests use (tests/_pg.py): the tier order, the fallback from a daemon
that cannot provide the image, and the bounded Docker probe.

No network: the "daemons" here are unix sockets in a temp dir (a missing one, one that accepts
and never answers, one that answers like dockerd). A real daemon without the image:
tests/deploy/test_pg_tier.py.
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
    from collections.abc import Callable, Generator


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

    def image_probe(image: str) -> str | None:
        probes.append(image)
        return None

    env = {_pg.ENV_URL: "postgresql://postgres@127.0.0.1:5432/postgres", _pg.REQUIRED_ENV: "1"}
    assert _pg.choose_tier(env, docker_probe=probe, image_probe=image_probe) == _pg.Choice(
        _pg.Tier.ENV
    )
    assert probes == []


def _has_image(image: str) -> str | None:
    return None


def _no_image(image: str) -> str | None:
    return f"not present, and pulling {image} failed: no such host"


def test_a_daemon_that_provides_the_image_is_the_container_tier() -> None:
    asked: list[str] = []

    def image_probe(image: str) -> str | None:
        asked.append(image)
        return None

    choice = _pg.choose_tier({}, docker_probe=lambda: True, image_probe=image_probe)
    assert choice == _pg.Choice(_pg.Tier.CONTAINER)
    assert asked == [_pg.UPSTREAM_IMAGE]
    # An empty variable is unset (a CI template may export it empty).
    assert _pg.choose_tier(
        {_pg.ENV_URL: "", _pg.IMAGE_ENV: ""}, docker_probe=lambda: True, image_probe=image_probe
    ) == _pg.Choice(_pg.Tier.CONTAINER)
    assert asked == [_pg.UPSTREAM_IMAGE, _pg.UPSTREAM_IMAGE]


def test_the_image_is_a_setting() -> None:
    asked: list[str] = []

    def image_probe(image: str) -> str | None:
        asked.append(image)
        return None

    env = {_pg.IMAGE_ENV: "compass-base/postgres:15-bookworm"}
    assert _pg.postgres_image(env) == "compass-base/postgres:15-bookworm"
    assert _pg.postgres_image({}) == "postgres:16"
    assert _pg.choose_tier(env, docker_probe=lambda: True, image_probe=image_probe).tier is (
        _pg.Tier.CONTAINER
    )
    assert asked == ["compass-base/postgres:15-bookworm"]


def test_a_daemon_without_the_image_falls_back_saying_why() -> None:
    choice = _pg.choose_tier({}, docker_probe=lambda: True, image_probe=_no_image)
    assert choice.tier is _pg.Tier.LOCAL
    assert choice.why == (
        "the Docker daemon cannot provide postgres:16: "
        "not present, and pulling postgres:16 failed: no such host"
    )


def test_without_a_daemon_the_image_is_not_asked_for() -> None:
    def image_probe(image: str) -> str | None:
        pytest.fail(f"asked for {image} without a daemon")

    env = {"DOCKER_HOST": "unix:///nowhere/docker.sock"}
    choice = _pg.choose_tier(env, docker_probe=lambda: False, image_probe=image_probe)
    assert choice == _pg.Choice(
        _pg.Tier.LOCAL, "no Docker daemon answers at unix:///nowhere/docker.sock"
    )


@pytest.mark.parametrize(("daemon", "image_probe"), [(False, _has_image), (True, _no_image)])
def test_when_docker_is_required_a_fallback_is_an_error(
    daemon: bool, image_probe: Callable[[str], str | None]
) -> None:
    env = {_pg.REQUIRED_ENV: "1"}
    with pytest.raises(_pg.DockerRequiredError, match=_pg.REQUIRED_ENV):
        _pg.choose_tier(env, docker_probe=lambda: daemon, image_probe=image_probe)
    # "0" and "" mean not required.
    for off in ("0", ""):
        fallback = _pg.choose_tier(
            {_pg.REQUIRED_ENV: off}, docker_probe=lambda: daemon, image_probe=image_probe
        )
        assert fallback.tier is _pg.Tier.LOCAL


def test_the_tier_line_says_why_docker_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_pg, "announcement", None)
    _pg._announce(  # pyright: ignore[reportPrivateUsage] -- unit under test
        _pg.Choice(_pg.Tier.LOCAL, "no Docker daemon answers at unix:///x"), "data/pg-x"
    )
    assert _pg.announcement == (
        "PostgreSQL for this run: temporary local PostgreSQL (data/pg-x); "
        "not testcontainers: no Docker daemon answers at unix:///x"
    )


def test_probe_says_no_daemon_when_the_socket_is_missing(
    monkeypatch: pytest.MonkeyPatch, short_dir: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{short_dir / 'docker.sock'}")
    assert _pg.docker_available() is False


def test_probe_gives_up_on_a_stuck_daemon_within_the_bound(
    monkeypatch: pytest.MonkeyPatch, short_dir: Path
) -> None:
    # The failure docs/spec.md §6.1 measured: a socket that accepts and never answers, which costs
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
    """A unix socket answering HTTP requests as dockerd 20.10 does (/version, /_ping); yields
    the request lines it saw."""
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
                line = request.split(b"\r\n", 1)[0].decode()
                seen.append(line)
                body = b'{"ApiVersion":"1.41","Version":"20.10.24"}'
                if line.split()[1] == "/_ping":
                    body = b"OK"
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Api-Version: 1.41\r\nContent-Length: %d\r\n"
                    b"Connection: close\r\n\r\n%s" % (len(body), body)
                )

    worker = threading.Thread(target=serve, daemon=True)
    worker.start()
    try:
        yield seen
    finally:
        done.set()
        worker.join(2)
        server.close()


def test_probe_says_yes_when_a_daemon_answers(
    monkeypatch: pytest.MonkeyPatch, short_dir: Path
) -> None:
    path = short_dir / "dockerd.sock"
    with _fake_dockerd(path) as seen:
        monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
        assert _pg.docker_available() is True
    # Unversioned: a daemon refuses an API version outside its range, even for /_ping.
    assert seen == ["GET /version HTTP/1.1"]


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
