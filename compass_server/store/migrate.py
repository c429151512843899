"""Forward-only migration runner for `compass_server/store/migrations/NNNN_name.sql` (package
data: an installed wheel carries them).

Each file is applied once, in version order, in its own transaction, and recorded in
`schema_migrations` with the SHA-256 of its bytes. Concurrent runners (several server processes
starting at once) are serialised by a session-level advisory lock, so each file runs exactly
once. The runner refuses to go on when the database has applied a version this code does not
ship (it is older than the database), when an applied file changed on disk, or when a new file
sorts before one already applied (forward-only: history is never rewritten).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import asyncpg

MIGRATIONS_DIR_ENV: Final = "COMPASS_MIGRATIONS_DIR"
"""Environment variable overriding where migration files are read from."""

#: Key of the advisory lock that serialises runners ("compass" in ASCII, as a bigint).
_LOCK_KEY: Final = 0x636F6D70617373
_FILE_NAME: Final = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")

_CREATE_TABLE: Final = """
    CREATE TABLE IF NOT EXISTS schema_migrations (
        version    integer     PRIMARY KEY,
        name       text        NOT NULL,
        checksum   text        NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
    )
"""
_SELECT_APPLIED: Final = "SELECT version, name, checksum FROM schema_migrations ORDER BY version"
_INSERT_APPLIED: Final = (
    "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)"
)


class MigrationError(Exception):
    """The migration files and the database disagree; the server must not start."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Migration:
    """One migration file."""

    version: int
    """The `NNNN` prefix of the file name."""
    name: str
    """The rest of the file name, without `.sql`."""
    sql: str
    checksum: str
    """Hex SHA-256 of the file's bytes."""


def default_directory() -> Path:
    """Where migrations live: `$COMPASS_MIGRATIONS_DIR` when set, else this package's
    `migrations/` (installed with it, editable or not)."""
    override = os.environ.get(MIGRATIONS_DIR_ENV)
    if override:
        return Path(override)
    return Path(__file__).resolve().parent / "migrations"


def load(directory: Path) -> list[Migration]:
    """Read every migration file of `directory`, in version order.

    Raises:
        MigrationError: the directory is missing, a `.sql` file is misnamed, or two files
            share a version.
    """
    if not directory.is_dir():
        raise MigrationError(f"migrations directory {directory} does not exist")
    migrations: dict[int, Migration] = {}
    for path in sorted(directory.glob("*.sql")):
        match = _FILE_NAME.match(path.name)
        if match is None:
            # A misnamed file would otherwise be skipped silently and never applied.
            raise MigrationError(f"{path.name}: migration files must be named NNNN_name.sql")
        version = int(match["version"])
        if version in migrations:
            raise MigrationError(f"{path.name}: version {version} is used by two files")
        data = path.read_bytes()
        migrations[version] = Migration(
            version=version,
            name=match["name"],
            sql=data.decode("utf-8"),
            checksum=hashlib.sha256(data).hexdigest(),
        )
    return [migrations[version] for version in sorted(migrations)]


async def migrate(conn: asyncpg.Connection, directory: Path | None = None) -> list[int]:
    """Apply every pending migration of `directory` (default: `default_directory()`).

    Args:
        conn: a connection outside any transaction; it holds the advisory lock meanwhile.
        directory: where the `NNNN_name.sql` files are.

    Returns:
        The versions applied by this call, ascending (empty when the database was current).

    Raises:
        MigrationError: the database knows a version the files do not, an applied file's
            checksum changed, a new file sorts before an applied one, or the files are
            misnamed. Nothing is applied then.
        asyncpg.PostgresError: a migration's SQL failed; its transaction is rolled back and
            the versions before it stay applied.
    """
    migrations = load(directory or default_directory())
    await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
    try:
        await conn.execute(_CREATE_TABLE)
        applied = {
            int(row["version"]): (str(row["name"]), str(row["checksum"]))
            for row in await conn.fetch(_SELECT_APPLIED)
        }
        pending = _pending(migrations, applied)
        for migration in pending:
            async with conn.transaction():
                await conn.execute(migration.sql)
                await conn.execute(
                    _INSERT_APPLIED, migration.version, migration.name, migration.checksum
                )
        return [migration.version for migration in pending]
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)


def _pending(migrations: list[Migration], applied: dict[int, tuple[str, str]]) -> list[Migration]:
    known = {migration.version: migration for migration in migrations}
    unknown = sorted(set(applied) - set(known))
    if unknown:
        raise MigrationError(
            f"the database has migration(s) {unknown} that this code does not know; "
            "it was migrated by a newer Compass"
        )
    for version, (name, checksum) in sorted(applied.items()):
        migration = known[version]
        if migration.checksum != checksum:
            raise MigrationError(
                f"migration {version:04d}_{name}.sql changed after it was applied "
                f"(checksum {checksum[:12]}... in the database, {migration.checksum[:12]}... on disk)"
            )
    pending = [migration for migration in migrations if migration.version not in applied]
    if pending and applied and pending[0].version < max(applied):
        raise MigrationError(
            f"migration {pending[0].version:04d}_{pending[0].name}.sql is older than applied "
            f"version {max(applied)}; migrations are forward-only, renumber it"
        )
    return pending
