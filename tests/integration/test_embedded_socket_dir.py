"""The embedded cluster's fallback socket directory (issue 12 F4). Its name in the shared
temp dir is predictable (`compass-pg-<digest>`), so someone else may create it first: as a
symlink to a directory they want the socket (or root's chown) to land in, or as a directory
of their own. Start must refuse both, changing nothing of the target, and work normally
when the name is free."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from compass_server.embedded import TEST_SETTINGS, EmbeddedPostgresError, LocalPostgres

if TYPE_CHECKING:
    from collections.abc import Generator


@pytest.fixture
def long_data_dir() -> Generator[Path]:
    """A data dir whose socket path is too long for a unix socket: the fallback is used."""
    root = Path(tempfile.mkdtemp(prefix="compass-pg-long-"))
    data_dir = root / ("d" * 90)
    root.chmod(0o755)
    yield data_dir
    pg = LocalPostgres(data_dir=data_dir, temporary=True)
    pg.close()
    shutil.rmtree(root, ignore_errors=True)


def _fallback(data_dir: Path) -> Path:
    socket_dir = LocalPostgres(data_dir=data_dir, temporary=True).socket_dir
    assert socket_dir.parent == Path(tempfile.gettempdir()), socket_dir
    return socket_dir


def test_a_symlink_planted_at_the_socket_dir_is_refused_and_its_target_untouched(
    long_data_dir: Path, tmp_path: Path
) -> None:
    target = tmp_path / "victim"
    target.mkdir(mode=0o755)
    before = target.stat()
    planted = _fallback(long_data_dir)
    planted.symlink_to(target)
    try:
        pg = LocalPostgres(data_dir=long_data_dir, settings=TEST_SETTINGS, temporary=True)
        with pytest.raises(EmbeddedPostgresError, match="a symbolic link"):
            pg.start()
        after = target.stat()
        assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (
            before.st_uid,
            before.st_gid,
            stat.S_IMODE(before.st_mode),
        )
        assert list(target.iterdir()) == []  # no socket landed there
        assert planted.is_symlink()
    finally:
        planted.unlink()


def test_a_directory_someone_else_made_there_is_refused(long_data_dir: Path) -> None:
    planted = _fallback(long_data_dir)
    planted.mkdir(mode=0o777)
    planted.chmod(0o777)
    try:
        pg = LocalPostgres(data_dir=long_data_dir, settings=TEST_SETTINGS, temporary=True)
        with pytest.raises(EmbeddedPostgresError, match="not ours"):
            pg.start()
        assert stat.S_IMODE(planted.stat().st_mode) == 0o777  # nothing was changed on it
    finally:
        planted.rmdir()


def test_with_the_name_free_the_cluster_starts_with_a_private_socket_dir(
    long_data_dir: Path,
) -> None:
    pg = LocalPostgres(data_dir=long_data_dir, settings=TEST_SETTINGS, temporary=True)
    pg.start()
    try:
        info = os.lstat(pg.socket_dir)
        assert stat.S_ISDIR(info.st_mode)
        assert stat.S_IMODE(info.st_mode) == 0o700
        assert info.st_uid == pg.config.pgdata.stat().st_uid
        assert (pg.socket_dir / ".s.PGSQL.5432").is_socket()
    finally:
        pg.stop()
    # A restart accepts the directory it made itself.
    pg.start()
    pg.stop()
