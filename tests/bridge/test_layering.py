"""The bridge is an AgentService client: no store, no database driver, no server internals.

Walks the ast of every bridge module, so imports inside functions or under TYPE_CHECKING
count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import compass_bridge

PACKAGE = Path(compass_bridge.__file__).resolve().parent
MODULES = sorted(PACKAGE.rglob("*.py"))
FORBIDDEN = (
    "asyncpg",
    "compass_server.store",
    "compass_server.service",
    "compass_server.app",
    "compass_server.transport.gate",
    "compass_server.hub",
    "compass_server.transport.error_mapping",
    "compass_server.domain",
    "compass_server.embedded",
    "starlette",
    "uvicorn",
)


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def test_there_are_modules_to_check() -> None:
    names = {path.name for path in MODULES}
    assert {"__init__.py", "answers.py", "client.py", "poster.py", "runner.py"} <= names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_the_bridge_imports_no_server_internals(path: Path) -> None:
    bad = [
        (line, name)
        for line, name in _imports(path)
        if any(name == root or name.startswith(f"{root}.") for root in FORBIDDEN)
    ]
    assert bad == [], f"{path.name} imports server internals: {bad}"
