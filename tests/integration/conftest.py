"""Everything under tests/integration needs PostgreSQL: it is marked `integration`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests import _pg

if TYPE_CHECKING:
    from _pytest.terminal import TerminalReporter

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A collection hook in a conftest sees the whole session's items, not only this folder's.
    for item in items:
        if item.path.resolve().is_relative_to(_HERE):
            item.add_marker(pytest.mark.integration)


def pytest_terminal_summary(terminalreporter: TerminalReporter) -> None:
    # The tier is chosen inside a captured fixture; say it where every run shows it.
    if _pg.announcement is not None:
        terminalreporter.write_line(f"[compass tests] {_pg.announcement}")
