"""An ask as plain text (compass_server/domain/ask_text.py): the words a notification (and an
email next) says, the buttons one tap answers with, and the cuts that keep them short."""

from __future__ import annotations

from hypothesis import given, strategies as st

from compass_server.domain import ask_text
from gen.compass.v1 import comms_pb2


def _ask(*questions: comms_pb2.AskQuestion) -> comms_pb2.Ask:
    return comms_pb2.Ask(ask_id="ask_1", questions=questions)


def _question(
    text: str = "Which database?",
    *labels: str,
    recommended: int | None = None,
    multiple: bool = False,
    header: str = "",
) -> comms_pb2.AskQuestion:
    question = comms_pb2.AskQuestion(
        question_id="q",
        question=text,
        header=header,
        allow_multiple=multiple,
        options=[comms_pb2.AskOption(id=str(i), label=label) for i, label in enumerate(labels)],
    )
    if recommended is not None:
        question.recommended = recommended
    return question


def test_the_summary_is_the_first_question_and_how_many_follow() -> None:
    assert ask_text.summary(_ask(_question("Which database?"))) == "Which database?"
    three = _ask(_question("Which database?"), _question("Which cache?"), _question("Ship?"))
    assert ask_text.summary(three) == "Which database? (+2 more)"
    assert ask_text.summary(_ask(_question("", header="Database"))) == "Database"
    assert ask_text.summary(_ask()) == ask_text.NO_QUESTION
    clipped = ask_text.summary(_ask(_question("x" * 50), _question()), max_chars=20)
    assert clipped == "x" * 9 + "… (+1 more)"
    assert len(clipped) == 20


def test_the_headline_says_who_asks_where() -> None:
    assert ask_text.headline("Coding Agent", "general") == "Coding Agent asks in #general"
    assert ask_text.headline("", "general") == "An agent asks in #general"


def test_one_tap_only_for_one_single_select_question_with_options() -> None:
    one = _ask(_question("Which?", "Postgres", "SQLite", "MySQL", recommended=2))
    taps = ask_text.one_tap(one, most=2)
    assert [(c.option_id, c.label, c.recommended) for c in taps] == [
        ("2", "MySQL", True),  # the recommended one first
        ("0", "Postgres", False),
    ]
    assert ask_text.one_tap(_ask(_question("Which?", "A", "B")), most=2)[0].option_id == "0"
    assert ask_text.one_tap(_ask(_question("Which?", "A", "B", multiple=True)), most=2) == ()
    assert ask_text.one_tap(_ask(_question("Why?")), most=2) == ()  # free text only
    assert ask_text.one_tap(_ask(_question("A?", "x"), _question("B?", "y")), most=2) == ()


def test_numbered_options_for_a_reply_by_number() -> None:
    question = _question("Which?", "Postgres", "SQLite", recommended=0)
    assert ask_text.numbered(question) == ("1. Postgres (recommended)", "2. SQLite")
    # An out-of-range recommendation marks nothing (as the browser).
    assert ask_text.numbered(_question("Which?", "A", recommended=5)) == ("1. A",)


@given(text=st.text(), limit=st.integers(min_value=0, max_value=300))
def test_clipping_bounds_bytes_and_keeps_a_prefix(text: str, limit: int) -> None:
    clipped = ask_text.clip_bytes(text, limit)
    assert len(clipped.encode("utf-8")) <= limit
    if len(text.encode("utf-8")) <= limit:
        assert clipped == text
    elif clipped:
        assert clipped.endswith(ask_text.ELLIPSIS)
        assert text.startswith(clipped.removesuffix(ask_text.ELLIPSIS))


@given(text=st.text(), limit=st.integers(min_value=1, max_value=300))
def test_clipping_bounds_characters(text: str, limit: int) -> None:
    clipped = ask_text.clip(text, limit)
    assert len(clipped) <= limit
    assert clipped == text or clipped.endswith(ask_text.ELLIPSIS)


def test_notes_say_what_a_question_takes() -> None:
    assert ask_text.notes(_question("Which?", "A", "B")) == ("choose one", "free text allowed")
    multi = _question("Which?", "A", "B", multiple=True)
    multi.free_text = comms_pb2.FREE_TEXT_REFUSED
    multi.answer_required = True
    assert ask_text.notes(multi) == ("choose one or more", "options only", "answer required")
    assert ask_text.notes(_question("Why?")) == ("answer in your own words",)
    # A question without options cannot refuse free text (RespondToAsk's rule).
    bare = _question("Why?")
    bare.free_text = comms_pb2.FREE_TEXT_REFUSED
    assert ask_text.takes_free_text(bare)


@given(text=st.text())
def test_one_line_has_no_line_break_and_keeps_the_words(text: str) -> None:
    line = ask_text.one_line(text)
    assert len(line.splitlines()) <= 1
    assert line == line.strip()
    assert "  " not in line
    assert line.split() == [w for w in line.split() if w]
    kept = [c for c in text if not c.isspace() and c.isprintable()]
    assert all(c in line for c in kept)
