"""Constants, the error class and small file helpers of the embedded cluster."""

from __future__ import annotations

import errno
import logging
import os
import re
import sys
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Mapping


logger = logging.getLogger("compass_server.embedded")

SUPERUSER: Final = "postgres"
"""The PostgreSQL role the cluster is created with (superuser; trust over the socket)."""
OS_USER: Final = "compass-pg"
"""The unprivileged OS user that owns and runs clusters started by root."""
ROOT_DATA_DIR: Final = Path("/var/lib/compass/pg")
"""The default data dir of root (never under /root: see the module docstring)."""
TEST_SETTINGS: Final[Mapping[str, str]] = MappingProxyType(
    {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
)
"""Settings of temporary clusters: durability traded for speed; the data is thrown away."""

MANAGED_SETTINGS: Final = frozenset(
    {"listen_addresses", "unix_socket_directories", "unix_socket_permissions", "port"}
)
SETTING_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
# sun_path is 108 bytes on Linux and 104 on macOS, each including the terminating NUL.
MAX_SOCKET_PATH: Final = 103
POLL_SECONDS: Final = 0.02
PG_CTL_GRACE_SECONDS: Final = 15.0


class EmbeddedPostgresError(RuntimeError):
    """The local cluster could not be prepared, started or stopped; the message says why."""


def is_root() -> bool:
    return sys.platform != "win32" and os.geteuid() == 0


def conf_quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def tail(text: str, lines: int = 15) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return " | ".join(kept) if kept else "(no output)"


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:  # some filesystems refuse fsync on directories
        if exc.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(fd)
