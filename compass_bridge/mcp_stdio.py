"""`compass mcp`: Compass's MCP tools (`ask`, `ask_wait`, `ask_cancel`) over stdio, for
clients that start their MCP servers as processes. An AgentService client like the bridge.

The tools are the ones `/mcp` serves (`compass_mcp`); here their backend is AgentService:
each through asks.AgentAsks: AppendMessage creates the ask (retried with a fresh
`client_message_id` per ask, so a retry never doubles it), WatchAsk follows it (reconnecting),
CloseAsk withdraws it or records `pick_recommended` (TIMED_OUT), ReportDelivery writes the
receipt once the result line has been written to stdout and flushed.

This process is the agent's runtime for its asks: an identical `ask` re-issued while its ask
is still to be delivered rejoins it (in this process; a new process starts afresh); a call
the client cancels leaves its ask answerable for `--grace-seconds`, then it is WITHDRAWN
("agent stopped waiting") unless a call rejoined it; when the client closes stdin (or the
process gets SIGTERM/SIGINT), every ask a call still waited for, or left within its grace, is
withdrawn at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import json
import logging
import os
import signal
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeVar

import anyio
from mcp.server.stdio import stdio_server

from compass_bridge.asks import AgentAsks
from compass_bridge.client import (
    AgentApi,
    AgentClient,
    AskNotPostedError,
    FatalServerError,
    GaveUpError,
    RpcError,
)
from compass_bridge.receipts import Receipt
from compass_core.ask_status import to_deliver
from compass_core.jsonvalues import is_object
from compass_mcp import tools
from compass_mcp.calls import AskTools, CallContext, Channel, ToolError
from compass_mcp.server import build_server, progress_sender
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import (
        AsyncGenerator,
        Awaitable,
        Callable,
        Coroutine,
        Generator,
        Sequence,
    )
    from typing import Any

    from mcp.server.context import ServerRequestContext

__all__ = ["McpOptions", "run"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

SHUTDOWN_SECONDS: Final = 10.0
"""How long the asks still waited for are given to be withdrawn when the process ends."""


@dataclass(frozen=True, slots=True, kw_only=True)
class McpOptions:
    server: str
    channel_id: str
    token: str
    wait_seconds: float = tools.DEFAULT_WAIT_SECONDS
    grace_seconds: float = 60.0
    progress_seconds: float = tools.PROGRESS_SECONDS
    max_backoff: float = 5.0


# -- the backend -----------------------------------------------------------------------------


class ClientBackend:
    """`compass_mcp.calls.Backend` over AgentService, for this process's agent."""

    def __init__(self, client: AgentApi, options: McpOptions, channel_name: str) -> None:
        self._client = client
        self._options = options
        self._channel = Channel(channel_id=options.channel_id, name=channel_name)
        self._asks = AgentAsks(client, max_backoff=options.max_backoff)
        self._opened: dict[str, str] = {}  # channel and call key -> the ask it made
        self._waiting: dict[str, set[str]] = {}  # ask id -> the calls waiting for it
        self._leaving: dict[str, asyncio.Task[None]] = {}  # ask id -> its grace period
        self._settling: set[asyncio.Task[None]] = set()  # appends whose call went away
        self._base = options.server.rstrip("/") + "/"

    async def channels(self) -> Sequence[Channel]:
        return [self._channel]

    async def open_ask(
        self,
        channel_id: str,
        blocks: Sequence[comms_pb2.MessageBlock],
        key: str,
        waiter: str,
        seconds: float,
    ) -> comms_pb2.Ask:
        known = self._opened.get(f"{channel_id} {key}")
        if known is not None:
            current = await self._first_state(known)
            if to_deliver(current):
                await self.hold(known, waiter, seconds)
                return current
        append = asyncio.ensure_future(
            _tool_errors(self._asks.post(channel_id, blocks, prefix="mcp"))
        )
        try:
            # Shielded: an append cancelled in flight may still have stored the ask.
            message = await asyncio.shield(append)
        except asyncio.CancelledError:
            self._track(self._made_after_leaving(append))
            raise
        ask = _the_ask(message)
        self._opened[f"{channel_id} {key}"] = ask.ask_id
        await self.hold(ask.ask_id, waiter, seconds)
        return ask

    async def _made_after_leaving(self, append: asyncio.Future[comms_pb2.Message]) -> None:
        """The call went away while its ask was being appended: once stored, it is left."""
        try:
            ask = _the_ask(await append)
        except ToolError:
            return  # never stored
        self._leaving[ask.ask_id] = asyncio.create_task(self._leave(ask.ask_id))

    def _track(self, work: Coroutine[object, object, None]) -> None:
        task = asyncio.create_task(work)
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)

    async def _first_state(self, ask_id: str) -> comms_pb2.Ask:
        async with contextlib.aclosing(self.states(ask_id)) as states:
            async for ask in states:
                return ask
        raise ToolError("ask not found")  # pragma: no cover - a watch starts with a state

    async def states(self, ask_id: str) -> AsyncGenerator[comms_pb2.Ask]:
        states = self._asks.states(ask_id)
        try:
            async with contextlib.aclosing(states):
                async for ask in states:
                    yield ask
        except (FatalServerError, AskNotPostedError) as exc:
            cause = exc.__cause__
            raise ToolError(cause.message if isinstance(cause, RpcError) else str(exc)) from exc

    async def close_ask(
        self,
        ask_id: str,
        status: comms_pb2.AskStatus,
        reason: str,
        answers: Sequence[comms_pb2.AskQuestionAnswer] = (),
    ) -> comms_pb2.Ask:
        return await _tool_errors(self._asks.close_ask(ask_id, status, reason, answers))

    async def hold(self, ask_id: str, waiter: str, seconds: float) -> None:
        del seconds  # the process itself keeps the time
        self._waiting.setdefault(ask_id, set()).add(waiter)
        leaving = self._leaving.pop(ask_id, None)
        if leaving is not None:
            leaving.cancel()

    async def release(self, ask_id: str, waiter: str, *, left: bool) -> None:
        if not left:
            # The client has the ask's final result; nothing is left behind. (After a
            # `pending` one, `left`: the grace runs until the agent comes back with ask_wait.)
            self._waiting.pop(ask_id, None)
            leaving = self._leaving.pop(ask_id, None)
            if leaving is not None:
                leaving.cancel()
            return
        waiters = self._waiting.get(ask_id, set())
        waiters.discard(waiter)
        if not waiters and ask_id not in self._leaving:
            self._waiting.pop(ask_id, None)
            self._leaving[ask_id] = asyncio.create_task(self._leave(ask_id))

    async def _leave(self, ask_id: str) -> None:
        await asyncio.sleep(self._options.grace_seconds)
        self._leaving.pop(ask_id, None)
        if self._waiting.get(ask_id):
            return  # rejoined
        await self._withdraw(ask_id)

    async def _withdraw(self, ask_id: str) -> None:
        await self._asks.withdraw(ask_id, tools.STOPPED_WAITING)

    async def report_delivery(self, ask: comms_pb2.Ask, payload: str) -> None:
        receipt = Receipt(comms_pb2.DELIVERY_STATE_DELIVERED, "", payload)
        await self._asks.report(ask.ask_id, receipt)

    def link(self, ask_id: str) -> str:
        return f"{self._base}#/ask/{ask_id}"

    async def shutdown(self) -> None:
        """The client is gone: withdraw, now, every ask a call waited for or left."""
        if self._settling:
            await asyncio.wait(self._settling, timeout=SHUTDOWN_SECONDS / 2)
        asks = set(self._waiting) | set(self._leaving)
        for task in self._leaving.values():
            task.cancel()
        self._leaving.clear()
        self._waiting.clear()
        if asks:
            await asyncio.gather(*(self._withdraw(ask_id) for ask_id in asks))


