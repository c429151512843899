"""No front door fakes a Connect request: nothing in the product builds a connectrpc
`RequestContext` or `MethodInfo` (connectrpc builds them for the requests it serves).

A caller that is not a Connect request (`/mcp`, a push, email or chat answer surface) calls the
application API (`compass_server/service/asks.py`) with a plain actor instead.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Final

import pytest

ROOT: Final = Path(__file__).resolve().parents[2]
PRODUCT: Final = ("compass_server", "compass_mcp", "compass_bridge", "compass_core")
FORBIDDEN: Final = frozenset({"RequestContext", "MethodInfo"})


def constructions(source: str) -> list[int]:
    """The lines where `source` calls RequestContext(...) or MethodInfo(...), by name, as an
    attribute (`request.RequestContext(...)`) or under an alias it imported them as."""
    tree = ast.parse(source)
    names = set(FORBIDDEN)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names.update(a.asname for a in node.names if a.name in FORBIDDEN and a.asname)
    lines: list[int] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (isinstance(func, ast.Name) and func.id in names) or (
            isinstance(func, ast.Attribute) and func.attr in FORBIDDEN
        ):
            lines.append(node.lineno)
    return lines


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from connectrpc.request import RequestContext\nRequestContext(method=m)\n", [2]),
        ("from connectrpc.method import MethodInfo as M\nx = M(name='WatchAsk')\n", [2]),
        ("import connectrpc.request as r\nctx = r.RequestContext(method=m)\n", [2]),
        ('"""Never build a `RequestContext(...)` by hand."""\n', []),
        ("def f(ctx: RequestContext[Any, Any]) -> None: ...\n", []),
    ],
)
def test_the_check_finds_a_construction(source: str, found: list[int]) -> None:
    assert constructions(source) == found


def test_no_product_module_builds_a_request_context() -> None:
    scanned = 0
    found: list[str] = []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            scanned += 1
            lines = constructions(path.read_text(encoding="utf-8"))
            found += [f"{path.relative_to(ROOT)}:{line}" for line in lines]
    assert scanned > 100  # the packages were there to scan
    assert found == []
