"""Running beside an agent process, what the omp, ACP and Copilot integrations share: the
bridge's options, its exit codes, signals, reading the agent's output line by line, and, for
an agent run for one prompt turn (`acp/process.py`, `copilot/process.py`), starting it,
racing each request against everything that ends the run early, the turn's exit code, and
stopping it.

`compass agent-bridge` starts the agent (or, for omp, reads its events on stdin) with its
stdout piped to the bridge; `omp/process.py`, `acp/process.py` and `copilot/process.py` each
run one. None imports another: what they share is here.

Exit codes: 0 when the run ended, `EXIT_FATAL` (1) when the agent or the server stopped the
bridge, `EXIT_USAGE` (2) for a usage error (also an ACP agent not offering the `--mode` or
`--config-option` asked for), 126/127 when the agent cannot be started, 128+N after signal N.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, TypeVar

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Sequence

    from compass_bridge.bridge_core import BridgeCore, OneTurnBridge

logger = logging.getLogger(__name__)

__all__ = [
    "EXIT_FATAL",
    "EXIT_USAGE",
    "MAX_LINE_BYTES",
    "AgentGoneError",
    "BridgeOptions",
    "CaughtSignals",
    "NoAnswerError",
    "drain",
    "finish_turn",
    "no_first_answer",
    "one_line",
    "posting",
    "race",
    "read_lines",
    "silent_exit",
    "start_agent",
    "stop_agent",
    "turn_failed",
]

T = TypeVar("T")

EXIT_USAGE: Final = 2
"""A usage error: bad arguments, or a server, token or channel the start-up check refused."""
EXIT_FATAL: Final = 1
"""The bridge's exit status when it cannot go on (bad token or channel, a dead runtime)."""
MAX_LINE_BYTES: Final = 32 * 1024 * 1024
"""Longest line read from the runtime, over either transport: rpc-ui skips (and counts) a
longer one; message_update events and ACP tool outputs repeat whole messages and files, so
lines of a few MB are normal."""
_CHUNK: Final = 256 * 1024
_SHOWN_CHARS: Final = 60
"""How much of what an agent wrote, or of its command, a one-line message shows."""


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


# -- an agent run for one prompt turn ------------------------------------------------------


class AgentGoneError(Exception):
    """The agent process exited, or the connection to it closed."""


class NoAnswerError(Exception):
    """The agent did not answer a request in time."""


def one_line(text: str) -> str:
    """`text` cut to _SHOWN_CHARS, control characters escaped, for a one-line message."""
    text = text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


async def start_agent(argv: Sequence[str]) -> asyncio.subprocess.Process | int:
    """Start the agent `argv` with its stdin and stdout piped to the bridge; the exit code
    (127 not found, 126 permission denied) after saying on stderr that it cannot start.

    Not the ACP library's spawn_agent_process: the agent gets its own process group (a
    Ctrl-C in the terminal reaches the bridge only, which cancels the turn over the
    protocol), its stderr passes through instead of filling an unread pipe, and its lines
    may be long (tool outputs)."""
    try:
        return await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=MAX_LINE_BYTES,
            process_group=0,
        )
    except FileNotFoundError:
        sys.stderr.write(f"compass agent-bridge: cannot start {argv[0]!r}: not found\n")
        return 127
    except PermissionError:
        sys.stderr.write(f"compass agent-bridge: cannot start {argv[0]!r}: permission denied\n")
        return 126


@contextlib.asynccontextmanager
async def posting(bridge: BridgeCore) -> AsyncGenerator[None]:
    """The bridge's poster running for the block; afterwards what is still closing is let go
    (it cannot finish any more) and the poster stopped."""
    poster = asyncio.create_task(bridge.run_poster(), name="compass-bridge-poster")
    try:
        yield
    finally:
        await bridge.asks.settle(0)  # what is still closing cannot finish any more
        poster.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await poster


