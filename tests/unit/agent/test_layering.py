"""compass_agent is pure: stdlib, google.protobuf and gen only (AGENTS.md, STYLE §3.2).

Walks the ast of every module, so an import inside a function or under TYPE_CHECKING counts
too. The forbidden list names the server side and its transport and database stacks.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import compass_agent

PACKAGE = Path(compass_agent.__file__).resolve().parent
ROOT = PACKAGE.parent
FORBIDDEN = ("compass_server", "asyncpg", "starlette", "connectrpc", "connect", "uvicorn", "httpx")
ALLOWED_THIRD_PARTY = ("google.protobuf", "gen", "compass_agent")
MODULES = sorted(PACKAGE.rglob("*.py"))


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            # `from gen.compass.v1 import comms_connect` names the module in the alias.
            module = "compass_agent" if node.level else (node.module or "")
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def _forbidden(name: str) -> bool:
    # Generated *_connect modules import connectrpc; only the *_pb2 messages are pure.
    return _within(name, FORBIDDEN) or (_within(name, ("gen",)) and name.endswith("_connect"))


def _within(name: str, roots: tuple[str, ...]) -> bool:
    return any(name == root or name.startswith(f"{root}.") for root in roots)


def test_there_are_modules_to_check() -> None:
    names = {path.name for path in MODULES}
    assert {"__init__.py", "mapper.py", "_ask.py", "_outputs.py"} <= names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_module_imports_nothing_forbidden(path: Path) -> None:
    bad = [(line, name) for line, name in _imports(path) if _forbidden(name)]
    assert bad == [], f"{path.name} imports the server side: {bad}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_module_imports_only_stdlib_protobuf_and_gen(path: Path) -> None:
    stdlib = sys.stdlib_module_names | {"__future__"}
    other = [
        (line, name)
        for line, name in _imports(path)
        if name.partition(".")[0] not in stdlib and not _within(name, ALLOWED_THIRD_PARTY)
    ]
    assert other == [], f"{path.name} imports outside stdlib, google.protobuf and gen: {other}"


def test_the_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os\n"
        "from gen.compass.v1 import comms_pb2, agent_connect\n"
        "def f():\n"
        "    from compass_server.domain.errors import CompassError\n"
        "    import asyncpg.pool\n",
        encoding="utf-8",
    )
    names = [name for _line, name in _imports(sample)]
    assert [name for name in names if _forbidden(name)] == [
        "gen.compass.v1.agent_connect",
        "compass_server.domain.errors.CompassError",
        "asyncpg.pool",
    ]


def test_importing_compass_agent_loads_nothing_forbidden() -> None:
    # The ast walk sees direct imports; this sees transitive ones, in a fresh interpreter.
    code = "import sys, compass_agent\nprint('\\n'.join(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    loaded = done.stdout.split()
    assert "compass_agent.mapper" in loaded
    assert [name for name in loaded if _forbidden(name)] == []
