"""Running `--protocol copilot`: Copilot CLI's server as a child process, one prompt turn,
signals, exit.

The CLI runs as `COMMAND --headless --stdio --no-auto-update` (settings.py) in its own
process group (a Ctrl-C in the terminal reaches the bridge only, which aborts the turn over
the protocol: `session.abort`; a second signal ends the CLI), its stderr passes through, and
it is ended when the turn is over: its input closed, then SIGTERM, then SIGKILL. The bridge
sends `connect` (the server's protocol version must be one the SDKs of 1.0.x speak,
PROTOCOL_VERSION), `session.create` (settings.create_params), then `session.send` with the
prompt, and the turn lasts until the session's `session.idle`; each step is raced against
the CLI exiting, the server refusing the bridge, and signals.

Exit codes (compass_bridge/process.py): 0 when the turn ended, 1 when the CLI or the server
stopped the bridge (also a turn that ended on Copilot's error, e.g. no GitHub login and no
model provider: its message is printed), 2 for a BYOK variable Copilot would refuse,
126/127 when the CLI cannot be started, 128+N after signal N. A program that is not
Copilot's server ends the run with one line saying that it did not answer the `connect`
request and why.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Final, TypeVar

from compass_bridge.client import AgentClient, FatalServerError
from compass_bridge.copilot.bridge import CopilotBridge
from compass_bridge.copilot.jsonrpc import Connection, ConnectionLostError, RpcError
from compass_bridge.copilot.settings import SERVER_ARGS, create_params
from compass_bridge.process import (
    EXIT_FATAL,
    EXIT_USAGE,
    AgentGoneError,
    CaughtSignals,
    NoAnswerError,
    finish_turn,
    no_first_answer,
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

    from compass_bridge.copilot.settings import AskUserVariant
    from compass_bridge.process import BridgeOptions
    from compass_core.jsonvalues import JsonObject

__all__ = ["CONNECT_SECONDS", "PROTOCOL_VERSION", "run"]

logger = logging.getLogger("compass.bridge.copilot")

T = TypeVar("T")

PROTOCOL_VERSION: Final = 3
"""The SDK protocol version the bridge speaks (the SDKs of 1.0.x accept 3 only)."""
CONNECT_SECONDS: Final = 60.0
"""How long the CLI has to answer `connect`. Copilot answers within a second or two; a
program that is not its server may wait for other input for ever."""


async def run(
    options: BridgeOptions,
    *,
    ask_user_variant: AskUserVariant | None = None,
    http: pyqwest.Client | None = None,
) -> int:
    """Run Copilot CLI for one prompt turn; return the exit code. `http`: the client for
    AgentService (tests inject transports); default: the bridge's own."""
    assert options.prompt is not None  # noqa: S101 - the CLI requires --prompt with copilot
    try:
        params = create_params(
            session_id=str(uuid.uuid4()),
            cwd=str(Path.cwd()),
            env=os.environ,
            ask_user_variant=ask_user_variant,
        )
    except ValueError as exc:
        sys.stderr.write(f"compass agent-bridge: {exc}\n")
        return EXIT_USAGE
    bridge = CopilotBridge(
        api=AgentClient(options.server, options.token, http=http),
        channel_id=options.channel_id,
        run_id=f"cp{secrets.token_hex(6)}",
        max_backoff=options.max_backoff,
    )
    async with posting(bridge):
        try:
            return await _run_cli(options, bridge, params, options.prompt)
        finally:
            await bridge.settle_tasks()


