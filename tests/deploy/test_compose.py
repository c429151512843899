"""docker-compose.yml, run for real: `up --build` to a healthy server, the migrate service
having completed before the server started, then `compose exec compass compass demo` and one
ask round trip over HTTP from the host. Runs the host-network form of the file
(tests/deploy/_compose.py; the first test here holds it to docker-compose.yml).

Needs a Docker engine, the images and a Compose (`docker compose` or `docker-compose`):
scripts/test-containers provides them; elsewhere these tests are skipped, saying why.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import httpx
import pytest
import yaml

from tests import _pg
from tests._wait import eventually_sync
from tests.deploy import _compose, _docker, _roundtrip
from tests.deploy._docker import ok, run

if TYPE_CHECKING:
    from collections.abc import Generator
    from pathlib import Path

HEALTHY_SECONDS: Final = 180.0
"""Up to healthy: postgres healthy (2 s probes), migrate, then the server's first healthcheck
10 s after it starts."""
CHANGED: Final = {
    "postgres": {"network_mode", "ports", "image", "command", "environment"},
    "migrate": {"network_mode", "ports", "image", "build", "environment"},
    "compass": {"network_mode", "ports", "image", "build", "environment", "healthcheck"},
}
"""What _compose.host_network may change, per service (values checked one by one below)."""


def _ports() -> _compose.Ports:
    postgres = _pg.free_port()
    compass = _pg.free_port()
    while compass == postgres:
        compass = _pg.free_port()
    return _compose.Ports(postgres=postgres, compass=compass)


def _variant(ports: _compose.Ports) -> dict[str, Any]:
    return _compose.host_network(
        _compose.load(),
        ports=ports,
        postgres_image="pg-image",
        python_image="py-image",
        image="compass-image",
    )


def test_the_host_network_form_keeps_everything_else() -> None:
    original = _compose.load()
    ports = _compose.Ports(postgres=15432, compass=18000)
    variant = _variant(ports)
    assert {k: v for k, v in variant.items() if k != "services"} == {
        k: v for k, v in original.items() if k != "services"
    }
    assert set(variant["services"]) == set(original["services"]) == set(CHANGED)
    for name, service in variant["services"].items():
        before = original["services"][name]
        kept = {k: v for k, v in service.items() if k not in CHANGED[name]}
        assert kept == {k: v for k, v in before.items() if k not in CHANGED[name]}, name
        assert service["network_mode"] == "host"
        assert "ports" not in service
        # Environment: only the addresses change.
        moved = {"PGPORT", "COMPASS_DATABASE_URL", "COMPASS_HOST", "COMPASS_PORT"}
        moved.add("COMPASS_PUBLIC_URL")
        assert {k: v for k, v in service["environment"].items() if k not in moved} == {
            k: v for k, v in before["environment"].items() if k not in moved
        }
    services = variant["services"]
    assert services["postgres"]["environment"]["PGPORT"] == "15432"
    assert services["postgres"]["image"] == "pg-image"
    for name in ("migrate", "compass"):
        assert services[name]["environment"]["COMPASS_DATABASE_URL"] == (
            "postgresql://compass:compass@127.0.0.1:15432/compass"
        )
        assert services[name]["image"] == "compass-image"
        assert services[name]["build"]["args"] == {"PYTHON_IMAGE": "py-image"}
        assert services[name]["build"]["network"] == "host"
    server, before = services["compass"], original["services"]["compass"]
    assert server["environment"]["COMPASS_PORT"] == "18000"
    assert server["environment"]["COMPASS_HOST"] == "127.0.0.1"
    check = " ".join(server["healthcheck"]["test"])
    assert "http://127.0.0.1:18000/healthz" in check
    assert check.replace("18000", before["environment"]["COMPASS_PORT"]) == " ".join(
        before["healthcheck"]["test"]
    )
    timings = {k: v for k, v in server["healthcheck"].items() if k != "test"}
    assert timings == {k: v for k, v in before["healthcheck"].items() if k != "test"}


# -- on an engine --------------------------------------------------------------------------


def _compose_command(docker: str) -> list[str]:
    if run(docker, "compose", "version").returncode == 0:
        return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    if standalone is None:
        _docker.unavailable("no Compose: neither `docker compose` nor `docker-compose` runs")
    return [standalone]


@dataclass(frozen=True, slots=True)
class Stack:
    compose: list[str]
    project: str
    url: str

    def container(self, docker: str, service: str) -> str:
        found = ok(
            run(
                docker,
                "ps",
                "--all",
                "--quiet",
                "--filter",
                f"label=com.docker.compose.project={self.project}",
                "--filter",
                f"label=com.docker.compose.service={service}",
            )
        ).split()
        assert len(found) == 1, (service, found)
        return found[0]

    def run(self, *args: str, timeout: float = _docker.RUN_SECONDS) -> str:
        done = subprocess.run(
            [*self.compose, *args], capture_output=True, text=True, timeout=timeout, check=False
        )
        return ok(done)


@pytest.fixture(scope="module")
def stack(docker: str, image: str, tmp_path_factory: pytest.TempPathFactory) -> Generator[Stack]:
    """The stack up and its server healthy. `image` first: `docker build` builds (and times)
    the image once; Compose's build of the same Dockerfile then comes from the cache."""
    _docker.require_image(_pg.postgres_image())
    compose = _compose_command(docker)
    ports = _ports()
    variant = _compose.host_network(
        _compose.load(),
        ports=ports,
        postgres_image=_pg.postgres_image(),
        python_image=_docker.python_image(),
        image=image,
    )
    directory: Path = tmp_path_factory.mktemp("compose")
    path = directory / "docker-compose.host-network.yml"
    path.write_text(yaml.safe_dump(variant, sort_keys=False))
    project = f"compass-check-{uuid.uuid4().hex[:8]}"
    command = [*compose, "--project-name", project, "--file", str(path)]
    stack = Stack(command, project, f"http://127.0.0.1:{ports.compass}")
    began = time.monotonic()
    try:
        stack.run("up", "--detach", "--build", timeout=_docker.BUILD_SECONDS)
        server = stack.container(docker, "compass")

        def healthy() -> bool:
            health = _docker.state(docker, server).get("Health")
            return isinstance(health, dict) and health.get("Status") == "healthy"  # pyright: ignore[reportUnknownMemberType] - Docker's JSON

        eventually_sync(healthy, "compose: compass healthy", within=HEALTHY_SECONDS, every=0.5)
        _docker.record("compose_up_to_healthy_seconds", time.monotonic() - began)
        yield stack
    except AssertionError:
        logs = subprocess.run(
            [*stack.compose, "logs", "--no-color"], capture_output=True, text=True, check=False
        )
        print(logs.stdout[-6000:])  # noqa: T201 - what the services said, with the failure
        raise
    finally:
        subprocess.run(
            [*stack.compose, "down", "--volumes", "--remove-orphans", "--timeout", "20"],
            capture_output=True,
            timeout=_docker.RUN_SECONDS,
            check=False,
        )


