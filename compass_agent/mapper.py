"""EventMapper: the agent runtime's JSON events -> compass.v1 conversation frames (SPEC §2.2).

Block-set rules, as implemented:

- An assistant `message_start` opens a new block set; its `client_message_id` is the event's
  `messageId` when that is a non-empty string, else `<session>-<n>` (n counts the messages
  this mapper opened). Starts of other roles (user, toolResult, ...) change nothing, so an
  ask lands in the block set of the assistant message that requested it.
- An assistant `message_end` settles the message's text: one TextBlock per text part whose
  text is not blank, in content order (thinking and toolCall parts are not text). It emits
  one frame. A later end of the same message replaces the settled text. A text part the
  server could not store (a lone surrogate, a NUL character) is left out and reported.
- A well-formed `ask` tool_execution_start appends one Ask block and emits one frame. An ask
  that would be the message's 65th (`limits.MAX_ASKS_PER_MESSAGE`) is bounced like a
  malformed one: the server would refuse the whole message.
- Order inside a block set: the settled text blocks first, then the asks in arrival order.
  The runtime runs tools after the message ends, so that is also the order things happened
  in; an ask that arrives before the end keeps its place after the text once the end settles.
- An event that needs a block set when none is open (an ask before any assistant start)
  opens a fresh one with a numbered id (a message_end's own `messageId`, if usable, is
  taken only then; otherwise the id chosen at the start stays).

Every frame carries the full block set and is built afresh for the caller: the mapper keeps no
reference to it, and keeps the block set itself as plain values (texts, serialized asks).
"""

from __future__ import annotations

import logging
import secrets
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, cast

from compass_agent._ask import fill_ask
from compass_agent._json import MISSING, JsonObject, JsonValue, Missing, json_type
from compass_agent._outputs import MapOutput, UnmappedEvent, new_frame
from compass_agent.limits import MAX_ASKS_PER_MESSAGE, NUL
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from google.protobuf.internal.containers import RepeatedCompositeFieldContainer

__all__ = ["EventMapper"]

_log = logging.getLogger(__name__)

ASK_START: Final = "tool_execution_start:ask"
"""`event_type` of an UnmappedEvent for a malformed ask call."""
ASK_END: Final = "tool_execution_end:ask"
"""`event_type` of an UnmappedEvent for an ask call the runtime reported as failed."""

_MAX_RUNTIME_TEXT: Final = 200  # characters of the runtime's error text kept in a reason
_MessageUpdated: Final = comms_pb2.MessageUpdated  # one lookup less on every ask and message
_TOO_MANY_ASKS: Final = (
    f"the message already holds {MAX_ASKS_PER_MESSAGE} asks, the most one message may carry"
)


