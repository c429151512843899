"""docs/spec.md §4 step 6 as a pure function: every violation, each naming its question."""

from __future__ import annotations

import json

import pytest
from hypothesis import assume, given, settings, strategies as st

from compass_server.domain import (
    MAX_ANSWERS,
    MAX_CHOSEN_PER_ANSWER,
    MAX_CUSTOM_TEXT_LENGTH,
    answered_questions,
    check_answer_request,
    is_identical_answer,
    validate_answers,
)
from compass_server.domain.errors import FieldViolation, InvalidArgumentError
from gen.compass.v1 import comms_pb2
from tests.unit.server._strategies import answer_sets, asks


def q(qid: str, *option_ids: str, multi: bool = False) -> comms_pb2.AskQuestion:
    return comms_pb2.AskQuestion(
        question_id=qid,
        question=f"{qid}?",
        options=[comms_pb2.AskOption(id=o, label=o) for o in option_ids],
        allow_multiple=multi,
    )


def a(qid: str, *chosen: str, text: str = "") -> comms_pb2.AskQuestionAnswer:
    return comms_pb2.AskQuestionAnswer(question_id=qid, chosen_option_ids=chosen, custom_text=text)


ASK = comms_pb2.Ask(
    ask_id="ask_1",
    questions=[q("db", "pg", "my"), q("auth", "pw", "sso", "otp", multi=True), q("why")],
)
VALID = [a("db", "pg"), a("auth", "pw", "sso"), a("why", text="because")]


def fields(violations: list[FieldViolation]) -> list[tuple[str, str]]:
    return [(v.field, v.question_id) for v in violations]


def test_a_complete_valid_answer_has_no_violation() -> None:
    assert validate_answers(ASK, VALID) == []


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        pytest.param([VALID[0], VALID[1]], [("answers", "why")], id="missing"),
        pytest.param([*VALID, a("db", "my")], [("answers[3].question_id", "db")], id="repeated"),
        pytest.param([*VALID, a("zz")], [("answers[3].question_id", "zz")], id="unknown-question"),
        pytest.param(
            [a("db", "nope"), VALID[1], VALID[2]],
            [("answers[0].chosen_option_ids[0]", "db")],
            id="unknown-option",
        ),
        pytest.param(
            [VALID[0], a("auth", "pw", "pw"), VALID[2]],
            [("answers[1].chosen_option_ids[1]", "auth")],
            id="repeated-option",
        ),
        pytest.param(
            [a("db", "pg", "my"), VALID[1], VALID[2]],
            [("answers[0].chosen_option_ids", "db")],
            id="two-picks-single-select",
        ),
        pytest.param(
            [a("db", "pg", text="also this"), VALID[1], VALID[2]],
            [("answers[0].custom_text", "db")],
            id="pick-plus-text-single-select",
        ),
        pytest.param(
            [a("db", "pg"), VALID[1], a("why", "0")],
            [("answers[2].chosen_option_ids[0]", "why")],
            id="pick-on-zero-option-question",
        ),
    ],
)
def test_each_rejection_names_its_question(
    answers: list[comms_pb2.AskQuestionAnswer], expected: list[tuple[str, str]]
) -> None:
    violations = validate_answers(ASK, answers)
    assert fields(violations) == expected
    for violation in violations:
        assert f'question "{violation.question_id}"' in violation.description


@pytest.mark.parametrize(
    "answers",
    [
        pytest.param(
            [VALID[0], a("auth", "pw", text="and a note"), VALID[2]], id="text-with-picks-multi"
        ),
        pytest.param([a("db"), a("auth"), a("why")], id="all-skipped"),
        pytest.param([a("db", text="neither"), VALID[1], VALID[2]], id="text-instead-of-pick"),
        pytest.param([VALID[2], VALID[0], VALID[1]], id="any-order"),
        pytest.param([VALID[0], a("auth", "otp", "pw", "sso"), VALID[2]], id="all-picks-multi"),
    ],
)
def test_accepted_answers(answers: list[comms_pb2.AskQuestionAnswer]) -> None:
    assert validate_answers(ASK, answers) == []


def free(question: comms_pb2.AskQuestion, free_text: comms_pb2.FreeText) -> comms_pb2.AskQuestion:
    question.free_text = free_text
    return question


