"""Fixtures of the container tests: the `docker` command (skip, or fail when Docker is
required, where no engine answers), the image built once per session, and PostgreSQL in a
container (tests/_pg.py's testcontainers server). See tests/deploy/_docker.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests import _pg
from tests.deploy import _docker

if TYPE_CHECKING:
    from collections.abc import Generator


@pytest.fixture(scope="session")
def docker() -> str:
    return _docker.docker_command()


@pytest.fixture(scope="session")
def image(docker: str) -> str:
    """The project's image, built as docs/operating/deploying.md says (measured: time, size)."""
    _docker.require_image(_docker.python_image())
    seconds = _docker.build(docker)
    size = _docker.inspect(docker, _docker.IMAGE)["Size"]
    assert isinstance(size, int)
    _docker.record("image_build_seconds", seconds)
    _docker.record("image_size_mb", size / 1e6)
    return _docker.IMAGE


@pytest.fixture(scope="module")
def postgres_url(docker: str) -> Generator[str]:
    """PostgreSQL in a container of its own (tests/_pg.py's testcontainers server, whatever
    the session's tier), fresh for the module: its admin URL, reachable from the host."""
    _docker.require_image(_pg.postgres_image())
    with _pg.postgres_container() as (url, _how):
        yield url
