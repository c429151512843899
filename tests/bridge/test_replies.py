"""An answered Ask -> what omp reads: `replies.build_answers` (the label-keyed answers),
omp/frames.py's reply frames, and `omp/dialog.DialogDriver` (its select/editor dialogs)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings, strategies as st

from compass_bridge.omp.dialog import DialogDriver, dialog_questions
from compass_bridge.omp.frames import (
    OTHER_OPTION,
    EditorRequest,
    QuestionMatch,
    SelectRequest,
    ask_reply,
    cancelled_reply,
    locate_select,
    parse_ui_request,
    value_reply,
)
from compass_bridge.omp.slots import encode_line
from compass_bridge.replies import build_answers
from gen.compass.v1 import comms_pb2
from tests.bridge.omp import _recorded

labels = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=12)


def _gallery_ask() -> comms_pb2.Ask:
    return comms_pb2.Ask(
        ask_id="ask_1",
        answered_by_account_id="acc_human",
        questions=[
            comms_pb2.AskQuestion(
                question_id="db",
                options=[
                    comms_pb2.AskOption(id="0", label="Postgres"),
                    comms_pb2.AskOption(id="1", label="SQLite"),
                    comms_pb2.AskOption(id="2", label="MongoDB"),
                ],
                chosen_option_ids=["0"],
            ),
            comms_pb2.AskQuestion(
                question_id="features",
                allow_multiple=True,
                options=[
                    comms_pb2.AskOption(id="0", label="Email + password"),
                    comms_pb2.AskOption(id="1", label="OAuth (Google, GitHub)"),
                    comms_pb2.AskOption(id="2", label="Magic links"),
                    comms_pb2.AskOption(id="3", label="SAML SSO"),
                ],
                chosen_option_ids=["3", "1"],
                custom_text="Passkeys too",
            ),
        ],
    )


def test_the_gallery_answer_becomes_the_runtime_reply() -> None:
    reply = ask_reply("req-7", build_answers(_gallery_ask()))
    assert reply == {
        "type": "extension_ui_response",
        "id": "req-7",
        "answers": [
            {"id": "db", "selectedOptions": ["Postgres"]},
            {
                "id": "features",
                "selectedOptions": ["SAML SSO", "OAuth (Google, GitHub)"],
                "customInput": "Passkeys too",
            },
        ],
    }


def test_a_skipped_question_answers_with_no_selection_and_no_custom_input() -> None:
    ask = _gallery_ask()
    del ask.questions[0].chosen_option_ids[:]
    answers = build_answers(ask)
    assert answers.answers[0] == {"id": "db", "selectedOptions": []}
    assert answers.problems == ()


def test_a_free_text_only_answer_carries_custom_input() -> None:
    ask = comms_pb2.Ask(
        questions=[comms_pb2.AskQuestion(question_id="name", custom_text="accounts-api")]
    )
    assert build_answers(ask).answers == (
        {"id": "name", "selectedOptions": [], "customInput": "accounts-api"},
    )


def test_ids_that_are_not_option_indexes_are_left_out_and_reported() -> None:
    ask = _gallery_ask()
    ask.questions[0].chosen_option_ids[:] = ["7", "-1", " 1", "+1", "01", "x", "", "\u0661", "2"]
    answers = build_answers(ask)
    assert answers.answers[0]["selectedOptions"] == ["MongoDB"]
    assert len(answers.problems) == 8
    assert all("not an option index" in p for p in answers.problems)


def test_a_repeated_label_is_sent_once() -> None:
    ask = comms_pb2.Ask(
        questions=[
            comms_pb2.AskQuestion(
                question_id="q",
                allow_multiple=True,
                options=[
                    comms_pb2.AskOption(id="0", label="Same"),
                    comms_pb2.AskOption(id="1", label="Same"),
                ],
                chosen_option_ids=["0", "1"],
            )
        ]
    )
    answers = build_answers(ask)
    assert answers.answers[0]["selectedOptions"] == ["Same"]
    assert len(answers.problems) == 1


def test_the_request_order_decides_the_answer_order() -> None:
    answers = build_answers(_gallery_ask(), order=["features", "db", "gone"])
    assert [a["id"] for a in answers.answers] == ["features", "db", "gone"]
    assert answers.answers[2] == {"id": "gone", "selectedOptions": []}
    assert answers.problems == ("question 'gone' is not in the ask; answered as skipped",)


def test_a_cancelled_reply_names_the_request() -> None:
    assert cancelled_reply("r") == {"type": "extension_ui_response", "id": "r", "cancelled": True}


# -- properties ----------------------------------------------------------------------------


@st.composite
def answered_asks(draw: st.DrawFn) -> comms_pb2.Ask:
    """A mapper-shaped ask (option ids "0".."n-1"), answered in a way the server accepts."""
    count = draw(st.integers(min_value=1, max_value=4))
    ask = comms_pb2.Ask(ask_id="ask_x", answered_by_account_id="acc")
    for index in range(count):
        question = ask.questions.add(question_id=f"q{index}")
        for option in range(draw(st.integers(min_value=0, max_value=5))):
            question.options.add(id=str(option), label=draw(labels))
        question.allow_multiple = draw(st.booleans())
        ids = [o.id for o in question.options]
        if question.allow_multiple:
            chosen = draw(st.lists(st.sampled_from(ids), unique=True)) if ids else []
            custom = draw(labels)
        elif ids and draw(st.booleans()):
            chosen, custom = [draw(st.sampled_from(ids))], ""
        else:
            chosen, custom = [], draw(labels)
        question.chosen_option_ids[:] = chosen
        question.custom_text = custom
    return ask


def runtime_accepts(reply: dict[str, object], ask: comms_pb2.Ask) -> None:
    """The runtime's own check of an ask reply (oh-my-pi rpc-mode parseAskDialogResponse)."""
    answers = reply["answers"]
    assert isinstance(answers, list)
    assert len(answers) == len(ask.questions)
    for question, answer in zip(ask.questions, answers, strict=True):
        assert isinstance(answer, dict)
        assert answer["id"] == question.question_id
        known = [o.label for o in question.options]
        selected = answer["selectedOptions"]
        assert isinstance(selected, list)
        assert all(label in known for label in selected)
        assert len(set(selected)) == len(selected)
        custom = answer.get("customInput")
        assert custom is None or isinstance(custom, str)
        custom = (custom or "").strip() or None
        if not question.allow_multiple:
            assert len(selected) <= 1
            assert not (selected and custom is not None)


