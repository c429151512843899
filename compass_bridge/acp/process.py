"""Running `--protocol acp`: the agent as a child process, one prompt turn, signals, exit.

The agent gets its own process group (a Ctrl-C in the terminal reaches the bridge only,
which cancels the turn over the protocol: `session/cancel`; a second signal ends the agent),
its stderr passes through, and it is ended when the turn is over: its input closed, then
SIGTERM, then SIGKILL. initialize, session/new and session/prompt are each raced against
the agent exiting, the server refusing the bridge, and signals. Exit codes: 0 when the turn
ended, 1 when the agent or the server stopped the bridge, 128+N after signal N, 126/127
when the agent cannot be started, 2 when it does not offer the `--mode` or
`--config-option` asked for (settings.py); see compass_bridge/process.py.

The agent's stdout reaches the ACP library through `_AgentPipe`, not the library's own
newline-JSON transport, which logs a traceback for every line that is not JSON-RPC (hundreds
for `-- ls`, without end for `-- yes`) and one more when it writes to an agent that is gone.
A program that is not an ACP agent ends the run with one line saying that it
did not answer the initialize request and why: its first output was not an ACP message, it
exited, it answered with an error, or it said nothing within INITIALIZE_SECONDS; exit 1.
Once the agent has spoken ACP, a stray line of other output is skipped with one warning.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

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
from compass_bridge.client import AgentClient, FatalServerError
from compass_bridge.process import (
    EXIT_USAGE,
    AgentGoneError,
    CaughtSignals,
    NoAnswerError,
    finish_turn,
    no_first_answer,
    one_line,
    posting,
    race,
    silent_exit,
    start_agent,
    stop_agent,
    turn_failed,
)
from compass_core.jsonvalues import is_object

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
INITIALIZE_SECONDS: Final = 60.0
"""How long the agent has to answer the ACP initialize request. A real agent answers within
seconds of starting; a program that is not one may wait for other input for ever."""


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
    async with posting(bridge):
        return await _run_agent(options, bridge, options.prompt)


async def _run_agent(options: BridgeOptions, bridge: AcpBridge, prompt: str) -> int:
    caught = CaughtSignals()
    with caught.installed():
        process = await start_agent(options.command)
        if isinstance(process, int):
            return process
        assert process.stdin is not None  # noqa: S101 - PIPE above
        assert process.stdout is not None  # noqa: S101 - PIPE above
        pipe = _AgentPipe(process.stdin, process.stdout)
        conn = connect_to_agent(bridge, pipe, use_unstable_protocol=True)
        try:
            settings = SessionSettings(mode=options.mode, config_options=options.config_options)
            turn = _Turn(
                bridge, conn, process, caught, settings, pipe=pipe, command=options.command
            )
            code = await turn.run(prompt)
            return await finish_turn(bridge, caught, code, options.drain_timeout)
        finally:
            await conn.close()
            await stop_agent(process)


class _AgentPipe:
    """The agent's stdin and stdout as the ACP library's message transport (newline-delimited
    JSON-RPC, as the library's own stdio transport frames it), without its tracebacks: a line
    that is not an ACP message ends the connection before the agent's first message (the
    program is not an ACP agent: `not_acp` says what it wrote) and is skipped with one
    warning after it; a response to the agent's own request that cannot be written (the
    agent is gone) is dropped, as nobody is left to read it."""

    def __init__(self, stdin: asyncio.StreamWriter, stdout: asyncio.StreamReader) -> None:
        self._stdin = stdin
        self._stdout = stdout
        self._spoken = False
        """The agent has sent an ACP message."""
        self._skipped = 0
        self.not_acp: str | None = None
        """What the agent wrote first, when that was not an ACP message."""

    async def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        try:
            if self._stdin.is_closing():
                raise ConnectionResetError("the agent's input is closed")
            self._stdin.write(data)
            await self._stdin.drain()
        except ConnectionError:
            if "method" in message:  # a request or notification: its caller must know
                raise
            logger.debug("the agent is gone: dropped the response to its request")

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = (await self._line()).strip()
            if not line:
                if self._stdout.at_eof():
                    return None
                continue
            message = self._message(line)
            if message is not None:
                self._spoken = True
                return message
            shown = repr(one_line(line.decode(errors="replace")))
            if not self._spoken:
                self.not_acp = shown
                return None  # the end of the connection: the pending initialize fails
            self._skipped += 1
            if self._skipped == 1:
                logger.warning(
                    "the agent wrote a line that is not an ACP message (skipped): %s", shown
                )

    async def close(self) -> None:
        if not self._stdin.is_closing():
            self._stdin.close()

    def _message(self, line: bytes) -> dict[str, Any] | None:
        try:
            value: object = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested too deep
            return None
        if not is_object(value):
            return None
        if not self._spoken and "method" not in value and "id" not in value:
            return None  # an object, but no JSON-RPC request, notification or response
        return value

    async def _line(self) -> bytes:
        """The next line (b"" at the end); lines longer than the reader's limit are read in
        pieces, as the library does, except before the agent's first message: there such a
        line is not an ACP message and is cut at the limit."""
        chunks: list[bytes] = []
        try:
            while True:
                try:
                    chunks.append(await self._stdout.readuntil(b"\n"))
                    return b"".join(chunks)
                except asyncio.LimitOverrunError as exc:
                    chunks.append(await self._stdout.readexactly(exc.consumed))
                    if not self._spoken:
                        return b"".join(chunks)
        except asyncio.IncompleteReadError as exc:
            chunks.append(exc.partial)
            return b"".join(chunks)


class _Turn:
    """initialize, session/new and one session/prompt, raced against everything that ends
    the run early: the agent exiting, the server refusing the bridge, a signal."""

    def __init__(
        self,
        bridge: AcpBridge,
        conn: ClientSideConnection,
        process: asyncio.subprocess.Process,
        caught: CaughtSignals,
        settings: SessionSettings,
        *,
        pipe: _AgentPipe,
        command: tuple[str, ...],
    ) -> None:
        self._bridge = bridge
        self._pipe = pipe
        self._command = command
        self._settings = settings
        self._conn = conn
        self._process = process
        self._caught = caught
        self._session_id: str | None = None

    async def run(self, prompt: str) -> int:
        bridge = self._bridge
        try:
            problem = await self._initialize()
            if problem is not None:
                return no_first_answer(
                    bridge, self._caught, self._command, "the ACP initialize request", problem
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
        except (AgentGoneError, FatalServerError, RequestError) as exc:
            return turn_failed(bridge, self._caught, exc, agent="the agent", log=logger)
        bridge.end_turn()
        logger.info(
            "the prompt turn ended (%s): %d answer(s) delivered, %d unmapped event(s)",
            response.stop_reason,
            bridge.delivered,
            bridge.unmapped,
        )
        if self._caught.received:
            return 128 + self._caught.received[0]
        return 0

    async def _initialize(self) -> str | None:
        """Send the initialize request; None once the agent answered it, else why it did not
        (the run then ends: the program is not an ACP agent, or not a working one)."""
        request = self._conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=False, write_text_file=False),
                terminal=False,
                elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities()),
            ),
            client_info=Implementation(name=CLIENT_NAME, version="0.1.0"),
        )
        try:
            await self._call(request, within=INITIALIZE_SECONDS)
        except NoAnswerError:
            return f"no answer within {INITIALIZE_SECONDS:g} s"
        except RequestError as exc:
            return f"it answered with an error: {exc}"
        except AgentGoneError:
            if self._pipe.not_acp is not None:
                return f"it wrote {self._pipe.not_acp}, which is not an ACP message"
            return await silent_exit(self._process)
        return None

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

    async def _call(
        self,
        request: Awaitable[T],
        *,
        cancel_on_signal: bool = False,
        within: float | None = None,
    ) -> T:
        """`request`'s result, raced (process.race); a signal cancels the prompt turn
        (`cancel_on_signal`), else it is passed to the agent."""
        cancel = self._cancel if cancel_on_signal and self._session_id else None
        return await race(
            request,
            bridge=self._bridge,
            process=self._process,
            caught=self._caught,
            within=within,
            on_signal=cancel,
        )

    async def _cancel(self) -> None:
        assert self._session_id is not None  # noqa: S101 - only with a session
        logger.info("signal received: cancelling the prompt turn")
        self._bridge.end_turn()
        await self._conn.cancel(session_id=self._session_id)
