"""Process tuning for `compass serve`: big freed buffers go back to the OS (glibc), and the
garbage collector runs less often (`collect_less`, `freeze_startup`).

Return big freed buffers to the OS (glibc), so RSS follows what streams actually hold.

glibc serves an allocation of 128 KiB or more with mmap and unmaps it when freed, but after
the first such free it raises that threshold (up to 32 MiB): later big buffers then come from
the heap, and a freed heap block stays in the process. A server that encodes 1 MB messages
for many slow clients then keeps every transient copy it ever made. Fixing the
threshold (mallopt M_MMAP_THRESHOLD, which also turns the adjustment off) keeps big buffers
on mmap. Measured with bench.memory (8 slow readers of ~1 MB messages): 3.4 -> 2.1 MiB per
reader.

Why ctypes and not the MALLOC_MMAP_THRESHOLD_ environment variable: `compass serve` must
behave the same however it is started (a shell, systemd, the image); the variable, when set,
still wins (this module then leaves the setting alone).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import os
from typing import Final

logger = logging.getLogger(__name__)

M_MMAP_THRESHOLD: Final = -3
"""mallopt's parameter number (glibc malloc.h)."""
THRESHOLD_BYTES: Final = 128 * 1024
"""glibc's own initial threshold, kept fixed."""


def keep_big_buffers_on_mmap(environ: dict[str, str] | None = None) -> bool:
    """Fix glibc's mmap threshold; False where there is no glibc or the environment sets it."""
    env = os.environ if environ is None else environ
    if "MALLOC_MMAP_THRESHOLD_" in env:
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt), or no libc at all
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    if mallopt(M_MMAP_THRESHOLD, THRESHOLD_BYTES) != 1:
        logger.warning("could not fix the malloc mmap threshold; big buffers may stay resident")
        return False
    return True


GC_YOUNG_THRESHOLD: Final = 10_000
"""Allocations (less deallocations) between collections of the youngest generation: CPython's
default is 700."""


def collect_less() -> None:
    """Fewer, cheaper garbage collections for a server holding many streams.

    A change sent to 1,000 watchers allocates tens of thousands of short-lived objects (futures,
    ASGI messages, frames), so CPython's default thresholds (700, 10, 10) ran a young collection
    every ~700 of them and, every hundred of those, a full one walking every object of the
    process (every connection's protocol, parser and task): ~100 ms each on the machines here,
    in the middle of a fan-out (bench.fanout: p99 ~1.5x). Collecting the youngest generation
    every GC_YOUNG_THRESHOLD allocations instead cuts both by ~15x; `freeze_startup` then keeps
    what start-up made (modules, the app) out of every later collection.
    """
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)


def freeze_startup() -> None:
    """Move every object alive now (imports, the app, its pool) to the generation the garbage
    collector never walks: once the server is up, most of them live as long as it does."""
    gc.collect()
    gc.freeze()
