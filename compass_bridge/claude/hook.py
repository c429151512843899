"""`compass claude-hook`: Claude Code's own questions answered in Compass.

Claude Code runs this command for two hooks (docs/agents/claude-code.md;
`compass claude-hook install` writes them): PreToolUse with the matcher `AskUserQuestion`,
and Elicitation (an MCP server's form). Per run, one hook event on stdin:

0. The token and the channel are checked with the server (GetChannel,
   startup.start_problem, as `agent-bridge` and `compass mcp` check them): a person's
   token, an unknown or disabled account's, a channel the agent cannot post in end the run
   at once (exit 1, below), before anything is posted.
1. The question (questions.py) becomes ONE Ask, posted alone in a message of its own
   (asks.AgentAsks.post: retried with one fresh `client_message_id`, never doubled),
   with a `deadline` at the hook's timeout (counted from when Claude Code spawned this
   process, which is when its own timer starts), so the person sees the countdown.
2. WatchAsk follows it (asks.AgentAsks.until_final: keepalives, reconnects) until it is
   final.
3. ANSWERED: the reply (the answer map, or the validated form content) is printed on stdout;
   DECLINED: the decline (`deny` with the person's reason; a declined form). Then the
   delivery receipt is reported, its payload the printed reply: Claude Code reads a hook's
   stdout once the process has exited, and hands it over as printed. Any other outcome
   (WITHDRAWN elsewhere, EXPIRED) prints nothing: Claude Code asks its own way.
4. Claude Code stopping the hook (SIGTERM to its process group: the hook's timeout, the
   session ending, the person interrupting; SIGINT and SIGHUP alike) withdraws the Ask with
   the reason and exits. So does the hook's own clock, LEAD_SECONDS before Claude Code's
   timeout: the Ask is withdrawn before the server could expire it at its deadline, and
   Claude Code, getting no reply, asks at the terminal as it would after a timeout.

The deadline: Claude Code kills a hook still running at its timeout and
discards what it printed, so the process must be gone by then whatever the server does. The
wait ends at LEAD_SECONDS before the timeout; every call after that (the withdrawal, the
end of an append under way, the receipt) is bounded by SETTLE_SECONDS and by what is left
of the timeout less EXIT_SECONDS, the time the process needs to exit. A server that accepts
a call and never answers costs the call, not the answer.

Exit status, per Claude Code's hook contract as the pinned binary (2.1.318) applies it,
checked at its terminal and headless (tests/realagent/test_claude_hooks.py):

- 0 whatever the person did (a reply printed, or none), and when there is nothing to ask
  (another tool, a form the mapper cannot present, input that is not a hook event: one line
  on stderr says why). Claude Code then asks its own way.
- 1 when the hook cannot ask in Compass (a bad token or channel, a server that refuses the
  ask or does not answer before the timeout, an ask lost track of): one line on stderr,
  `compass claude-hook: ...`, the last. For PreToolUse, Claude Code shows the person
  "PreToolUse:AskUserQuestion hook error" with "Failed with non-blocking status code:
  <stderr>" and then asks the question in the terminal: the person sees the problem AND
  gets the question. (Headless, the SDK host gets the line in the hook's `hook_response`;
  without one the model reads "Stream closed", as when the hook is silent.) For an
  Elicitation, Claude Code shows the form in the terminal (it shows no hook error there).
- Never 2, though the issue asked for it: Claude Code takes 2 as a blocking error. For
  PreToolUse it denies AskUserQuestion with the stderr as the reason: the model reads
  "PreToolUse:AskUserQuestion hook error: [command]: <stderr>" and the person is never
  asked. For an Elicitation it DECLINES the form on the person's behalf and shows nothing:
  the MCP server is told "decline", an answer nobody gave.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from compass_bridge.asks import AgentAsks, CannotAskError
from compass_bridge.claude.questions import (
    ELICITATION_EVENT,
    PRE_TOOL_USE_EVENT,
    QUESTION_TOOL,
    HookReply,
    form_reply,
    question_reply,
    read_form,
    read_questions,
    refusal_reply,
)
from compass_bridge.client import AgentClient
from compass_bridge.receipts import Receipt, delivered, not_delivered
from compass_bridge.startup import start_problem
from compass_core.ask_status import outcome, status_name
from compass_core.jsonvalues import MappingError, is_array, is_object
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine


__all__ = [
    "DEFAULT_TIMEOUT",
    "EXIT_SECONDS",
    "LEAD_SECONDS",
    "MAX_EVENT_DEPTH",
    "SETTLE_SECONDS",
    "STOPPED_REASON",
    "TIMEOUT_REASON",
    "HookOptions",
    "run",
    "started_at",
]

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT: Final = 600.0
"""Claude Code's own timeout of a command hook that names none (seconds)."""
LEAD_SECONDS: Final = 2.0
"""The hook gives up this long before Claude Code's timeout, so that its withdrawal lands
before the server's deadline sweep could expire the ask."""
SETTLE_SECONDS: Final = 5.0
"""How long the withdrawal, or the receipt after a reply, may take at most (Claude Code waits
for the process to exit before it reads the reply); less when Claude Code's timeout is
nearer (EXIT_SECONDS)."""
EXIT_SECONDS: Final = 1.0
"""What the hook keeps of Claude Code's timeout to exit after its last call: no call runs
past the timeout less this."""
MAX_EVENT_BYTES: Final = 8 * 1024 * 1024
MAX_EVENT_DEPTH: Final = 64
"""Deepest nesting of a hook event read (Claude Code's are 5 levels deep): deeper input is
not a hook event, and nothing after the parser need be wary of recursion."""