async def _run_cli(
    options: BridgeOptions, bridge: CopilotBridge, params: JsonObject, prompt: str
) -> int:
    caught = CaughtSignals()
    with caught.installed():
        process = await start_agent((*options.command, *SERVER_ARGS))
        if isinstance(process, int):
            return process
        assert process.stdin is not None  # noqa: S101 - PIPE above
        assert process.stdout is not None  # noqa: S101 - PIPE above
        conn = Connection(
            process.stdout,
            process.stdin,
            on_notification=bridge.on_notification,
            on_request=bridge.on_request,
        )
        bridge.attach(conn.request, conn.respond_error)
        reader = asyncio.create_task(conn.serve(), name="compass-copilot-reader")
        try:
            turn = _Turn(bridge, conn, process, caught, command=options.command)
            code = await turn.run(params, prompt)
            return await finish_turn(bridge, caught, code, options.drain_timeout)
        finally:
            await conn.close()
            await stop_agent(process)
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader


class _Turn:
    """connect, session.create and one session.send until the session is idle, raced against
    everything that ends the run early: the CLI exiting, the server refusing the bridge, a
    signal."""

    def __init__(
        self,
        bridge: CopilotBridge,
        conn: Connection,
        process: asyncio.subprocess.Process,
        caught: CaughtSignals,
        *,
        command: tuple[str, ...],
    ) -> None:
        self._bridge = bridge
        self._conn = conn
        self._process = process
        self._caught = caught
        self._command = command

    async def run(self, params: JsonObject, prompt: str) -> int:
        bridge = self._bridge
        signals = self._caught.received
        try:
            problem = await self._connect()
            if problem is not None:
                return no_first_answer(
                    bridge,
                    self._caught,
                    self._command,
                    "the Copilot SDK's connect request",
                    problem,
                )
            created = await self._call(self._conn.request("session.create", params))
            session_id = created.get("sessionId") if is_object(created) else None
            bridge.session_id = session_id if isinstance(session_id, str) else ""
            logger.info("Copilot session %s opened", bridge.session_id)
            bridge.idle.clear()
            sent: JsonObject = {"sessionId": bridge.session_id, "prompt": prompt}
            await self._call(self._conn.request("session.send", sent))
            await self._call(bridge.idle.wait(), abort_on_signal=True)
        except (AgentGoneError, FatalServerError, RpcError) as exc:
            return turn_failed(bridge, self._caught, exc, agent="Copilot", log=logger)
        bridge.end_turn()
        logger.info("the turn ended: %d answer(s) delivered", bridge.delivered)
        if signals:
            return 128 + signals[0]
        if bridge.turn_error is not None:
            sys.stderr.write(f"compass agent-bridge: Copilot's turn failed: {bridge.turn_error}\n")
            return EXIT_FATAL
        return 0

    async def _connect(self) -> str | None:
        """Send `connect`; None once the CLI answered it with a protocol version the bridge
        speaks, else why not (the run then ends)."""
        try:
            result = await self._call(self._conn.request("connect", {}), within=CONNECT_SECONDS)
        except NoAnswerError:
            return f"no answer within {CONNECT_SECONDS:g} s"
        except RpcError as exc:
            return f"it answered with an error: {exc}"
        except AgentGoneError:
            if self._conn.not_rpc is not None:
                return f"it wrote {self._conn.not_rpc}, which is not a JSON-RPC frame"
            return await silent_exit(self._process)
        version = result.get("protocolVersion") if is_object(result) else None
        if version != PROTOCOL_VERSION:
            return f"it speaks protocol version {version!r}; the bridge speaks {PROTOCOL_VERSION}"
        logger.info("Copilot CLI %s", result.get("version") if is_object(result) else "?")
        return None

    async def _call(
        self, request: Awaitable[T], *, abort_on_signal: bool = False, within: float | None = None
    ) -> T:
        """`request`'s result, raced (process.race; the CLI is gone when the connection is
        lost); a signal aborts the turn (`abort_on_signal`), else it is passed to the CLI."""
        return await race(
            request,
            bridge=self._bridge,
            process=self._process,
            caught=self._caught,
            lost=ConnectionLostError,
            within=within,
            on_signal=self._abort if abort_on_signal else None,
        )

    async def _abort(self) -> None:
        logger.info("signal received: aborting the turn")
        self._bridge.end_turn()
        await self._bridge.abort()
