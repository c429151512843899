"""Running a snippet of the browser UI's JavaScript under Node.js, for tests that hold the UI's
hand-written copies (connect.js's table, the typedefs' enums) to their Python sources."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[2]
STATIC: Final = ROOT / "compass_server" / "static"


def import_line(name: str, module: str) -> str:
    """`import * as <name> from "<file URL of static/<module>>";`"""
    return f"import * as {name} from {json.dumps((STATIC / module).as_uri())};\n"


def node_json(script: str) -> object:
    """Runs `script` (an ES module) with Node and returns the JSON it writes to stdout."""
    node = shutil.which("node")
    assert node is not None, "Node.js is needed for the UI's tests (and the agent runtime)"
    done = subprocess.run(
        [node, "--input-type=module", "-e", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