TIMEOUT_REASON: Final = "Claude Code's hook timeout ran out"
STOPPED_REASON: Final = "Claude Code stopped waiting"
GONE_REASON: Final = "the hook lost track of the ask"


@dataclass(frozen=True, slots=True, kw_only=True)
class HookOptions:
    server: str
    channel_id: str
    token: str
    timeout: float = DEFAULT_TIMEOUT
    """The hook entry's `timeout` in Claude Code's settings (seconds)."""
    max_backoff: float = 5.0


@dataclass(frozen=True, slots=True)
class _Request:
    """What one hook event asks, and how the final Ask answers it."""

    event: str
    blocks: tuple[comms_pb2.MessageBlock, ...]
    reply: Callable[[comms_pb2.Ask], HookReply]


def started_at() -> float:
    """When this process started (wall clock seconds): Claude Code's hook timeout runs from
    the spawn, a second or so before Python has imported what the hook needs. From
    /proc/self/stat (Linux; no library reads a process's own start time without psutil);
    elsewhere, now."""
    try:
        stat = Path("/proc/self/stat").read_text(encoding="ascii")
        uptime = float(Path("/proc/uptime").read_text(encoding="ascii").split()[0])
        ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22, after pid and (comm)
        age = uptime - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.time()
    return time.time() - min(max(age, 0.0), 60.0)


def _request(raw: bytes) -> _Request | None:
    """The hook event on stdin as a request; None (said why on stderr) when there is nothing
    for Compass to ask."""
    try:
        event: object = json.loads(raw)
    except ValueError:
        logger.error("stdin is not a JSON hook event")
        return None
    except RecursionError:  # deeper than the parser's recursion limit
        event = None
    if event is None or _deeper_than(event, MAX_EVENT_DEPTH):
        logger.error("stdin is not a JSON hook event (nested too deeply)")
        return None
    if not is_object(event):
        logger.error("stdin is not a JSON hook event")
        return None
    name = event.get("hook_event_name")
    if name == PRE_TOOL_USE_EVENT and event.get("tool_name") == QUESTION_TOOL:
        try:
            call = read_questions(event.get("tool_input"))
        except MappingError as exc:
            logger.error("cannot ask this AskUserQuestion in Compass: %s", exc.reason)
            return None
        return _Request(
            event=PRE_TOOL_USE_EVENT,
            blocks=(comms_pb2.MessageBlock(ask=call.ask),),
            reply=functools.partial(question_reply, call),
        )
    if name == ELICITATION_EVENT:
        form = read_form(event)
        if isinstance(form, str):
            logger.error("cannot ask this form in Compass: %s", form)
            return None
        blocks: list[comms_pb2.MessageBlock] = []
        if form.plan.intro:
            blocks.append(comms_pb2.MessageBlock(text=comms_pb2.TextBlock(text=form.plan.intro)))
        blocks.append(comms_pb2.MessageBlock(ask=form.plan.ask))
        return _Request(
            event=ELICITATION_EVENT,
            blocks=tuple(blocks),
            reply=functools.partial(form_reply, form),
        )
    logger.info("nothing to ask for hook event %r (tool %r)", name, event.get("tool_name"))
    return None


