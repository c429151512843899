"""Where the tests get PostgreSQL from (SPEC §6): the tiers, in order.

1. `COMPASS_TEST_DATABASE_URL` when set (CI: the machine's server on 127.0.0.1:5432).
2. testcontainers' PostgreSQL when a Docker daemon answers within about a second.
3. A temporary local cluster (compass_server.embedded.LocalPostgres.temporary()).

`controllable_server()` is separate: a server a test may stop and restart itself; always a
temporary local cluster, never the shared server.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
from enum import Enum
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from compass_server.embedded import LocalPostgres

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Mapping

ENV_URL = "COMPASS_TEST_DATABASE_URL"
CONTAINER_IMAGE = "postgres:16"
PROBE_SECONDS = 1


class Tier(Enum):
    ENV = "COMPASS_TEST_DATABASE_URL"
    CONTAINER = "testcontainers PostgreSQL"
    LOCAL = "temporary local PostgreSQL"


announcement: str | None = None
"""The line saying which tier this session uses, once one was chosen."""


def choose_tier(
    env: Mapping[str, str] | None = None, *, docker_probe: Callable[[], bool] | None = None
) -> Tier:
    """The tier to use: the env URL wins without probing Docker; then a Docker daemon; else local."""
    source = os.environ if env is None else env
    if source.get(ENV_URL):
        return Tier.ENV
    probe = docker_probe if docker_probe is not None else docker_available
    return Tier.CONTAINER if probe() else Tier.LOCAL


def docker_available(timeout: int = PROBE_SECONDS) -> bool:
    """True when a Docker daemon answers a ping within about `timeout` seconds.

    testcontainers fails at once without a daemon but waits 60 s on a stuck socket (SPEC §6.1),
    so we ask first, with a bound. The ping runs in a daemon thread joined with a deadline, so
    even a hang the client's timeout does not cover (DNS of a tcp:// host) costs no more.
    """
    host = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if host.startswith("unix://") and not _unix_socket_answers(host[len("unix://") :], timeout):
        # docker-py leaks its socket (a ResourceWarning, an error under our filterwarnings)
        # when a unix socket is missing or refuses; our own connect closes cleanly.
        return False
    import docker
    from docker.constants import DEFAULT_DOCKER_API_VERSION

    answer: list[bool] = []

    def ping() -> None:
        try:
            # A fixed API version skips the client's version request, which on failure also
            # leaves its session unclosed; /_ping answers on any supported version.
            client = docker.DockerClient.from_env(
                timeout=timeout, version=DEFAULT_DOCKER_API_VERSION
            )
            try:
                answer.append(bool(client.ping()))
            finally:
                client.close()
        except Exception:  # noqa: BLE001 -- any failure means "no usable daemon"
            answer.append(False)

    worker = threading.Thread(target=ping, name="docker-probe", daemon=True)
    worker.start()
    worker.join(timeout + 0.25)
    return bool(answer) and answer[0]


def _unix_socket_answers(path: str, timeout: float) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


@contextlib.contextmanager
def test_server() -> Generator[str]:
    """Yield an admin DSN (may CREATE DATABASE) of a server the tests may use."""
    tier = choose_tier()
    if tier is Tier.ENV:
        url = os.environ[ENV_URL]
        _announce(tier, _redact(url))
        yield url
    elif tier is Tier.CONTAINER:
        with _container() as url:
            _announce(tier, _redact(url))
            yield url
    else:
        with LocalPostgres.temporary() as pg:
            _announce(tier, str(pg.config.data_dir))
            yield pg.dsn


@contextlib.contextmanager
def controllable_server() -> Generator[LocalPostgres]:
    """A started temporary cluster the test may `.stop()` and `.start()` (same socket, same
    data); `.dsn` is its admin DSN. Never the shared server, whatever the tier; removed after."""
    with LocalPostgres.temporary() as pg:
        yield pg


@contextlib.contextmanager
def _container() -> Generator[str]:
    from testcontainers.community.postgres import PostgresContainer

    container = PostgresContainer(CONTAINER_IMAGE, driver=None).with_command(
        "postgres -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    )
    with container:
        yield container.get_connection_url()


def with_database(dsn: str, database: str) -> str:
    """The same server and credentials as `dsn`, on another database.

    Works for TCP DSNs and for socket DSNs (`postgresql://user@/db?host=/dir&port=N`); a
    `dbname`/`database` query parameter, which would override the path, is dropped.
    """
    parts = urlsplit(dsn)
    query = [
        (key, value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
        if key not in ("dbname", "database")
    ]
    return urlunsplit(
        (
            parts.scheme,
            parts.netloc,
            "/" + database,
            urlencode(query, safe="/"),
            parts.fragment,
        )
    )


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _announce(tier: Tier, where: str) -> None:
    global announcement  # noqa: PLW0603 -- one line per test session, wherever the fixture runs
    if announcement is not None:
        return
    announcement = f"PostgreSQL for this run: {tier.value} ({where})"
    # Captured by pytest (shown with -s or on failure); tests/integration/conftest.py repeats
    # it in the terminal summary so every run says which tier it used.
    sys.stderr.write(f"[compass tests] {announcement}\n")
