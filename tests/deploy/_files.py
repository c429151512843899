"""Readers for the deployment files: the Dockerfile's instructions, YAML documents, and the
names the server reads and serves (so the files are checked against the code, not a copy)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import yaml
from starlette.routing import Route

from compass_server import config
from compass_server.app import create_app
from compass_server.config import Settings
from compass_server.store.migrate import MIGRATIONS_DIR_ENV

ROOT: Final = Path(__file__).resolve().parents[2]
KUBERNETES_DIR: Final = ROOT / "deploy" / "kubernetes"

#: Every COMPASS_* variable a deployment may set: the server's settings and the migrations dir.
ENV_NAMES: Final = config.ENV_VARS | {MIGRATIONS_DIR_ENV}


def served_paths() -> set[str]:
    """The plain routes the app serves (/healthz, /readyz, ...); building it does no I/O."""
    app = create_app(Settings(database_url="postgresql://compass@127.0.0.1:1/compass"))
    return {route.path for route in app.routes if isinstance(route, Route)}


def dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile as (INSTRUCTION, arguments) pairs, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text()
    joined = re.sub(r"\\\n", " ", text)
    instructions: list[tuple[str, str]] = []
    for line in joined.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        keyword, _, rest = stripped.partition(" ")
        instructions.append((keyword.upper(), " ".join(rest.split())))
    return instructions


def stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's build stages, each starting with its FROM."""
    result: list[list[tuple[str, str]]] = []
    for instruction in dockerfile():
        if instruction[0] == "FROM":
            result.append([])
        if result:
            result[-1].append(instruction)
    return result


def env_of(stage: list[tuple[str, str]]) -> dict[str, str]:
    """The `ENV name=value ...` settings of a stage (values without spaces or quotes)."""
    env: dict[str, str] = {}
    for keyword, args in stage:
        if keyword == "ENV":
            for pair in args.split():
                name, equals, value = pair.partition("=")
                if equals:
                    env[name] = value
    return env


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def manifests() -> list[tuple[Path, dict[str, Any]]]:
    """Every Kubernetes object under deploy/kubernetes, with the file it is in."""
    found: list[tuple[Path, dict[str, Any]]] = []
    for path in sorted(KUBERNETES_DIR.rglob("*.y*ml")):
        found.extend((path, doc) for doc in yaml.safe_load_all(path.read_text()) if doc)
    return found
