"""Running beside an agent process, what the omp and ACP integrations share: the bridge's
options, its exit codes, signals, and reading the agent's output line by line.

`compass agent-bridge` starts the agent (or, for omp, reads its events on stdin) with its
stdout piped to the bridge; `omp/process.py` and `acp/process.py` each run one. Neither
imports the other: what both need is here.

Exit codes: 0 when the run ended, `EXIT_FATAL` (1) when the agent or the server stopped the
bridge, `EXIT_USAGE` (2) for a usage error (also an ACP agent not offering the `--mode` or
`--config-option` asked for), 126/127 when the agent cannot be started, 128+N after signal N.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable, Generator

    from compass_bridge.bridge_core import BridgeCore

logger = logging.getLogger(__name__)

__all__ = [
    "EXIT_FATAL",
    "EXIT_USAGE",
    "MAX_LINE_BYTES",
    "BridgeOptions",
    "CaughtSignals",
    "read_lines",
]

EXIT_USAGE: Final = 2
"""A usage error: bad arguments, or a server, token or channel the start-up check refused."""
EXIT_FATAL: Final = 1
"""The bridge's exit status when it cannot go on (bad token or channel, a dead runtime)."""
MAX_LINE_BYTES: Final = 32 * 1024 * 1024
"""Longest line read from the runtime, over either transport: rpc-ui skips (and counts) a
longer one; message_update events and ACP tool outputs repeat whole messages and files, so
lines of a few MB are normal."""
_CHUNK: Final = 256 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class BridgeOptions:
    """What `compass agent-bridge` was asked to do."""

    server: str
    """Base URL of the Compass server, e.g. http://127.0.0.1:8000/."""
    channel_id: str
    token: str = field(repr=False)
    """The agent account's bearer token (never logged or printed)."""
    command: tuple[str, ...] = ()
    """The runtime to start; empty: read events from stdin, write replies to stdout."""
    ask_dialog: bool = True
    """Send `set_ask_dialog` first, so the runtime sends its asks as `method: "ask"`."""
    max_backoff: float = 5.0
    drain_timeout: float | None = None
    stop_drain_seconds: float = 10.0
    prompt: str | None = None
    """Sent to the runtime (a `prompt` command) once it is ready; None: no prompt is sent
    (another host drives the runtime)."""
    mode: str | None = None
    """ACP only: the session mode to set before the prompt (`--mode`)."""
    config_options: tuple[tuple[str, str], ...] = ()
    """ACP only: the configuration options to set before the prompt (`--config-option`)."""


async def read_lines(reader: asyncio.StreamReader) -> AsyncGenerator[bytes | None]:
    """Yield the lines of `reader` (without the newline); None for a skipped overlong line.

    Unlike StreamReader.readline, an overlong line is skipped whole, up to its newline, so
    the next line is read intact.
    """
    buffer = bytearray()
    skipping = False
    while True:
        chunk = await reader.read(_CHUNK)
        if not chunk:
            if buffer and not skipping:
                yield bytes(buffer)
            return
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if not skipping:
                    buffer += chunk[start:]
                    if len(buffer) > MAX_LINE_BYTES:
                        buffer.clear()
                        skipping = True
                        yield None
                break
            if skipping:
                skipping = False
            else:
                buffer += chunk[start:end]
                if len(buffer) > MAX_LINE_BYTES:
                    yield None
                else:
                    yield bytes(buffer)
                buffer.clear()
            start = end + 1


class CaughtSignals:
    """SIGINT/SIGTERM while the bridge runs: remembered in order (`received`) and announced
    (`event`); once a child is adopted, passed on to it (the first one; a second one kills
    it). Installed before the runtime starts, so that no signal can slip in between and kill
    the bridge while its child lives on."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.event = asyncio.Event()
        self.child: asyncio.subprocess.Process | None = None
        self.on_first: Callable[[int], None] | None = None
        """Called with the first signal (at once if it came before this was set)."""

    @contextlib.contextmanager
    def installed(self) -> Generator[None]:
        loop = asyncio.get_running_loop()
        installed: list[int] = []
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, self._on_signal, signum)
                installed.append(signum)
        try:
            yield
        finally:
            for signum in installed:
                loop.remove_signal_handler(signum)

    def adopt(self, child: asyncio.subprocess.Process) -> None:
        self.child = child
        if self.received:  # a signal came while the child was starting
            self._forward(self.received[-1])

    def listen(self, on_first: Callable[[int], None]) -> None:
        self.on_first = on_first
        if self.received:
            on_first(self.received[0])

    def _on_signal(self, signum: int) -> None:
        self.received.append(signum)
        self.event.set()
        if len(self.received) == 1 and self.on_first is not None:
            self.on_first(signum)
        self._forward(signum)

    def _forward(self, signum: int) -> None:
        child = self.child
        if child is not None and child.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                if len(self.received) == 1:
                    child.send_signal(signum)
                else:
                    child.kill()


async def stop_agent(process: asyncio.subprocess.Process) -> None:
    """End an agent run as a child process: close its input, then SIGTERM, then SIGKILL (2 s
    apart)."""
    if process.stdin is not None and not process.stdin.is_closing():
        process.stdin.close()
    for stop in (None, process.terminate, process.kill):
        if process.returncode is not None:
            return
        if stop is not None:
            with contextlib.suppress(ProcessLookupError):
                stop()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), timeout=2.0)


async def drain(bridge: BridgeCore, limit: float | None) -> bool:
    """Post what the bridge still has queued, within `limit` seconds; False if it could not all
    be posted (said in the log)."""
    if bridge.poster.pending:
        logger.info("posting %d queued message(s) before exiting", bridge.poster.pending)
    try:
        await asyncio.wait_for(bridge.poster.drain(), timeout=limit)
    except TimeoutError:
        logger.error("gave up posting %d queued message(s); they are lost", bridge.poster.pending)
        return False
    if bridge.failure.done():
        logger.error("compass agent-bridge: %s", bridge.failure.result())
        return False
    return True
