"""The real mail tier (tests/mail/): Debian's Postfix and Dovecot, started by the tests."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/mail/" in item.nodeid:
            item.add_marker(pytest.mark.mail)
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.integration)
