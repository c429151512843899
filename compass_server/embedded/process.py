"""The postmaster as a process: its pid file, liveness, waiting for it to exit."""

from __future__ import annotations

import os
import time
from enum import Enum
from pathlib import Path

from compass_server.embedded.common import POLL_SECONDS, read_text

# -- process and file helpers ----------------------------------------------------------------


class PidState(Enum):
    OURS = "ours"
    """A live postgres process working in this cluster's directory."""
    OTHER_POSTGRES = "other"
    """A live postgres process of some other cluster (or unknown, without /proc)."""
    STALE = "stale"
    """Dead, a zombie, another user's, or not postgres: PostgreSQL would trip over it."""


def pid_in(path: Path) -> int | None:
    first = read_text(path).split("\n", 1)[0].strip()
    return int(first) if first.isdigit() else None


def pid_state(pid: int, pgdata: Path) -> PidState:
    if pid <= 0 or pid == os.getpid():
        return PidState.STALE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return PidState.STALE
    except PermissionError:
        # Another user's process: our servers run as us (or, as root, we may signal anyone).
        return PidState.STALE
    proc = Path("/proc") / str(pid)
    if not Path("/proc/self").exists():  # no procfs (macOS): trust the live pid
        return PidState.OURS
    try:
        comm = (proc / "comm").read_text().strip()
        cwd = (proc / "cwd").readlink()
    except OSError:  # exited meanwhile, or a zombie (no cwd)
        return PidState.STALE
    if comm != "postgres":
        return PidState.STALE
    # The postmaster chdirs into its data directory.
    try:
        same = cwd.exists() and cwd.samefile(pgdata)
    except OSError:
        same = False
    return PidState.OURS if same else PidState.OTHER_POSTGRES


def live_postmaster(pgdata: Path) -> int | None:
    pid = pid_in(pgdata / "postmaster.pid")
    if pid is None or pid_state(pid, pgdata) is not PidState.OURS:
        return None
    return pid


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie has exited; only its parent's wait() is missing
        fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return not Path("/proc/self").exists()
    return fields[0] != "Z"


def await_exit(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_SECONDS)
    return True
