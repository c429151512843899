"""The bridge's core: runtime lines in; frames posted, asks correlated, answers written back.

`Bridge.feed(line)` takes one line of the runtime's JSON-lines output. It never raises and
never awaits: it maps the event (EventMapper), queues frames on the Poster, and starts or
stops the tasks that wait for answers. The caller (session.py) owns the I/O.

Correlation (SPEC §2.3). An ask tool call first arrives as `tool_execution_start`, which the
mapper turns into an Ask block (its ConversationUpdated carries `tool_call_id` and
`block_index`); the bridge records an `AskSlot` for it: the mapper message, the ask's ordinal
in it (the i-th ask block), and its question ids and texts. The runtime then asks the host
with `extension_ui_request` (`method: "ask"`, see runtime.py). The request is matched to a
slot not yet matched:

1. by `toolCallId` when the request carries one;
2. else by equal question ids, preferring equal question texts too, oldest slot first.

A matched request starts a task: wait for the ask's minted id (the append, or the update that
adds the ask to its already stored message, may still be retrying), follow WatchAsk until the
ask is answered (reconnecting with backoff), then write the `extension_ui_response`. Each
request has its own task, so two asks of one turn wait concurrently and each answer goes to
its own request id. A request that matches nothing (the mapper refused the ask's arguments,
say), or whose ask the server did not store, is answered `cancelled`, so the runtime never
hangs on an ask nobody can see. The wait stops when the runtime cancels the request
(`method: "cancel"`), when the ask tool call ends, or when the runtime's output ends.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from compass_agent import ConversationUpdated, EventMapper
from compass_server.bridge.answers import ask_reply, build_answers, cancelled_reply, is_answered
from compass_server.bridge.client import Backoff, RpcError, bounded, fatal
from compass_server.bridge.poster import (
    MAX_BOUNDED_RETRIES,
    AskNotPostedError,
    FatalServerError,
    Poster,
)
from compass_server.bridge.runtime import (
    ASK_DIALOG_COMMAND_ID,
    AskRequest,
    CancelRequest,
    DialogRequest,
    NoticeRequest,
    UnreadableRequest,
    as_object,
    parse_ui_request,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from compass_server.bridge.poster import AgentApi
    from gen.compass.v1 import comms_pb2

__all__ = ["AskSlot", "Bridge", "ReplySink"]

logger = logging.getLogger(__name__)

_STABLE_STREAM_SECONDS: Final = 10.0  # a WatchAsk that lived this long resets the backoff
_LOG_EVERY: Final = 10  # after the first failed reconnect, log every n-th


class ReplySink(Protocol):
    """Where replies to the runtime go: one JSON object per line on its stdin."""

    async def send(self, line: bytes) -> None:
        """Write one complete line.

        Raises:
            OSError: the runtime's input is closed.
        """
        ...


@dataclass(slots=True, kw_only=True)
class AskSlot:
    """An Ask block derived from one ask tool call, waiting for the runtime's request."""

    key: str
    """The mapper's client_message_id of the message holding the ask."""
    ordinal: int
    """Which ask of that message it is (0 = the first ask block)."""
    tool_call_id: str | None
    question_ids: tuple[str, ...]
    question_texts: tuple[str, ...]
    request_id: str | None = None
    """The runtime request this slot answers, once correlated."""
    closed: bool = False
    """The tool call ended; no request can come for it any more."""


