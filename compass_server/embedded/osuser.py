"""The OS user the cluster runs as when this process is root (`compass-pg`), and private directories."""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import shutil
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from compass_server.embedded.common import EmbeddedPostgresError


@dataclass(frozen=True, slots=True, kw_only=True)
class OsUser:
    name: str
    uid: int
    gid: int
    switch: bool
    """True when we are root and run every PostgreSQL program as this user."""


def private_dir(path: Path, user: OsUser) -> None:
    """Make `path` (a predictable name in the shared temp dir) a 0700 directory of `user`, or
    refuse: anyone may have created that name first, e.g. as a symlink to a directory of
    theirs or of root's. So: create it ourselves (no symlink is followed by mkdir), change the
    owner only of what we just created and without following links, and accept an existing
    one only when `lstat` shows a real directory (not a link) already owned by `user`, 0700.
    """
    try:
        path.mkdir(0o700)
    except FileExistsError:
        created = False
    else:
        created = True
        path.chmod(0o700, follow_symlinks=False)  # whatever the umask made of it
        if user.switch:
            os.chown(path, user.uid, user.gid, follow_symlinks=False)
    info = os.lstat(path)
    if (
        not stat.S_ISDIR(info.st_mode)
        or info.st_uid != user.uid
        or stat.S_IMODE(info.st_mode) != 0o700
    ):
        what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not ours"
        raise EmbeddedPostgresError(
            f"refusing the socket directory {path}: it is {what} (it must be a 0700 directory "
            f"owned by {user.name}{'' if created else ', created by Compass'}); remove it, or set "
            "COMPASS_DATA_DIR to a shorter path so the socket can live in the data directory"
        )


def ensure_os_user(name: str) -> pwd.struct_passwd:
    """The passwd entry of `name`, creating a locked system user (no home, no shell) if needed."""
    for attempt in range(10):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
        nologin = shutil.which("nologin") or "/usr/sbin/nologin"
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        adduser = shutil.which("adduser")
        if Path(useradd).exists():
            argv = [useradd, "--system", "--user-group", "--no-create-home"]
            argv += ["--home-dir", "/nonexistent", "--shell", nologin, name]
        elif adduser is not None:  # busybox (Alpine)
            argv = [adduser, "-S", "-D", "-H", "-s", nologin, name]
        else:
            break
        # Concurrent creators race on /etc/passwd's lock; the loser retries or finds the user.
        subprocess.run(argv, capture_output=True, check=False, timeout=30)  # noqa: S603 -- fixed argv
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
        time.sleep(0.1 * (attempt + 1))
    raise EmbeddedPostgresError(
        f"PostgreSQL cannot run as root and the OS user {name!r} could not be created "
        "(useradd/adduser missing or failing); create it, or run compass as a normal user"
    )


def first_untraversable(path: Path, user: OsUser) -> Path | None:
    """The first of `path`'s ancestors (and `path` itself, if a dir) `user` cannot enter, or,
    for a file, None only when `user` may also execute it. Mode bits only (no ACLs)."""
    groups = {user.gid} | {g.gr_gid for g in grp.getgrall() if user.name in g.gr_mem}
    chain = [*reversed(path.parents), path]
    for node in chain:
        try:
            info = node.stat()
        except OSError:
            return node if node is not path else None  # path itself may not exist yet
        if info.st_uid == user.uid:
            allowed = info.st_mode & stat.S_IXUSR
        elif info.st_gid in groups:
            allowed = info.st_mode & stat.S_IXGRP
        else:
            allowed = info.st_mode & stat.S_IXOTH
        if not allowed:
            return node
    return None
