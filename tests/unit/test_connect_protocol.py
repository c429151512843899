"""compass_server.transport.connect_protocol: the Connect protocol's HTTP-to-code table, its codes, its
end-of-stream message and the envelope framer, as the server's telemetry and wire read them."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from compass_server.transport.connect_protocol import (
    CODES,
    FLAG_COMPRESSED,
    FLAG_END_STREAM,
    HTTP_CODES,
    EnvelopeReader,
    code_for_http_status,
    end_stream_error,
    envelope,
    error_of,
    unary_error,
)

STATUSES = range(100, 600)

# https://connectrpc.com/docs/protocol/#http-to-error-code, row by row.
PROTOCOL_TABLE = {
    400: "internal",
    401: "unauthenticated",
    403: "permission_denied",
    404: "unimplemented",
    429: "unavailable",
    502: "unavailable",
    503: "unavailable",
    504: "unavailable",
}


def test_the_table_is_the_protocols_and_every_other_status_is_unknown() -> None:
    assert dict(HTTP_CODES) == PROTOCOL_TABLE
    for status in STATUSES:
        assert code_for_http_status(status) == PROTOCOL_TABLE.get(status, "unknown"), status
    assert len(CODES) == 16
    assert set(HTTP_CODES.values()) <= CODES


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"code": "not_found", "message": "ask not found"}, ("not_found", "ask not found")),
        ({"code": "aborted"}, ("aborted", "")),
        ({"code": "internal", "message": 3}, ("internal", "")),
        ({"code": "bogus", "message": "x"}, None),  # not one of the sixteen
        ({"code": "NOT_FOUND"}, None),
        ({"code": 5}, None),
        ({"message": "slow down"}, None),
        ([], None),
        (None, None),
        ("unavailable", None),
    ],
)
def test_error_of(doc: object, expected: tuple[str, str] | None) -> None:
    assert error_of(doc) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"", None),
        (b"{}", None),
        (b'{"error": null, "metadata": {}}', None),
        (b'{"error": {"code": "not_found", "message": "gone"}}', ("not_found", "gone")),
        (b'{"error": {"code": "nope", "message": "m"}}', ("unknown", "m")),
        (b'{"error": {}}', ("unknown", "")),
        (b'{"error": "unavailable"}', ("unknown", "")),
    ],
)
def test_end_stream_error(body: bytes, expected: tuple[str, str] | None) -> None:
    assert end_stream_error(body) == expected


@pytest.mark.parametrize("body", [b"{nope", b"[]", b"null", b'"x"', b"\xff\xfe"])
def test_an_end_stream_message_that_is_not_a_json_object_is_refused(body: bytes) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - any ValueError: the contract is the type
        end_stream_error(body)


# -- the envelope framer --------------------------------------------------------------------

_messages = st.lists(
    st.tuples(st.sampled_from([0, FLAG_COMPRESSED, FLAG_END_STREAM, 0x80]), st.binary(max_size=40)),
    max_size=6,
)


def _frame_by_hand(messages: list[tuple[int, bytes]]) -> bytes:
    # Written out from the protocol text (flag byte, 4-byte big-endian length, payload), not
    # with `envelope`, so a bug there cannot hide in both sides.
    return b"".join(bytes([flags]) + len(p).to_bytes(4, "big") + p for flags, p in messages)


@settings(max_examples=200)
@given(_messages, st.data())
def test_any_chunking_of_a_body_gives_back_its_envelopes(
    messages: list[tuple[int, bytes]], data: st.DataObject
) -> None:
    body = _frame_by_hand(messages)
    assert b"".join(envelope(p, flags) for flags, p in messages) == body
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=8)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    reader = EnvelopeReader()
    read = [frame for chunk in chunks for frame in reader.feed(chunk)]
    assert [(f.flags, f.payload) for f in read] == messages
    assert all(f.length == len(f.payload or b"") for f in read)


@settings(max_examples=100)
@given(_messages, st.integers(0, 50))
def test_envelopes_not_kept_are_reported_at_their_header_and_skipped(
    messages: list[tuple[int, bytes]], limit: int
) -> None:
    body = _frame_by_hand(messages)
    reader = EnvelopeReader(keep=lambda _flags, length: length <= limit)
    seen: list[tuple[int, int, bytes | None]] = []
    for index in range(len(body)):  # a byte at a time: the worst case for the state machine
        seen += [(f.flags, f.length, f.payload) for f in reader.feed(body[index : index + 1])]
    assert seen == [(flags, len(p), p if len(p) <= limit else None) for flags, p in messages]


def test_an_oversize_envelope_is_refused_before_its_payload_arrives() -> None:
    reader = EnvelopeReader(keep=lambda _flags, length: length <= 10)
    header = bytes([0]) + (1 << 30).to_bytes(4, "big")  # announces 1 GiB
    (frame,) = reader.feed(header)
    assert (frame.flags, frame.length, frame.payload) == (0, 1 << 30, None)


def test_a_unary_error_is_its_bodys_connect_error_else_its_statuss() -> None:
    body = json.dumps({"code": "not_found", "message": "ask not found"}).encode()
    assert unary_error(404, body) == ("not_found", "ask not found")
    for unreadable in (None, b"", b"<html>", b"[]", json.dumps({"code": "teapot"}).encode()):
        assert unary_error(503, unreadable) == ("unavailable", "HTTP 503"), unreadable
    assert unary_error(400, None) == ("internal", "HTTP 400")