@settings(max_examples=150, deadline=None)
@given(answered_asks())
def test_every_answer_the_server_accepts_is_a_reply_the_runtime_accepts(
    ask: comms_pb2.Ask,
) -> None:
    answers = build_answers(ask)
    reply = ask_reply("req", answers)
    decoded = json.loads(encode_line(reply))
    assert decoded == reply  # survives the JSON line unchanged
    runtime_accepts(decoded, ask)
    for question, answer in zip(ask.questions, answers.answers, strict=True):
        first_of_each = list(
            dict.fromkeys(question.options[int(i)].label for i in question.chosen_option_ids)
        )
        assert answer["selectedOptions"] == first_of_each
        assert ("customInput" in answer) == bool(question.custom_text)


@settings(max_examples=150, deadline=None)
@given(answered_asks(), st.lists(st.text(max_size=4), max_size=4))
def test_junk_chosen_ids_never_crash_and_are_each_reported(
    ask: comms_pb2.Ask, junk: list[str]
) -> None:
    question = ask.questions[0]
    valid = {str(i) for i in range(len(question.options))}
    junk = [j for j in junk if j not in valid]
    question.chosen_option_ids.extend(junk)
    answers = build_answers(ask)
    assert len(answers.answers) == len(ask.questions)
    assert len([p for p in answers.problems if "not an option index" in p]) == len(junk)


