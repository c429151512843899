"""EventMapper: the agent runtime's JSON events -> compass.v1 conversation frames (docs/spec.md §2.2).

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
reference to it, and keeps the block set itself as texts and Ask messages that each frame copies.
"""

from __future__ import annotations

import logging
import secrets
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from compass_core._outputs import ConversationUpdated, MapOutput, UnmappedEvent
from compass_core.ask import build_ask
from compass_core.jsonvalues import (
    MISSING,
    JsonObject,
    MappingError,
    as_array,
    as_object,
    as_str,
    is_array,
    is_object,
)
from compass_core.limits import MAX_ASKS_PER_MESSAGE, NUL
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["EventMapper"]

_log = logging.getLogger(__name__)

ASK_TOOL: Final = "ask"
"""The `toolName` of the runtime's ask tool (oh-my-pi's; ACP agents' calls are renamed to it)."""
ASK_START: Final = "tool_execution_start:ask"
"""`event_type` of an UnmappedEvent for a malformed ask call."""
ASK_END: Final = "tool_execution_end:ask"
"""`event_type` of an UnmappedEvent for an ask call the runtime reported as failed."""

_MAX_RUNTIME_TEXT: Final = 200  # characters of the runtime's error text kept in a reason
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
        # The open block set, from which every frame is built afresh (a frame shares nothing
        # with the mapper or with other frames): its client_message_id (None: no block set is
        # open yet), its settled texts, and its asks in arrival order.
        self._message_id: str | None = None
        self._texts: list[str] = []
        self._asks: list[comms_pb2.Ask] = []

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
        if not is_object(event):
            return []
        event_type = "event"  # until routed; only a handler can fail in practice
        try:
            route = self._route(event)
            if route is None:
                return []
            event_type, handle = route
            return handle(event)
        except MappingError as exc:
            return [self._unmapped(event_type, exc.reason)]
        except Exception as exc:  # noqa: BLE001 -- docs/spec.md §2.2: nothing may make map raise; counted, logged, never silent
            _log.exception("compass_core: mapping an event failed")
            return [self._unmapped(event_type, f"internal error ({type(exc).__name__})")]

    def _route(
        self, event: JsonObject
    ) -> tuple[str, Callable[[JsonObject], list[MapOutput]]] | None:
        """The UnmappedEvent `event_type` and the handler for `event`; None to ignore it."""
        kind = event.get("type")
        if kind == "message_start":
            return "message_start", self._message_start
        if kind == "message_end":
            return "message_end", self._message_end
        if event.get("toolName") != ASK_TOOL:
            return None
        if kind == "tool_execution_start":
            return ASK_START, self._ask_start
        if kind == "tool_execution_end":
            return ASK_END, self._ask_end
        return None  # updates change nothing: the block is defined by its start args

    # -- events: each returns its outputs or raises MappingError ------------------------

    def _ask_start(self, event: JsonObject) -> list[MapOutput]:
        message_id = self._block_set(None)
        if len(self._asks) >= MAX_ASKS_PER_MESSAGE:
            # The server refuses a message with more asks, and with it the whole frame.
            return [self._unmapped(ASK_START, _TOO_MANY_ASKS)]
        # Raises before anything changes when the args are malformed: nothing partial.
        self._asks.append(build_ask(event.get("args", MISSING)))
        call_id = event.get("toolCallId")
        return [
            ConversationUpdated(
                self._frame(message_id),
                tool_call_id=call_id if isinstance(call_id, str) else None,
                block_index=len(self._texts) + len(self._asks) - 1,
            )
        ]

    def _ask_end(self, event: JsonObject) -> list[MapOutput]:
        if event.get("isError") is not True:
            return []  # a successful call changes nothing
        return [self._unmapped(ASK_END, _failed_end_reason(event))]

    def _message_start(self, event: JsonObject) -> list[MapOutput]:
        if _assistant_message(event) is not None:
            self._open(event.get("messageId"))
        return []

    def _message_end(self, event: JsonObject) -> list[MapOutput]:
        message = _assistant_message(event)
        if message is None:
            return []
        texts, problem = _settled_texts(message)
        message_id = self._block_set(event.get("messageId"))
        self._texts = texts
        outputs: list[MapOutput] = [ConversationUpdated(self._frame(message_id))]
        if problem is not None:
            outputs.append(self._unmapped("message_end", problem))
        return outputs

    # -- state --------------------------------------------------------------------------

    def _block_set(self, message_id: object) -> str:
        """The open block set's client_message_id; opens one (named `message_id` if that is
        usable) when none is open."""
        if self._message_id is None:
            return self._open(message_id)
        return self._message_id

    def _open(self, message_id: object) -> str:
        """Open a new, empty block set and return its client_message_id."""
        if not (isinstance(message_id, str) and message_id and _encodable(message_id)):
            self._opened += 1
            message_id = f"{self._session}-{self._opened}"
        self._message_id = message_id
        self._texts = []
        self._asks = []
        return message_id

    def _frame(self, message_id: str) -> comms_pb2.MessageUpdated:
        """A new MessageUpdated with the open block set: texts first, then the asks.

        `blocks.add(ask=...)` copies the Ask, so the frame shares nothing with the mapper.
        """
        frame = comms_pb2.MessageUpdated(client_message_id=message_id)
        for text in self._texts:
            frame.blocks.add(text=comms_pb2.TextBlock(text=text))
        for ask in self._asks:
            frame.blocks.add(ask=ask)
        return frame

    def _unmapped(self, event_type: str, reason: str) -> UnmappedEvent:
        self._counts[event_type] = self._counts.get(event_type, 0) + 1
        return UnmappedEvent(event_type, reason)


