"""Wire facts of the compass.v1 contract, read from the generated descriptors (docs/spec.md §1.1, §1.3)."""

from __future__ import annotations

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from gen.compass.v1 import agent_pb2, comms_pb2

# docs/spec.md §1.1, exactly: message -> {field name: number}.
SPEC_FIELDS: dict[str, dict[str, int]] = {
    "Ask": {"ask_id": 1, "questions": 6},
    "AskQuestion": {
        "question_id": 1,
        "question": 2,
        "header": 3,
        "options": 4,
        "allow_multiple": 5,
        "recommended": 6,
        "chosen_option_ids": 7,
        "custom_text": 8,
        "timed_out": 9,
        # Added by issue 22 (what the agent can receive as free text), on purpose: the
        # question's field set stays closed to anything else.
        "free_text": 10,
        "answer_required": 11,
    },
    "AskOption": {"id": 1, "label": 2, "description": 3, "preview": 4},
    "RespondToAskRequest": {"ask_id": 1, "answers": 3},
    "AskQuestionAnswer": {"question_id": 1, "chosen_option_ids": 2, "custom_text": 3},
    "RespondToAskResponse": {},
    "MessageBlock": {"text": 1, "ask": 2},
    "TextBlock": {"text": 1},
    "MessageUpdated": {"message_id": 1, "client_message_id": 2, "blocks": 3},
    "Message": {
        "message_id": 1,
        "channel_id": 2,
        "author_account_id": 3,
        "client_message_id": 4,
        "blocks": 5,
        "created_at": 6,
        "updated_at": 7,
        "revision": 8,
    },
    "Channel": {"channel_id": 1, "workspace_id": 2, "name": 3},
}

# Messages whose field set the spec fixes completely (no additions allowed).
CLOSED = {
    "AskQuestion",
    "AskOption",
    "RespondToAskRequest",
    "AskQuestionAnswer",
    "RespondToAskResponse",
    "MessageBlock",
    "TextBlock",
    "MessageUpdated",
}


def _descriptor(name: str) -> Descriptor:
    return comms_pb2.DESCRIPTOR.message_types_by_name[name]


@pytest.mark.parametrize("message", sorted(SPEC_FIELDS))
def test_field_numbers_and_names_match_spec(message: str) -> None:
    fields = {f.name: f.number for f in _descriptor(message).fields}
    for name, number in SPEC_FIELDS[message].items():
        assert fields.get(name) == number, f"{message}.{name}"
    if message in CLOSED:
        assert fields == SPEC_FIELDS[message]


def _message_type(field: FieldDescriptor) -> str:
    assert field.message_type is not None, field.full_name
    return field.message_type.full_name


def test_repeated_and_scalar_kinds() -> None:
    ask = _descriptor("Ask").fields_by_name
    question = _descriptor("AskQuestion").fields_by_name
    answer = _descriptor("AskQuestionAnswer").fields_by_name
    assert ask["questions"].is_repeated
    assert _message_type(ask["questions"]) == "compass.v1.AskQuestion"
    assert _message_type(question["options"]) == "compass.v1.AskOption"
    assert question["chosen_option_ids"].is_repeated
    assert question["recommended"].type == FieldDescriptor.TYPE_INT32
    assert question["allow_multiple"].type == FieldDescriptor.TYPE_BOOL
    assert question["timed_out"].type == FieldDescriptor.TYPE_BOOL
    assert answer["chosen_option_ids"].is_repeated
    message = _descriptor("Message").fields_by_name
    assert message["revision"].type == FieldDescriptor.TYPE_INT64
    assert _message_type(message["created_at"]) == "google.protobuf.Timestamp"


def _reserved(message: str) -> tuple[set[int], set[str]]:
    proto = comms_pb2.DESCRIPTOR.serialized_pb  # round-trip through FileDescriptorProto
    from google.protobuf import descriptor_pb2

    file = descriptor_pb2.FileDescriptorProto.FromString(proto)
    (msg,) = [m for m in file.message_type if m.name == message]
    numbers = {n for r in msg.reserved_range for n in range(r.start, r.end)}  # end is exclusive
    return numbers, set(msg.reserved_name)


def test_ask_reserves_the_superseded_fields() -> None:
    numbers, names = _reserved("Ask")
    assert numbers == {2, 3, 4, 5}
    assert names == {"question", "options", "allow_multiple", "chosen_option_ids"}


def test_respond_request_reserves_the_flat_answer() -> None:
    numbers, names = _reserved("RespondToAskRequest")
    assert numbers == {2}
    assert names == {"chosen_option_ids"}


def test_recommended_has_presence() -> None:
    question = comms_pb2.AskQuestion(question_id="q")
    assert not question.HasField("recommended")
    question.recommended = 0
    assert question.HasField("recommended")
    assert question.recommended == 0
    question.ClearField("recommended")
    assert not question.HasField("recommended")
    # Other scalars have no presence: they are not optional.
    assert not _descriptor("AskQuestion").fields_by_name["header"].has_presence


def test_message_block_is_a_oneof() -> None:
    oneofs = _descriptor("MessageBlock").oneofs_by_name
    assert set(oneofs) == {"block"}
    assert {f.name for f in oneofs["block"].fields} == {"text", "ask"}
    block = comms_pb2.MessageBlock(text=comms_pb2.TextBlock(text="hi"))
    assert block.WhichOneof("block") == "text"
    block.ask.ask_id = "a"  # setting the other member switches the oneof
    assert block.WhichOneof("block") == "ask"
    assert not block.HasField("text")
    assert comms_pb2.MessageBlock().WhichOneof("block") is None


def test_services_list_every_rpc() -> None:
    comms = comms_pb2.DESCRIPTOR.services_by_name["CommsService"]
    agent = agent_pb2.DESCRIPTOR.services_by_name["AgentService"]
    assert {m.name for m in comms.methods} == {
        "GetMe",
        "ListPendingAsks",
        "ListChannels",
        "ListMessages",
        "GetAsk",
        "WatchChannel",
        "RespondToAsk",
        "DeclineAsk",
        "GetPushConfig",
        "AddPushSubscription",
        "RemovePushSubscription",
        "ListPushSubscriptions",
        "GetEmailSettings",
        "SetEmailAsks",
    }
    assert {m.name for m in agent.methods} == {
        "AppendMessage",
        "UpdateMessage",
        "WatchAsk",
        "CloseAsk",
        "GetChannel",
        "ReportDelivery",
    }
    streaming = {m.name for s in (comms, agent) for m in s.methods if m.server_streaming}
    assert streaming == {"WatchChannel", "WatchAsk"}
    assert comms.methods_by_name["RespondToAsk"].output_type.name == "RespondToAskResponse"
    assert comms_pb2.DESCRIPTOR.package == "compass.v1"
    assert agent_pb2.DESCRIPTOR.package == "compass.v1"
