"""Which process is which, read from /proc (Linux): the workers of a `compass serve --workers N`
supervisor, which of them holds the server side of a client's TCP connection, the CPU a
process has used (the tests and the benches), and the strays an agent run left behind."""

from __future__ import annotations

import os
import signal
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


def stop_strays(under: Path) -> list[int]:
    """Kill every process but this one whose command line names a path under `under` or
    whose working directory is under it, and return their pids. An agent CLI can leave a
    detached helper behind in a session of its own (Cline's hub daemon, started with
    `--cwd` in the test's workspace), which a kill of the agent's process does not reach."""
    root = str(under.resolve())
    killed: list[int] = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            cwd = (entry / "cwd").readlink().as_posix()
        except OSError:
            continue
        named = any(
            text == root or root + os.sep in text
            for text in (arg.decode(errors="replace") for arg in argv)
        )
        if named or cwd == root or cwd.startswith(root + os.sep):
            try:
                os.kill(int(entry.name), signal.SIGKILL)
            except ProcessLookupError:
                continue
            killed.append(int(entry.name))
    return killed
