"""deploy/pgbouncer: the Compose override puts Compass's pools behind PgBouncer (the
configuration the tests run Debian's pgbouncer with, tests/_pgbouncer.py) and keeps its LISTEN
connection on PostgreSQL, with settings the server reads."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from tests.deploy._files import ENV_NAMES, ROOT, load_yaml

PGBOUNCER = ROOT / "deploy" / "pgbouncer"


def _override() -> dict[str, Any]:
    services: dict[str, Any] = load_yaml(PGBOUNCER / "compose.yml")["services"]
    return services


def test_the_pools_go_through_pgbouncer_and_listen_goes_direct() -> None:
    compass = _override()["compass"]["environment"]
    assert set(compass) <= ENV_NAMES, set(compass) - ENV_NAMES
    pooled, direct = (
        urlsplit(compass[n]) for n in ("COMPASS_DATABASE_URL", "COMPASS_LISTEN_DATABASE_URL")
    )
    assert (pooled.hostname, pooled.port) == ("pgbouncer", 6432)
    base = load_yaml(ROOT / "docker-compose.yml")["services"]
    assert base["postgres"]["image"].startswith("postgres")
    assert (direct.hostname, direct.port) == ("postgres", 5432)
    assert compass["COMPASS_DB_STATEMENT_CACHE_SIZE"] == "0"
    assert pooled.path == direct.path == "/compass"


def test_pgbouncer_runs_the_tested_configuration_in_transaction_mode() -> None:
    ini = (PGBOUNCER / "pgbouncer.ini").read_text()
    settings = dict(re.findall(r"^(\w+) = (.*)$", ini, re.MULTILINE))
    assert settings["pool_mode"] == "transaction"
    assert settings["listen_port"] == "6432"
    # The tests %include this file and override after it: it must end in [pgbouncer].
    assert re.findall(r"^\[(\w+)\]", ini, re.MULTILINE)[-1] == "pgbouncer"
    dockerfile = (PGBOUNCER / "Dockerfile").read_text()
    assert "COPY pgbouncer.ini /etc/pgbouncer/pgbouncer.ini" in dockerfile
    assert "apt-get install -y --no-install-recommends pgbouncer" in dockerfile
    service = _override()["pgbouncer"]
    assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
    mounted = [v.split(":")[1] for v in service["volumes"]]
    assert settings["auth_file"] in mounted