class EventMapper:
    """Maps the agent runtime's events, one at a time and in order, into MapOutputs.

    Not thread-safe: one mapper follows one runtime's event stream.
    """

    __slots__ = ("_asks", "_counts", "_counts_view", "_message_id", "_opened", "_session", "_texts")

    def __init__(self, session: str | None = None) -> None:
        """Create a mapper with no open block set.

        Args:
            session: Prefix of the numbered client_message_ids (`<session>-1`, ...) used
                when the runtime gives no `messageId`. Defaults to 16 random hex digits,
                so ids never repeat across mappers or bridge restarts (the server makes
                AppendMessage idempotent per client_message_id). Tests pass a fixed one.

        Raises:
            ValueError: `session` is empty.
        """
        if session is None:
            session = secrets.token_hex(8)
        elif not session:
            raise ValueError("session must not be empty")
        self._session = session
        self._opened = 0
        self._counts: dict[str, int] = {}
        self._counts_view = MappingProxyType(self._counts)
        # The open block set, kept as plain values that every frame is built from afresh, so a
        # frame shares nothing with the mapper or with other frames: its client_message_id
        # (None: no block set is open yet), its settled texts, and its asks in arrival order,
        # each as its serialized Ask (cheaper to take than a copy of the whole block set).
        self._message_id: str | None = None
        self._texts: Sequence[str] = ()
        self._asks: list[bytes] = []

    @property
    def unmapped_counts(self) -> Mapping[str, int]:
        """How many UnmappedEvents this mapper returned, per `event_type` (a live read-only
        view)."""
        return self._counts_view

    def map(self, event: object) -> list[MapOutput]:
        """Map one decoded JSON event. Never raises, whatever `event` is.

        Args:
            event: One event of the runtime's JSON-lines stream, as `json.loads` gives it.

        Returns:
            The frames and unmapped events it produced, in order; usually zero or one.
            Events of other types, and events of other tools, produce nothing.
        """
        kind: object = None
        try:
            if not isinstance(event, dict):
                return []
            if TYPE_CHECKING:  # see _json.JsonValue: nested values still narrow
                obj = cast("JsonObject", event)
            else:  # the same without a function call; map() runs for every event
                obj = event
            kind = obj.get("type")
            if kind == "tool_execution_start":
                if obj.get("toolName") == "ask":
                    return self._ask_start(obj)
            elif kind == "tool_execution_end":
                if obj.get("toolName") == "ask" and obj.get("isError") is True:
                    return [self._unmapped(ASK_END, _failed_end_reason(obj))]
            elif kind == "message_start":
                return self._message_start(obj)
            elif kind == "message_end":
                return self._message_end(obj)
        except Exception as exc:  # noqa: BLE001 -- SPEC §2.2: nothing may make map raise; counted, logged, never silent
            _log.exception("compass_agent: mapping an event failed")
            return [self._unmapped(_event_type(kind), f"internal error ({type(exc).__name__})")]
        return []

    # -- events -------------------------------------------------------------------------

    def _ask_start(self, event: JsonObject) -> list[MapOutput]:
        message_id = self._message_id
        if message_id is None:
            message_id = self._open(None)
        asks = self._asks
        if len(asks) >= MAX_ASKS_PER_MESSAGE:
            # The server refuses a message with more asks, and with it the whole frame.
            return [self._unmapped(ASK_START, _TOO_MANY_ASKS)]
        frame = _MessageUpdated()
        frame.client_message_id = message_id
        blocks = frame.blocks
        if self._texts or asks:  # not for the first ask of a tool-call-only message
            self._add_kept_blocks(blocks)  # the block set so far, then the new ask
        ask = blocks.add().ask
        reason = fill_ask(ask, event.get("args", MISSING))
        if reason is not None:
            # The frame is dropped and the block set is unchanged: nothing partial, anywhere.
            return [self._unmapped(ASK_START, reason)]
        asks.append(ask.SerializeToString())
        call_id = event.get("toolCallId")
        if not isinstance(call_id, str):
            call_id = None
        return [new_frame(frame, call_id, len(blocks) - 1)]

    def _message_start(self, event: JsonObject) -> list[MapOutput]:
        message = event.get("message", MISSING)
        if not isinstance(message, dict):
            return [self._unmapped("message_start", _not_object("message", message))]
        role = message.get("role", MISSING)
        if role == "assistant":
            self._open(event.get("messageId"))
            return []
        if not isinstance(role, str):
            # Without a role we cannot tell whether a new block set began; say so.
            return [self._unmapped("message_start", _not_string("message.role", role))]
        return []

    def _message_end(self, event: JsonObject) -> list[MapOutput]:
        message = event.get("message", MISSING)
        if not isinstance(message, dict):
            return [self._unmapped("message_end", _not_object("message", message))]
        role = message.get("role", MISSING)
        if role != "assistant":
            if not isinstance(role, str):
                return [self._unmapped("message_end", _not_string("message.role", role))]
            return []

        texts, problem = _settled_texts(message.get("content", MISSING))
        message_id = self._message_id
        if message_id is None:
            message_id = self._open(event.get("messageId"))
        self._texts = texts
        frame = _MessageUpdated()
        frame.client_message_id = message_id
        self._add_kept_blocks(frame.blocks)
        outputs: list[MapOutput] = [new_frame(frame)]
        if problem is not None:
            outputs.append(self._unmapped("message_end", problem))
        return outputs

    # -- state --------------------------------------------------------------------------

    def _open(self, message_id: object) -> str:
        """Open a new, empty block set and return its client_message_id."""
        if not (isinstance(message_id, str) and message_id and _encodable(message_id)):
            self._opened += 1
            message_id = f"{self._session}-{self._opened}"
        self._message_id = message_id
        self._texts = ()
        self._asks = []
        return message_id

    def _add_kept_blocks(
        self, blocks: RepeatedCompositeFieldContainer[comms_pb2.MessageBlock]
    ) -> None:
        """Append the open block set to a new frame's `blocks`: texts first, then the asks."""
        for text in self._texts:
            blocks.add().text.text = text
        for ask in self._asks:
            blocks.add().ask.MergeFromString(ask)

    def _unmapped(self, event_type: str, reason: str) -> UnmappedEvent:
        self._counts[event_type] = self._counts.get(event_type, 0) + 1
        return UnmappedEvent(event_type, reason)


