"""Which process is which, read from /proc (Linux): the workers of a `compass serve --workers N`
supervisor, which of them holds the server side of a client's TCP connection, and the CPU a
process has used (the tests and the benches)."""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")


def children(pid: int) -> list[int]:
    """Live (not zombie) child processes of `pid`."""
    found: list[int] = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, parent = stat.rsplit(")", 1)[1].split()[:2]
        if int(parent) == pid and state != "Z":
            found.append(int(entry.name))
    return sorted(found)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far; 0.0 once it is gone."""
    try:
        fields = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serving_pid(candidates: list[int], server_port: int, client_port: int) -> int | None:
    """The process among `candidates` holding the server side of the loopback TCP connection
    between `client_port` and `server_port`, if any."""
    inode = _connection_inode(server_port, client_port)
    if inode is None:
        return None
    wanted = f"socket:[{inode}]"
    for pid in candidates:
        try:
            fds = list((PROC / str(pid) / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if fd.readlink().as_posix() == wanted:
                    return pid
            except OSError:
                continue
    return None


def _connection_inode(local_port: int, remote_port: int) -> int | None:
    for table in ("tcp", "tcp6"):
        try:
            lines = (PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
            if (
                state == "01"  # ESTABLISHED
                and int(local.rsplit(":", 1)[1], 16) == local_port
                and int(remote.rsplit(":", 1)[1], 16) == remote_port
            ):
                return int(inode)
    return None