def _assistant_message(event: JsonObject) -> JsonObject | None:
    """The `message` of a message event when it is the assistant's; None for other roles.

    Raises:
        MappingError: `message` is not an object, or its role is not a string: without a
            role we cannot tell whether a new block set began, so that is reported.
    """
    message = as_object(event.get("message", MISSING), "message")
    role = as_str(message.get("role", MISSING), "message.role")
    return message if role == "assistant" else None


def _settled_texts(message: JsonObject) -> tuple[list[str], str | None]:
    """The non-blank text parts of an assistant message's content, and the first problem.

    A malformed part is skipped and reported (the caller counts it); the good parts still
    settle, so one bad part does not hide the rest of the message.
    """
    content = message.get("content", MISSING)
    if isinstance(content, str):  # the runtime sends parts; a bare string is one text part
        content = [{"type": "text", "text": content}]
    try:
        parts = as_array(content, "message.content")
    except MappingError as exc:
        return [], exc.reason
    texts: list[str] = []
    problem: str | None = None
    for index, part in enumerate(parts):
        try:
            text = _part_text(part, f"message.content[{index}]")
        except MappingError as exc:
            problem = problem or exc.reason
            continue
        if text is not None and text.strip():
            texts.append(text)
    return texts, problem


def _part_text(value: object, path: str) -> str | None:
    """The text of one content part; None for a part that is not text (thinking, toolCall,
    image)."""
    part = as_object(value, path)
    if part.get("type") != "text":
        return None
    path = f"{path}.text"
    text = as_str(part.get("text", MISSING), path)
    if not _encodable(text):
        raise MappingError(path, "is not valid Unicode")
    if NUL in text:  # the server refuses it, and with it the whole frame
        raise MappingError(path, "contains a NUL character")
    return text


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


def _first_text(result: object) -> str | None:
    """The first text part of a tool result (`{content: [{type: "text", text}], ...}`)."""
    if not is_object(result):
        return None
    content = result.get("content")
    if not is_array(content):
        return None
    for part in content:
        if is_object(part):
            text = part.get("text")
            if part.get("type") == "text" and isinstance(text, str) and text.strip():
                return text
    return None
