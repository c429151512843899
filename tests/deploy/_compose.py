"""docker-compose.yml on an engine with host networking only (test_compose.py).

The engine scripts/test-containers starts has no bridge network, so Compose's default network
cannot exist and no container may be contacted at its own address. `host_network()` returns
docker-compose.yml with exactly these changes, and nothing else (test_compose.py holds it to
that): every service joins the host's network (`network_mode: host`) and publishes no ports
(there is nothing to publish; Compose 1.29 refuses ports with host networking, and an override
file cannot remove them: it merges lists); the database, found by its service name on
Compose's network, is at 127.0.0.1 on a free port (PGPORT) and listens there only; the server
listens on 127.0.0.1 on a free port, and its healthcheck asks that port; the images are this
run's (the PostgreSQL image and the build's PYTHON_IMAGE and network, as test_image.py
builds). Written as a file and run with `-f`, it keeps docker-compose.yml's order
(postgres healthy -> migrate completed -> compass), commands, restart policies, volume and
healthcheck timings.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Final

from tests.deploy._files import ROOT, load_yaml

COMPOSE_FILE: Final = ROOT / "docker-compose.yml"
SERVICE_URL: Final = "postgresql://compass:compass@postgres:5432/compass"
"""The database URL docker-compose.yml gives migrate and compass (Compose's network)."""


@dataclass(frozen=True, slots=True)
class Ports:
    postgres: int
    compass: int


def host_network(
    compose: dict[str, Any], *, ports: Ports, postgres_image: str, python_image: str, image: str
) -> dict[str, Any]:
    """`compose` (docker-compose.yml, loaded) for a host-network-only engine; see the module."""
    variant = copy.deepcopy(compose)
    # Each service a copy of its own: YAML merge keys (`<<: *compass`) share the anchor's
    # mappings (migrate's environment IS x-compass's), and deepcopy keeps such sharing.
    services: dict[str, dict[str, Any]] = {
        name: copy.deepcopy(service) for name, service in compose["services"].items()
    }
    variant["services"] = services
    for service in services.values():
        service["network_mode"] = "host"
        service.pop("ports", None)
    database = services["postgres"]
    database["image"] = postgres_image
    database["environment"]["PGPORT"] = str(ports.postgres)
    # The upstream image's default command is `postgres`; its flags go after it.
    database["command"] = ["postgres", "-c", "listen_addresses=127.0.0.1"]
    url = SERVICE_URL.replace("@postgres:5432/", f"@127.0.0.1:{ports.postgres}/")
    for name in ("migrate", "compass"):
        service = services[name]
        assert service["environment"]["COMPASS_DATABASE_URL"] == SERVICE_URL
        service["environment"]["COMPASS_DATABASE_URL"] = url
        service["image"] = image
        service["build"] = {
            "context": str(ROOT),
            "network": "host",
            "args": {"PYTHON_IMAGE": python_image},
        }
    server = services["compass"]
    old_port = server["environment"]["COMPASS_PORT"]
    server["environment"].update(
        COMPASS_HOST="127.0.0.1",
        COMPASS_PORT=str(ports.compass),
        COMPASS_PUBLIC_URL=f"http://127.0.0.1:{ports.compass}/",
    )
    server["healthcheck"]["test"] = [
        part.replace(f"127.0.0.1:{old_port}/", f"127.0.0.1:{ports.compass}/")
        for part in server["healthcheck"]["test"]
    ]
    return variant


def load() -> dict[str, Any]:
    found: dict[str, Any] = load_yaml(COMPOSE_FILE)
    return found