REFUSING = comms_pb2.Ask(
    ask_id="ask_1",
    questions=[
        free(q("db", "pg", "my"), comms_pb2.FREE_TEXT_REFUSED),
        free(q("auth", "pw", "sso", multi=True), comms_pb2.FREE_TEXT_REFUSED),
    ],
)


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        pytest.param(
            [a("db", text="neither"), a("auth", "pw")],
            [("answers[0].custom_text", "db")],
            id="text-instead-of-a-pick",
        ),
        pytest.param(
            [a("db", "pg"), a("auth", "pw", text="and a note")],
            [("answers[1].custom_text", "auth")],
            id="text-with-picks-multi",
        ),
        pytest.param(
            [a("auth", text="x"), a("db", "pg", text="y")],
            [("answers[0].custom_text", "auth"), ("answers[1].custom_text", "db")],
            id="both-one-violation-each",
        ),
    ],
)
def test_free_text_is_refused_where_the_agent_cannot_receive_it(
    answers: list[comms_pb2.AskQuestionAnswer], expected: list[tuple[str, str]]
) -> None:
    violations = validate_answers(REFUSING, answers)
    assert fields(violations) == expected
    for violation in violations:
        assert violation.description.startswith(f'question "{violation.question_id}": ')
        assert "free text" in violation.description


def test_a_refusing_question_still_takes_picks_and_skips() -> None:
    assert validate_answers(REFUSING, [a("db", "my"), a("auth", "pw", "sso")]) == []
    assert validate_answers(REFUSING, [a("db"), a("auth")]) == []


def required(question: comms_pb2.AskQuestion) -> comms_pb2.AskQuestion:
    question.answer_required = True
    return question


def test_a_required_question_cannot_be_skipped() -> None:
    ask = comms_pb2.Ask(
        questions=[required(q("db", "pg", "my")), required(q("name")), q("auth", "pw")]
    )
    violations = validate_answers(ask, [a("db"), a("name"), a("auth")])
    assert fields(violations) == [("answers[0]", "db"), ("answers[1]", "name")]
    for violation in violations:
        assert "cannot be skipped" in violation.description
    # A pick, or free text, answers it; the question that is not required may still be skipped.
    assert validate_answers(ask, [a("db", "my"), a("name", text="ledger"), a("auth")]) == []
    assert validate_answers(ask, [a("db", text="neither"), a("name", text="x"), a("auth")]) == []


@pytest.mark.parametrize(
    "free_text",
    [
        comms_pb2.FREE_TEXT_UNSPECIFIED,
        comms_pb2.FREE_TEXT_ACCEPTED,
        comms_pb2.FREE_TEXT_INSTEAD_OF_PICKS,
    ],
)
def test_free_text_is_accepted_unless_refused(free_text: comms_pb2.FreeText) -> None:
    ask = comms_pb2.Ask(
        questions=[free(q("db", "pg"), free_text), free(q("auth", "pw", multi=True), free_text)]
    )
    assert validate_answers(ask, [a("db", text="neither"), a("auth", "pw", text="note")]) == []


def test_every_violation_is_reported_at_once() -> None:
    answers = [a("db", "pg", "nope"), a("db"), a("zz"), a("")]
    violations = validate_answers(ASK, answers)
    assert fields(violations) == [
        ("answers[0].chosen_option_ids[1]", "db"),
        ("answers[0].chosen_option_ids", "db"),
        ("answers[1].question_id", "db"),
        ("answers[2].question_id", "zz"),
        ("answers[3].question_id", ""),
        ("answers", "auth"),
        ("answers", "why"),
    ]


def test_question_ids_are_quoted_safely_in_descriptions() -> None:
    ask = comms_pb2.Ask(questions=[q('we"ird', "x")])
    (violation,) = validate_answers(ask, [])
    assert violation.question_id == 'we"ird'
    assert violation.description.startswith('question "we\\"ird": ')


# -- property: validate_answers agrees with an independent statement of the rules ------------


def oracle_accepts(ask: comms_pb2.Ask, answers: list[comms_pb2.AskQuestionAnswer]) -> bool:
    """The rules of docs/spec.md §4 step 6, written independently of the implementation."""
    if sorted(x.question_id for x in answers) != sorted(x.question_id for x in ask.questions):
        return False
    questions = {x.question_id: x for x in ask.questions}
    for answer in answers:
        question = questions[answer.question_id]
        chosen = list(answer.chosen_option_ids)
        if not set(chosen) <= {o.id for o in question.options}:
            return False
        if len(set(chosen)) != len(chosen):
            return False
        if not question.allow_multiple and (len(chosen) > 1 or (chosen and answer.custom_text)):
            return False
        if question.free_text == comms_pb2.FREE_TEXT_REFUSED and answer.custom_text:
            return False
        if question.answer_required and not chosen and not answer.custom_text:
            return False
    return True


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_validate_answers_matches_the_oracle(data: st.DataObject) -> None:
    ask = data.draw(asks(ask_id="ask_1"))
    answers = data.draw(answer_sets(ask))
    violations = validate_answers(ask, answers)
    assert (violations == []) == oracle_accepts(ask, answers)
    named = {x.question_id for x in ask.questions} | {x.question_id for x in answers}
    for violation in violations:
        assert violation.field.startswith("answers")
        assert violation.question_id in named
        if violation.question_id:
            assert f"question {json.dumps(violation.question_id)}" in violation.description


