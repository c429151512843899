"""The reply grammar (compass_server/domain/email_reply.py): every rule and refusal by example,
a round trip from the rendered form to the answers, and what every reading hands
RespondToAsk passing the judge's own rules (domain/answers.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from compass_core.limits import MAX_CLOSE_REASON_LENGTH
from compass_server.domain import ask_text
from compass_server.domain.answers import check_answer_request, validate_answers
from compass_server.domain.email_reply import (
    Answered,
    Declined,
    NotUnderstood,
    grammar_help,
    read_reply,
)
from compass_server.domain.email_text import ask_mail
from compass_server.domain.limits import MAX_CUSTOM_TEXT_LENGTH
from compass_server.domain.outcomes import check_decline_request
from compass_server.domain.verdicts import judge_answer
from gen.compass.v1 import comms_pb2
from tests.unit.server._strategies import asks, email_asks, email_replies

ACCEPTED = comms_pb2.FREE_TEXT_ACCEPTED
REFUSED = comms_pb2.FREE_TEXT_REFUSED
INSTEAD = comms_pb2.FREE_TEXT_INSTEAD_OF_PICKS


def q(
    qid: str,
    *labels: str,
    multi: bool = False,
    free_text: comms_pb2.FreeText = ACCEPTED,
    required: bool = False,
) -> comms_pb2.AskQuestion:
    return comms_pb2.AskQuestion(
        question_id=qid,
        question=f"{qid}?",
        options=[
            comms_pb2.AskOption(id=f"{qid}-{i}", label=label) for i, label in enumerate(labels)
        ],
        allow_multiple=multi,
        free_text=free_text,
        answer_required=required,
    )


def a(qid: str, *chosen: str, text: str = "") -> comms_pb2.AskQuestionAnswer:
    return comms_pb2.AskQuestionAnswer(question_id=qid, chosen_option_ids=chosen, custom_text=text)


def ask(*questions: comms_pb2.AskQuestion) -> comms_pb2.Ask:
    return comms_pb2.Ask(ask_id="ask_1", questions=questions)


DB = q("db", "Postgres", "SQLite", "MySQL")
ONE = ask(DB)
SEVERAL = ask(
    DB,
    q("auth", "Password", "SSO", "OTP", multi=True),
    q("why"),
    q("pick", "left", "right", free_text=REFUSED, required=True),
)


def answered(reading: object) -> list[comms_pb2.AskQuestionAnswer]:
    assert isinstance(reading, Answered), reading
    return list(reading.answers)


def problems(reading: object) -> tuple[str, ...]:
    assert isinstance(reading, NotUnderstood), reading
    return reading.problems


# ---------------------------------------------------------------------------------------------
# One question


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("2", a("db", "db-1"), id="number"),
        pytest.param("  2  \n", a("db", "db-1"), id="number-spaced"),
        pytest.param("sqlite", a("db", "db-1"), id="label-any-case"),
        pytest.param("  POSTGRES ", a("db", "db-0"), id="label-trimmed"),
        pytest.param("use mongo", a("db", text="use mongo"), id="own-words"),
        pytest.param("line one\n\nline two", a("db", text="line one\n\nline two"), id="own-lines"),
        pytest.param("skip", a("db"), id="skip"),
        pytest.param("1: 3", a("db", "db-2"), id="the-line-form"),
        pytest.param("2.", a("db", "db-1"), id="number-full-stop"),
        pytest.param("3 days", a("db", text="3 days"), id="a-number-in-words"),
        pytest.param("\uff12", a("db", "db-1"), id="full-width-digit"),
    ],
)
def test_one_question(text: str, expected: comms_pb2.AskQuestionAnswer) -> None:
    assert answered(read_reply(ONE, text)) == [expected]


def test_one_multi_select_question_takes_several_numbers_and_words_with_them() -> None:
    multi = ask(q("auth", "Password", "SSO", "OTP", multi=True))
    assert answered(read_reply(multi, "1, 3")) == [a("auth", "auth-0", "auth-2")]
    assert answered(read_reply(multi, "3 1 3")) == [a("auth", "auth-2", "auth-0")]
    assert answered(read_reply(multi, "1, 3 + and Redis")) == [
        a("auth", "auth-0", "auth-2", text="and Redis")
    ]
    assert answered(read_reply(multi, "sso")) == [a("auth", "auth-1")]


def test_options_and_words_together_are_refused_on_a_single_select_question() -> None:
    assert problems(read_reply(ONE, "2 + but with backups")) == (
        "The question takes one option or your own words, not both.",
    )


def test_a_question_without_options_reads_everything_as_words() -> None:
    why = ask(q("why"))
    assert answered(read_reply(why, "2")) == [a("why", text="2")]
    assert answered(read_reply(why, "1, 3")) == [a("why", text="1, 3")]


def test_a_number_is_an_option_number_even_where_a_label_is_that_number() -> None:
    digits = ask(q("n", "2", "1", "7"))
    assert answered(read_reply(digits, "2")) == [a("n", "n-1")]  # option 2, labelled "1"
    assert answered(read_reply(digits, "1")) == [a("n", "n-0")]
    assert problems(read_reply(digits, "7")) == ("The question has no option 7 (it has 1-3).",)


def test_a_label_beats_the_words_skip_and_decline() -> None:
    words = ask(q("w", "Skip", "Decline", "other"))
    assert answered(read_reply(words, "skip")) == [a("w", "w-0")]
    assert answered(read_reply(words, "decline")) == [a("w", "w-1")]
    assert read_reply(words, "decline: not mine") == Declined(reason="not mine")


def test_labels_with_colons_and_commas_are_labels() -> None:
    odd = ask(q("o", "a: b", "1, 2", "x + y", multi=True))
    assert answered(read_reply(odd, "A:  B")) == [a("o", "o-0")]
    assert answered(read_reply(odd, "x + y")) == [a("o", "o-2")]
    # "1, 2" is a list of numbers first: options 1 and 2.
    assert answered(read_reply(odd, "1, 2")) == [a("o", "o-0", "o-1")]


# ---------------------------------------------------------------------------------------------
# Several questions


def test_several_questions_one_line_each() -> None:
    reply = "1: 2\n2: 1, 3\n3: because it is small\nand fast\n4: 1"
    assert answered(read_reply(SEVERAL, reply)) == [
        a("db", "db-1"),
        a("auth", "auth-0", "auth-2"),
        a("why", text="because it is small\nand fast"),
        a("pick", "pick-0"),
    ]


def test_questions_not_named_are_skipped_and_skip_skips() -> None:
    assert answered(read_reply(SEVERAL, "4: right\n1: skip")) == [
        a("db"),
        a("auth"),
        a("why"),
        a("pick", "pick-1"),
    ]


def test_options_and_words_together_where_the_agent_gets_both() -> None:
    assert answered(read_reply(SEVERAL, "2: 2 + and passkeys\n4: 2"))[1] == a(
        "auth", "auth-1", text="and passkeys"
    )


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        pytest.param(
            "1: 2\n4: my own idea",
            ("Question 4 takes options only: reply with an option number (1-2).",),
            id="words-refused",
        ),
        pytest.param(
            "1: 9\n4: 1", ("Question 1 has no option 9 (it has 1-3).",), id="unknown-option"
        ),
        pytest.param("1: 0\n4: 1", ("Question 1 has no option 0 (it has 1-3).",), id="option-0"),
        pytest.param(
            "1: 1, 2\n4: 1", ("Question 1 takes one option, not 2.",), id="several-picks-single"
        ),
        pytest.param(
            "5: 1\n4: 1",
            ("There is no question 5 (this ask has questions 1-4).",),
            id="question-out-of-range",
        ),
        pytest.param(
            "99999999999999999999: 1\n4: 1",
            ("There is no question 99999999999999999999 (this ask has questions 1-4).",),
            id="huge-number",
        ),
        pytest.param(
            "4: skip", ("Question 4 needs an answer; it cannot be skipped.",), id="skip-required"
        ),
        pytest.param(
            "1: 2", ("Question 4 needs an answer; it cannot be skipped.",), id="required-not-named"
        ),
        pytest.param(
            "1: 2\n1: 1\n4: 1", ("Question 1 is named more than once.",), id="named-twice"
        ),
        pytest.param(
            "1:\n4: 1",
            ('Question 1 has no answer after its colon (write "skip" to skip it).',),
            id="empty-value",
        ),
        pytest.param(
            "hello\n4: 1",
            ('The line "hello" names no question: write "1: 2" for question 1, option 2.',),
            id="no-question-named",
        ),
        pytest.param(
            "1: 2\nmore words\n4: 1",
            ('The line "more words" names no question: write "1: 2" for question 1, option 2.',),
            id="words-after-a-pick",
        ),
        pytest.param(
            "2: 1 +\n4: 1", ('Question 2 has no words after its "+".',), id="plus-without-words"
        ),
    ],
)
def test_several_questions_refusals(reply: str, expected: tuple[str, ...]) -> None:
    assert problems(read_reply(SEVERAL, reply)) == expected


def test_every_problem_is_said_at_once() -> None:
    said = problems(read_reply(SEVERAL, "1: 9\n2: 7\n4: hi\n6: 1"))
    assert len(said) == 4


def test_a_bare_number_to_several_questions_is_not_understood() -> None:
    assert problems(read_reply(SEVERAL, "2")) == (
        'This ask has 4 questions: answer each on a line of its own, as "1: 2".',
        "Question 4 needs an answer; it cannot be skipped.",
    )


def test_a_sign_off_after_a_pick_is_not_read() -> None:
    assert answered(read_reply(ONE, "2\n\nThanks,\nAda")) == [a("db", "db-1")]
    assert answered(read_reply(ONE, "sqlite\nAda")) == [a("db", "db-1")]
    assert answered(read_reply(ONE, "1: 2\nAda")) == [a("db", "db-1")]
    assert answered(read_reply(SEVERAL, "1: 2\n4: 1\n\nThanks,\nAda"))[0] == a("db", "db-1")
    # After own words it is part of the words.
    assert answered(read_reply(ONE, "use mongo\n\nAda")) == [a("db", text="use mongo\n\nAda")]
    assert answered(read_reply(SEVERAL, "4: 1\n3: small\nAda"))[2] == a("why", text="small\nAda")


def test_invisible_marks_at_the_ends_of_lines_are_trimmed() -> None:
    assert answered(read_reply(ONE, "\ufeff2\u200b")) == [a("db", "db-1")]
    assert answered(read_reply(SEVERAL, "\u200e1: 2\u200f\n4:\u00a01"))[0] == a("db", "db-1")


def test_a_label_with_invisible_marks_at_its_ends_is_picked_by_its_visible_text() -> None:
    # An agent's label can carry a zero-width space or a soft hyphen at an end (pasted text);
    # a person typing what they see picks that option, never sends it as own words.
    marked = ask(q("db", "Postgres\u200b", "\u00adSQLite", "MySQL"))
    assert answered(read_reply(marked, "postgres")) == [a("db", "db-0")]
    assert answered(read_reply(marked, "SQLite")) == [a("db", "db-1")]
    # A label of invisible marks alone cannot be typed: its number picks it.
    blank = ask(q("db", "\u00ad", "MySQL"))
    assert answered(read_reply(blank, "1")) == [a("db", "db-0")]


def test_combining_picks_and_words_is_refused_where_the_agent_would_get_only_the_words() -> None:
    instead = ask(q("m", "a", "b", multi=True, free_text=INSTEAD))
    assert problems(read_reply(instead, "1 + more")) == (
        "The question cannot take options and your own words together: the agent would get "
        "only the words. Send one or the other.",
    )
    assert answered(read_reply(instead, "1, 2")) == [a("m", "m-0", "m-1")]
    assert answered(read_reply(instead, "more")) == [a("m", text="more")]


def test_two_options_with_one_label_need_the_number() -> None:
    twins = ask(q("t", "Same", "same", "other"))
    assert problems(read_reply(twins, "SAME")) == (
        'In the question, "SAME" is the label of options 1, 2: reply with the number.',
    )
    assert answered(read_reply(twins, "2")) == [a("t", "t-1")]


# ---------------------------------------------------------------------------------------------
# Declining, and replies that are no answer at all


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("decline", ""),
        ("Decline.", ""),
        ("DECLINE: not my area", "not my area"),
        ("decline:\nnot my area\nsorry", "not my area\nsorry"),
        ("decline\nbusy", "busy"),
    ],
)
def test_decline(text: str, reason: str) -> None:
    assert read_reply(ONE, text) == Declined(reason=reason)
    assert read_reply(SEVERAL, text) == Declined(reason=reason)


def test_declining_is_only_the_first_line() -> None:
    # Own words that begin with the word are own words.
    assert answered(read_reply(ONE, "decline the merge")) == [a("db", text="decline the merge")]


def test_an_overlong_reason_is_not_understood() -> None:
    said = problems(read_reply(ONE, "decline: " + "x" * (MAX_CLOSE_REASON_LENGTH + 1)))
    assert said == (
        f"The reason for declining is longer than {MAX_CLOSE_REASON_LENGTH} characters.",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "The reply is empty."),
        (" \n\t\n", "The reply is empty."),
        ("a\x00b", "The reply holds a NUL character, which cannot be stored."),
        ("\ud800", "The reply is not valid text."),
    ],
)
def test_replies_that_are_no_answer(text: str, expected: str) -> None:
    assert problems(read_reply(ONE, text)) == (expected,)


def test_overlong_words_are_not_understood() -> None:
    said = problems(read_reply(ONE, "w" * (MAX_CUSTOM_TEXT_LENGTH + 1)))
    assert said == (
        f"The answer to the question is longer than {MAX_CUSTOM_TEXT_LENGTH} characters.",
    )


def test_one_question_refusals() -> None:
    refused = ask(q("r", "a", "b", free_text=REFUSED))
    assert problems(read_reply(refused, "something else")) == (
        "The question takes options only: reply with an option number (1-2).",
    )
    assert answered(read_reply(refused, "B")) == [a("r", "r-1")]
    required = ask(q("r", "a", "b", required=True))
    assert problems(read_reply(required, "skip")) == (
        "The question needs an answer; it cannot be skipped.",
    )


# ---------------------------------------------------------------------------------------------
# How to reply


def test_the_help_shows_the_forms_this_ask_takes() -> None:
    one = grammar_help(ONE)
    assert '"2"' in one
    assert "own words" in one
    assert "decline" in one
    assert "1: 2" not in one
    several = grammar_help(SEVERAL)
    assert "1: 2" in several
    assert "2: 1, 3" in several
    assert "3: skip" in several
    assert '"answer required"' in several
    options_only = grammar_help(ask(q("r", "a", "b", free_text=REFUSED, required=True)))
    assert "own words" not in options_only
    assert "skip" not in options_only


# ---------------------------------------------------------------------------------------------
# Properties


@settings(max_examples=300)
@given(data=st.data())
def test_round_trip_from_the_rendered_form(data: st.DataObject) -> None:
    the_ask = data.draw(email_asks())
    mail = ask_mail(the_ask, asker="Coder", channel="general", link="https://c.example/#/ask/1")
    for question in the_ask.questions:
        for line in ask_text.numbered(question):
            assert ask_text.one_line(line) in mail.text  # the numbers the reply uses
    assert grammar_help(the_ask) in mail.text
    reply, expected = data.draw(email_replies(the_ask))
    if not reply.strip():  # every question skipped by leaving it out: an empty reply
        assert isinstance(read_reply(the_ask, reply), NotUnderstood)
        return
    assert read_reply(the_ask, reply) == Answered(answers=tuple(expected))


def _values(the_ask: comms_pb2.Ask) -> st.SearchStrategy[str]:
    labels_of = [o.label for qn in the_ask.questions for o in qn.options] or ["x"]
    return st.one_of(
        st.sampled_from(["", "skip", "1", "2", "1, 2", "3 1", "0", "1 + more", " + ", "decline"]),
        st.sampled_from(labels_of),
        st.text(max_size=15),
    )


def _shaped_lines(the_ask: comms_pb2.Ask) -> st.SearchStrategy[str]:
    value = _values(the_ask)
    line = st.one_of(
        st.builds(lambda n, v: f"{n}: {v}", st.integers(0, len(the_ask.questions) + 1), value),
        value,
        st.text(max_size=10),
    )
    return st.lists(line, max_size=8).map("\n".join)


@st.composite
def _near_misses(draw: st.DrawFn, the_ask: comms_pb2.Ask) -> str:
    """A reply the grammar describes with one line's value replaced by anything."""
    reply, _ = draw(email_replies(the_ask))
    lines = reply.split("\n")
    index = draw(st.integers(0, len(lines) - 1))
    head, colon, _ = lines[index].partition(":")
    value = draw(_values(the_ask))
    lines[index] = f"{head}: {value}" if colon and len(the_ask.questions) > 1 else value
    return "\n".join(lines)


@settings(max_examples=300)
@given(data=st.data())
def test_every_reading_passes_the_judge_and_nothing_raises(data: st.DataObject) -> None:
    the_ask = data.draw(st.one_of(email_asks(), asks(ask_id="ask_s")))
    text = data.draw(st.one_of(st.text(), _shaped_lines(the_ask), _near_misses(the_ask)))
    reading = read_reply(the_ask, text)
    if isinstance(reading, Answered):
        check_answer_request(the_ask.ask_id or "ask", reading.answers)
        assert validate_answers(the_ask, reading.answers) == []
        pending = comms_pb2.Ask()
        pending.CopyFrom(the_ask)
        pending.status = comms_pb2.ASK_STATUS_PENDING
        outcome = judge_answer("acct", reading.answers)(pending)  # RespondToAsk's own judge
        assert outcome is not None
        assert outcome.status == comms_pb2.ASK_STATUS_ANSWERED
    elif isinstance(reading, Declined):
        check_decline_request(the_ask.ask_id or "ask", reading.reason)
    else:
        assert reading.problems
        assert all(p and "\n" not in p and p.endswith(".") for p in reading.problems)