def encode_line(obj: Mapping[str, object]) -> bytes:
    """One JSON line for the runtime: ASCII only, so no byte can be mistaken for a line end."""
    return (json.dumps(obj, ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")


class Bridge:
    """One runtime's event stream, bridged to one Compass channel."""

    def __init__(
        self,
        *,
        api: AgentApi,
        channel_id: str,
        sink: ReplySink,
        run_id: str,
        max_backoff: float = 5.0,
        initial_backoff: float = 0.2,
    ) -> None:
        self._api = api
        self._sink = sink
        self._max_backoff = max_backoff
        self._initial_backoff = initial_backoff
        self.mapper = EventMapper(session=run_id)
        self.poster = Poster(
            api,
            channel_id,
            run_id=run_id,
            max_backoff=max_backoff,
            initial_backoff=initial_backoff,
        )
        self._slots: list[AskSlot] = []
        self._waits: dict[str, asyncio.Task[None]] = {}
        self._writes: set[asyncio.Task[None]] = set()
        self._write_lock = asyncio.Lock()
        self._unmapped: collections.Counter[str] = collections.Counter()
        self.failure: asyncio.Future[FatalServerError] = asyncio.get_running_loop().create_future()
        """Resolved when the server refuses the bridge itself; the session then stops."""
        self.delivered = 0
        """Answers written to the runtime."""

    # -- input -----------------------------------------------------------------------------

    def feed(self, line: bytes) -> None:
        """Handle one line of the runtime's output. Never raises."""
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            self._count("line", "not valid UTF-8")
            return
        if not text.strip():
            return
        try:
            event: object = json.loads(text)
        except ValueError:
            self._count("line", "not JSON")
            return
        except RecursionError:  # nesting deeper than the parser's recursion limit
            self._count("line", "JSON nested too deeply")
            return
        obj = as_object(event)
        if obj is None:
            self._count("line", "not a JSON object")
            return
        try:
            self._handle(obj)
        except Exception:  # runtime output must never stop the bridge; logged, counted
            logger.exception("agent-bridge: handling a runtime event failed")
            self._count(str(obj.get("type", "event"))[:64], "internal error in the bridge")

    def count_unreadable(self, reason: str) -> None:
        """Count a line the reader had to skip (e.g. longer than its limit)."""
        self._count("line", reason)

    def _handle(self, event: dict[str, object]) -> None:
        kind = event.get("type")
        if kind in {"extension_ui_request", "extension_ui_cancel"}:
            self._on_ui_request(event)
        elif kind == "response" and event.get("id") == ASK_DIALOG_COMMAND_ID:
            self._on_ask_dialog_ack(event)
        else:
            for output in self.mapper.map(event):
                if isinstance(output, ConversationUpdated):
                    self._on_frame(output)
                else:
                    logger.warning(
                        "unmapped runtime event %s: %s", output.event_type, output.reason
                    )
        if kind == "tool_execution_end" and event.get("toolName") == "ask":
            self._on_ask_end(event.get("toolCallId"))

    def _on_frame(self, output: ConversationUpdated) -> None:
        frame = output.value
        if output.block_index is not None:
            blocks = frame.blocks
            ask = blocks[output.block_index].ask
            ordinal = sum(1 for block in blocks[: output.block_index] if block.HasField("ask"))
            self._slots.append(
                AskSlot(
                    key=frame.client_message_id,
                    ordinal=ordinal,
                    tool_call_id=output.tool_call_id,
                    question_ids=tuple(q.question_id for q in ask.questions),
                    question_texts=tuple(q.question for q in ask.questions),
                )
            )
        self.poster.submit(frame)

    # -- runtime UI requests ---------------------------------------------------------------

    def _on_ui_request(self, event: dict[str, object]) -> None:
        request = parse_ui_request(event)
        if isinstance(request, AskRequest):
            self._on_ask_request(request)
        elif isinstance(request, CancelRequest):
            task = self._waits.get(request.target_id)
            if task is not None:
                logger.info("the runtime cancelled request %s; stop waiting", request.target_id)
                task.cancel()
        elif isinstance(request, DialogRequest):
            self._count(
                f"extension_ui_request:{request.method}",
                "the bridge cannot present this dialog; answered cancelled",
            )
            self._write(cancelled_reply(request.request_id))
        elif isinstance(request, UnreadableRequest):
            self._count(f"extension_ui_request:{request.method}", request.reason)
            if request.request_id is not None and request.method == "ask":
                self._write(cancelled_reply(request.request_id))
        else:
            assert isinstance(request, NoticeRequest)  # noqa: S101 - the union's last member
            logger.debug("runtime notice %s ignored", request.method)

    def _on_ask_request(self, request: AskRequest) -> None:
        if request.request_id in self._waits:
            logger.warning("request %s is already being answered; ignored", request.request_id)
            return
        slot = self._correlate(request)
        if slot is None:
            self._count(
                "extension_ui_request:ask",
                f"request {request.request_id} matches no ask block; answered cancelled",
            )
            self._write(cancelled_reply(request.request_id))
            return
        slot.request_id = request.request_id
        task = asyncio.create_task(
            self._answer(request, slot), name=f"compass-ask-{request.request_id}"
        )
        self._waits[request.request_id] = task
        logger.info(
            "request %s waits for ask %d of message %s",
            request.request_id,
            slot.ordinal,
            slot.key,
        )

    def _correlate(self, request: AskRequest) -> AskSlot | None:
        open_slots = [s for s in self._slots if s.request_id is None and not s.closed]
        if request.tool_call_id is not None:
            for slot in open_slots:
                if slot.tool_call_id == request.tool_call_id:
                    return slot
            open_slots = [s for s in open_slots if s.tool_call_id is None]
        same_ids = [s for s in open_slots if s.question_ids == request.question_ids]
        for slot in same_ids:
            if slot.question_texts == request.question_texts:
                return slot
        return same_ids[0] if same_ids else None

    def _on_ask_end(self, call_id: object) -> None:
        if not isinstance(call_id, str):
            return
        for slot in self._slots:
            if slot.tool_call_id == call_id and not slot.closed:
                slot.closed = True
                task = self._waits.get(slot.request_id) if slot.request_id else None
                if task is not None and not task.done():
                    logger.info("ask call %s ended; stop waiting for its answer", call_id)
                    task.cancel()
        self._slots = [s for s in self._slots if not s.closed]

    def _on_ask_dialog_ack(self, event: dict[str, object]) -> None:
        if event.get("success") is True:
            logger.info("the runtime sends its asks to the bridge (set_ask_dialog accepted)")
        else:
            error = event.get("error")
            logger.warning(
                "the runtime refused set_ask_dialog (%s); its asks will not reach Compass",
                error if isinstance(error, str) else "no reason given",
            )

    # -- answering -------------------------------------------------------------------------

    async def _answer(self, request: AskRequest, slot: AskSlot) -> None:
        rid = request.request_id
        try:
            # Shielded: cancelling this wait must not cancel the future other waits share.
            ask_id = await asyncio.shield(self.poster.ask_id(slot.key, slot.ordinal))
            ask = await self._until_answered(ask_id)
            answers = build_answers(ask, order=request.question_ids)
            for problem in answers.problems:
                logger.warning("ask %s: %s", ask_id, problem)
            await self._send(ask_reply(rid, answers))
            self.delivered += 1
            logger.info("delivered the answer of ask %s to request %s", ask_id, rid)
        except AskNotPostedError as exc:
            logger.error("request %s cannot be answered: %s; answered cancelled", rid, exc)
            await self._send(cancelled_reply(rid))
        except FatalServerError as exc:
            self._fail(exc)
        except Exception:  # a bug must not leave the runtime hanging
            logger.exception("answering request %s failed; answered cancelled", rid)
            await self._send(cancelled_reply(rid))
        finally:
            self._waits.pop(rid, None)
            slot.closed = True
            self._slots = [s for s in self._slots if not s.closed]

    async def _until_answered(self, ask_id: str) -> comms_pb2.Ask:
        backoff = Backoff(initial=self._initial_backoff, cap=self._max_backoff)
        bounded_failures = 0
        while True:
            started = time.monotonic()
            try:
                async with contextlib.aclosing(self._api.watch_ask(ask_id)) as states:
                    async for ask in states:
                        if is_answered(ask):
                            return ask
                problem = "the stream ended before the answer"
            except RpcError as exc:
                if fatal(exc.code):
                    raise FatalServerError(f"WatchAsk {ask_id}: {exc}") from exc
                bounded_failures += bounded(exc.code)
                if not exc.retryable or bounded_failures > MAX_BOUNDED_RETRIES:
                    raise AskNotPostedError(f"WatchAsk {ask_id} failed: {exc}") from exc
                problem = str(exc)
            if time.monotonic() - started >= _STABLE_STREAM_SECONDS:
                backoff.reset()
            delay = backoff.next_delay()
            if backoff.attempts == 1 or backoff.attempts % _LOG_EVERY == 0:
                logger.warning(
                    "WatchAsk %s: %s; reconnecting in %.1fs (attempt %d)",
                    ask_id,
                    problem,
                    delay,
                    backoff.attempts,
                )
            await asyncio.sleep(delay)

    def _write(self, obj: Mapping[str, object]) -> None:
        task = asyncio.create_task(self._send(obj))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _send(self, obj: Mapping[str, object]) -> None:
        line = encode_line(obj)
        async with self._write_lock:
            try:
                await self._sink.send(line)
            except OSError as exc:
                logger.warning(
                    "the runtime's input is closed (%s); a reply was not delivered",
                    type(exc).__name__,
                )

    async def send_command(self, obj: Mapping[str, object]) -> None:
        """Write a command line to the runtime (e.g. runtime.ASK_DIALOG_COMMAND)."""
        await self._send(obj)

    # -- lifecycle -------------------------------------------------------------------------

    async def run_poster(self) -> None:
        """The Poster's worker; a fatal refusal resolves `failure` instead of raising."""
        try:
            await self.poster.run()
        except FatalServerError as exc:
            self._fail(exc)
        except Exception as exc:
            logger.exception("agent-bridge: the poster failed")
            self._fail(FatalServerError(f"internal error ({type(exc).__name__})"))

    def _fail(self, exc: FatalServerError) -> None:
        if not self.failure.done():
            self.failure.set_result(exc)

    async def stop_waiting(self) -> None:
        """The runtime is gone: cancel every wait for an answer and flush pending replies."""
        for task in list(self._waits.values()):
            task.cancel()
        for task in list(self._waits.values()):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.poster.fail_waiting("the bridge is stopping")
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)

    @property
    def waiting(self) -> int:
        """Requests whose answers are still awaited."""
        return len(self._waits)

    def unmapped_counts(self) -> dict[str, int]:
        """Unmapped events so far: the mapper's and the bridge's own, per event type."""
        counts = collections.Counter(self.mapper.unmapped_counts)
        counts.update(self._unmapped)
        return dict(counts)

    def _count(self, event_type: str, reason: str) -> None:
        self._unmapped[event_type] += 1
        logger.warning("unmapped runtime event %s: %s", event_type, reason)