def test_migrate_completes_before_the_server_starts(docker: str, stack: Stack) -> None:
    database = _docker.state(docker, stack.container(docker, "postgres"))
    migrate_id = stack.container(docker, "migrate")
    migrate = _docker.state(docker, migrate_id)
    server = _docker.state(docker, stack.container(docker, "compass"))
    assert migrate["Status"] == "exited"
    assert migrate["ExitCode"] == 0
    applied = json.loads(ok(run(docker, "logs", migrate_id)))["applied"]
    assert applied == sorted(applied)
    assert applied
    # PostgreSQL was ready (the server for good, not the entrypoint's socket-only one that
    # creates the database) before migrate started, and migrate ended before compass started.
    logged = run(docker, "logs", "--timestamps", stack.container(docker, "postgres"))
    ready = [
        line.split(" ", 1)[0]
        for line in ok(logged).splitlines() + logged.stderr.splitlines()
        if "database system is ready to accept connections" in line
    ]
    assert ready, logged.stderr[-3000:]
    assert database["Health"]["Status"] == "healthy"  # pyright: ignore[reportIndexIssue, reportCallIssue, reportArgumentType] - Docker's JSON
    started = _docker.timestamp(migrate["StartedAt"])
    assert max(_docker.timestamp(stamp) for stamp in ready) <= started
    assert started <= _docker.timestamp(migrate["FinishedAt"])
    assert _docker.timestamp(migrate["FinishedAt"]) <= _docker.timestamp(server["StartedAt"])


def test_the_server_is_ready(stack: Stack) -> None:
    ready = httpx.get(f"{stack.url}/readyz", timeout=5)
    assert ready.status_code == 200
    assert ready.json() == {
        "status": "ok",
        "database": "ok",
        "listener": "ok",
        "webhooks": "ok",
        "push": "ok",
    }


async def test_demo_workspace_and_an_ask_round_trip(stack: Stack) -> None:
    printed = stack.run("exec", "-T", "compass", "compass", "demo", "--url", f"{stack.url}/")
    demo = _roundtrip.demo_workspace(printed)
    await _roundtrip.ask_round_trip(stack.url, demo)