def _deeper_than(value: object, limit: int) -> bool:
    """Whether decoded JSON `value` nests arrays and objects more than `limit` deep (walked
    without recursion)."""
    level: list[object] = [value]
    for _ in range(limit + 1):
        level = [
            child
            for item in level
            for child in (item.values() if is_object(item) else item if is_array(item) else ())
        ]
        if not level:
            return False
    return True


def run(options: HookOptions, raw: bytes, started: float) -> int:
    """Answer the hook event `raw` (stdin); the exit status."""
    if len(raw) > MAX_EVENT_BYTES:
        logger.error("the hook event is larger than %d bytes", MAX_EVENT_BYTES)
        return 0
    request = _request(raw)
    if request is None:
        return 0
    return asyncio.run(_Hook(options, request, started).serve())


class _Hook:
    def __init__(self, options: HookOptions, request: _Request, started: float) -> None:
        self._options = options
        self._request = request
        self._deadline = started + options.timeout
        self._ending: asyncio.Future[str] | None = None

    def _end(self, reason: str) -> None:
        if self._ending is not None and not self._ending.done():
            self._ending.set_result(reason)

    def _on_signal(self) -> None:
        late = time.time() >= self._deadline - LEAD_SECONDS - 1.0
        self._end(TIMEOUT_REASON if late else STOPPED_REASON)

    def _left(self) -> float:
        """How long a call may take now: SETTLE_SECONDS, or less, so that the process exits
        EXIT_SECONDS before Claude Code's timeout (none when that is past)."""
        return max(0.0, min(SETTLE_SECONDS, self._deadline - EXIT_SECONDS - time.time()))

    async def serve(self) -> int:
        loop = asyncio.get_running_loop()
        self._ending = loop.create_future()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, self._on_signal)
        clock = loop.call_later(
            max(0.0, self._deadline - LEAD_SECONDS - time.time()), self._end, TIMEOUT_REASON
        )
        try:
            problem = await _unless_ending(
                start_problem(self._options.server, self._options.token, self._options.channel_id),
                self._ending,
            )
            if problem:
                return _cannot_ask(problem)
            client = AgentClient(self._options.server, self._options.token)
            return await self._ask(client, self._ending)
        finally:
            clock.cancel()

    async def _ask(self, client: AgentClient, ending: asyncio.Future[str]) -> int:
        """Post the ask, follow it, hand over its outcome; the exit status."""
        asks = AgentAsks(client, max_backoff=self._options.max_backoff)
        posted = await self._post(asks, ending)
        if not isinstance(posted, _Posted):
            return posted
        ask_id = posted.ask_id
        try:
            final = await asks.follow(
                ask_id, self._stopped, within=self._left, gone_reason=GONE_REASON, log=logger
            )
        except CannotAskError as exc:
            return _cannot_ask(str(exc))
        if final is None:
            return 0
        status = outcome(final)
        if status == comms_pb2.ASK_STATUS_ANSWERED:
            reply = self._request.reply(final)
        elif status == comms_pb2.ASK_STATUS_DECLINED:
            reply = refusal_reply(self._request.event, final)
        else:
            logger.warning(
                "ask %s ended as %s (%s); Claude Code asks its own way",
                ask_id,
                status_name(status).upper(),
                final.close_reason or "no reason given",
            )
            return 0
        await asks.report(ask_id, _hand_over(reply), within=self._left())
        return 0

    async def _post(self, asks: AgentAsks, ending: asyncio.Future[str]) -> _Posted | int:
        """Append the ask's message: the posted ask, or the exit status when it was not
        posted or Claude Code stopped waiting first (an ask stored meanwhile is withdrawn)."""
        if ending.done():  # during the check
            return self._not_posted(ending.result())
        blocks = [comms_pb2.MessageBlock() for _ in self._request.blocks]
        for block, source in zip(blocks, self._request.blocks, strict=True):
            block.CopyFrom(source)
            if block.HasField("ask"):
                block.ask.deadline.FromNanoseconds(int(self._deadline * 1e9))
                block.ask.on_timeout = comms_pb2.ASK_TIMEOUT_POLICY_FAIL
        try:
            # Stopped mid-append, the ask may be stored all the same; then it is withdrawn,
            # so half of what is left goes to the append, the rest to the withdrawal.
            ask_id, reason = await asks.post_alone(
                self._options.channel_id,
                blocks,
                prefix="claude-hook",
                stopped=self._stopped,
                grace=lambda: self._left() / 2,
            )
        except CannotAskError as exc:
            return _cannot_ask(str(exc))
        if not ask_id:
            return self._not_posted(ending.result())
        if reason is not None:
            await self._withdraw(asks, ask_id, reason)
            return 0
        return _Posted(ask_id)

    async def _stopped(self, work: asyncio.Future[Any]) -> str | None:
        """Wait for `work` or for Claude Code to stop waiting, whichever is first: the reason
        it stopped, or None."""
        ending = self._ending
        assert ending is not None  # noqa: S101 - set by serve
        await asyncio.wait({work, ending}, return_when=asyncio.FIRST_COMPLETED)
        return ending.result() if ending.done() else None

    def _not_posted(self, reason: str) -> int:
        """The exit status when Claude Code stopped waiting (`reason`) before the ask was
        posted: 1 at its timeout (the server never answered), 0 when it stopped first."""
        if reason == TIMEOUT_REASON:
            return _cannot_ask(
                f"the server at {self._options.server} did not take the ask before Claude "
                "Code's timeout"
            )
        logger.error("the ask was not posted before Claude Code stopped waiting")
        return 0

    async def _withdraw(self, asks: AgentAsks, ask_id: str, reason: str) -> None:
        await asks.withdraw_unhanded(ask_id, reason, within=self._left)