def _the_ask(message: comms_pb2.Message) -> comms_pb2.Ask:
    return next(block.ask for block in message.blocks if block.HasField("ask"))


async def _tool_errors(call: Awaitable[T]) -> T:
    """`call`'s result; its failure as the ToolError the model reads (the server's words)."""
    try:
        return await call
    except GaveUpError as exc:
        raise ToolError(exc.error.message) from exc
    except FatalServerError as exc:
        raise ToolError(str(exc)) from exc


# -- stdio -----------------------------------------------------------------------------------


class _Receipts:
    """Receipts to write once the response to a JSON-RPC request id is on the wire."""

    def __init__(self, spawn: Callable[[Coroutine[object, object, None]], None]) -> None:
        self._spawn = spawn
        self._by_id: dict[str, list[Callable[[], Awaitable[None]]]] = {}

    def add(self, request_id: str | int | None, receipt: Callable[[], Awaitable[None]]) -> None:
        if request_id is not None:
            self._by_id.setdefault(_id_key(request_id), []).append(receipt)

    def written(self, text: str) -> None:
        """`text` (whole JSON-RPC lines) reached stdout: run the receipts of its responses."""
        if not self._by_id:
            return
        for line in text.splitlines():
            try:
                message: object = json.loads(line)
            except ValueError:
                continue
            if not is_object(message) or ("result" not in message and "error" not in message):
                continue
            request_id = message.get("id")
            if isinstance(request_id, str | int) and not isinstance(request_id, bool):
                for receipt in self._by_id.pop(_id_key(request_id), []):
                    self._spawn(_run(receipt))


