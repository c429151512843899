"""shared_reads.SharedResponses: one response per changed row object, encoded once per codec."""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf import json_format

from compass_server.live.shared_reads import SharedResponses
from compass_server.store import MessageRow
from compass_server.transport import wire
from gen.compass.v1 import comms_pb2

NOW = datetime(2026, 12, 4, tzinfo=UTC)


def _row(text: str, revision: int = 1) -> MessageRow:
    block = comms_pb2.MessageBlock(text=comms_pb2.TextBlock(text=text))
    return MessageRow(
        message_id=f"msg_{revision}",
        channel_id="ch_1",
        author_account_id="acc_1",
        client_message_id="",
        blocks=(block,),
        created_at=NOW,
        updated_at=NOW,
        revision=revision,
    )


class Counting:
    def __init__(self, data: bytes) -> None:
        self.calls = 0
        self._data = data

    def __call__(self) -> bytes:
        self.calls += 1
        return self._data


def test_one_response_per_row_object() -> None:
    shared = SharedResponses(size=2)
    row = _row("hello")
    first = shared.response(row)
    assert first.message.blocks[0].text.text == "hello"
    assert shared.response(row) is first
    twin = _row("hello")  # equal, but another read's object
    assert shared.response(twin) is not first
    assert shared.built == 2


def test_a_shared_response_is_encoded_once_per_codec() -> None:
    shared = SharedResponses()
    response = shared.response(_row("hi"))
    json_encode, proto_encode = Counting(b"{}"), Counting(b"\x0a")
    for _ in range(5):
        assert shared.encoded(response, "json", json_encode) == b"{}"
        assert shared.encoded(response, "proto", proto_encode) == b"\x0a"
    assert (json_encode.calls, proto_encode.calls) == (1, 1)


def test_other_messages_are_never_memoized() -> None:
    shared = SharedResponses()
    shared.response(_row("hi"))
    other = comms_pb2.WatchChannelResponse(caught_up=True)
    encode = Counting(b"x")
    shared.encoded(other, "json", encode)
    shared.encoded(other, "json", encode)
    assert encode.calls == 2


def test_evicted_rows_are_built_and_encoded_again() -> None:
    shared = SharedResponses(size=1)
    row = _row("a", 1)
    first = shared.response(row)
    shared.response(_row("b", 2))  # evicts the first
    encode = Counting(b"x")
    shared.encoded(first, "json", encode)
    shared.encoded(first, "json", encode)
    assert encode.calls == 2
    assert shared.response(row) is not first


def test_codecs_use_the_memo_and_stay_correct() -> None:
    shared = SharedResponses()
    response = shared.response(_row("caf\u00e9 \u202e"))
    json_codec, proto_codec = wire.HardenedJSONCodec(shared), wire.HardenedBinaryCodec(shared)
    once = json_codec.encode(response)
    assert json_codec.encode(response) is once  # the same bytes object: encoded once
    assert once == json_format.MessageToJson(response, indent=None).encode()
    binary = proto_codec.encode(response)
    assert proto_codec.encode(response) is binary
    assert comms_pb2.WatchChannelResponse.FromString(binary) == response
