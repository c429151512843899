"""tests/_pg.py's tier choice against a real Docker daemon: one that answers but cannot provide
the PostgreSQL image (not present, and its registry unreachable) falls back to a local server
saying why, or is an error when Docker is required; the configured image makes it the
testcontainers tier. (The rules without a daemon: tests/unit/test_pg_tiers.py.)

Needs a Docker engine: skipped, saying why, where none answers.
"""

from __future__ import annotations

import pytest

from tests import _pg
from tests.deploy import _docker


@pytest.fixture
def daemon() -> None:
    if not _pg.docker_available():
        _docker.unavailable("no Docker daemon answers (tests/_pg.py's probe)")


def _absent_image() -> str:
    """An image on a registry of 127.0.0.1 where nothing listens: not present, not pullable."""
    return f"127.0.0.1:{_pg.free_port()}/compass-absent/postgres:0"


@pytest.mark.usefixtures("daemon")
def test_a_daemon_that_cannot_provide_the_image_falls_back_saying_why() -> None:
    image = _absent_image()
    choice = _pg.choose_tier({_pg.IMAGE_ENV: image})
    assert choice.tier is _pg.Tier.LOCAL
    assert choice.why.startswith(f"the Docker daemon cannot provide {image}: not present")
    assert "connection refused" in choice.why


@pytest.mark.usefixtures("daemon")
def test_when_docker_is_required_that_is_an_error() -> None:
    image = _absent_image()
    with pytest.raises(_pg.DockerRequiredError, match=f"cannot provide {image}"):
        _pg.choose_tier({_pg.IMAGE_ENV: image, _pg.REQUIRED_ENV: "1"})


@pytest.mark.usefixtures("daemon")
def test_the_configured_image_makes_it_the_container_tier() -> None:
    _docker.require_image(_pg.postgres_image())
    assert _pg.choose_tier({_pg.IMAGE_ENV: _pg.postgres_image()}) == _pg.Choice(_pg.Tier.CONTAINER)
