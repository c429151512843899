"""The UI's pure JavaScript modules, unit-tested with Node's own test runner (tests/ui/*.mjs).

Node.js is already required by the test command (it installs the agent runtime with npm); these
tests need nothing from npm."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ui_unit_tests_pass() -> None:
    node = shutil.which("node")
    assert node is not None, "Node.js is needed for the UI unit tests (and the agent runtime)"
    tests = sorted(str(p) for p in (ROOT / "tests" / "ui").glob("*.test.mjs"))
    assert tests, "no UI unit tests found"
    done = subprocess.run(
        [node, "--test", *tests], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# fail 0" in done.stdout, done.stdout
