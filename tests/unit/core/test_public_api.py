"""The public API of compass_core is exactly what docs/spec.md §2.2 spells (plus documented extras)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import pytest

import compass_core
from compass_core import ConversationUpdated, EventMapper, UnmappedEvent
from gen.compass.v1 import comms_pb2


def test_all_lists_the_public_names() -> None:
    assert set(compass_core.__all__) == {
        "ASK_END",
        "ASK_START",
        "RESERVED_OPTION_LABELS",
        "ConversationUpdated",
        "EventMapper",
        "MapOutput",
        "UnmappedEvent",
        "build_ask",  # the MCP tools' `ask` narrows the same arguments (compass_mcp.tools)
    }
    for name in compass_core.__all__:
        assert hasattr(compass_core, name)
    assert (compass_core.ASK_START, compass_core.ASK_END) == (
        "tool_execution_start:ask",
        "tool_execution_end:ask",
    )


def test_spec_constructor_shapes() -> None:
    value = comms_pb2.MessageUpdated(client_message_id="m")
    frame = ConversationUpdated(value)
    assert frame == ConversationUpdated(value=value, kind="conversationUpdated")
    assert (frame.kind, frame.tool_call_id, frame.block_index) == (
        "conversationUpdated",
        None,
        None,
    )

    unmapped = UnmappedEvent("tool_execution_start:ask", "questions is empty")
    assert unmapped == UnmappedEvent(
        event_type="tool_execution_start:ask", reason="questions is empty", kind="unmapped"
    )


@pytest.mark.parametrize("cls", [ConversationUpdated, UnmappedEvent])
def test_outputs_are_frozen_slotted_dataclasses(cls: type) -> None:
    assert dataclasses.is_dataclass(cls)
    assert hasattr(cls, "__slots__")
    params = cls.__dataclass_params__  # type: ignore[attr-defined] -- dataclass internals, read-only
    assert params.frozen


def test_outputs_cannot_be_changed() -> None:
    unmapped = UnmappedEvent("x", "y")
    with pytest.raises(dataclasses.FrozenInstanceError):
        unmapped.reason = "z"  # type: ignore[misc] -- proving it is refused


def test_unmapped_counts_is_a_mapping() -> None:
    mapper = EventMapper()
    assert isinstance(mapper.unmapped_counts, Mapping)
    assert dict(mapper.unmapped_counts) == {}


def test_frames_built_by_the_mapper_are_ordinary_frozen_dataclasses() -> None:
    # The frames the mapper returns are the ordinary frozen dataclass, with every field.
    mapper = EventMapper(session="s")
    [frame] = mapper.map(
        {
            "type": "tool_execution_start",
            "toolCallId": "c",
            "toolName": "ask",
            "args": {"questions": [{"id": "q", "question": "?", "options": []}]},
        }
    )
    [settled] = mapper.map(
        {"type": "message_end", "message": {"role": "assistant", "content": "Done."}}
    )
    assert type(frame) is ConversationUpdated
    assert type(settled) is ConversationUpdated
    assert frame == ConversationUpdated(frame.value, tool_call_id="c", block_index=0)
    assert settled == ConversationUpdated(settled.value)
    assert [f.name for f in dataclasses.fields(frame)] == [
        "value",
        "kind",
        "tool_call_id",
        "block_index",
    ]
    assert (frame.kind, frame.tool_call_id, frame.block_index) == ("conversationUpdated", "c", 0)
    assert (settled.kind, settled.tool_call_id, settled.block_index) == (
        "conversationUpdated",
        None,
        None,
    )
    assert "tool_call_id='c'" in repr(frame)
    with pytest.raises(dataclasses.FrozenInstanceError):
        frame.block_index = 1  # type: ignore[misc] -- proving it is refused
    with pytest.raises(dataclasses.FrozenInstanceError):
        settled.value = comms_pb2.MessageUpdated()  # type: ignore[misc] -- proving it is refused
    with pytest.raises(AttributeError):
        frame.__dict__  # noqa: B018 -- slotted: there is no instance dict to smuggle fields into
