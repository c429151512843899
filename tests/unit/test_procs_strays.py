"""tests/_procs.stop_strays: what an agent run left running under its directory is stopped,
and nothing else."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

from tests._procs import stop_strays

if TYPE_CHECKING:
    from pathlib import Path

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_processes_naming_or_working_in_the_directory_are_stopped_and_no_other(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    (run / "workspace").mkdir(parents=True)
    sibling = tmp_path / "run1"  # a name that starts like it: not under it
    sibling.mkdir()
    named = subprocess.Popen([*SLEEP, f"--cwd={run / 'workspace'}"])
    inside = subprocess.Popen(SLEEP, cwd=run / "workspace")
    beside = subprocess.Popen([*SLEEP, str(sibling)], cwd=sibling)
    try:
        stopped = stop_strays(run)
        assert sorted(stopped) == sorted([named.pid, inside.pid])
        assert named.wait(timeout=10) != 0
        assert inside.wait(timeout=10) != 0
        assert beside.poll() is None
    finally:
        for process in (named, inside, beside):
            process.kill()
            process.wait()