async def race(
    request: Awaitable[T],
    *,
    bridge: BridgeCore,
    process: asyncio.subprocess.Process,
    caught: CaughtSignals,
    lost: type[Exception] = ConnectionError,
    within: float | None = None,
    on_signal: Callable[[], Awaitable[None]] | None = None,
) -> T:
    """`request`'s result, unless the agent exits (AgentGoneError; also when `request` fails
    with `lost`: the connection closed), the server refuses the bridge (FatalServerError) or
    `within` seconds pass first (NoAnswerError). A first signal runs `on_signal` (which ends
    the turn over the protocol) where given, else it is passed to the agent; a second one
    kills it."""
    deadline = None if within is None else time.monotonic() + within
    signals = caught.received
    task = asyncio.ensure_future(request)
    exited = asyncio.ensure_future(process.wait())
    failure = asyncio.ensure_future(asyncio.shield(bridge.failure))
    signalled = asyncio.ensure_future(caught.event.wait())
    try:
        while True:
            await asyncio.wait(
                {task, exited, failure, signalled},
                timeout=None if deadline is None else max(0.0, deadline - time.monotonic()),
                return_when=asyncio.FIRST_COMPLETED,
            )
            if deadline is not None and time.monotonic() >= deadline and not task.done():
                raise NoAnswerError
            if task.done():
                try:
                    return task.result()
                except lost as exc:
                    raise AgentGoneError("the connection closed") from exc
            if failure.done():
                raise failure.result()
            if exited.done():
                # Let a response already on its way be read before giving up.
                with contextlib.suppress(TimeoutError):
                    return await asyncio.wait_for(asyncio.shield(task), timeout=1.0)
                raise AgentGoneError(f"exit code {process.returncode}")
            if signalled.done():
                bridge.shutting_down(signal.Signals(signals[0]).name)
                caught.event.clear()
                signalled = asyncio.ensure_future(caught.event.wait())
                if len(signals) == 1 and on_signal is not None:
                    await on_signal()
                    continue
                with contextlib.suppress(ProcessLookupError):
                    if len(signals) == 1:
                        process.send_signal(signals[0])
                    else:
                        process.kill()
    finally:
        for future in (exited, failure, signalled):
            future.cancel()
        if not task.done():
            task.cancel()


async def silent_exit(process: asyncio.subprocess.Process) -> str:
    """Why an agent whose output ended did not answer: it exited (with its exit code, waited
    for a second), or it only closed its output."""
    with contextlib.suppress(TimeoutError):  # its output ended: it is exiting
        await asyncio.wait_for(process.wait(), timeout=1.0)
    if process.returncode is None:
        return "it closed its output without answering"
    return f"it exited (exit code {process.returncode}) without answering"


def no_first_answer(
    bridge: OneTurnBridge,
    caught: CaughtSignals,
    command: Sequence[str],
    request: str,
    problem: str,
) -> int:
    """The exit code when the agent did not answer its first `request` (`problem` says why):
    the program is not that agent, or not a working one (said in one line), or a signal
    stopped it."""
    from compass_bridge.bridge_core import Reason  # not when the CLI builds its parser

    bridge.end_turn(Reason.RUNTIME_EXITED)
    if caught.received:
        return 128 + caught.received[0]
    shown = one_line(shlex.join(command))
    sys.stderr.write(f"compass agent-bridge: {shown} did not answer {request}: {problem}\n")
    return EXIT_FATAL


def turn_failed(
    bridge: OneTurnBridge,
    caught: CaughtSignals,
    exc: Exception,
    *,
    agent: str,
    log: logging.Logger,
) -> int:
    """The exit code of a turn that `exc` ended early: the agent stopped (AgentGoneError; a
    signal's code when one stopped it), the server refused the bridge (FatalServerError,
    logged in `log`), or `agent` refused a request (any other)."""
    from compass_bridge.bridge_core import Reason  # not when the CLI builds its parser
    from compass_bridge.client import FatalServerError

    if isinstance(exc, AgentGoneError):
        bridge.end_turn(Reason.RUNTIME_EXITED)
        if caught.received:
            return 128 + caught.received[0]
        sys.stderr.write(f"compass agent-bridge: {agent} stopped: {exc}\n")
        return EXIT_FATAL
    bridge.end_turn()
    if isinstance(exc, FatalServerError):
        log.error("compass agent-bridge: %s", exc)
    else:
        sys.stderr.write(f"compass agent-bridge: {agent} refused: {exc}\n")
    return EXIT_FATAL


async def finish_turn(
    bridge: BridgeCore, caught: CaughtSignals, code: int, drain_timeout: float | None
) -> int:
    """The run's exit code once the turn ended with `code`: what is queued is posted first
    (after a clean end or a signal; EXIT_FATAL if it could not all be), and the closes and
    receipts still running are let finish."""
    if (code == 0 or caught.received) and not await drain(bridge, drain_timeout):
        return EXIT_FATAL
    if not bridge.failure.done():
        await bridge.asks.settle()
    return code
