"""The Docker engine for the container tests (test_image.py, test_compose.py, test_pg_tier.py):
whether one answers, the images they build and run, and the `docker` command itself.

Settings (environment), all optional; scripts/test-containers sets them:
- `DOCKER_HOST`: the engine (Docker's own variable); unset, the default socket.
- `COMPASS_TEST_PYTHON_IMAGE`: the base passed to the Dockerfile as PYTHON_IMAGE; unset, the
  Dockerfile's own default (python:3.11-slim).
- `COMPASS_TEST_POSTGRES_IMAGE`: the PostgreSQL image (tests/_pg.py); unset, postgres:16.
- `COMPASS_TEST_DOCKER_REQUIRED=1`: a missing engine, image or Compose fails the test instead
  of skipping it (tests/_pg.py: instead of falling back to a local server).

Every container runs with `--network host` (or `none` when it needs no network): the engine
scripts/test-containers starts has no bridge, and every connection stays on 127.0.0.1.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import time
from typing import TYPE_CHECKING, Final, NoReturn

import pytest

from tests import _pg
from tests.deploy._files import ROOT

if TYPE_CHECKING:
    from collections.abc import Mapping

INFO_SECONDS: Final = 5.0
BUILD_SECONDS: Final = 900.0
RUN_SECONDS: Final = 120.0
PYTHON_IMAGE_ENV: Final = "COMPASS_TEST_PYTHON_IMAGE"
UPSTREAM_PYTHON_IMAGE: Final = "python:3.11-slim"
"""The Dockerfile's default PYTHON_IMAGE (tests/deploy/test_dockerfile.py holds them equal)."""
IMAGE: Final = "compass-test:latest"
"""The tag the tests build. Kept after the run on purpose: the next build reuses its layers
(removing it would drop the build cache with it)."""
MEASUREMENTS: Final = ROOT / "test-artifacts" / "containers" / "measurements.json"


def unavailable(reason: str) -> NoReturn:
    """Skip the test, saying why, or fail it when Docker is required (scripts/test-containers)."""
    if _pg.docker_required():
        pytest.fail(f"{_pg.REQUIRED_ENV} is set, but {reason}")
    print(f"skipped: {reason}")  # noqa: T201 - the reason, shown with -s
    pytest.skip(reason)


def engine_unavailable(docker: str | None) -> str | None:
    """Why no container can run here, or None when a Docker engine answers."""
    if docker is None:
        return "no `docker` command on PATH"
    try:
        info = subprocess.run(
            [docker, "info"], capture_output=True, text=True, timeout=INFO_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        return f"no Docker engine: `docker info` did not answer within {INFO_SECONDS:g} s"
    if info.returncode != 0:
        detail = (info.stderr.strip().splitlines() or ["no output"])[-1]
        return f"no Docker engine: `docker info` exited {info.returncode}: {detail}"
    return None


def docker_command() -> str:
    """The `docker` command, once an engine answers it (else skip or fail)."""
    path = shutil.which("docker")
    reason = engine_unavailable(path)
    if reason is not None:
        unavailable(reason)
    assert path is not None
    return path


def python_image() -> str:
    """The Dockerfile's PYTHON_IMAGE for this run."""
    return os.environ.get(PYTHON_IMAGE_ENV) or UPSTREAM_PYTHON_IMAGE


def require_image(image: str) -> None:
    """Skip or fail unless the engine has `image` or can pull it (tests/_pg.py's rule)."""
    missing = _pg.image_unavailable(image)
    if missing is not None:
        unavailable(f"the Docker engine cannot provide {image}: {missing}")


def run(
    docker: str, *args: str, timeout: float = RUN_SECONDS, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`docker ARGS...`, its output captured as text; never raises on a non-zero exit."""
    return subprocess.run(
        [docker, *args], capture_output=True, text=True, timeout=timeout, check=False, env=env
    )


def ok(done: subprocess.CompletedProcess[str]) -> str:
    """The stdout of a command that must have succeeded (else its output, in the failure)."""
    assert done.returncode == 0, (
        f"`{' '.join(map(str, done.args))}` exited {done.returncode}:\n"
        f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


def inspect(docker: str, thing: str) -> dict[str, object]:
    """`docker inspect THING` (a container or an image), as JSON."""
    (found,) = json.loads(ok(run(docker, "inspect", thing)))
    assert isinstance(found, dict)
    return found  # pyright: ignore[reportUnknownVariableType] - Docker's JSON, read by the tests


def state(docker: str, container: str) -> dict[str, object]:
    found = inspect(docker, container)["State"]
    assert isinstance(found, dict)
    return found  # pyright: ignore[reportUnknownVariableType] - as above


def timestamp(value: object) -> dt.datetime:
    """A Docker RFC 3339 time with nanoseconds (`2026-12-04T10:47:27.026123456Z`)."""
    assert isinstance(value, str)
    whole, _, fraction = value.rstrip("Z").partition(".")
    return dt.datetime.fromisoformat(f"{whole}.{(fraction + '000000')[:6]}+00:00")


def build(docker: str) -> float:
    """`docker build` as docs/operating/deploying.md says, the base as the only build argument and the
    host's network for pip; returns the seconds it took."""
    began = time.monotonic()
    ok(
        run(
            docker,
            "build",
            "--network",
            "host",
            "--force-rm",
            "--build-arg",
            f"PYTHON_IMAGE={python_image()}",
            "--tag",
            IMAGE,
            str(ROOT),
            timeout=BUILD_SECONDS,
        )
    )
    return time.monotonic() - began


def record(name: str, value: float | str) -> None:
    """Keep a measurement for scripts/test-containers to print (test-artifacts/, gitignored)."""
    MEASUREMENTS.parent.mkdir(parents=True, exist_ok=True)
    known: dict[str, object] = {}
    if MEASUREMENTS.exists():
        known = json.loads(MEASUREMENTS.read_text())
    known[name] = round(value, 2) if isinstance(value, float) else value
    MEASUREMENTS.write_text(json.dumps(known, indent=2, sort_keys=True) + "\n")