def _id_key(request_id: str | int) -> str:
    return f"{type(request_id).__name__}:{request_id}"


async def _run(receipt: Callable[[], Awaitable[None]]) -> None:
    await receipt()


class _Wire(io.TextIOWrapper):
    """The protocol's stdout: after each flush, the lines written go to `on_flushed` (on the
    event loop; the SDK writes and flushes in a worker thread)."""

    def __init__(
        self,
        raw: io.BufferedWriter,
        loop: asyncio.AbstractEventLoop,
        on_flushed: Callable[[str], None],
    ) -> None:
        super().__init__(raw, encoding="utf-8", write_through=True)
        self._loop = loop
        self._on_flushed = on_flushed
        self._written: list[str] = []

    def write(self, s: str) -> int:
        written = super().write(s)
        self._written.append(s)
        return written

    def flush(self) -> None:
        super().flush()
        text, self._written = "".join(self._written), []
        self._loop.call_soon_threadsafe(self._on_flushed, text)


@contextlib.contextmanager
def _claimed_stdout() -> Generator[io.BufferedWriter]:
    """The process's stdout as the protocol's own: a duplicate of fd 1 to write to, while fd
    1 itself points at stderr so that stray output cannot corrupt the protocol (as the SDK's
    own stdio_server does when it is given no stdout)."""
    sys.stdout.flush()
    private = os.dup(1)
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with os.fdopen(private, "wb") as raw:
            yield raw
    finally:
        os.dup2(saved, 1)
        os.close(saved)


async def run(options: McpOptions) -> int:
    """Serve the tools on stdin/stdout until the client closes stdin (or a signal)."""
    loop = asyncio.get_running_loop()
    serving = asyncio.current_task()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            if serving is not None:
                loop.add_signal_handler(signum, serving.cancel)
    client = AgentClient(options.server, options.token)
    channel_name = await _channel_name(client, options.channel_id)
    backend = ClientBackend(client, options, channel_name)
    ask_tools = AskTools(progress_seconds=options.progress_seconds)
    receipts = _Receipts(ask_tools.spawn)

    def context_of(ctx: ServerRequestContext[Any, Any]) -> CallContext:
        request_id = ctx.request_id
        return CallContext(
            backend=backend,
            progress=progress_sender(ctx),
            on_delivered=functools.partial(receipts.add, request_id),
            channel=options.channel_id,
            wait_seconds=options.wait_seconds,
        )

    server = build_server(ask_tools, context_of)
    try:
        with _claimed_stdout() as raw:
            wire = anyio.wrap_file(_Wire(raw, loop, receipts.written))
            async with stdio_server(stdout=wire) as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
    except asyncio.CancelledError:
        logger.info("compass mcp: stopping")
    finally:
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(SHUTDOWN_SECONDS):
                await ask_tools.settle(SHUTDOWN_SECONDS / 2)
                await backend.shutdown()
    return 0


async def _channel_name(client: AgentClient, channel_id: str) -> str:
    try:
        return (await client.get_channel(channel_id)).name
    except RpcError:
        return channel_id  # the start-up check has said what is wrong, if anything
