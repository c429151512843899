"""runtime.py: reading the runtime's UI requests, liberally and safely."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from compass_server.bridge.runtime import (
    AskRequest,
    CancelRequest,
    DialogRequest,
    NoticeRequest,
    UnreadableRequest,
    parse_ui_request,
)
from tests.bridge import _events as ev


def test_the_runtimes_ask_request_is_read() -> None:
    questions = ev.gallery_questions()
    request = parse_ui_request(ev.ask_request("r1", questions))
    assert request == AskRequest(
        request_id="r1",
        question_ids=("db", "features"),
        question_texts=(
            "Which database should the new service use?",
            "Which auth flows should ship in v1?",
        ),
    )


@pytest.mark.parametrize(
    "event",
    [
        {
            "type": "extension_ui_request",
            "id": "r",
            "method": "ask",
            "params": {"questions": [{"id": "a"}], "toolCallId": "c"},
        },
        {
            "type": "extension_ui_request",
            "id": "r",
            "method": "ask",
            "args": {"questions": [{"id": "a"}]},
            "toolCallId": "c",
        },
    ],
)
def test_questions_and_tool_call_id_are_also_taken_from_params_or_args(
    event: dict[str, Any],
) -> None:
    request = parse_ui_request(event)
    assert request == AskRequest(
        request_id="r", question_ids=("a",), question_texts=("",), tool_call_id="c"
    )


def test_both_cancel_forms_name_the_request_they_cancel() -> None:
    real: dict[str, object] = {
        "type": "extension_ui_request",
        "id": "c9",
        "method": "cancel",
        "targetId": "r1",
    }
    assert parse_ui_request(real) == CancelRequest(target_id="r1")
    assert parse_ui_request({"type": "extension_ui_cancel", "id": "r1"}) == CancelRequest(
        target_id="r1"
    )
    assert parse_ui_request({"type": "extension_ui_cancel", "targetId": "r2"}) == CancelRequest(
        target_id="r2"
    )


def test_dialogs_and_notices_are_told_apart() -> None:
    select: dict[str, object] = {
        "type": "extension_ui_request",
        "id": "s",
        "method": "select",
        "title": "t",
        "options": [],
    }
    assert parse_ui_request(select) == DialogRequest(request_id="s", method="select")
    notify: dict[str, object] = {
        "type": "extension_ui_request",
        "id": "n",
        "method": "notify",
        "message": "hi",
    }
    assert parse_ui_request(notify) == NoticeRequest(method="notify")


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        ({"id": "r", "method": "ask"}, "questions is missing or empty"),
        ({"id": "r", "method": "ask", "questions": []}, "questions is missing or empty"),
        (
            {"id": "r", "method": "ask", "questions": [{"question": "q"}]},
            "questions[0].id is missing or not a string",
        ),
        (
            {"id": "r", "method": "ask", "questions": ["db"]},
            "questions[0].id is missing or not a string",
        ),
        ({"method": "ask", "questions": [{"id": "a"}]}, "id is missing or not a string"),
        ({"id": "r", "method": 3}, "method is not a string"),
        ({"id": "r", "method": "cancel"}, "targetId is missing"),
        ({"id": "r", "method": "teleport"}, "unknown method"),
    ],
)
def test_unreadable_requests_say_why(event: dict[str, Any], reason: str) -> None:
    request = parse_ui_request({"type": "extension_ui_request", **event})
    assert isinstance(request, UnreadableRequest)
    assert request.reason == reason


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            ["type", "id", "method", "questions", "params", "args", "targetId", "toolCallId"]
        ),
        json_values,
    )
)
def test_parsing_never_raises(event: dict[str, Any]) -> None:
    parse_ui_request(event)
