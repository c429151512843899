"""allocator.keep_big_buffers_on_mmap: glibc's mmap threshold is fixed unless the environment
already sets it."""

from __future__ import annotations

import ctypes.util
import gc
import platform

import pytest

from compass_server import allocator


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)
def test_fixes_the_threshold_on_glibc() -> None:
    assert ctypes.util.find_library("c") is not None
    assert allocator.keep_big_buffers_on_mmap({}) is True


def test_leaves_an_explicit_setting_alone() -> None:
    assert allocator.keep_big_buffers_on_mmap({"MALLOC_MMAP_THRESHOLD_": "65536"}) is False


def test_collects_the_youngest_generation_less_often_and_freezes_what_exists() -> None:
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    try:
        allocator.collect_less()
        assert gc.get_threshold() == (allocator.GC_YOUNG_THRESHOLD, *before[1:])
        kept = [[i] for i in range(1000)]  # containers: objects the collector tracks
        allocator.freeze_startup()
        assert gc.get_freeze_count() >= frozen + len(kept)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
