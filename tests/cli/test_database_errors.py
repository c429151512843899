"""A database that cannot be used is one clear line, never a traceback (issue 12): which
host, port, database and user, why, and what to do; the password is never shown."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.cli.conftest import cli_env, run_cli

SECRET = "s3cr3t-pw"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _one_line_error(url: str, *args: str) -> str:
    ran = run_cli([*args], cli_env(COMPASS_DATABASE_URL=url), timeout=60)
    assert ran.code == 1, ran
    assert "Traceback" not in ran.stderr, ran.stderr
    assert SECRET not in ran.stderr + ran.stdout
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1, ran.stderr
    return lines[0]


@pytest.mark.parametrize("command", [("migrate",), ("admin", "create-workspace", "--name", "x")])
@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://a:{SECRET}@:notaport/x",
        "not a url",
        f"mysql://root:{SECRET}@127.0.0.1/x",
        f"postgresql://a:{SECRET}@127.0.0.1:99999/x",
    ],
)
def test_a_malformed_url_says_what_a_valid_one_looks_like(url: str, command: tuple[str]) -> None:
    line = _one_line_error(url, *command)
    assert line == (
        "compass: COMPASS_DATABASE_URL is not a valid PostgreSQL URL; use "
        "postgresql://USER:PASSWORD@HOST:5432/DATABASE"
    )


def test_a_refused_port_names_host_port_database_and_user() -> None:
    port = _free_port()
    line = _one_line_error(f"postgresql://ada:{SECRET}@127.0.0.1:{port}/compass", "migrate")
    assert line.startswith(
        f"compass: cannot connect to PostgreSQL at 127.0.0.1:{port}, database 'compass', "
        "user 'ada': connection refused. Check that PostgreSQL runs there"
    ), line


def test_an_unknown_database_says_it_does_not_exist(database_url: str) -> None:
    parts = urlsplit(database_url)
    missing = urlunsplit(parts._replace(path="/compass_no_such_database"))
    line = _one_line_error(missing, "serve", "--port", "0")
    assert "database 'compass_no_such_database'" in line, line
    assert line.endswith(
        "that database does not exist. Check that PostgreSQL runs there and that "
        "COMPASS_DATABASE_URL names the right host, port, database and user"
    ), line
