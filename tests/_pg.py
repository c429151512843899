"""Where the tests get PostgreSQL from (docs/spec.md §6): the tiers, in order.

1. `COMPASS_TEST_DATABASE_URL` when set (CI: the machine's server on 127.0.0.1:5432).
2. testcontainers' PostgreSQL when a Docker daemon answers within about a second AND can
   provide the image (`COMPASS_TEST_POSTGRES_IMAGE`, default the upstream `postgres:16`): it
   has it, or pulls it within PULL_SECONDS. A daemon without the image and without a registry
   (this project's machines) falls back to tier 3, saying why in the tier line.
3. A temporary local cluster (compass_server.embedded.LocalPostgres.temporary()).

`COMPASS_TEST_DOCKER_REQUIRED=1` (scripts/test-containers) makes "Docker cannot be used" an
error instead of a fallback, so a run meant for the testcontainers tier cannot pass on another.

On a daemon without its default bridge network (scripts/test-containers starts one so, to keep
every connection on 127.0.0.1) the container joins the host's network on a free port.

`controllable_server()` is separate: a server a test may stop and restart itself; always a
temporary local cluster, never the shared server.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from compass_server.embedded import LocalPostgres

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Mapping


ENV_URL: Final = "COMPASS_TEST_DATABASE_URL"
IMAGE_ENV: Final = "COMPASS_TEST_POSTGRES_IMAGE"
UPSTREAM_IMAGE: Final = "postgres:16"
REQUIRED_ENV: Final = "COMPASS_TEST_DOCKER_REQUIRED"
PROBE_SECONDS: Final = 1
PULL_SECONDS: Final = 120.0
"""How long a missing image may take to pull before the tier falls back (a stuck registry)."""
CONTAINER_ARGS: Final = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"


class Tier(Enum):
    ENV = "COMPASS_TEST_DATABASE_URL"
    CONTAINER = "testcontainers PostgreSQL"
    LOCAL = "temporary local PostgreSQL"


@dataclass(frozen=True, slots=True)
class Choice:
    tier: Tier
    why: str = ""
    """Why Docker is not used (LOCAL only): no daemon, or the image it cannot provide."""


class DockerRequiredError(RuntimeError):
    """REQUIRED_ENV is set and Docker cannot serve this run."""


announcement: str | None = None
"""The line saying which tier this session uses, once one was chosen."""

_no_reaper = ""
"""Why postgres_container() turned testcontainers' reaper off (for this process), if it did."""


def postgres_image(env: Mapping[str, str] | None = None) -> str:
    """The PostgreSQL image for the testcontainers tier (and tests/deploy)."""
    source = os.environ if env is None else env
    return source.get(IMAGE_ENV) or UPSTREAM_IMAGE


def docker_required(env: Mapping[str, str] | None = None) -> bool:
    """Whether this run must use Docker (fail, never skip or fall back)."""
    source = os.environ if env is None else env
    return source.get(REQUIRED_ENV, "") not in {"", "0"}


def choose_tier(
    env: Mapping[str, str] | None = None,
    *,
    docker_probe: Callable[[], bool] | None = None,
    image_probe: Callable[[str], str | None] | None = None,
) -> Choice:
    """The tier to use: the env URL wins without probing Docker; then a Docker daemon that can
    provide the image; else local, with the reason.

    Raises:
        DockerRequiredError: REQUIRED_ENV is set and the choice would not be the container.
    """
    source = os.environ if env is None else env
    if source.get(ENV_URL):
        return Choice(Tier.ENV)
    probe = docker_probe if docker_probe is not None else docker_available
    if not probe():
        why = f"no Docker daemon answers at {_docker_host(source)}"
    else:
        image = postgres_image(source)
        missing = (image_probe if image_probe is not None else image_unavailable)(image)
        if missing is None:
            return Choice(Tier.CONTAINER)
        why = f"the Docker daemon cannot provide {image}: {missing}"
    if docker_required(source):
        raise DockerRequiredError(f"{REQUIRED_ENV} is set, but {why}")
    return Choice(Tier.LOCAL, why)


def _docker_host(env: Mapping[str, str]) -> str:
    return env.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def docker_available(timeout: int = PROBE_SECONDS) -> bool:
    """True when a Docker daemon answers (GET /version) within about `timeout` seconds.

    testcontainers fails at once without a daemon but waits 60 s on a stuck socket (docs/spec.md §6.1),
    so we ask first, with a bound. The ping runs in a daemon thread joined with a deadline, so
    even a hang the client's timeout does not cover (DNS of a tcp:// host) costs no more.
    """
    host = _docker_host(os.environ)
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
            # leaves its session unclosed. The question itself is unversioned: a daemon
            # refuses versioned paths outside its own range (Debian's 20.10 answers API 1.41
            # at most; Docker 29 refuses below 1.44), and /version answers any client.
            client = docker.DockerClient.from_env(
                timeout=timeout, version=DEFAULT_DOCKER_API_VERSION
            )
            try:
                answer.append("ApiVersion" in client.api.version(api_version=False))
            finally:
                client.close()
        except Exception:  # noqa: BLE001 -- any failure means "no usable daemon"
            answer.append(False)

    worker = threading.Thread(target=ping, name="docker-probe", daemon=True)
    worker.start()
    worker.join(timeout + 0.25)
    return bool(answer) and answer[0]


