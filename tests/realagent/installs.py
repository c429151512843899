"""Where the tests find each real agent's install: one home for tests/realagent and tests/mcp.

`ensure_npm(NAME)` runs `scripts/ensure-npm NAME` (the pinned packages of
tests/realagent/NAME/, installed and cached) and returns their `node_modules/.bin`; omp is the
NAME `omp`, installed by scripts/ensure-omp (`scripts/ensure-npm omp`, honouring
`COMPASS_OMP_DIR`).

`COMPASS_NPM_DIR_<NAME>` (NAME upper-cased, `-` as `_`: `COMPASS_NPM_DIR_CLAUDE`,
`COMPASS_NPM_DIR_MCP_SDK`) names another, already complete install of NAME to run the same
tests against, e.g. the latest published versions `scripts/compat` installs
(docs/agents/compatibility.md): it is used as it is, never installed into or checked against
the pins.
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

__all__ = ["ENSURE_NPM", "REPO_ROOT", "ensure_npm", "override_variable"]

REPO_ROOT = Path(__file__).resolve().parents[2]
ENSURE_NPM = REPO_ROOT / "scripts" / "ensure-npm"
_INSTALLERS = {"omp": [str(REPO_ROOT / "scripts" / "ensure-omp")]}
"""The NAMEs installed by a script of their own instead of `scripts/ensure-npm NAME`."""


def override_variable(name: str) -> str:
    """The environment variable naming another install of NAME: `COMPASS_NPM_DIR_<NAME>`."""
    return "COMPASS_NPM_DIR_" + name.upper().replace("-", "_")


@functools.cache
def ensure_npm(name: str) -> Path:
    """NAME's `node_modules/.bin`: the install `COMPASS_NPM_DIR_<NAME>` names, else the pinned
    one (scripts/ensure-npm; installed once per process if needed). Raises RuntimeError with
    the reason: the override is not an install, or the script's message ("cannot install ...
    from npm: ...")."""
    variable = override_variable(name)
    override = os.environ.get(variable, "")
    if override:
        bin_dir = Path(override) / "node_modules" / ".bin"
        if not bin_dir.is_dir():
            raise RuntimeError(
                f"{variable}={override} is not an npm install ({bin_dir} is missing)"
            )
        return bin_dir
    argv = _INSTALLERS.get(name, [str(ENSURE_NPM), name])
    command = " ".join(Path(argv[0]).relative_to(REPO_ROOT).parts + tuple(argv[1:]))
    result = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise RuntimeError(f"{command} failed:\n{result.stderr}{result.stdout}")
    lines = result.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"{command} printed nothing:\n{result.stderr}")
    return Path(lines[-1])
