"""The `compass` command line, run as a user runs it: a real subprocess on a real database.

Everything here needs PostgreSQL (`integration`); the `compass serve` tests also start uvicorn
(`e2e`). `compass_cli` runs one command and returns its exit code, stdout and stderr.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from compass_server.embedded import LocalPostgres

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Mapping

_HERE = Path(__file__).resolve().parent
_SCRIPT = Path(sys.executable).parent / "compass"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.resolve().is_relative_to(_HERE):
            item.add_marker(pytest.mark.integration)
            if "serve" in item.name:
                item.add_marker(pytest.mark.e2e)


@dataclass(frozen=True, slots=True)
class Ran:
    code: int
    stdout: str
    stderr: str


def command() -> list[str]:
    """How to run `compass`: the installed console script, else the module."""
    return [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "compass_server.cli"]


def cli_env(**overrides: str | None) -> dict[str, str]:
    """The environment for a `compass` child: ours, without Compass settings, plus `overrides`
    (None removes a variable)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPASS_")}
    return env | {key: value for key, value in overrides.items() if value is not None}


def run_cli(args: list[str], env: Mapping[str, str], *, timeout: float = 120) -> Ran:
    done = subprocess.run(
        [*command(), *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Ran(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def compass_cli(database_url: str) -> Callable[..., Ran]:
    """Run `compass <args>` with COMPASS_DATABASE_URL set to this test's fresh database."""

    def run(*args: str) -> Ran:
        return run_cli(list(args), cli_env(COMPASS_DATABASE_URL=database_url))

    return run


@pytest.fixture
def data_dir() -> Generator[Path]:
    """A data dir that does not exist yet, under a parent the PostgreSQL OS user can reach."""
    parent = Path(tempfile.mkdtemp(prefix="compass-cli-"))
    parent.chmod(0o755)  # as root, the cluster runs as an unprivileged user that must get in
    path = parent / "data"
    yield path
    LocalPostgres(data_dir=path).stop()  # whatever a failed test left running
    shutil.rmtree(parent, ignore_errors=True)