# -- select/editor dialogs (oh-my-pi 18.2.3) -------------------------------------------------


def _drive_recording(name: str, answers: dict[str, tuple[list[str], str]], **kwargs: Any) -> None:
    """Answer a recording's dialogs with a DialogDriver alone; the replies must be the
    recorded ones (which made the real runtime report what the recording shows)."""
    recording = _recorded.load(name)
    ask = comms_pb2.Ask(ask_id="ask_r", answered_by_account_id="acc")
    for raw in recording.questions():
        question = ask.questions.add(
            question_id=raw["id"],
            question=raw["question"],
            allow_multiple=bool(raw.get("multi", False)),
        )
        if "recommended" in raw:
            question.recommended = raw["recommended"]
        for index, option in enumerate(raw["options"]):
            question.options.add(id=str(index), label=option["label"])
        chosen, text = answers[raw["id"]]
        question.chosen_option_ids[:] = chosen
        question.custom_text = text
    questions = dialog_questions(ask)
    driver = DialogDriver(questions, ask, **kwargs)
    replies: list[dict[str, object]] = []
    for frame in recording.dialogs():
        request = parse_ui_request(frame)
        if isinstance(request, EditorRequest):
            step = driver.editor(request)
            assert step is not None
        else:
            assert isinstance(request, SelectRequest)
            step = driver.select(request, locate_select(request, questions)[0])
        replies.append(step.reply)
    assert replies == recording.replies()


def test_a_wrong_done_guess_is_sent_again_to_unselect_it_then_the_next_guess() -> None:
    _drive_recording(
        "wrong-done",
        {"db": (["1"], ""), "features": (["2"], "")},
        done_labels=("[ok] Done selecting", "\u2714 Done selecting"),
    )


def test_with_no_done_label_left_a_multi_select_ends_as_the_dialogs_timeout() -> None:
    _drive_recording("timed-out", {"db": (["2"], ""), "features": (["3"], "")}, done_labels=())


def test_a_shown_done_label_is_used_and_learned() -> None:
    recording = _recorded.load("single-multi")
    ask = comms_pb2.Ask(
        questions=[
            comms_pb2.AskQuestion(
                question_id="features",
                allow_multiple=True,
                options=[comms_pb2.AskOption(id=str(i), label=f"l{i}") for i in range(4)],
                chosen_option_ids=["0"],
            )
        ]
    )
    driver = DialogDriver(dialog_questions(ask), ask, done_labels=())
    last = parse_ui_request(recording.dialogs()[-1])  # "(2 selected) ...", done label shown
    assert isinstance(last, SelectRequest)
    first = SelectRequest(request_id="a", title=last.title, options=last.options)
    driver.select(first, QuestionMatch(index=0, selected=0, exact=True))
    step = driver.select(last, QuestionMatch(index=0, selected=1, exact=True))
    assert step.reply["value"] == "\u2714 Done selecting"
    assert driver.done_label == "\u2714 Done selecting"


def test_an_editor_nobody_asked_for_gets_no_step() -> None:
    driver = DialogDriver((), comms_pb2.Ask())
    assert driver.editor(EditorRequest(request_id="e", title="t")) is None


def test_bad_chosen_ids_are_reported_and_the_question_answered_without_them() -> None:
    ask = _gallery_ask()
    ask.questions[0].chosen_option_ids[:] = ["9"]
    driver = DialogDriver(dialog_questions(ask), ask)
    assert driver.problems == ("question 'db': chosen id '9' is not an option index",)
    request = SelectRequest(
        request_id="s", title="(1/2)", options=("Postgres", "SQLite", "MongoDB", OTHER_OPTION)
    )
    step = driver.select(request, QuestionMatch(index=0, selected=0, exact=False))
    assert step.reply == value_reply("s", OTHER_OPTION)  # skipped: "Other" + empty text
    assert "was skipped" in step.problems[0]
    editor = driver.editor(EditorRequest(request_id="e", title=""))
    assert editor is not None
    assert editor.reply == value_reply("e", "")
