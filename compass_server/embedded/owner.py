"""The one owner of a cluster: the long-running process (`compass serve`) that keeps it.

Any process may attach to a cluster (`compass admin` beside a server), but only its owner
keeps it alive and stops it. Ownership is an exclusive `flock` on `<data_dir>/.owner`, held
from before the cluster is touched until the owner ends; the file says the owner's pid. The
kernel releases the lock however the owner ends (`kill -9` included), so the next owner can
claim it at once and adopt the server left running. A second claim fails at once
(`ClusterOwnedError`): two owners would each stop the cluster under the other.

A process that started the cluster without claiming it (`compass admin` with no server
running) stops it when done only while nobody owns it (`LocalPostgres.stop_unless_owned`):
a server may have adopted it meanwhile.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from typing import TYPE_CHECKING, Final

from compass_server.embedded.common import EmbeddedPostgresError

if TYPE_CHECKING:
    from collections.abc import Generator
    from pathlib import Path

OWNER_FILE: Final = ".owner"
"""In the data dir, beside `.lock` (which serialises start and stop, not ownership)."""


class ClusterOwnedError(EmbeddedPostgresError):
    """Another live process owns the cluster."""

    def __init__(self, data_dir: Path, pid: int | None) -> None:
        super().__init__(f"{data_dir} is owned by another process (pid {pid or '?'})")
        self.data_dir = data_dir
        self.pid = pid
        """The owner's pid (None in the instant before it writes it)."""


@contextlib.contextmanager
def owning(data_dir: Path) -> Generator[None]:
    """Own the cluster in `data_dir` (which must exist) for the block.

    Raises:
        ClusterOwnedError: another process owns it.
    """
    path = data_dir / OWNER_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)  # not inherited by children (PEP 446)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ClusterOwnedError(data_dir, _pid_in(fd)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the flock


def is_owned(data_dir: Path) -> bool:
    """Whether a live process owns the cluster in `data_dir` now."""
    try:
        fd = os.open(data_dir / OWNER_FILE, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _pid_in(fd: int) -> int | None:
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return int(text) if text.isdigit() and int(text) > 0 else None
