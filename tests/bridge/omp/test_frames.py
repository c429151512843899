"""runtime.py: reading the runtime's UI requests, liberally and safely."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from compass_bridge.omp.frames import (
    OTHER_OPTION,
    RECOMMENDED_SUFFIX,
    AskRequest,
    CancelRequest,
    ConfirmRequest,
    DialogQuestion,
    EditorRequest,
    InputRequest,
    NoticeRequest,
    QuestionMatch,
    SelectRequest,
    UnreadableRequest,
    dialog_title,
    locate_select,
    multi_select_labels,
    parse_ui_request,
    prompt_command,
    sanitize,
    single_select_labels,
)
from tests.bridge import _events as ev
from tests.bridge.omp import _recorded


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
        "options": ["a", {"label": "b", "description": "x"}],
        "timeout": 30000,
    }
    assert parse_ui_request(select) == SelectRequest(
        request_id="s", title="t", options=("a", "b"), timeout_ms=30000.0
    )
    editor: dict[str, object] = {
        "type": "extension_ui_request",
        "id": "e",
        "method": "editor",
        "title": "t\n\nEnter your response:",
        "promptStyle": True,
    }
    assert parse_ui_request(editor) == EditorRequest(
        request_id="e", title="t\n\nEnter your response:"
    )
    confirm: dict[str, object] = {
        "type": "extension_ui_request",
        "id": "c",
        "method": "confirm",
        "title": "t",
        "message": "?",
    }
    assert parse_ui_request(confirm) == ConfirmRequest(request_id="c", title="t", message="?")
    # pi's input and prefilled editor (docs/rpc.md; `timeout` in ms, 0 or absent: none).
    text_input: dict[str, object] = {
        "type": "extension_ui_request",
        "id": "i",
        "method": "input",
        "title": "Name?",
        "placeholder": "svc",
        "timeout": 5000,
    }
    assert parse_ui_request(text_input) == InputRequest(
        request_id="i", title="Name?", placeholder="svc", timeout_ms=5000.0
    )
    prefilled: dict[str, object] = {
        "type": "extension_ui_request",
        "id": "p",
        "method": "editor",
        "title": "t",
        "prefill": "Line 1\nLine 2",
    }
    assert parse_ui_request(prefilled) == EditorRequest(
        request_id="p", title="t", prefill="Line 1\nLine 2"
    )
    notify: dict[str, object] = {
        "type": "extension_ui_request",
        "id": "n",
        "method": "notify",
        "message": "hi",
    }
    assert parse_ui_request(notify) == NoticeRequest(method="notify")


def test_the_prompt_command_is_the_runtimes_own() -> None:
    assert prompt_command("Set it up.") == {
        "id": "compass-bridge-prompt",
        "type": "prompt",
        "message": "Set it up.",
    }


# -- the runtime's display rules, against what the real runtime showed -----------------------


def _questions(recording: _recorded.Recording) -> list[DialogQuestion]:
    return [
        DialogQuestion(
            question_id=q["id"],
            text=q["question"],
            labels=tuple(o["label"] for o in q["options"]),
            multi=bool(q.get("multi", False)),
            recommended=q.get("recommended"),
        )
        for q in recording.questions()
    ]


@pytest.mark.parametrize("name", _recorded.NAMES)
def test_every_recorded_select_is_located_exactly_and_read_whole(name: str) -> None:
    recording = _recorded.load(name)
    questions = _questions(recording)
    previous = 0
    for frame in recording.dialogs():
        request = parse_ui_request(frame)
        if isinstance(request, EditorRequest):
            continue
        assert isinstance(request, SelectRequest)
        matches = locate_select(request, questions)
        assert matches, frame
        first = matches[0]
        assert first.exact, frame
        assert first.index >= previous  # the runtime walks the questions in order
        previous = first.index
        question = questions[first.index]
        shown = (multi_select_labels if question.multi else single_select_labels)(question)
        assert list(request.options[: len(shown)]) == shown
        assert request.options[-1] == OTHER_OPTION
        assert request.title.endswith(dialog_title(question, first.index, len(questions)))


def test_the_recorded_display_labels() -> None:
    (question,) = _questions(_recorded.load("dis"))
    assert single_select_labels(question) == [
        "Retry now (Recommended)",
        "Retry now (Recommended) (2)",
        "Wait",
    ]
    odd, empty, tricky = _questions(_recorded.load("odd-labels"))
    assert single_select_labels(odd) == ["A B", "Go (Recommended)", "Go"]
    assert dialog_title(odd, 0, 3) == "Pick\none of these (1/3)"
    assert single_select_labels(empty) == []
    assert multi_select_labels(tricky) == ["x", "y"]  # no recommendation badge on a multi
    request = SelectRequest(
        request_id="r",
        title="(1 selected) (1 selected) Tricky (1/2) (3/3)",
        options=("x", "y", OTHER_OPTION),
    )
    assert locate_select(request, [odd, empty, tricky]) == [
        QuestionMatch(index=2, selected=1, exact=True)
    ]


def test_a_select_whose_options_differ_matches_loosely_by_title() -> None:
    question = DialogQuestion(question_id="q", text="Pick", labels=("a", "b"), recommended=0)
    shown = SelectRequest(request_id="r", title="Pick", options=("a*", "b", OTHER_OPTION))
    assert locate_select(shown, [question]) == [QuestionMatch(index=0, selected=0, exact=False)]
    fewer = SelectRequest(request_id="r", title="Pick", options=("a", OTHER_OPTION))
    assert locate_select(fewer, [question]) == []
    prefixed = SelectRequest(
        request_id="r", title="(1 selected) Pick", options=("a (Recommended)", "b", OTHER_OPTION)
    )
    assert locate_select(prefixed, [question]) == []  # a single-select has no such prefix


labels = st.text(alphabet="ab \r()R", max_size=6).map(
    lambda text: text.replace("R", " (Recommended)")
)


@settings(max_examples=300, deadline=None)
@given(st.lists(labels, max_size=6), st.none() | st.integers(min_value=-2, max_value=7))
def test_single_select_labels_are_unique_and_keep_each_label_recognisable(
    raw: list[str], recommended: int | None
) -> None:
    question = DialogQuestion(question_id="q", text="t", labels=tuple(raw), recommended=recommended)
    shown = single_select_labels(question)
    assert len(shown) == len(raw)
    assert len(set(shown)) == len(shown)
    assert OTHER_OPTION not in shown
    for index, (label, display) in enumerate(zip(raw, shown, strict=True)):
        base = sanitize(label)
        if index == recommended and not base.endswith(RECOMMENDED_SUFFIX):
            base += RECOMMENDED_SUFFIX
        assert display == base or re.fullmatch(re.escape(base) + r" \([2-9][0-9]*\)", display)


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
        ({"id": "r", "method": "select", "options": []}, "title is not a string"),
        ({"id": "r", "method": "select", "title": "t"}, "options is not a list"),
        ({"id": "r", "method": "select", "title": "t", "options": [3]}, "options[0] has no label"),
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
            [
                "type",
                "id",
                "method",
                "questions",
                "params",
                "args",
                "targetId",
                "toolCallId",
                "title",
                "options",
                "timeout",
            ]
        ),
        json_values,
    )
)
def test_parsing_never_raises(event: dict[str, Any]) -> None:
    parse_ui_request(event)
