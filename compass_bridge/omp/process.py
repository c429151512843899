"""Running the bridge: the runtime as a child process, or on the bridge's own stdin/stdout.

Child mode (`compass agent-bridge ... -- COMMAND...`): the bridge starts COMMAND with pipes
for its stdin and stdout, reads its events from its stdout, writes replies to its stdin and
lets its stderr through. The child runs in its own process group, and SIGINT/SIGTERM sent
to the bridge are passed on to it once (a second one kills it); the bridge exits with the
child's exit code (128+N when a signal N ended it).

Stdin mode (no COMMAND): events are read from the bridge's stdin and replies are written to
its stdout, one JSON object per line, so a runtime's stdout can be piped in and the bridge's
stdout piped back to the runtime's stdin. Logs always go to stderr. Exit code 0 at the end
of the input, 128+N after signal N.

The bridge first sends `set_ask_dialog` (unless `ask_dialog` is off) and, with a `prompt`, a
`{"type": "prompt", "message": ...}` command once the runtime says it is ready (its first
line, `{"type": "ready", ...}`); without one it sends no prompt (another host drives the
runtime, or the events come from a recording). A prompt is one run: when the runtime reports
the run ended (`agent_end`, unless marked `isTerminal: false`), the bridge closes the child's
stdin, on which oh-my-pi's RPC mode shuts down and exits.

Either way, when the runtime's output ends the bridge stops waiting for answers, posts every
frame still queued (retrying as long as it takes, unless `drain_timeout` is set; after a
signal for `stop_drain_seconds` at most), closes the asks nobody waits for any more
(WITHDRAWN, or TIMED_OUT with the runtime's auto-picks; after a signal, WITHDRAWN with the
reason "bridge shut down (SIGINT)") and exits. When the server refuses the bridge itself
(bad token, not a participant, unknown channel) it stops the child and exits 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any, Final

from compass_bridge.client import AgentClient
from compass_bridge.omp.bridge import Bridge
from compass_bridge.omp.frames import ASK_DIALOG_COMMAND, prompt_command
from compass_bridge.process import (
    EXIT_FATAL,
    MAX_LINE_BYTES,
    BridgeOptions,
    CaughtSignals,
    read_lines,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    import pyqwest

__all__ = ["run"]

logger = logging.getLogger("compass.bridge")

_STDIN_CHUNK: Final = 256 * 1024


class _PipeSink:
    """Replies to a child's stdin."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def send(self, line: bytes) -> None:
        if self._writer.is_closing():
            raise BrokenPipeError("the runtime's stdin is closed")
        self._writer.write(line)
        await self._writer.drain()

    def close(self) -> None:
        self._writer.close()


class _StdoutSink:
    """Replies on the bridge's stdout (stdin mode)."""

    async def send(self, line: bytes) -> None:
        await asyncio.to_thread(_write_stdout, line)


def _write_stdout(line: bytes) -> None:
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()


def _stdin_reader() -> asyncio.StreamReader:
    """A StreamReader fed from fd 0 by a daemon thread.

    `connect_read_pipe` refuses regular files (`< events.jsonl`), and a blocking read in the
    default executor would keep the process alive at exit; a daemon thread does neither.
    """
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES, loop=loop)

    def pump() -> None:
        try:
            while chunk := os.read(0, _STDIN_CHUNK):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
        except OSError as exc:
            logger.warning("reading stdin failed: %s", type(exc).__name__)
        except RuntimeError:  # the event loop is closed: the bridge is exiting
            return
        with contextlib.suppress(RuntimeError):  # as above
            loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="compass-bridge-stdin", daemon=True).start()
    return reader


async def run(options: BridgeOptions, *, http: pyqwest.Client | None = None) -> int:
    """Run the bridge until the runtime's output ends; return the exit code.

    Args:
        options: what to bridge.
        http: the client for AgentService (tests inject transports); default: the bridge's
            own (client.transport()).
    """
    signals = CaughtSignals()
    with signals.installed():
        child: asyncio.subprocess.Process | None = None
        if options.command:
            try:
                # Its own process group: a Ctrl-C in the terminal reaches the bridge only,
                # which passes it on once (the runtime would otherwise see it twice).
                child = await asyncio.create_subprocess_exec(
                    *options.command,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    limit=MAX_LINE_BYTES,
                    process_group=0,
                )
            except OSError as exc:
                sys.stderr.write(
                    f"compass agent-bridge: cannot start {options.command[0]!r}: "
                    f"{exc.strerror or exc}\n"
                )
                return 126 if isinstance(exc, PermissionError) else 127
            signals.adopt(child)
            assert child.stdout is not None  # noqa: S101 - PIPE above
            assert child.stdin is not None  # noqa: S101 - PIPE above
            source, sink = child.stdout, _PipeSink(child.stdin)
        else:
            source, sink = _stdin_reader(), _StdoutSink()
        client = AgentClient(options.server, options.token, http=http)
        bridge = Bridge(
            api=client,
            channel_id=options.channel_id,
            sink=sink,
            run_id=f"cb{secrets.token_hex(6)}",
            max_backoff=options.max_backoff,
        )
        signals.listen(lambda signum: bridge.shutting_down(signal.Signals(signum).name))
        closer = sink.close if isinstance(sink, _PipeSink) else None
        return await _Session(options, bridge, source, child, signals, closer).run()