def image_unavailable(image: str, *, pull_seconds: float = PULL_SECONDS) -> str | None:
    """None when the answering Docker daemon has `image` or pulls it within `pull_seconds`;
    otherwise why not (the daemon's own words).

    The pull runs in a daemon thread joined with the deadline (a registry that never answers
    must not hold the suite); the daemon may go on pulling after we gave up.
    """
    import docker
    import docker.errors

    answer: list[str | None] = []

    def look() -> None:
        try:
            client = docker.DockerClient.from_env(timeout=max(int(pull_seconds), 1))
        except docker.errors.DockerException as exc:
            answer.append(f"no client: {exc}")
            return
        try:
            try:
                client.images.get(image)
            except docker.errors.ImageNotFound:
                client.images.pull(image)
            answer.append(None)
        except docker.errors.APIError as exc:
            answer.append(f"not present, and pulling it failed: {exc.explanation or exc}")
        except Exception as exc:  # noqa: BLE001 -- any failure means "cannot provide it"
            answer.append(f"not present, and pulling it failed: {exc}")
        finally:
            client.close()

    worker = threading.Thread(target=look, name="docker-image-probe", daemon=True)
    worker.start()
    worker.join(pull_seconds + 1.0)
    if not answer:
        return f"not present, and not pulled within {pull_seconds:g} s"
    return answer[0]


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
    choice = choose_tier()
    if choice.tier is Tier.ENV:
        url = os.environ[ENV_URL]
        _announce(choice, _redact(url))
        yield url
    elif choice.tier is Tier.CONTAINER:
        with postgres_container() as (url, how):
            _announce(choice, f"{_redact(url)}, {how}")
            yield url
    else:
        with LocalPostgres.temporary() as pg:
            _announce(choice, str(pg.config.data_dir))
            yield pg.dsn


@contextlib.contextmanager
def controllable_server() -> Generator[LocalPostgres]:
    """A started temporary cluster the test may `.stop()` and `.start()` (same socket, same
    data); `.dsn` is its admin DSN. Never the shared server, whatever the tier; removed after."""
    with LocalPostgres.temporary() as pg:
        yield pg


@contextlib.contextmanager
def postgres_container() -> Generator[tuple[str, str]]:
    """testcontainers' PostgreSQL (the tier's server; tests/deploy runs the image against it):
    (its admin URL, how it runs: image, network, reaper)."""
    import docker
    from testcontainers.community.postgres import PostgresContainer
    from testcontainers.core.config import testcontainers_config

    image = postgres_image()
    client = docker.DockerClient.from_env()
    try:
        host_network = not client.networks.list(names=["bridge"])
    finally:
        client.close()
    container = PostgresContainer(image, driver=None)
    how = [image]
    if host_network:
        # No bridge: the server shares the host's network, on a free port of 127.0.0.1 only
        # (PGPORT is read by postgres and by the psql that testcontainers waits with).
        port = free_port()
        container.ports.clear()  # nothing to publish on the host's network
        container.with_env("PGPORT", str(port)).with_kwargs(network_mode="host")
        container.with_command(f"postgres -c listen_addresses=127.0.0.1 {CONTAINER_ARGS}")
        how.append("host network")
    else:
        container.with_command(f"postgres {CONTAINER_ARGS}")
    global _no_reaper  # noqa: PLW0603 -- testcontainers' setting is process-wide too
    if not testcontainers_config.ryuk_disabled:
        # The reaper (Ryuk) removes containers a killed session leaves. It needs a bridge (it
        # publishes a port) and its image; without either the fixture's own removal remains,
        # and a killed session's container lasts until its daemon stops.
        if host_network:
            _no_reaper = "no bridge network"
        else:
            _no_reaper = image_unavailable(testcontainers_config.ryuk_image) or ""
        testcontainers_config.ryuk_disabled = bool(_no_reaper)
    if _no_reaper:
        how.append(f"no reaper: {_no_reaper}")
    with container:
        if host_network:
            url = (
                f"postgresql://{container.username}:{container.password}"
                f"@127.0.0.1:{container.env['PGPORT']}/{container.dbname}"
            )
        else:
            url = container.get_connection_url()
        yield url, "; ".join(how)


def free_port() -> int:
    """A TCP port of 127.0.0.1 nobody listens on right now (for a server on the host network)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


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


def _announce(choice: Choice, where: str) -> None:
    global announcement  # noqa: PLW0603 -- one line per test session, wherever the fixture runs
    if announcement is not None:
        return
    announcement = f"PostgreSQL for this run: {choice.tier.value} ({where})"
    if choice.why:
        announcement += f"; not testcontainers: {choice.why}"
    # Captured by pytest (shown with -s or on failure); tests/integration/conftest.py repeats
    # it in the terminal summary so every run says which tier it used.
    sys.stderr.write(f"[compass tests] {announcement}\n")
