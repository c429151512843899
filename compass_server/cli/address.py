"""Where the running `compass serve` of a database can be opened, for the other commands.

`compass demo` and `compass admin sign-in-link` print a URL to open. Without
COMPASS_PUBLIC_URL they printed http://COMPASS_HOST:COMPASS_PORT/ (port 8000), even when the
server ran elsewhere (`./scripts/serve --port 9000`): the docs promise the server's address.
So `compass serve` records its URL, once it listens, in a small file of this user's
state directory named after its database (a hash of the DSN: no secret in the name or the
file), with its process id, and removes it when it stops; the other commands, run by the same
user on the same database, read it while that process lives. Nothing is shared with other
users or machines: there, COMPASS_PUBLIC_URL or `--url` says where the server is.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from typing import TYPE_CHECKING

from compass_core.jsonvalues import is_object

if TYPE_CHECKING:
    from pathlib import Path


def _path(dsn: str) -> Path:
    import platformdirs

    name = hashlib.sha256(dsn.encode()).hexdigest()[:24]
    return platformdirs.user_state_path("compass", appauthor=False) / "servers" / f"{name}.json"


def record(dsn: str, url: str) -> None:
    """Say that this process serves `dsn`'s database at `url` (best effort)."""
    path = _path(dsn)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"url": url, "pid": os.getpid()}))
        temporary.replace(path)


def forget(dsn: str) -> None:
    """This process no longer serves `dsn`'s database (only its own record goes)."""
    path = _path(dsn)
    pid, _ = _read(path)
    if pid == os.getpid():
        with contextlib.suppress(OSError):
            path.unlink()


def recorded(dsn: str) -> str | None:
    """The URL of the live `compass serve` on `dsn`'s database, if this user runs one."""
    path = _path(dsn)
    pid, url = _read(path)
    if pid is None or url is None:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # it died without cleaning up
    except PermissionError:
        pass  # alive, as another user (the embedded cluster's, when root): still serving
    return url


def _read(path: Path) -> tuple[int | None, str | None]:
    try:
        doc: object = json.loads(path.read_text())
    except (OSError, ValueError):
        return None, None
    if not is_object(doc):
        return None, None
    pid, url = doc.get("pid"), doc.get("url")
    return (
        pid if isinstance(pid, int) and pid > 0 else None,
        url if isinstance(url, str) and url.startswith(("http://", "https://")) else None,
    )
