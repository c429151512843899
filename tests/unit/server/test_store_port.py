"""The pure parts of the Store port: change-event payloads and row-to-proto conversion."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings, strategies as st

from compass_server.store import ChangeEvent, ChannelRow, MessageRow
from gen.compass.v1 import comms_pb2


@settings(max_examples=100, deadline=None)
@given(
    channel_id=st.text(max_size=30),
    revision=st.integers(min_value=0, max_value=2**63 - 1),
    message_id=st.text(max_size=30),
    ask_ids=st.lists(st.text(max_size=30), max_size=5).map(tuple),
)
def test_change_events_round_trip(
    channel_id: str, revision: int, message_id: str, ask_ids: tuple[str, ...]
) -> None:
    event = ChangeEvent(
        channel_id=channel_id, revision=revision, message_id=message_id, ask_ids=ask_ids
    )
    assert ChangeEvent.from_payload(event.to_payload()) == event


@settings(max_examples=100, deadline=None)
@given(
    channel_id=st.text(max_size=30),
    revision=st.integers(min_value=0, max_value=2**63 - 1),
    message_id=st.text(max_size=30),
    ask_ids=st.lists(st.text(max_size=30), max_size=5).map(tuple),
)
def test_a_payload_around_its_revision_is_the_payload(
    channel_id: str, revision: int, message_id: str, ask_ids: tuple[str, ...]
) -> None:
    # The store's answer statement sends head || revision || tail, the revision written by
    # PostgreSQL (bigint::text: plain decimal digits, like str(int)).
    head, tail = ChangeEvent.payload_around_revision(
        channel_id=channel_id, message_id=message_id, ask_ids=ask_ids
    )
    event = ChangeEvent(
        channel_id=channel_id, revision=revision, message_id=message_id, ask_ids=ask_ids
    )
    assert head + str(revision) + tail == event.to_payload()


def test_a_change_event_payload_is_small() -> None:
    event = ChangeEvent(
        channel_id="ch_" + "a" * 26,
        revision=2**62,
        message_id="msg_" + "a" * 26,
        ask_ids=("ask_" + "a" * 26,) * 64,
    )
    assert len(event.to_payload().encode()) < 8000  # PostgreSQL's NOTIFY payload limit


@pytest.mark.parametrize(
    "payload",
    [
        "[]",
        "{}",
        '{"channel_id": "c", "revision": "1", "message_id": "m", "ask_ids": []}',
        '{"channel_id": "c", "revision": true, "message_id": "m", "ask_ids": []}',
        '{"channel_id": "c", "revision": 1, "message_id": "m", "ask_ids": [1]}',
        '{"channel_id": "c", "revision": 1, "message_id": "m"}',
    ],
)
def test_malformed_payloads_are_value_errors(payload: str) -> None:
    with pytest.raises(ValueError, match="change event"):
        ChangeEvent.from_payload(payload)


def test_not_json_is_a_value_error() -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - json.JSONDecodeError is the ValueError
        ChangeEvent.from_payload("not json")


def test_message_row_to_proto() -> None:
    created = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
    updated = datetime(2030, 1, 1, 12, 5, 0, 250000, tzinfo=UTC)
    block = comms_pb2.MessageBlock(
        ask=comms_pb2.Ask(ask_id="ask_1", questions=[comms_pb2.AskQuestion(question_id="q")])
    )
    row = MessageRow(
        message_id="msg_1",
        channel_id="ch_1",
        author_account_id="acct_1",
        client_message_id="k",
        blocks=(comms_pb2.MessageBlock(text=comms_pb2.TextBlock(text="hi")), block),
        created_at=created,
        updated_at=updated,
        revision=7,
    )
    assert row.ask_ids == ("ask_1",)
    message = row.to_proto()
    assert (message.message_id, message.channel_id, message.author_account_id) == (
        "msg_1",
        "ch_1",
        "acct_1",
    )
    assert (message.client_message_id, message.revision) == ("k", 7)
    assert list(message.blocks) == list(row.blocks)
    assert message.created_at.ToDatetime(tzinfo=UTC) == created
    assert message.updated_at.ToDatetime(tzinfo=UTC) == updated
    message.blocks[1].ask.ask_id = "changed"  # a copy: the row is untouched
    assert row.blocks[1].ask.ask_id == "ask_1"


def test_channel_row_to_proto() -> None:
    row = ChannelRow(
        channel_id="ch_1",
        workspace_id="ws_1",
        name="general",
        revision=3,
        created_at=datetime.now(UTC),
    )
    assert row.to_proto() == comms_pb2.Channel(
        channel_id="ch_1", workspace_id="ws_1", name="general"
    )
