"""Running `--protocol acp`: the agent as a child process, one prompt turn, signals, exit.

The agent gets its own process group (a Ctrl-C in the terminal reaches the bridge only,
which cancels the turn over the protocol: `session/cancel`; a second signal ends the agent),
its stderr passes through, and it is ended when the turn is over: its input closed, then
SIGTERM, then SIGKILL. initialize, session/new and session/prompt are each raced against
the agent exiting, the server refusing the bridge, and signals. Exit codes: 0 when the turn
ended, 1 when the agent or the server stopped the bridge, 128+N after signal N, 126/127
when the agent cannot be started, 2 when it does not offer the `--mode` or
`--config-option` asked for (settings.py); see compass_bridge/process.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final, TypeVar

from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, text_block
from acp.schema import (
    ClientCapabilities,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    FileSystemCapabilities,
    Implementation,
)

from compass_bridge.acp.bridge import AcpBridge
from compass_bridge.acp.settings import SessionSettings
from compass_bridge.bridge_core import Reason
from compass_bridge.client import AgentClient, FatalServerError
from compass_bridge.process import EXIT_FATAL, EXIT_USAGE, MAX_LINE_BYTES, CaughtSignals

if TYPE_CHECKING:
    from collections.abc import Awaitable

    import pyqwest
    from acp.client.connection import ClientSideConnection
    from acp.schema import NewSessionResponse

    from compass_bridge.process import BridgeOptions

__all__ = ["run"]

logger = logging.getLogger("compass.bridge.acp")

T = TypeVar("T")

CLIENT_NAME: Final = "compass-agent-bridge"


async def run(options: BridgeOptions, *, http: pyqwest.Client | None = None) -> int:
    """Run the agent over ACP for one prompt turn; return the exit code. `http`: the
    client for AgentService (tests inject transports); default: the bridge's own."""
    assert options.prompt is not None  # noqa: S101 - the CLI requires --prompt with acp
    bridge = AcpBridge(
        api=AgentClient(options.server, options.token, http=http),
        channel_id=options.channel_id,
        run_id=f"cb{secrets.token_hex(6)}",
        max_backoff=options.max_backoff,
    )
    poster = asyncio.create_task(bridge.run_poster(), name="compass-bridge-poster")
    try:
        return await _run_agent(options, bridge, options.prompt)
    finally:
        await bridge.asks.settle(0)  # what is still closing cannot finish any more
        poster.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await poster


async def _run_agent(options: BridgeOptions, bridge: AcpBridge, prompt: str) -> int:
    command, *args = options.command
    caught = CaughtSignals()
    with caught.installed():
        signals, signalled = caught.received, caught.event
        try:
            # Not the library's spawn_agent_process: the agent gets its own process group
            # (a Ctrl-C in the terminal reaches the bridge only, which cancels the turn over
            # the protocol), its stderr passes through instead of filling an unread pipe,
            # and its lines may be long (tool outputs).
            process = await asyncio.create_subprocess_exec(
                command,
                *args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                limit=MAX_LINE_BYTES,
                process_group=0,
            )
        except FileNotFoundError:
            sys.stderr.write(f"compass agent-bridge: cannot start {command!r}: not found\n")
            return 127
        except PermissionError:
            sys.stderr.write(f"compass agent-bridge: cannot start {command!r}: permission denied\n")
            return 126
        assert process.stdin is not None  # noqa: S101 - PIPE above
        assert process.stdout is not None  # noqa: S101 - PIPE above
        conn = connect_to_agent(bridge, process.stdin, process.stdout, use_unstable_protocol=True)
        try:
            settings = SessionSettings(mode=options.mode, config_options=options.config_options)
            turn = _Turn(bridge, conn, process, signals, signalled, settings)
            code = await turn.run(prompt)
            if (code == 0 or signals) and not await _drain(bridge, options.drain_timeout):
                return EXIT_FATAL
            if not bridge.failure.done():
                await bridge.asks.settle()
            return code
        finally:
            await conn.close()
            await _stop(process)


class _AgentGoneError(Exception):
    """The agent process exited, or the connection to it closed."""


