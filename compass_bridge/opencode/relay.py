"""`compass opencode ask`: one OpenCode question answered in Compass, run by Compass's
OpenCode plugin (plugin/compass.js) for each `question.asked`.

Why a process per question, and not the plugin speaking AgentService itself: the plugin
would then carry a second ask lifecycle in JavaScript (post without doubling, follow with
reconnects, withdraw, report the receipt, the retries and their errors). This way the plugin
only relays lines, and the lifecycle is the one every integration uses (asks.AgentAsks), as
`compass claude-hook` does for Claude Code. What it costs is a process start per question
(the ask appears that much later; the answer reaches OpenCode as fast: this process is
already waiting on WatchAsk). And it needs no open port: the plugin runs inside OpenCode and
answers through its in-process client, in the TUI, `opencode serve` and the desktop app alike.

The lines between the plugin and this process, one JSON object each:

- stdin, from the plugin: first the `question.asked` event (`{"id", "type", "properties"}`);
  then each event of the question's session it forwards (`question.replied`,
  `question.rejected`, `message.part.updated` of tool parts, `session.status`,
  `session.idle`, `session.error`, `session.deleted`); after this process sent its reply,
  `{"type": "compass.result", "ok": true}` or `{..., "ok": false, "error": "..."}` saying
  whether OpenCode took it. End of file: OpenCode is gone (or the plugin ended the question).
- stdout, to the plugin: at most one line, `{"reply": [[...], ...]}` (POST
  /question/{id}/reply) or `{"reject": true}` (POST /question/{id}/reject).

Per question:

0. The event is read (questions.read_request) and the token and the channel are checked
   (startup.start_problem). A question Compass cannot hold, or a problem with the token or
   the channel, is one line on stderr and exit 1, which the plugin writes to OpenCode's log
   and shows as a toast; OpenCode's own prompt stays.
1. The Ask is posted alone in a message of its own (AgentAsks.post: never doubled) and
   followed (AgentAsks.until_final), with no deadline: OpenCode waits for as long as it takes.
2. ANSWERED: the reply is printed; DECLINED: the rejection. Then the receipt is reported once
   OpenCode took it: DELIVERED with the text the model reads (the tool part's output, or
   error for a rejection, as OpenCode published it; else the text OpenCode writes for it),
   DELIVERED_WITH_CHANGES saying what was left out (a decline's reason), NOT_DELIVERED when
   OpenCode refused the reply or ended first. Any other outcome (expired, withdrawn
   elsewhere) prints nothing: OpenCode's own prompt stays.
3. OpenCode stops waiting first (the question answered or dismissed in its TUI, the tool
   call ended, the session interrupted, failed, stopped or deleted, end of file, or SIGTERM,
   SIGINT, SIGHUP): the Ask is withdrawn with that reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from compass_bridge.asks import AgentAsks, CannotAskError
from compass_bridge.client import AgentClient
from compass_bridge.opencode.questions import (
    ASKED_EVENT,
    REJECTED_TEXT,
    QuestionRequest,
    decline_changes,
    read_request,
    reply_for,
)
from compass_bridge.receipts import Receipt, delivered, not_delivered, payload_of
from compass_bridge.startup import start_problem
from compass_core.ask_status import outcome, status_name
from compass_core.jsonvalues import JsonObject, MappingError, is_object
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Callable

    from compass_bridge.client import AgentApi

__all__ = [
    "EOF",
    "GONE_REASON",
    "MAX_LINE_BYTES",
    "RESULT_SECONDS",
    "SETTLE_SECONDS",
    "STOPPED_REASON",
    "AskOptions",
    "Inbox",
    "Stopped",
    "ask",
    "run",
    "stop_reason",
]

logger = logging.getLogger(__name__)

MAX_LINE_BYTES: Final = 8 * 1024 * 1024
"""Longest line read from the plugin (an event)."""
SETTLE_SECONDS: Final = 5.0
"""How long a withdrawal or a receipt may take, and how long the tool's result is awaited
after OpenCode took the reply."""
RESULT_SECONDS: Final = 30.0
"""How long OpenCode has to say whether it took the reply."""
STOPPED_REASON: Final = "OpenCode stopped waiting"
GONE_REASON: Final = "Compass's OpenCode plugin lost track of the ask"
RESULT_TYPE: Final = "compass.result"
_ABORTED: Final = "MessageAbortedError"


class _Eof:
    """End of the plugin's lines."""


EOF: Final = _Eof()


@dataclass(frozen=True, slots=True)
class Stopped:
    """A signal to stop waiting, and why."""

    reason: str


