"""Compass agent side: maps the agent runtime's events into compass.v1 frames.

Pure by design: stdlib, google.protobuf and gen only (tests/unit/agent/test_layering.py).

    from compass_agent import EventMapper, ConversationUpdated, UnmappedEvent

    mapper = EventMapper()
    for output in mapper.map(json.loads(line)):
        ...  # ConversationUpdated: post the frame; UnmappedEvent: log it (also counted)

`build_ask` narrows a native ask call's arguments into one Ask (the MCP tools' `ask` takes
the same arguments). `compass_agent.limits` holds the server's limits on a message's blocks;
the mapper bounces an ask that breaks one, and the server's domain rules import the same
numbers.
"""

from __future__ import annotations

from compass_agent._ask import RESERVED_OPTION_LABELS, build_ask
from compass_agent._outputs import ConversationUpdated, MapOutput, UnmappedEvent
from compass_agent.mapper import ASK_END, ASK_START, EventMapper

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
