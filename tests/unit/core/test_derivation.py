"""The typed ask derivation and the block-set rules of EventMapper (docs/spec.md §2.2)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from google.protobuf import json_format

from compass_core import ConversationUpdated, EventMapper, MapOutput, UnmappedEvent
from gen.compass.v1 import comms_pb2
from tests.unit.core._events import (
    SESSION,
    ask_end,
    ask_start,
    assistant_end,
    assistant_start,
    gallery,
    gallery_args,
    load_event,
    load_jsonl,
    question,
    role_message,
    text_update,
)


def _frame(outputs: list[MapOutput]) -> ConversationUpdated:
    assert len(outputs) == 1, outputs
    [out] = outputs
    assert isinstance(out, ConversationUpdated), out
    return out


def _kinds(frame: ConversationUpdated) -> list[str | None]:
    return [block.WhichOneof("block") for block in frame.value.blocks]


def _only_ask(args: object) -> comms_pb2.Ask:
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())
    frame = _frame(mapper.map(ask_start(args)))
    assert _kinds(frame) == ["ask"]
    return frame.value.blocks[0].ask


def test_gallery_example_becomes_one_ask_with_two_questions() -> None:
    mapper = EventMapper(session=SESSION)
    assert mapper.map(assistant_start()) == []

    frame = _frame(mapper.map(ask_start(gallery_args(), tool_call_id="toolu_1")))

    assert frame.kind == "conversationUpdated"
    assert frame.value.message_id == ""
    assert frame.value.client_message_id == f"{SESSION}-1"
    assert frame.tool_call_id == "toolu_1"
    assert frame.block_index == len(frame.value.blocks) - 1 == 0
    ask = frame.value.blocks[-1].ask
    expected = comms_pb2.Ask(
        questions=[
            comms_pb2.AskQuestion(
                question_id="db",
                question="Which database should the new service use?",
                options=[
                    comms_pb2.AskOption(
                        id="0",
                        label="Postgres",
                        description="Relational, strong consistency, JSONB support",
                    ),
                    comms_pb2.AskOption(
                        id="1",
                        label="SQLite",
                        description="Embedded, zero-ops, great for single-node",
                    ),
                    comms_pb2.AskOption(
                        id="2", label="MongoDB", description="Document store, flexible schema"
                    ),
                ],
                allow_multiple=False,
                recommended=0,
            ),
            comms_pb2.AskQuestion(
                question_id="features",
                question="Which auth flows should ship in v1?",
                options=[
                    comms_pb2.AskOption(id="0", label="Email + password"),
                    comms_pb2.AskOption(id="1", label="OAuth (Google, GitHub)"),
                    comms_pb2.AskOption(id="2", label="Magic links"),
                    comms_pb2.AskOption(
                        id="3", label="SAML SSO", description="Enterprise; can be deferred"
                    ),
                ],
                allow_multiple=True,
            ),
        ]
    )
    assert ask == expected
    # The presence bit is what tells "recommended 0" from "no recommendation".
    assert ask.questions[0].HasField("recommended")
    assert not ask.questions[1].HasField("recommended")
    assert dict(mapper.unmapped_counts) == {}


def test_gallery_ask_carries_no_id_and_no_answer_state() -> None:
    ask = _only_ask(gallery_args())
    assert ask.ask_id == ""
    assert ask.answered_by_account_id == ""
    assert ask.answered_by_name == ""
    assert not ask.HasField("answered_at")
    for q in ask.questions:
        assert list(q.chosen_option_ids) == []
        assert q.custom_text == ""
        assert q.timed_out is False
        assert q.header == ""  # absent in the gallery example


def test_option_labels_can_be_recovered_from_option_ids() -> None:
    # The bridge maps chosen ids back to the runtime's labels as options[int(id)].label.
    args = gallery_args()
    ask = _only_ask(args)
    for native, q in zip(args["questions"], ask.questions, strict=True):
        for option in q.options:
            assert q.options[int(option.id)].label == native["options"][int(option.id)]["label"]


def test_headers_previews_free_text_and_out_of_range_recommended_are_carried() -> None:
    event = load_event("ask-start-rich.json")
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())

    frame = _frame(mapper.map(event))

    assert frame.tool_call_id == "toolu_01RichAskHeadersPreviews"
    layout, name, extras = frame.value.blocks[-1].ask.questions
    assert (layout.question_id, layout.header) == ("layout", "Layout")
    assert [o.preview for o in layout.options] == [
        "compass_server/\n  comms.py\n  agent.py\n",
        "compass_server/rpc/\n  list_channels.py\n  respond_to_ask.py\n",
    ]
    assert [o.description for o in layout.options] == ["Matches the proto files", ""]
    assert layout.recommended == 0
    # A zero-option question is well-formed: answered by free text alone.
    assert (name.question_id, name.header, len(name.options)) == ("name", "Naming", 0)
    assert not name.HasField("recommended")
    # An out-of-range recommended index is carried as given; the UI highlights nothing.
    assert extras.header == ""
    assert extras.allow_multiple is False
    assert extras.recommended == 5
    assert [(o.id, o.label, o.description) for o in extras.options] == [
        ("0", "Metrics", ""),
        ("1", "Tracing", "OpenTelemetry"),
    ]


def test_free_text_only_question() -> None:
    ask = _only_ask({"questions": [question("why")]})
    assert len(ask.questions) == 1
    assert ask.questions[0].question_id == "why"
    assert list(ask.questions[0].options) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, 0), (2, 2), (1.0, 1), (-1, -1), (2**31 - 1, 2**31 - 1), (-(2**31), -(2**31)), (-0.0, 0)],
)
def test_recommended_integers_within_int32_are_carried(value: object, expected: int) -> None:
    ask = _only_ask({"questions": [question("q", "a", "b", recommended=value)]})
    assert ask.questions[0].HasField("recommended")
    assert ask.questions[0].recommended == expected


def test_explicit_defaults_map_like_absent_ones() -> None:
    args = {"questions": [question("q", "a", header="", multi=False)]}
    args["questions"][0]["options"][0].update(description="", preview="")
    ask = _only_ask(args)
    assert ask == _only_ask({"questions": [question("q", "a")]})


def test_unknown_keys_are_ignored_as_the_runtime_ignores_them() -> None:
    args: dict[str, Any] = {"questions": [question("q", "a", note="x")], "i": "intent"}
    args["questions"][0]["options"][0]["icon"] = "star"
    assert _only_ask(args) == _only_ask({"questions": [question("q", "a")]})


def test_duplicate_labels_get_distinct_option_ids() -> None:
    ask = _only_ask({"questions": [question("q", "Yes", "Yes", "")]})
    assert [(o.id, o.label) for o in ask.questions[0].options] == [
        ("0", "Yes"),
        ("1", "Yes"),
        ("2", ""),
    ]


def test_many_options_keep_counting() -> None:
    # Up to the server's limit of 100 options (one more is malformed: test_malformed.py).
    labels = [f"option {n}" for n in range(100)]
    ask = _only_ask({"questions": [question("q", *labels)]})
    assert [o.id for o in ask.questions[0].options] == [str(n) for n in range(100)]


def test_two_asks_in_one_turn_become_two_blocks() -> None:
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())
    mapper.map(assistant_end("Two things:"))
    first = _frame(mapper.map(ask_start(gallery_args(), tool_call_id="a")))
    second = _frame(mapper.map(ask_start({"questions": [question("why")]}, tool_call_id="b")))

    assert _kinds(first) == ["text", "ask"]
    assert _kinds(second) == ["text", "ask", "ask"]
    assert (first.tool_call_id, first.block_index) == ("a", 1)
    assert (second.tool_call_id, second.block_index) == ("b", 2)
    assert second.value.blocks[1] == first.value.blocks[1]
    assert second.value.blocks[2].ask.questions[0].question_id == "why"
    assert first.value.client_message_id == second.value.client_message_id == f"{SESSION}-1"


def test_ask_after_streamed_text_sits_after_the_settled_text() -> None:
    mapper = EventMapper(session=SESSION)
    call = {"type": "toolCall", "id": "c1", "name": "ask", "arguments": gallery_args()}
    assert mapper.map(assistant_start()) == []
    assert mapper.map(text_update("Let me")) == []
    assert mapper.map(text_update("Let me ask.")) == []

    settled = _frame(mapper.map(assistant_end("Let me ask.", "  ", "", tool_calls=[call])))
    asked = _frame(mapper.map(ask_start(gallery_args(), tool_call_id="c1")))

    assert _kinds(settled) == ["text"]
    assert settled.value.blocks[0].text.text == "Let me ask."
    assert _kinds(asked) == ["text", "ask"]
    assert asked.value.blocks[0] == settled.value.blocks[0]
    assert asked.block_index == 1
    assert asked.value.client_message_id == settled.value.client_message_id


def test_text_parts_settle_in_order_and_skip_thinking_and_tool_calls() -> None:
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())
    end = {
        "type": "message_end",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "one"},
                {"type": "toolCall", "id": "c", "name": "bash", "arguments": {}},
                {"type": "text", "text": "two\n"},
                {"type": "image", "data": "...", "mimeType": "image/png"},
            ],
        },
    }
    frame = _frame(mapper.map(end))
    assert [b.text.text for b in frame.value.blocks] == ["one", "two\n"]


def test_message_end_after_an_ask_keeps_the_ask_after_the_text() -> None:
    # Not the runtime's order (tools run after the message ends), but it must not lose or
    # reorder the ask: text first, then asks in arrival order.
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())
    ask_frame = _frame(mapper.map(ask_start(gallery_args())))
    settled = _frame(mapper.map(assistant_end("first", "second")))
    resettled = _frame(mapper.map(assistant_end("only")))

    assert _kinds(settled) == ["text", "text", "ask"]
    assert settled.value.blocks[2] == ask_frame.value.blocks[0]
    assert _kinds(resettled) == ["text", "ask"]
    assert resettled.value.blocks[1] == ask_frame.value.blocks[0]


def test_assistant_message_start_opens_a_new_block_set() -> None:
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())
    mapper.map(ask_start(gallery_args()))
    mapper.map(assistant_start())

    frame = _frame(mapper.map(assistant_end("next message")))

    assert _kinds(frame) == ["text"]
    assert frame.value.client_message_id == f"{SESSION}-2"


@pytest.mark.parametrize("role", ["user", "toolResult", "custom", "bashExecution"])
def test_other_roles_neither_reset_nor_emit(role: str) -> None:
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())
    mapper.map(assistant_end("text"))
    assert mapper.map(role_message("message_start", role)) == []
    assert mapper.map(role_message("message_end", role)) == []

    frame = _frame(mapper.map(ask_start(gallery_args())))

    assert _kinds(frame) == ["text", "ask"]
    assert frame.value.client_message_id == f"{SESSION}-1"


def test_ask_before_any_assistant_message_gets_a_fresh_block_set() -> None:
    mapper = EventMapper(session=SESSION)
    frame = _frame(mapper.map(ask_start(gallery_args())))
    assert _kinds(frame) == ["ask"]
    assert frame.value.client_message_id == f"{SESSION}-1"

    mapper.map(assistant_start())
    assert _frame(mapper.map(assistant_end("x"))).value.client_message_id == f"{SESSION}-2"


def test_message_end_without_a_start_settles_into_a_fresh_block_set() -> None:
    mapper = EventMapper(session=SESSION)
    frame = _frame(mapper.map(assistant_end("hello")))
    assert frame.value.client_message_id == f"{SESSION}-1"
    assert [b.text.text for b in frame.value.blocks] == ["hello"]


def test_assistant_message_with_no_text_still_emits_its_block_set() -> None:
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())
    frame = _frame(mapper.map(assistant_end()))
    assert list(frame.value.blocks) == []


def test_message_id_becomes_the_client_message_id() -> None:
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start(message_id="msg_01ABC"))
    assert _frame(mapper.map(assistant_end("a"))).value.client_message_id == "msg_01ABC"
    assert _frame(mapper.map(ask_start(gallery_args()))).value.client_message_id == "msg_01ABC"


@pytest.mark.parametrize("message_id", ["", 7, None, ["m"], "\ud800"])
def test_unusable_message_id_is_replaced_by_a_numbered_one(message_id: object) -> None:
    mapper = EventMapper(session=SESSION)
    event = assistant_start()
    event["messageId"] = message_id
    mapper.map(event)
    assert _frame(mapper.map(assistant_end("a"))).value.client_message_id == f"{SESSION}-1"


def test_numbered_ids_differ_across_mappers() -> None:
    # AppendMessage is idempotent per (channel, client_message_id): a restarted bridge must
    # not reuse the ids of the previous run.
    ids = set()
    for _ in range(50):
        mapper = EventMapper()
        mapper.map(assistant_start())
        ids.add(_frame(mapper.map(assistant_end("a"))).value.client_message_id)
    assert len(ids) == 50
    assert all(re.fullmatch(r"[0-9a-f]{16}-1", cid) for cid in ids)


def test_empty_session_is_refused() -> None:
    with pytest.raises(ValueError, match="session"):
        EventMapper(session="")


def test_frames_are_independent_snapshots() -> None:
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())
    first = _frame(mapper.map(ask_start(gallery_args())))
    kept = comms_pb2.MessageUpdated()
    kept.CopyFrom(first.value)

    # The bridge writes minted ids into frames; that must not leak into the mapper's state.
    first.value.blocks[0].ask.ask_id = "minted"
    first.value.blocks[0].ask.questions[0].chosen_option_ids.append("0")
    second = _frame(mapper.map(ask_start(gallery_args())))

    assert second.value.blocks[0] == kept.blocks[0]
    assert second.value.blocks[0].ask.ask_id == ""
    assert first.value.blocks[0].ask.ask_id == "minted"  # and later frames leave it alone


def test_every_frame_is_independent_of_the_mapper_and_of_the_others() -> None:
    # The mapper keeps its block set as plain values and builds each frame afresh: changing
    # any frame (an ask frame, a settled-text frame, an earlier or a later one) changes no
    # other frame and nothing the mapper emits afterwards.
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())
    frames = [
        _frame(mapper.map(assistant_end("Two questions:"))),
        _frame(mapper.map(ask_start(gallery_args(), tool_call_id="a"))),
        _frame(mapper.map(ask_start({"questions": [question("q", "x")]}, tool_call_id="b"))),
        _frame(mapper.map(assistant_end("Two questions, edited:"))),
    ]
    kept = [comms_pb2.MessageUpdated.FromString(f.value.SerializeToString()) for f in frames]

    for frame in frames:  # everything the bridge might do to a frame it was handed
        blocks = frame.value.blocks
        for block in blocks:
            if block.HasField("ask"):
                block.ask.ask_id = "minted"
                block.ask.questions[0].chosen_option_ids.append("0")
            else:
                block.text.text = "changed"
        blocks.add().text.text = "appended"
        frame.value.client_message_id = "changed"
    later = _frame(mapper.map(assistant_end("Two questions, edited:")))

    assert later.value == kept[-1]
    for frame, before in zip(frames, kept, strict=True):
        assert frame.value != before  # each change stayed in its own frame
        assert frame.value.blocks[-1].text.text == "appended"
        assert len(frame.value.blocks) == len(before.blocks) + 1


def test_a_bounced_ask_leaves_the_kept_asks_as_they_were() -> None:
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())
    mapper.map(assistant_end("Text"))
    first = _frame(mapper.map(ask_start(gallery_args(), tool_call_id="a")))
    bounced = mapper.map(ask_start({"questions": [question("q"), question("q")]}))
    second = _frame(mapper.map(ask_start({"questions": [question("r", "y")]}, tool_call_id="b")))

    assert bounced == [
        UnmappedEvent("tool_execution_start:ask", "questions[1].id repeats questions[0].id")
    ]
    assert _kinds(second) == ["text", "ask", "ask"]
    assert second.value.blocks[:2] == first.value.blocks
    assert second.block_index == 2


class _Str(str):
    __slots__ = ()


class _Dict(dict[str, Any]):
    pass


class _List(list[Any]):
    pass


class _Int(int):
    pass


def test_subclasses_of_the_json_types_map_like_the_json_types() -> None:
    # The mapper narrows with isinstance, so a str, dict, list or int subclass (never made by
    # json.loads, but map() takes any object) is taken as that JSON type, exactly as the
    # plain value would be; bool stays refused as a number (test_malformed.py).
    plain = load_event("ask-start-rich.json")["args"]

    def subclassed(value: object) -> object:
        if isinstance(value, dict):
            return _Dict({_Str(k): subclassed(v) for k, v in value.items()})
        if isinstance(value, list):
            return _List(subclassed(v) for v in value)
        if isinstance(value, str):
            return _Str(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return _Int(value)
        return value

    args = subclassed(plain)
    assert isinstance(args, _Dict)
    assert isinstance(args["questions"][0]["options"][0]["label"], _Str)

    assert _only_ask(args) == _only_ask(plain)
    reserved = subclassed({"questions": [question("q", "Next \u2192")]})
    assert EventMapper(session=SESSION).map(ask_start(reserved)) == [
        UnmappedEvent(
            "tool_execution_start:ask",
            "questions[0].options[0].label is the reserved runtime label 'Next \u2192'",
        )
    ]


def test_mapping_does_not_change_the_event() -> None:
    event = ask_start(gallery_args())
    before = copy.deepcopy(event)
    _only_ask(event["args"])
    EventMapper(session=SESSION).map(event)
    assert event == before


def test_frames_survive_the_json_wire() -> None:
    # The bridge posts frames over Connect; whatever the mapper builds must round-trip.
    ask = _only_ask(load_event("ask-start-rich.json")["args"])
    wire = json_format.MessageToJson(ask)
    assert json_format.Parse(wire, comms_pb2.Ask()) == ask
    assert comms_pb2.Ask.FromString(ask.SerializeToString()) == ask


def test_realistic_turn_maps_to_text_then_text_plus_ask_then_next_message() -> None:
    mapper = EventMapper(session=SESSION)
    outputs = [out for event in load_jsonl("ask-turn.jsonl") for out in mapper.map(event)]

    assert all(isinstance(out, ConversationUpdated) for out in outputs)
    frames = [out for out in outputs if isinstance(out, ConversationUpdated)]
    assert [(f.value.client_message_id, _kinds(f)) for f in frames] == [
        (f"{SESSION}-1", ["text"]),
        (f"{SESSION}-1", ["text", "ask"]),
        (f"{SESSION}-2", ["text"]),
    ]
    assert frames[0].value.blocks[0].text.text == (
        "Before I scaffold the service I need two decisions from you."
    )
    assert frames[1].tool_call_id == "toolu_01HX7Zk2q9YvRr5bqE3dJm1a"
    assert frames[1].block_index == 1
    assert frames[1].value.blocks[1].ask == _only_ask(gallery()["args"])
    assert frames[2].value.blocks[0].text.text.startswith("Postgres it is")
    assert dict(mapper.unmapped_counts) == {}


def test_realistic_rejected_ask_reports_start_and_end() -> None:
    mapper = EventMapper(session=SESSION)
    outputs = [out for event in load_jsonl("ask-rejected.jsonl") for out in mapper.map(event)]

    assert [out.kind for out in outputs] == ["conversationUpdated", "unmapped", "unmapped"]
    start, end = outputs[1], outputs[2]
    assert isinstance(start, UnmappedEvent)
    assert isinstance(end, UnmappedEvent)
    assert start.event_type == "tool_execution_start:ask"
    assert start.reason == "questions[0].options[1].label is the reserved runtime label 'Next →'"
    assert end.event_type == "tool_execution_end:ask"
    assert end.reason.startswith("ask call 'toolu_01Kq3v8s7WmC2nVd5pTz4Ab9' failed: Validation")
    assert len(end.reason) < 300
    assert dict(mapper.unmapped_counts) == {
        "tool_execution_start:ask": 1,
        "tool_execution_end:ask": 1,
    }


def test_failed_end_reason_is_bounded_and_printable() -> None:
    mapper = EventMapper(session=SESSION)
    [out] = mapper.map(ask_end(is_error=True, tool_call_id="c\ud800" * 100, text="x\ud800" * 500))
    assert isinstance(out, UnmappedEvent)
    out.reason.encode("utf-8")  # no lone surrogate survives into the reason
    assert len(out.reason) < 600
