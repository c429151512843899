"""What EventMapper.map returns: conversation frames and counted unmapped events.

Re-exported by `compass_core`; import them from there.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:
    from gen.compass.v1 import comms_pb2


# `value` / `event_type, reason` stay positional-or-keyword because docs/spec.md §2.2 spells the
# constructors that way; everything after KW_ONLY is keyword-only, as house style wants.
@dataclass(frozen=True, slots=True)
class ConversationUpdated:
    """The full block set of one assistant message, to post to the server.

    Each frame is an independent snapshot: the mapper never touches it again, so the caller
    may change it (the bridge writes minted ask ids into later frames) without affecting the
    mapper or other frames. Frames are not hashable (protobuf messages are not).
    """

    value: comms_pb2.MessageUpdated
    """The message: `client_message_id` set, `message_id` empty, `blocks` the FULL block set."""
    _: KW_ONLY
    kind: Literal["conversationUpdated"] = "conversationUpdated"
    """Discriminator, as in docs/spec.md §2.2."""
    tool_call_id: str | None = None
    """Set only on a frame produced by an `ask` tool_execution_start: the runtime's toolCallId
    of that call (None if the event carried no string toolCallId)."""
    block_index: int | None = None
    """Set only on a frame produced by an `ask` tool_execution_start: the index in
    `value.blocks` of the Ask block that call produced. It is always the last block of that
    frame; later frames of the same message keep asks in arrival order after the text."""


@dataclass(frozen=True, slots=True)
class UnmappedEvent:
    """An event the mapper could not turn into a frame. Never dropped: each one is also
    counted in `EventMapper.unmapped_counts` under its `event_type`."""

    event_type: str
    """What failed, e.g. `tool_execution_start:ask` (malformed ask arguments) or
    `tool_execution_end:ask` (the runtime reported the ask call failed)."""
    reason: str
    """Why, naming the offending field, e.g. `questions[1].id is empty`. Carries field paths
    and type names, plus the runtime's own error text for a failed end (truncated)."""
    _: KW_ONLY
    kind: Literal["unmapped"] = "unmapped"
    """Discriminator, as in docs/spec.md §2.2."""


MapOutput: TypeAlias = ConversationUpdated | UnmappedEvent
"""One output of `EventMapper.map`."""
