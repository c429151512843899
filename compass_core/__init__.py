"""Compass agent side: maps the agent runtime's events into compass.v1 frames.

Pure by design: stdlib, google.protobuf and gen only (tests/unit/core/test_layering.py).

    from compass_core import EventMapper, ConversationUpdated, UnmappedEvent

    mapper = EventMapper()
    for output in mapper.map(json.loads(line)):
        ...  # ConversationUpdated: post the frame; UnmappedEvent: log it (also counted)

`build_ask` narrows a native ask call's arguments into one Ask (the MCP tools' `ask` takes
the same arguments). `compass_core.limits` holds the server's limits on a message's blocks;
the mapper bounces an ask that breaks one, and the server's domain rules import the same
numbers.
"""

from __future__ import annotations

from compass_core._outputs import ConversationUpdated, MapOutput, UnmappedEvent
from compass_core.ask import RESERVED_OPTION_LABELS, build_ask
from compass_core.mapper import ASK_END, ASK_START, EventMapper

__all__ = [
    "ASK_END",
    "ASK_START",
    "RESERVED_OPTION_LABELS",
    "ConversationUpdated",
    "EventMapper",
    "MapOutput",
    "UnmappedEvent",
    "build_ask",
]