# -- step 2: request shape ----------------------------------------------------------------------


def test_request_shape_accepts_a_normal_request() -> None:
    check_answer_request("ask_1", VALID)


@pytest.mark.parametrize(
    ("ask_id", "answers", "field"),
    [
        pytest.param("", VALID, "ask_id", id="empty-ask-id"),
        pytest.param("x" * 201, VALID, "ask_id", id="oversize-ask-id"),
        pytest.param("ask_1", [a("q")] * (MAX_ANSWERS + 1), "answers", id="too-many-answers"),
        pytest.param(
            "ask_1",
            [a("db", *[str(i) for i in range(MAX_CHOSEN_PER_ANSWER + 1)])],
            "answers[0].chosen_option_ids",
            id="too-many-picks",
        ),
        pytest.param(
            "ask_1",
            [a("db", text="x" * (MAX_CUSTOM_TEXT_LENGTH + 1))],
            "answers[0].custom_text",
            id="oversize-custom-text",
        ),
        pytest.param("ask_1", [a("db", text="a\x00b")], "answers[0].custom_text", id="nul"),
        pytest.param("ask_1", [a("q" * 201)], "answers[0].question_id", id="oversize-question-id"),
        pytest.param(
            "ask_1",
            [a("db", "o" * 201)],
            "answers[0].chosen_option_ids[0]",
            id="oversize-option-id",
        ),
    ],
)
def test_request_shape_rejections(
    ask_id: str, answers: list[comms_pb2.AskQuestionAnswer], field: str
) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        check_answer_request(ask_id, answers)
    assert field in [v.field for v in caught.value.violations]


def test_custom_text_at_the_limit_is_accepted() -> None:
    check_answer_request("ask_1", [a("db", text="x" * MAX_CUSTOM_TEXT_LENGTH)])


# -- identical retry --------------------------------------------------------------------------


def answered(
    ask: comms_pb2.Ask, answers: list[comms_pb2.AskQuestionAnswer], by: str
) -> comms_pb2.Ask:
    result = comms_pb2.Ask()
    result.CopyFrom(ask)
    state = {qid: (chosen, text) for qid, chosen, text in answered_questions(ask, answers)}
    for question in result.questions:
        chosen, text = state[question.question_id]
        question.chosen_option_ids[:] = chosen
        question.custom_text = text
    result.answered_by_account_id = by
    return result


def test_identical_answer_from_the_same_account_is_recognised() -> None:
    stored = answered(ASK, VALID, "acct_1")
    reordered = [a("why", text="because"), a("auth", "sso", "pw"), a("db", "pg")]
    assert is_identical_answer(stored, "acct_1", reordered)


@pytest.mark.parametrize(
    ("account", "answers"),
    [
        pytest.param("acct_2", VALID, id="other-account"),
        pytest.param("acct_1", [VALID[0], a("auth", "pw"), VALID[2]], id="fewer-picks"),
        pytest.param("acct_1", [VALID[0], VALID[1], a("why", text="other")], id="other-text"),
        pytest.param("acct_1", [VALID[0], VALID[1]], id="missing-entry"),
        pytest.param("acct_1", [*VALID, VALID[0]], id="repeated-entry"),
        pytest.param(
            "acct_1", [VALID[0], a("auth", "pw", "sso", "pw"), VALID[2]], id="repeated-pick"
        ),
    ],
)
def test_different_answers_are_not_identical(
    account: str, answers: list[comms_pb2.AskQuestionAnswer]
) -> None:
    assert not is_identical_answer(answered(ASK, VALID, "acct_1"), account, answers)


def test_an_unanswered_ask_has_no_identical_answer() -> None:
    assert not is_identical_answer(ASK, "acct_1", VALID)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_any_valid_answer_is_identical_to_itself_in_any_order(data: st.DataObject) -> None:
    ask = data.draw(asks(ask_id="ask_1"))
    answers = data.draw(answer_sets(ask))
    assume(not validate_answers(ask, answers))
    stored = answered(ask, answers, "acct_1")
    assert is_identical_answer(stored, "acct_1", data.draw(st.permutations(answers)))
    assert not is_identical_answer(stored, "acct_2", answers)
