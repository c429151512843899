"""What decides where and how an embedded cluster runs, and what starting one found."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from compass_server.embedded.common import ROOT_DATA_DIR, is_root

if TYPE_CHECKING:
    from pathlib import Path


class StartOutcome(Enum):
    """What `LocalPostgres.start()` found and did."""

    INITIALIZED = "initialized"
    """No cluster existed: one was created (initdb) and started."""
    STARTED = "started"
    """An existing cluster was started."""
    ATTACHED = "attached"
    """A server was already running on this data dir (e.g. left by a killed owner); adopted."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterConfig:
    """Everything that decides where and how a `LocalPostgres` runs."""

    data_dir: Path
    """Ours: holds the lock file and `pgdata/` (see the module docstring)."""
    socket_dir: Path | None = None
    """Where the socket goes; None: the cluster directory (or a short private dir under the
    temp dir when that path is too long for a unix socket)."""
    port: int = 5432
    """Names the socket (`.s.PGSQL.<port>`); no TCP port is opened."""
    settings: tuple[tuple[str, str], ...] = ()
    """Extra server settings written to `compass.conf` (e.g. TEST_SETTINGS)."""
    os_user: str | None = None
    """Only as root: the OS user that owns and runs the cluster (default OS_USER)."""
    temporary: bool = False
    """Remove `data_dir` on `close()` (and skip fsync at initdb)."""
    start_timeout: float = 60.0
    """Seconds to wait for the data-dir lock, for `initdb`, and for the server to be ready."""

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "pgdata"


def default_data_dir() -> Path:
    """Where `compass serve` keeps its embedded cluster when COMPASS_DATA_DIR is unset.

    Root gets ROOT_DATA_DIR (a data dir under /root could not be reached by the unprivileged
    user that runs PostgreSQL); everyone else a per-user data directory (platformdirs).
    """
    if is_root():
        return ROOT_DATA_DIR
    import platformdirs

    return platformdirs.user_data_path("compass", appauthor=False) / "pg"
