"""What the tools do, over a `Backend` (the store in `compass serve`, AgentService in
`compass mcp`): create or rejoin the ask, hold the call with progress, pick the recommended
options at a `pick_recommended` deadline, and hand the backend the receipt and the leave.

A waiting call (`ask` or `ask_wait`):

- sends a progress notification at once and then every `progress_seconds`, each time also
  telling the backend it still waits (`Backend.hold`);
- returns when the ask is final, or `pending` once its hold (`wait_seconds`) is over;
- at the deadline of a `pick_recommended` ask closes it TIMED_OUT with each question's
  recommended option (`tools.recommended_answers`) and returns `timed_out`;
- when it returns `pending`, or ends any other way (the client cancelled or went away, the
  token was revoked), it tells the backend the agent left (`Backend.release(left=True)`):
  the ask stays answerable for the backend's grace period, then is WITHDRAWN ("agent stopped
  waiting") unless a call came back for it (ask_wait, or the identical ask). A client told
  `pending` that never comes back leaves no ask answerable forever. That release runs in a
  task of its own: the call's task may be being cancelled.

The result of an ANSWERED or DECLINED ask is the delivery: the transport calls back once the
result has reached the client (`CallContext.on_delivered`) and the backend writes the
receipt then.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from compass_core.jsonvalues import MappingError
from compass_core.limits import MAX_DELIVERY_PAYLOAD_LENGTH
from compass_mcp import tools
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Sequence

    from compass_core.jsonvalues import JsonObject

logger = logging.getLogger(__name__)


class ToolError(Exception):
    """A call failed in a way the model should read (the message says why, in words the
    client may see); anything else becomes "internal error"."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Interrupted(Exception):  # noqa: N818 - not an error of the call: the server stops
    """The backend stops (the server shuts down): the call returns `pending`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Channel:
    channel_id: str
    name: str


class Backend(Protocol):
    """Where the asks live, as one agent account sees them. Raises ToolError for what the
    model should read, Interrupted when it shuts down."""

    async def channels(self) -> Sequence[Channel]:
        """The channels the agent takes part in."""
        ...

    async def open_ask(
        self,
        channel_id: str,
        blocks: Sequence[comms_pb2.MessageBlock],
        key: str,
        waiter: str,
        seconds: float,
    ) -> comms_pb2.Ask:
        """The ask of an earlier call with the same `key` in the channel that is still to be
        delivered (pending, or answered or declined without a receipt), else a new message
        of `blocks` and its ask; either way held by `waiter` as `hold` holds it, from the
        moment it exists (a call that goes away before it first holds still leaves it)."""
        ...

    def states(self, ask_id: str) -> AsyncGenerator[comms_pb2.Ask]:
        """The ask's state at once, then each change; ends after the first final state."""
        ...

    async def close_ask(
        self,
        ask_id: str,
        status: comms_pb2.AskStatus,
        reason: str,
        answers: Sequence[comms_pb2.AskQuestionAnswer] = (),
    ) -> comms_pb2.Ask:
        """CloseAsk as the agent (WITHDRAWN, or TIMED_OUT with answers)."""
        ...

    async def hold(self, ask_id: str, waiter: str, seconds: float) -> None:
        """`waiter` (one call) waits for the ask and says so again within `seconds`."""
        ...

    async def release(self, ask_id: str, waiter: str, *, left: bool) -> None:
        """`waiter` stopped waiting: it returned a final result (`left` False), or the ask
        is still pending and its client waits no more (`left` True: it returned `pending`,
        or went away; the grace period starts)."""
        ...

    async def report_delivery(self, ask: comms_pb2.Ask, payload: str) -> None:
        """The answer or decline of `ask` reached the agent, as `payload`."""
        ...

    def link(self, ask_id: str) -> str:
        """Where people answer the ask."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    text: str
    """The text block the model reads."""
    structured: JsonObject | None = None
    """`structuredContent` (None on errors)."""
    is_error: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CallContext:
    """What the transport gives one tool call."""

    backend: Backend
    progress: Callable[[float, str], Awaitable[None]]
    """Sends a progress notification (progress so far in seconds, a message)."""
    on_delivered: Callable[[Callable[[], Awaitable[None]]], None]
    """Registers what to run once the call's result has reached the client."""
    channel: str | None = None
    """The channel the transport names (header `X-Compass-Channel`, `--channel`)."""
    wait_seconds: float = tools.DEFAULT_WAIT_SECONDS
    """The hold when the call names none."""
    request_key: str | None = None
    """Names the call for `AskTools.cancel` (stateless HTTP, where the client's
    `notifications/cancelled` arrives in a request of its own); None: the transport cancels
    the call itself (stdio)."""


def error(message: str) -> ToolResult:
    return ToolResult(text=message, is_error=True)


