"""ACP `session/update` notifications -> the runtime events EventMapper maps (pure).

The typed Ask is derived in one place, `compass_core.EventMapper`, from the runtime's
native event vocabulary (docs/spec.md §2.1). An ACP agent reports the same things differently, so
this translator rewrites them into that vocabulary:

- `agent_message_chunk` (text, with the agent's `messageId`): a chunk with a new message id
  opens a new assistant message (`message_start`), and so does a chunk after a tool call
  when the agent sends no ids (Qwen Code: the model's next reply, not more of the text
  before the call); text accumulates and is settled
  (`message_end` with the text so far) before a tool call starts, when the next message
  begins, and when the prompt turn ends (`end_turn`). Settling per chunk would post one
  update per token.
- `tool_call` of the ask tool (oh-my-pi titles it `ask` and sends the tool's arguments as
  `rawInput`; another agent's tool call whose `rawInput` is such arguments, a `questions`
  list EventMapper reads into an Ask, is taken as an ask too):
  `tool_execution_start {toolCallId, toolName: "ask", args: rawInput}`. Claude Code's
  AskUserQuestion is not one, whether announced with empty arguments or, when Claude Code's
  permission callback beats its adapter's stream, with its questions (they carry no ids):
  its form is what is answered.
  Any tool call settles the text before it (the agent's lead-in is posted before whatever
  the call asks), and its id is remembered: a form or permission request naming a call
  already seen that is not an ask is no ask tool's form (`is_other_call`).
- `tool_call_update` of such a call that completes or fails: `tool_execution_end`
  (`isError` for a failed one, `result` = `rawOutput`).

Other updates (thoughts, plans, other tools, commands, usage) carry nothing Compass shows.

`content_text` reads the text of a tool call update's content (what Qwen Code's completed
call shows: its tool's result for the model).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp.schema import (
    AgentMessageChunk,
    ContentToolCallContent,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)

from compass_core import build_ask
from compass_core.jsonvalues import MappingError, is_object
from compass_core.mapper import ASK_TOOL

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["ASK_TOOL", "AcpTranslator", "content_text"]

Event = dict[str, object]


def is_ask_call(title: str | None, raw_input: object) -> bool:
    """Whether a tool call is an ask: titled `ask`, or with `rawInput` an ask's arguments
    (a `questions` list that reads into an Ask)."""
    if title == ASK_TOOL:
        return True
    if not (is_object(raw_input) and isinstance(raw_input.get("questions"), list)):
        return False
    try:
        build_ask(raw_input)
    except MappingError:
        return False
    return True


def content_text(update: ToolCallProgress) -> str | None:
    """The text blocks of a tool call update's `content`, one per line; None without any."""
    texts = [
        entry.content.text
        for entry in update.content or ()
        if isinstance(entry, ContentToolCallContent) and isinstance(entry.content, TextContentBlock)
    ]
    return "\n".join(texts) if texts else None


class AcpTranslator:
    """Translates one ACP session's updates, in order, into native runtime events."""

    def __init__(self) -> None:
        self._open = False
        self._message_id: str | None = None
        self._text: list[str] = []
        self._unsettled = False
        self._after_call = False
        """A tool call followed the open message's text, and the agent sends no message ids:
        the next text is a new message."""
        self._ask_calls: set[str] = set()
        self._other_calls: set[str] = set()

    def translate(self, update: object) -> list[Event]:
        """The native events for one `session/update` (its `update` member, as parsed)."""
        if isinstance(update, AgentMessageChunk):
            return self._chunk(update)
        if isinstance(update, ToolCallStart):
            events = self._settle()
            self._after_call = self._message_id is None
            if not is_ask_call(update.title, update.raw_input):
                self._other_calls.add(update.tool_call_id)
                return events
            if not self._open:
                events += self._start(None)
                self._after_call = True
            self._ask_calls.add(update.tool_call_id)
            events.append(
                {
                    "type": "tool_execution_start",
                    "toolCallId": update.tool_call_id,
                    "toolName": ASK_TOOL,
                    "args": update.raw_input,
                }
            )
            return events
        if isinstance(update, ToolCallProgress):
            if update.tool_call_id not in self._ask_calls:
                return []
            if update.status not in {"completed", "failed"}:
                return []
            self._ask_calls.discard(update.tool_call_id)
            return [
                {
                    "type": "tool_execution_end",
                    "toolCallId": update.tool_call_id,
                    "toolName": ASK_TOOL,
                    "isError": update.status == "failed",
                    "result": update.raw_output,
                }
            ]
        return []

    def end_turn(self) -> list[Event]:
        """The prompt turn ended: settle the open message's text."""
        return self._settle()

    def settle(self) -> list[Event]:
        """Settle the open message's text now (the bridge posts a message of its own next)."""
        return self._settle()

    def is_other_call(self, tool_call_id: str) -> bool:
        """A tool call of this session that is not an ask call."""
        return tool_call_id in self._other_calls

    def _chunk(self, chunk: AgentMessageChunk) -> list[Event]:
        content = chunk.content
        if not isinstance(content, TextContentBlock) or not content.text:
            return []  # an empty chunk (Qwen Code's carrier of usage figures) adds nothing
        events: list[Event] = []
        message_id = chunk.message_id
        if (
            not self._open
            or (message_id is not None and message_id != self._message_id)
            or (message_id is None and self._after_call)
        ):
            events += self._settle()
            events += self._start(message_id)
        self._text.append(content.text)
        self._unsettled = True
        return events

    def _start(self, message_id: str | None) -> list[Event]:
        self._open = True
        self._after_call = False
        self._message_id = message_id
        self._text = []
        self._unsettled = False
        event: Event = {"type": "message_start", "message": {"role": "assistant"}}
        if message_id is not None:
            event["messageId"] = message_id
        return [event]

    def _settle(self) -> list[Event]:
        if not self._open or not self._unsettled:
            return []
        self._unsettled = False
        message: Mapping[str, object] = {
            "role": "assistant",
            "content": [{"type": "text", "text": "".join(self._text)}],
        }
        return [{"type": "message_end", "message": dict(message)}]
