"""The ask failure surfaces of EventMapper (docs/spec.md §2.2): a failure is never dropped, and a
successful update/end adds nothing, because the block is defined by its start arguments."""

from __future__ import annotations

import pytest

from compass_core import ConversationUpdated, EventMapper, UnmappedEvent
from tests.unit.core._events import (
    SESSION,
    ask_end,
    ask_start,
    ask_update,
    assistant_end,
    assistant_start,
    gallery_args,
    question,
)

START = "tool_execution_start:ask"
END = "tool_execution_end:ask"


def _mapper_in_message() -> EventMapper:
    mapper = EventMapper(session=SESSION)
    assert mapper.map(assistant_start()) == []
    return mapper


def test_well_formed_start_then_failed_end_yields_frame_and_counted_failure() -> None:
    mapper = _mapper_in_message()

    started = mapper.map(ask_start(gallery_args()))
    ended = mapper.map(ask_end(is_error=True, text="Prompt cancelled by user"))

    assert [out.kind for out in started] == ["conversationUpdated"]
    frame = started[0]
    assert isinstance(frame, ConversationUpdated)
    assert frame.value.blocks[-1].WhichOneof("block") == "ask"
    assert len(ended) == 1
    failure = ended[0]
    assert isinstance(failure, UnmappedEvent)
    assert failure.kind == "unmapped"
    assert failure.event_type == END
    assert "call_1" in failure.reason
    assert "Prompt cancelled by user" in failure.reason
    assert dict(mapper.unmapped_counts) == {END: 1}


def test_malformed_start_then_failed_end_reports_both() -> None:
    # The runtime's own validation failure: the raw args as a start, then a failed end.
    mapper = _mapper_in_message()
    args = {"questions": [question("q", "Next →")]}

    outputs = mapper.map(ask_start(args)) + mapper.map(ask_end(is_error=True))

    assert [(out.kind, getattr(out, "event_type", None)) for out in outputs] == [
        ("unmapped", START),
        ("unmapped", END),
    ]
    assert dict(mapper.unmapped_counts) == {START: 1, END: 1}


def test_failed_end_without_a_start_is_still_counted() -> None:
    mapper = EventMapper(session=SESSION)

    outputs = mapper.map(ask_end(is_error=True))

    assert len(outputs) == 1
    assert isinstance(outputs[0], UnmappedEvent)
    assert outputs[0].event_type == END
    assert mapper.unmapped_counts[END] == 1


def test_every_failed_end_is_counted() -> None:
    mapper = _mapper_in_message()
    for n in range(1, 4):
        assert len(mapper.map(ask_end(is_error=True, tool_call_id=f"call_{n}"))) == 1
        assert mapper.unmapped_counts[END] == n


def test_successful_update_and_end_yield_nothing() -> None:
    mapper = _mapper_in_message()
    assert len(mapper.map(ask_start(gallery_args()))) == 1

    assert mapper.map(ask_update(gallery_args())) == []
    assert mapper.map(ask_end(is_error=False)) == []
    assert mapper.map(ask_end(is_error=None)) == []  # isError absent
    assert dict(mapper.unmapped_counts) == {}


@pytest.mark.parametrize("is_error", [1, "true", None, [], {"x": True}, 1.0])
def test_only_is_error_true_counts_as_a_failure(is_error: object) -> None:
    # docs/spec.md §2.2 says `isError is True`; a truthy non-boolean is not the runtime's failure flag.
    mapper = _mapper_in_message()
    assert mapper.map(ask_end(is_error=is_error)) == []
    assert dict(mapper.unmapped_counts) == {}


def test_update_and_end_do_not_change_the_block_set() -> None:
    mapper = _mapper_in_message()
    [frame] = mapper.map(ask_start(gallery_args()))
    mapper.map(ask_update({"questions": []}))
    mapper.map(ask_end(is_error=True))

    [settled] = mapper.map(assistant_end("text"))

    assert isinstance(frame, ConversationUpdated)
    assert isinstance(settled, ConversationUpdated)
    assert [b.WhichOneof("block") for b in settled.value.blocks] == ["text", "ask"]
    assert settled.value.blocks[1] == frame.value.blocks[0]


def test_failed_end_of_another_tool_is_not_an_ask_failure() -> None:
    mapper = _mapper_in_message()
    event = ask_end(is_error=True)
    event["toolName"] = "bash"
    assert mapper.map(event) == []
    assert dict(mapper.unmapped_counts) == {}


@pytest.mark.parametrize(
    "event",
    [
        {"type": "turn_start"},
        {"type": "agent_end", "messages": []},
        {"type": "auto_retry_start", "attempt": 1},
        {"type": "extension_ui_request", "id": "1", "method": "ask"},
        {"type": "tool_execution_start", "toolCallId": "c", "toolName": "bash", "args": {}},
        {"type": "no_such_event"},
        {"toolName": "ask", "args": {}},  # no type at all
        {"type": 7},
    ],
)
def test_unknown_and_other_events_yield_nothing(event: object) -> None:
    mapper = _mapper_in_message()
    assert mapper.map(event) == []
    assert dict(mapper.unmapped_counts) == {}


@pytest.mark.parametrize("event", [None, 3, "message_end", [], [{"type": "message_end"}], True])
def test_non_object_events_yield_nothing(event: object) -> None:
    mapper = EventMapper(session=SESSION)
    assert mapper.map(event) == []
    assert dict(mapper.unmapped_counts) == {}


def test_an_unexpected_error_inside_map_is_counted_and_logged_not_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import compass_core.mapper

    def broken(_args: object) -> object:
        raise RuntimeError("a bug")

    monkeypatch.setattr(compass_core.mapper, "build_ask", broken)
    mapper = EventMapper(session=SESSION)
    outputs = mapper.map(ask_start(gallery_args()))
    assert outputs == [UnmappedEvent(START, "internal error (RuntimeError)")]
    assert dict(mapper.unmapped_counts) == {START: 1}
    assert "mapping an event failed" in caplog.text