class AskTools:
    """The three tools, for any number of concurrent calls."""

    def __init__(
        self,
        *,
        progress_seconds: float = tools.PROGRESS_SECONDS,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._tick = progress_seconds
        self._clock = clock or (lambda: datetime.now(UTC))
        self._background: set[asyncio.Task[None]] = set()
        self._running: dict[str, set[asyncio.Task[ToolResult]]] = {}

    async def call(self, name: str, args: JsonObject, ctx: CallContext) -> ToolResult:
        """Run tool `name`; every failure is a result (isError), never an exception. A call
        with a `request_key` can be cancelled by `cancel` (it then returns an error nobody
        reads: its client cancelled it)."""
        if ctx.request_key is None:
            return await self._call(name, args, ctx)
        key = ctx.request_key
        task = asyncio.create_task(self._call(name, args, ctx))
        self._running.setdefault(key, set()).add(task)
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # this call itself is cancelled (the client disconnected)
            return error("the client cancelled the call")
        finally:
            running = self._running.get(key)
            if running is not None:
                running.discard(task)
                if not running:
                    del self._running[key]

    def cancel(self, request_key: str) -> int:
        """Cancel the calls running under `request_key`; how many there were."""
        tasks = list(self._running.get(request_key, ()))
        for task in tasks:
            task.cancel()
        return len(tasks)

    async def _call(self, name: str, args: JsonObject, ctx: CallContext) -> ToolResult:
        try:
            if name == tools.ASK:
                return await self._ask(args, ctx)
            if name == tools.ASK_WAIT:
                call = tools.parse_wait(args)
                return await self._wait(call.ask_id, None, call.wait_seconds, ctx)
            if name == tools.ASK_CANCEL:
                return await self._cancel(tools.parse_cancel(args), ctx)
            return error(f"unknown tool {name!r}: this server has ask, ask_wait and ask_cancel")
        except MappingError as exc:
            return error(f"invalid arguments: {exc.reason}")
        except ToolError as exc:
            return error(exc.message)
        except Exception:
            logger.exception("MCP tool %s failed", name)
            return error("internal error")

    async def settle(self, limit: float = 10.0) -> None:
        """Let the releases still running finish (at most `limit` s), then cancel them."""
        pending = [task for task in self._background if not task.done()]
        if not pending:
            return
        _, late = await asyncio.wait(pending, timeout=limit)
        for task in late:
            task.cancel()

    # -- the tools -------------------------------------------------------------------------

    async def _ask(self, args: JsonObject, ctx: CallContext) -> ToolResult:
        call = tools.parse_ask(args)
        channel_id = call.channel or ctx.channel or await self._only_channel(ctx.backend)
        blocks = tools.blocks_for(call, self._clock())
        waiter = secrets.token_hex(8)
        ask = await ctx.backend.open_ask(channel_id, blocks, call.key, waiter, 2 * self._tick)
        return await self._wait(ask.ask_id, ask, call.wait_seconds, ctx, waiter=waiter)

    async def _cancel(self, call: tools.CancelCall, ctx: CallContext) -> ToolResult:
        try:
            ask = await ctx.backend.close_ask(
                call.ask_id, comms_pb2.ASK_STATUS_WITHDRAWN, call.reason
            )
        except ToolError:
            ask = await self._current(ctx.backend, call.ask_id)  # final already (or absent)
            if ask.status == comms_pb2.ASK_STATUS_PENDING:
                raise
        return self._result(ask, ctx)

    async def _only_channel(self, backend: Backend) -> str:
        channels = await backend.channels()
        if len(channels) == 1:
            return channels[0].channel_id
        if not channels:
            raise ToolError("this agent takes part in no Compass channel; ask an admin to add it")
        listed = ", ".join(f"{c.channel_id} ({c.name})" for c in channels)
        raise ToolError(
            f"this agent takes part in several channels; name one with the `channel` argument "
            f"or the X-Compass-Channel header: {listed}"
        )

    async def _current(self, backend: Backend, ask_id: str) -> comms_pb2.Ask:
        async with contextlib.aclosing(backend.states(ask_id)) as states:
            async for ask in states:
                return ask
        raise ToolError("ask not found")

    # -- waiting ---------------------------------------------------------------------------

    async def _wait(
        self,
        ask_id: str,
        first: comms_pb2.Ask | None,
        wait: float | None,
        ctx: CallContext,
        *,
        waiter: str | None = None,
    ) -> ToolResult:
        loop = asyncio.get_running_loop()
        hold_end = loop.time() + (ctx.wait_seconds if wait is None else wait)
        waiter = waiter or secrets.token_hex(8)
        queue: asyncio.Queue[comms_pb2.Ask | BaseException | None] = asyncio.Queue()
        pump = asyncio.create_task(_pump(ctx.backend.states(ask_id), queue))
        left = True  # until the call returns a final result
        ask = first
        try:
            if ask is None:
                ask = await _next(queue)
            if ask is None:
                raise ToolError("ask not found")
            started = loop.time()
            await ctx.progress(0.0, "waiting for an answer in Compass")
            await ctx.backend.hold(ask_id, waiter, 2 * self._tick)
            next_tick = started + self._tick
            while ask.status == comms_pb2.ASK_STATUS_PENDING:
                due = self._due(ask)
                if due is not None and due <= 0:
                    ask = await self._pick_recommended(ctx.backend, ask)
                    continue
                now = loop.time()
                if now >= hold_end:
                    break
                until = min(next_tick, hold_end) - now
                if due is not None:
                    until = min(until, due)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(until):
                        state = await _next(queue)
                        if state is None:  # pragma: no cover - backends end after a final state
                            raise ToolError("Compass stopped sending the ask's state")
                        ask = state
                if loop.time() >= next_tick:
                    await ctx.progress(loop.time() - started, "waiting for an answer in Compass")
                    await ctx.backend.hold(ask_id, waiter, 2 * self._tick)
                    next_tick += self._tick
            # A final result leaves nothing behind. After a `pending` one the agent waits
            # for nothing until it comes back (ask_wait, or the identical ask): the leave's
            # grace runs, so an ask its client quit on is withdrawn, not answerable forever.
            left = ask.status == comms_pb2.ASK_STATUS_PENDING
        except Interrupted:
            if ask is None:
                raise ToolError("Compass is restarting; call the tool again") from None
            # The server stops: `pending`, and the client comes back with ask_wait (to a
            # server that is up) within the grace, as after any `pending`.
        finally:
            pump.cancel()
            self.spawn(ctx.backend.release(ask_id, waiter, left=left))
        return self._result(ask, ctx)

    def _due(self, ask: comms_pb2.Ask) -> float | None:
        """Seconds until the deadline of a `pick_recommended` ask (None: not such an ask)."""
        if ask.on_timeout != comms_pb2.ASK_TIMEOUT_POLICY_PICK_RECOMMENDED:
            return None
        if not ask.HasField("deadline"):
            return None
        deadline = ask.deadline.ToDatetime(tzinfo=UTC)
        return (deadline - self._clock()).total_seconds()

    async def _pick_recommended(self, backend: Backend, ask: comms_pb2.Ask) -> comms_pb2.Ask:
        try:
            return await backend.close_ask(
                ask.ask_id,
                comms_pb2.ASK_STATUS_TIMED_OUT,
                tools.TIMED_OUT_REASON,
                tools.recommended_answers(ask),
            )
        except ToolError:
            current = await self._current(backend, ask.ask_id)  # someone else closed it
            if current.status == comms_pb2.ASK_STATUS_PENDING:
                raise
            return current

    def _result(self, ask: comms_pb2.Ask, ctx: CallContext) -> ToolResult:
        link = ctx.backend.link(ask.ask_id)
        structured = tools.result_content(ask, link=link)
        text = tools.result_text(ask, link=link)
        if ask.status in {comms_pb2.ASK_STATUS_ANSWERED, comms_pb2.ASK_STATUS_DECLINED}:
            payload = json.dumps(
                {"structuredContent": structured, "content": [{"type": "text", "text": text}]},
                ensure_ascii=False,
            )
            if len(payload) > MAX_DELIVERY_PAYLOAD_LENGTH:
                payload = text[:MAX_DELIVERY_PAYLOAD_LENGTH]
            backend, delivered = ctx.backend, ask

            def report() -> Awaitable[None]:
                return backend.report_delivery(delivered, payload)

            ctx.on_delivered(report)
        return ToolResult(text=text, structured=structured)

    def spawn(self, work: Coroutine[object, object, None]) -> None:
        """Run `work` in the background, beyond the call that started it (`settle` waits
        for it); its failure is logged."""
        task = asyncio.create_task(_logged(work))
        self._background.add(task)
        task.add_done_callback(self._background.discard)


async def _logged(work: Coroutine[object, object, None]) -> None:
    try:
        await work
    except ToolError as exc:
        logger.warning("MCP: %s", exc.message)
    except Exception:
        logger.exception("MCP background work failed")


async def _pump(
    states: AsyncGenerator[comms_pb2.Ask],
    queue: asyncio.Queue[comms_pb2.Ask | BaseException | None],
) -> None:
    """Feed `states` into `queue`; then None (the end) or the exception it raised."""
    try:
        async with contextlib.aclosing(states):
            async for state in states:
                queue.put_nowait(state)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # noqa: BLE001 - handed to the waiting call, which raises it
        queue.put_nowait(exc)
        return
    queue.put_nowait(None)


async def _next(queue: asyncio.Queue[comms_pb2.Ask | BaseException | None]) -> comms_pb2.Ask | None:
    """The next state; None once the states ended; raises what the states raised."""
    item = await queue.get()
    if isinstance(item, BaseException):
        raise item
    if item is None:
        queue.put_nowait(None)  # stays ended for the next reader
    return item