class _Turn:
    """initialize, session/new and one session/prompt, raced against everything that ends
    the run early: the agent exiting, the server refusing the bridge, a signal."""

    def __init__(
        self,
        bridge: AcpBridge,
        conn: ClientSideConnection,
        process: asyncio.subprocess.Process,
        signals: list[int],
        signalled: asyncio.Event,
        settings: SessionSettings,
    ) -> None:
        self._bridge = bridge
        self._settings = settings
        self._conn = conn
        self._process = process
        self._signals = signals
        self._signalled = signalled
        self._session_id: str | None = None

    async def run(self, prompt: str) -> int:
        bridge = self._bridge
        try:
            await self._call(
                self._conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(
                        fs=FileSystemCapabilities(read_text_file=False, write_text_file=False),
                        terminal=False,
                        elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities()),
                    ),
                    client_info=Implementation(name=CLIENT_NAME, version="0.1.0"),
                )
            )
            session = await self._call(self._conn.new_session(cwd=str(Path.cwd()), mcp_servers=[]))
            self._session_id = session.session_id
            logger.info("ACP session %s opened", session.session_id)
            problem = self._settings.problem(session)
            if problem is not None:
                bridge.end_turn()
                sys.stderr.write(f"compass agent-bridge: {problem}\n")
                return EXIT_USAGE
            await self._configure(session)
            response = await self._call(
                self._conn.prompt(session_id=session.session_id, prompt=[text_block(prompt)]),
                cancel_on_signal=True,
            )
        except _AgentGoneError as exc:
            bridge.end_turn(Reason.RUNTIME_EXITED)
            if self._signals:
                return 128 + self._signals[0]
            sys.stderr.write(f"compass agent-bridge: the agent stopped: {exc}\n")
            return EXIT_FATAL
        except FatalServerError as exc:
            bridge.end_turn()
            logger.error("compass agent-bridge: %s", exc)
            return EXIT_FATAL
        except RequestError as exc:
            bridge.end_turn()
            sys.stderr.write(f"compass agent-bridge: the agent refused: {exc}\n")
            return EXIT_FATAL
        bridge.end_turn()
        logger.info(
            "the prompt turn ended (%s): %d answer(s) delivered, %d unmapped event(s)",
            response.stop_reason,
            bridge.delivered,
            bridge.unmapped,
        )
        if self._signals:
            return 128 + self._signals[0]
        return 0

    async def _configure(self, session: NewSessionResponse) -> None:
        """Set the session mode and configuration options asked for (checked already)."""
        session_id = session.session_id
        if self._settings.mode is not None:
            await self._call(
                self._conn.set_session_mode(session_id=session_id, mode_id=self._settings.mode)
            )
            logger.info("session mode set to %s", self._settings.mode)
        for config_id, value in self._settings.requests(session):
            await self._call(
                self._conn.set_config_option(
                    config_id=config_id, session_id=session_id, value=value
                )
            )
            logger.info("configuration option %s set to %s", config_id, value)

    async def _call(self, request: Awaitable[T], *, cancel_on_signal: bool = False) -> T:
        task = asyncio.ensure_future(request)
        exited = asyncio.ensure_future(self._process.wait())
        failure = asyncio.ensure_future(asyncio.shield(self._bridge.failure))
        signalled = asyncio.ensure_future(self._signalled.wait())
        try:
            while True:
                await asyncio.wait(
                    {task, exited, failure, signalled}, return_when=asyncio.FIRST_COMPLETED
                )
                if task.done():
                    try:
                        return task.result()
                    except ConnectionError as exc:
                        raise _AgentGoneError("the connection closed") from exc
                if failure.done():
                    raise failure.result()
                if exited.done():
                    # Let a response already on its way be read before giving up.
                    with contextlib.suppress(TimeoutError):
                        return await asyncio.wait_for(asyncio.shield(task), timeout=1.0)
                    raise _AgentGoneError(f"exit code {self._process.returncode}")
                if signalled.done():
                    self._bridge.shutting_down(signal.Signals(self._signals[0]).name)
                    self._signalled.clear()
                    signalled = asyncio.ensure_future(self._signalled.wait())
                    if len(self._signals) == 1 and cancel_on_signal and self._session_id:
                        logger.info("signal received: cancelling the prompt turn")
                        self._bridge.end_turn()
                        await self._conn.cancel(session_id=self._session_id)
                        continue
                    with contextlib.suppress(ProcessLookupError):
                        if len(self._signals) == 1:
                            self._process.send_signal(self._signals[0])
                        else:
                            self._process.kill()
        finally:
            for future in (exited, failure, signalled):
                future.cancel()
            if not task.done():
                task.cancel()


async def _stop(process: asyncio.subprocess.Process) -> None:
    """End the agent: close its input, then SIGTERM, then SIGKILL (2 s apart)."""
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


async def _drain(bridge: AcpBridge, limit: float | None) -> bool:
    """Post what is still queued; False if it could not all be posted."""
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