def _settled_texts(content: JsonValue | Missing) -> tuple[list[str], str | None]:
    """The non-blank text parts of an assistant message's content, and the first problem.

    A malformed part is skipped and reported (the caller counts it); the good parts still
    settle, so one bad part does not hide the rest of the message.
    """
    if isinstance(content, str):  # the runtime sends parts; a bare string is one text part
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        if content is MISSING:
            return [], "message.content is missing"
        return [], f"message.content is not an array (got {json_type(content)})"
    texts: list[str] = []
    problem: str | None = None
    for index, part in enumerate(content):
        if not isinstance(part, dict):
            problem = (
                problem or f"message.content[{index}] is not an object (got {json_type(part)})"
            )
            continue
        if part.get("type") != "text":
            continue  # thinking, toolCall, image: not conversation text
        text = part.get("text", MISSING)
        if not isinstance(text, str):
            problem = problem or _not_string(f"message.content[{index}].text", text)
        elif not _encodable(text):
            problem = problem or f"message.content[{index}].text is not valid Unicode"
        elif NUL in text:  # the server refuses it, and with it the whole frame
            problem = problem or f"message.content[{index}].text contains a NUL character"
        elif text.strip():
            texts.append(text)
    return texts, problem


def _encodable(text: str) -> bool:
    # Protobuf refuses lone surrogates, which json.loads lets through from "\ud800" escapes.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _failed_end_reason(event: JsonObject) -> str:
    call_id = event.get("toolCallId")
    who = f"ask call '{_clip(call_id, 80)}'" if isinstance(call_id, str) else "ask call"
    detail = _first_text(event.get("result"))
    if detail is None:
        return f"{who} failed"
    one_line = " ".join(detail[: 4 * _MAX_RUNTIME_TEXT].split())  # for logs
    return f"{who} failed: {_clip(one_line, _MAX_RUNTIME_TEXT)}"


def _clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with lone surrogates escaped so that the reason
    can always be logged or encoded."""
    # Cut before escaping too, so a huge text costs no more than a short one.
    text = text[: limit + 1].encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def _first_text(result: JsonValue | Missing) -> str | None:
    """The first text part of a tool result (`{content: [{type: "text", text}], ...}`)."""
    if not isinstance(result, dict):
        return None
    content = result.get("content")
    if not isinstance(content, list):
        return None
    for part in content:
        if isinstance(part, dict):
            text = part.get("text")
            if part.get("type") == "text" and isinstance(text, str) and text.strip():
                return text
    return None


def _event_type(kind: object) -> str:
    # Only the four handled event types can fail inside map(); the ask ones are named as the
    # ordinary unmapped events for them are.
    if kind in ("tool_execution_start", "tool_execution_end"):
        return f"{kind}:ask"
    if kind in ("message_start", "message_end"):
        return str(kind)
    return "event"  # pragma: no cover -- defensive: no other branch of map() can raise


def _not_object(path: str, value: object) -> str:
    if value is MISSING:
        return f"{path} is missing"
    return f"{path} is not an object (got {json_type(value)})"


def _not_string(path: str, value: object) -> str:
    if value is MISSING:
        return f"{path} is missing"
    return f"{path} is not a string (got {json_type(value)})"