Inbox: TypeAlias = "asyncio.Queue[JsonObject | _Eof | Stopped]"
"""What comes from the plugin (decoded lines, then EOF) and from signals, in order."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AskOptions:
    server: str
    channel_id: str
    token: str
    max_backoff: float = 5.0


def stop_reason(item: JsonObject | _Eof | Stopped, request: QuestionRequest) -> str | None:
    """Why OpenCode no longer waits for the person's answer, if `item` says so."""
    if isinstance(item, Stopped):
        return item.reason
    if isinstance(item, _Eof):
        return STOPPED_REASON
    kind = item.get("type")
    properties = item.get("properties")
    if not isinstance(kind, str) or not is_object(properties):
        return None
    if kind in {"question.replied", "question.rejected"}:
        if properties.get("requestID") != request.request_id:
            return None
        return (
            "answered in OpenCode"
            if kind == "question.replied"
            else "the question was dismissed in OpenCode"
        )
    if kind == "message.part.updated":
        return "OpenCode ended the question's tool call" if _tool_end(item, request) else None
    info = properties.get("info")
    session = properties.get("sessionID", info.get("id") if is_object(info) else None)
    if session != request.session_id:
        return None
    if kind == "session.error":
        error = properties.get("error")
        name = error.get("name") if is_object(error) else None
        if name == _ABORTED:
            return "the OpenCode session was interrupted"
        return f"the OpenCode session failed ({name if isinstance(name, str) else 'an error'})"
    if kind == "session.idle" or (
        kind == "session.status"
        and is_object(status := properties.get("status"))
        and status.get("type") == "idle"
    ):
        return "the OpenCode session stopped"
    if kind == "session.deleted":
        return "the OpenCode session was deleted"
    return None


def _tool_end(item: JsonObject, request: QuestionRequest) -> tuple[str, str] | None:
    """The question's own tool call ended, in `item` (a `message.part.updated`): (status,
    the text its model reads: the output, or the error)."""
    if not request.call_id or item.get("type") != "message.part.updated":
        return None
    properties = item.get("properties")
    part = properties.get("part") if is_object(properties) else None
    if not is_object(part) or part.get("type") != "tool":
        return None
    if part.get("callID") != request.call_id or part.get("sessionID") != request.session_id:
        return None
    if request.message_id and part.get("messageID") != request.message_id:
        return None
    state = part.get("state")
    if not is_object(state):
        return None
    status = state.get("status")
    if status == "completed":
        output = state.get("output")
        return "completed", output if isinstance(output, str) else ""
    if status == "error":
        error = state.get("error")
        return "error", error if isinstance(error, str) else ""
    return None


def _request(line: bytes) -> QuestionRequest | str:
    """The plugin's first line as a question, or why there is nothing Compass can ask."""
    try:
        event: object = json.loads(line)
    except (ValueError, RecursionError):
        return "the plugin's first line is not a JSON event"
    if not is_object(event) or event.get("type") != ASKED_EVENT:
        return f"the plugin's first line is not a {ASKED_EVENT} event"
    try:
        return read_request(event.get("properties"))
    except MappingError as exc:
        return f"the question is not one Compass can hold ({exc.reason})"
    except RecursionError:
        return "the question is nested too deeply"


async def run(options: AskOptions) -> int:
    """Answer one question from the plugin on stdin/stdout; the exit status."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    try:
        first = await reader.readline()
    except (ValueError, asyncio.LimitOverrunError):
        return _cannot_ask(f"the question is longer than {MAX_LINE_BYTES} bytes")
    request = _request(first)
    if isinstance(request, str):
        return _cannot_ask(request)
    inbox: Inbox = asyncio.Queue()
    feeder = asyncio.ensure_future(_feed(reader, inbox))
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, inbox.put_nowait, Stopped(STOPPED_REASON))
    try:
        problem = await start_problem(options.server, options.token, options.channel_id)
        if problem:
            return _cannot_ask(problem)
        client = AgentClient(options.server, options.token)
        return await ask(
            client,
            options.channel_id,
            request,
            inbox,
            send=_print,
            max_backoff=options.max_backoff,
        )
    finally:
        feeder.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await feeder


async def _feed(reader: asyncio.StreamReader, inbox: Inbox) -> None:
    """The plugin's lines into `inbox`, each a JSON object (others are skipped), then EOF."""
    while True:
        try:
            line = await reader.readline()
        except (ValueError, asyncio.LimitOverrunError):
            logger.warning("skipped a line from the plugin longer than %d bytes", MAX_LINE_BYTES)
            continue
        if not line:
            await inbox.put(EOF)
            return
        try:
            item: object = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if is_object(item):
            await inbox.put(item)


def _print(line: JsonObject) -> bool:
    """Write `line` for the plugin; whether it could be written."""
    try:
        sys.stdout.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    except OSError:  # BrokenPipeError: the plugin is gone
        return False
    return True


def _settle_seconds() -> float:
    return SETTLE_SECONDS


def _cannot_ask(problem: str) -> int:
    """One line on stderr, the plugin's to show; exit status 1."""
    sys.stderr.write(f"compass opencode ask: cannot ask in Compass: {problem}\n")
    sys.stderr.flush()
    return 1