class _Session:
    def __init__(
        self,
        options: BridgeOptions,
        bridge: Bridge,
        source: asyncio.StreamReader,
        child: asyncio.subprocess.Process | None,
        signals: CaughtSignals,
        close_input: Callable[[], None] | None = None,
    ) -> None:
        self._options = options
        self._bridge = bridge
        self._source = source
        self._child = child
        self._signals = signals
        self._close_input = close_input

    async def run(self) -> int:
        poster = asyncio.create_task(self._bridge.run_poster(), name="compass-bridge-poster")
        try:
            return await self._run()
        finally:
            await self._bridge.stop_waiting()
            await self._bridge.asks.settle(0)  # after a fatal refusal: nothing can close
            poster.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poster
            await self._stop_child()

    async def _run(self) -> int:
        bridge = self._bridge
        if self._options.ask_dialog:
            await bridge.send_command(ASK_DIALOG_COMMAND)
        reading = asyncio.create_task(self._pump(), name="compass-bridge-reader")
        prompting: asyncio.Task[None] | None = None
        if self._options.prompt is not None:
            prompting = asyncio.create_task(
                self._prompt(self._options.prompt), name="compass-bridge-prompt"
            )
        failure = asyncio.ensure_future(bridge.failure)
        signalled = asyncio.create_task(self._signals.event.wait())
        try:
            while not reading.done():
                # Child mode keeps reading after a signal (the child gets it and ends its
                # output); stdin mode stops reading at once.
                waiting: set[asyncio.Future[Any]] = {reading, failure}
                if self._child is None:
                    waiting.add(signalled)
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if failure.done():
                    logger.error("compass agent-bridge: %s", failure.result())
                    return EXIT_FATAL
                if signalled.done():
                    break
        finally:
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading
            signalled.cancel()
            if prompting is not None and not prompting.done():
                if not bridge.ready.is_set():
                    logger.warning("the runtime never said it was ready; the prompt was not sent")
                prompting.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await prompting
        # The runtime's output ended: nobody can receive an answer any more.
        await bridge.stop_waiting()
        code = 0
        if self._child is not None:
            code = _exit_code(await self._child.wait())
        elif self._signals.received:
            code = 128 + self._signals.received[0]
        if not await self._drain():
            return EXIT_FATAL
        await bridge.asks.settle(self._options.stop_drain_seconds)
        self._summary()
        return code

    async def _prompt(self, message: str) -> None:
        """Send the prompt once the runtime reads commands; close its input after the run."""
        bridge = self._bridge
        await bridge.ready.wait()
        bridge.idle.clear()
        await bridge.send_command(prompt_command(message))
        logger.info("sent the prompt to the runtime")
        await bridge.idle.wait()
        if self._close_input is not None:
            logger.info("the prompt's run ended; closing the runtime's input so that it exits")
            self._close_input()

    async def _pump(self) -> None:
        bridge = self._bridge
        try:
            async for line in read_lines(self._source):
                if line is None:
                    bridge.count_unreadable(f"longer than {MAX_LINE_BYTES} bytes; skipped")
                else:
                    bridge.feed(line)
        except OSError as exc:  # a broken pipe ends the runtime's output like EOF does
            logger.warning("reading the runtime's output failed: %s", type(exc).__name__)

    async def _drain(self) -> bool:
        """Post what is still queued; False if the server refused the bridge meanwhile."""
        bridge = self._bridge
        timeout = self._options.drain_timeout
        if self._signals.received:
            timeout = self._options.stop_drain_seconds
        if bridge.poster.pending:
            logger.info("posting %d queued message(s) before exiting", bridge.poster.pending)
        drain = asyncio.create_task(bridge.poster.drain())
        failure = asyncio.ensure_future(bridge.failure)
        self._signals.event.clear()
        signalled = asyncio.create_task(self._signals.event.wait())
        try:
            while not drain.done():
                await asyncio.wait(
                    {drain, failure, signalled},
                    timeout=timeout,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if failure.done():
                    logger.error("compass agent-bridge: %s", failure.result())
                    return False
                if drain.done():
                    break
                if signalled.done() and len(self._signals.received) == 1 and timeout is None:
                    # First signal during an unbounded drain: bound it.
                    timeout = self._options.stop_drain_seconds
                    self._signals.event.clear()
                    signalled = asyncio.create_task(self._signals.event.wait())
                    continue
                logger.error(
                    "gave up posting %d queued message(s); they are lost",
                    bridge.poster.pending,
                )
                return False  # exit non-zero: what the runtime said did not all arrive
        finally:
            drain.cancel()
            signalled.cancel()
        return True

    async def _stop_child(self) -> None:
        child = self._child
        if child is None or child.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            child.terminate()
        try:
            await asyncio.wait_for(child.wait(), timeout=5.0)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                child.kill()
            await child.wait()

    def _summary(self) -> None:
        bridge = self._bridge
        unmapped = bridge.unmapped_counts()
        logger.info(
            "agent-bridge done: %d answer(s) delivered, %d ask(s) closed, %d frame(s) dropped, "
            "unmapped events %s",
            bridge.delivered,
            bridge.closed,
            bridge.poster.dropped,
            unmapped or "none",
        )


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode
