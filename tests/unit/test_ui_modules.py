"""The UI's modules (ui/src), unit-tested with Node's own test runner (tests/ui/*.mjs).

They import the messages generated into ui/gen and the protobuf-es and connect-web packages,
linked at ui/node_modules by scripts/ensure-ui-tools (pinned, cached; npm only on the first
run)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ui_unit_tests_pass() -> None:
    node = shutil.which("node")
    assert node is not None, "Node.js is needed for the UI unit tests (and the agent runtime)"
    tools = subprocess.run(
        [str(ROOT / "scripts" / "ensure-ui-tools")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert tools.returncode == 0, tools.stderr
    tests = sorted(str(p) for p in (ROOT / "tests" / "ui").glob("*.test.mjs"))
    assert tests, "no UI unit tests found"
    done = subprocess.run(
        [node, "--test", *tests], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# fail 0" in done.stdout, done.stdout