async def ask(
    api: AgentApi,
    channel_id: str,
    request: QuestionRequest,
    inbox: Inbox,
    *,
    send: Callable[[JsonObject], bool],
    max_backoff: float = 5.0,
) -> int:
    """Post `request`'s Ask, follow it, hand its outcome to OpenCode through `send`, report
    the receipt; withdraw it when `inbox` says OpenCode stopped waiting. The exit status."""
    asks = AgentAsks(api, max_backoff=max_backoff)
    return await _Question(asks, channel_id, request, inbox, send).serve()


class _Question:
    def __init__(
        self,
        asks: AgentAsks,
        channel_id: str,
        request: QuestionRequest,
        inbox: Inbox,
        send: Callable[[JsonObject], bool],
    ) -> None:
        self._asks = asks
        self._channel_id = channel_id
        self._request = request
        self._inbox = inbox
        self._send = send

    async def _stopped_during(self, work: asyncio.Future[Any]) -> str | None:
        """Wait for `work` or for OpenCode to stop waiting, whichever is first: the reason it
        stopped, or None once `work` is done (what came meanwhile is dropped)."""
        while not work.done():
            item = asyncio.ensure_future(self._inbox.get())
            await asyncio.wait({work, item}, return_when=asyncio.FIRST_COMPLETED)
            if not item.done():
                item.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await item
                break
            reason = stop_reason(item.result(), self._request)
            if reason is not None:
                return reason
        return None

    async def serve(self) -> int:
        posted = await self._post()
        if isinstance(posted, int):
            return posted
        ask_id = posted
        try:
            final = await self._asks.follow(
                ask_id,
                self._stopped_during,
                within=_settle_seconds,
                gone_reason=GONE_REASON,
                log=logger,
            )
        except CannotAskError as exc:
            return _cannot_ask(str(exc))
        if final is None:
            return 0
        status = outcome(final)
        if status == comms_pb2.ASK_STATUS_ANSWERED:
            reply = reply_for(self._request, final)
            sent: JsonObject = {"reply": [list(answer) for answer in reply.answers]}
            receipt = await self._hand_over(sent, reply.text, reply.changes, rejecting=False)
        elif status == comms_pb2.ASK_STATUS_DECLINED:
            sent = {"reject": True}
            receipt = await self._hand_over(
                sent, REJECTED_TEXT, decline_changes(final), rejecting=True
            )
        else:
            logger.warning(
                "ask %s ended as %s (%s); OpenCode's own prompt stays",
                ask_id,
                status_name(status).upper(),
                final.close_reason or "no reason given",
            )
            return 0
        await self._asks.report(ask_id, receipt, within=SETTLE_SECONDS)
        return 0

    async def _post(self) -> str | int:
        """Append the ask's message: the ask's id, or the exit status when it was not posted
        or OpenCode stopped waiting first (an ask stored meanwhile is withdrawn)."""
        try:
            # Stopped mid-append, the ask may be stored all the same; then it is withdrawn.
            ask_id, stopped = await self._asks.post_alone(
                self._channel_id,
                [comms_pb2.MessageBlock(ask=self._request.ask)],
                prefix="opencode",
                stopped=self._stopped_during,
                grace=_settle_seconds,
            )
        except CannotAskError as exc:
            return _cannot_ask(str(exc))
        if not ask_id:
            logger.error("the ask was not posted before OpenCode stopped waiting")
            return 0
        if stopped is not None:
            await self._withdraw(ask_id, stopped)
            return 0
        return ask_id

    async def _withdraw(self, ask_id: str, reason: str) -> None:
        await self._asks.withdraw_unhanded(ask_id, reason, within=_settle_seconds)

    async def _hand_over(
        self, sent: JsonObject, text: str, changes: tuple[str, ...], *, rejecting: bool
    ) -> Receipt:
        """Send `sent` to the plugin and see it through: the receipt. `text` is what the
        model reads when OpenCode publishes nothing better."""
        payload = payload_of(sent)
        if not self._send(sent):
            return not_delivered("the plugin was gone: OpenCode did not get the answer", payload)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + RESULT_SECONDS
        taken = False
        ended: tuple[str, str] | None = None
        while not (taken and (ended is not None or not self._request.call_id)):
            try:
                item = await asyncio.wait_for(self._inbox.get(), deadline - loop.time())
            except TimeoutError:
                break
            if isinstance(item, _Eof | Stopped):
                if taken:
                    break
                return not_delivered("OpenCode ended before it took the answer", payload)
            if item.get("type") == RESULT_TYPE:
                if item.get("ok") is not True:
                    error = item.get("error")
                    why = error if isinstance(error, str) and error else "no reason given"
                    return not_delivered(f"OpenCode refused the answer: {why}", payload)
                taken = True
                deadline = min(deadline, loop.time() + SETTLE_SECONDS)
                continue
            ended = _tool_end(item, self._request) or ended
        if not taken:
            return not_delivered(
                f"OpenCode did not confirm the answer within {RESULT_SECONDS:g} s", payload
            )
        if ended is None:
            return delivered(changes, text)  # as OpenCode writes it (questions.answered_text)
        status, read = ended
        if rejecting or status == "completed":
            return delivered(changes, read)
        return not_delivered(f"the question tool failed: {read}", read)
