"""The house limit: no hand-written module of the product over 700 lines (AGENTS.md).

A module that grows past it is split where its parts belong (docs/contributing/layout.md),
not squeezed. Generated code (`gen/`, the UI bundle) is not hand-written and not counted.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("compass_core", "compass_bridge", "compass_mcp", "compass_server")
LIMIT = 700


def _line_counts() -> dict[str, int]:
    counts: dict[str, int] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            with path.open(encoding="utf-8") as source:
                counts[str(path.relative_to(ROOT))] = sum(1 for _ in source)
    return counts


def test_the_product_has_modules_to_count() -> None:
    counts = _line_counts()
    assert len(counts) > 50
    assert counts["compass_server/app.py"] > 50


def test_no_hand_written_module_is_over_the_limit() -> None:
    over = {name: lines for name, lines in _line_counts().items() if lines > LIMIT}
    assert not over, f"over {LIMIT} lines (split them where their parts belong): {over}"