async def _unless_ending(
    work: Coroutine[object, object, str | None], ending: asyncio.Future[str]
) -> str | None:
    """`work`'s result, or None when Claude Code stopped waiting first (it is cancelled)."""
    task = asyncio.ensure_future(work)
    await asyncio.wait({task, ending}, return_when=asyncio.FIRST_COMPLETED)
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return None
    return task.result()


@dataclass(frozen=True, slots=True)
class _Posted:
    ask_id: str


def _cannot_ask(problem: str) -> int:
    """Say on stderr, in the one last line Claude Code shows its user, why the hook cannot
    ask in Compass; exit status 1 (see the module docstring)."""
    sys.stderr.write(f"compass claude-hook: cannot ask in Compass: {problem}\n")
    sys.stderr.flush()
    return 1


def _hand_over(reply: HookReply) -> Receipt:
    """Print the reply on stdout (the hook's whole output); the receipt of what Claude Code
    was handed."""
    text = json.dumps(reply.output, ensure_ascii=False, separators=(",", ":"))
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except OSError as exc:  # BrokenPipeError: Claude Code is gone
        return not_delivered(f"Claude Code did not read the hook's reply ({exc.strerror})", text)
    if reply.refused:
        return not_delivered(reply.refused, text)
    return delivered(reply.changes, text)
