"""ACP form elicitations <-> typed Asks (compass_bridge/forms.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from acp.client.router import _validate_create_elicitation_request  # pyright: ignore[reportPrivateUsage]
from acp.schema import CreateFormSessionElicitationRequest, ElicitationSchema
from hypothesis import given, strategies as st

from compass_bridge.forms import (
    FormPlan,
    ask_form_content,
    form_content,
    matches_ask_form,
    plan_form,
)
from compass_core import ConversationUpdated, EventMapper
from gen.compass.v1 import comms_pb2
from tests.unit.core._events import gallery_args

GALLERY: dict[str, Any] = gallery_args()


def schema_of(properties: dict[str, Any], required: list[str] | None = None) -> ElicitationSchema:
    """Parse a requestedSchema exactly as the ACP library parses the agent's request."""
    request = _validate_create_elicitation_request(
        {
            "mode": "form",
            "sessionId": "s",
            "message": "m",
            "requestedSchema": {"type": "object", "properties": properties, "required": required},
        }
    )
    assert isinstance(request, CreateFormSessionElicitationRequest)
    return request.requested_schema


def omp_ask_form(questions: list[dict[str, Any]]) -> ElicitationSchema:
    """The form oh-my-pi 18.2.3 builds for its ask tool (acp-agent.ts, askDialog)."""
    properties: dict[str, Any] = {}
    for index, question in enumerate(questions):
        entries = [
            {"const": o["label"], "title": o["label"]}
            | (
                {"description": o["description"].strip()}
                if o.get("description", "").strip()
                else {}
            )
            for o in question["options"]
        ]
        header = (question.get("header") or "").strip()
        if entries:
            prop: dict[str, Any]
            if question.get("multi") is True:
                prop = {"type": "array", "title": question["question"], "items": {"anyOf": entries}}
            else:
                prop = {"type": "string", "title": question["question"], "oneOf": entries}
                recommended = question.get("recommended")
                if isinstance(recommended, int) and 0 <= recommended < len(entries):
                    prop["default"] = question["options"][recommended]["label"]
            if header:
                prop["description"] = header
            properties[f"q{index}"] = prop
        properties[f"q{index}__other"] = {"type": "string", "title": "Other (type your own)"}
    return schema_of(properties)


def mapped_ask(args: dict[str, Any]) -> comms_pb2.Ask:
    outputs = EventMapper(session="t").map(
        {"type": "tool_execution_start", "toolCallId": "c1", "toolName": "ask", "args": args}
    )
    frame = outputs[0]
    assert isinstance(frame, ConversationUpdated)
    return frame.value.blocks[-1].ask


def answer(ask: comms_pb2.Ask, **answers: tuple[list[str], str]) -> comms_pb2.Ask:
    answered = comms_pb2.Ask()
    answered.CopyFrom(ask)
    answered.ask_id = "a1"
    for question in answered.questions:
        chosen, text = answers.get(question.question_id, ([], ""))
        question.chosen_option_ids.extend(chosen)
        question.custom_text = text
    return answered


# -- the ask tool's own form ---------------------------------------------------------------


def test_gallery_form_matches_its_ask_and_not_another() -> None:
    ask = mapped_ask(GALLERY)
    assert matches_ask_form(omp_ask_form(GALLERY["questions"]), ask)
    other = json.loads(json.dumps(GALLERY))
    other["questions"][0]["question"] = "Something else?"
    assert not matches_ask_form(omp_ask_form(other["questions"]), ask)
    one = {"questions": GALLERY["questions"][:1]}
    assert not matches_ask_form(omp_ask_form(one["questions"]), ask)
    swapped = json.loads(json.dumps(GALLERY))
    swapped["questions"][1]["multi"] = False
    assert not matches_ask_form(omp_ask_form(swapped["questions"]), ask)


def test_gallery_answer_becomes_labels_and_other_text() -> None:
    ask = mapped_ask(GALLERY)
    content, problems = ask_form_content(answer(ask, db=(["1"], ""), features=(["0", "1"], "")))
    assert content == {"q0": "SQLite", "q1": ["Email + password", "OAuth (Google, GitHub)"]}
    assert problems == ()
    content, _ = ask_form_content(answer(ask, db=([], "CockroachDB"), features=([], "")))
    assert content == {"q0__other": "CockroachDB", "q1": []}


def test_free_text_only_question_has_only_the_other_key() -> None:
    args = {"questions": [{"id": "why", "question": "Why?", "options": []}]}
    ask = mapped_ask(args)
    assert matches_ask_form(omp_ask_form(args["questions"]), ask)
    content, _ = ask_form_content(answer(ask, why=([], "because")))
    assert content == {"q0__other": "because"}
    skipped, _ = ask_form_content(answer(ask))
    assert skipped == {}


def test_out_of_range_choice_is_left_out_and_reported() -> None:
    ask = mapped_ask(GALLERY)
    content, problems = ask_form_content(answer(ask, db=(["9"], "")))
    assert "q0" not in content
    assert problems
    assert "'9'" in problems[0]


# -- any other form ------------------------------------------------------------------------


def planned(properties: dict[str, Any], message: str = "m", **kw: Any) -> FormPlan:
    plan = plan_form(message, schema_of(properties, **kw))
    assert isinstance(plan, FormPlan), plan
    return plan


def test_omp_select_dialog_maps_to_a_single_select_question_titled_by_the_message() -> None:
    plan = planned(
        {"value": {"type": "string", "enum": ["Red", "Blue"]}}, "Pick a colour", required=["value"]
    )
    (question,) = plan.ask.questions
    assert (question.question_id, question.question) == ("value", "Pick a colour")
    assert [o.label for o in question.options] == ["Red", "Blue"]
    assert not question.allow_multiple
    assert plan.intro == ""
    result = form_content(plan, answer(plan.ask, value=(["1"], "")))
    assert result.content == {"value": "Blue"}
    assert result.missing == ()


def test_each_schema_type_maps_and_answers_in_its_own_terms() -> None:
    plan = planned(
        {
            "color": {
                "type": "string",
                "title": "Colour",
                "oneOf": [{"const": "r", "title": "Red"}],
            },
            "tags": {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b", "c"]},
                "maxItems": 2,
            },
            "ok": {"type": "boolean", "title": "Proceed?", "default": False},
            "name": {"type": "string", "description": "your name", "minLength": 2},
            "n": {"type": "integer", "minimum": 1, "maximum": 5},
            "x": {"type": "number"},
        },
        "Settings",
    )
    kinds = {q.question_id: (len(q.options), q.allow_multiple) for q in plan.ask.questions}
    assert kinds == {
        "color": (1, False),
        "tags": (3, True),
        "ok": (2, False),
        "name": (0, False),
        "n": (0, False),
        "x": (0, False),
    }
    ok = next(q for q in plan.ask.questions if q.question_id == "ok")
    assert [o.label for o in ok.options] == ["Yes", "No"]
    assert ok.recommended == 1
    assert plan.intro == "Settings"
    result = form_content(
        plan,
        answer(
            plan.ask,
            color=(["0"], ""),
            tags=(["0", "2"], ""),
            ok=(["0"], ""),
            name=([], "Ada"),
            n=([], " 3 "),
            x=([], "2.5"),
        ),
    )
    assert result.content == {
        "color": "r",
        "tags": ["a", "c"],
        "ok": True,
        "name": "Ada",
        "n": 3,
        "x": 2.5,
    }
    assert result.problems == ()


@pytest.mark.parametrize(
    ("properties", "answers", "problem"),
    [
        ({"n": {"type": "integer", "maximum": 5}}, {"n": ([], "9")}, "bounds"),
        ({"n": {"type": "integer"}}, {"n": ([], "2.5")}, "integer"),
        ({"x": {"type": "number"}}, {"x": ([], "nan")}, "finite"),
        ({"s": {"type": "string", "maxLength": 2}}, {"s": ([], "abc")}, "longer"),
        ({"s": {"type": "string", "pattern": "^[0-9]+$"}}, {"s": ([], "12a")}, "pattern"),
        ({"e": {"type": "string", "enum": ["a"]}}, {"e": ([], "zzz")}, "not one of"),
        ({"b": {"type": "boolean"}}, {"b": ([], "maybe")}, "neither"),
        (
            {
                "t": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["a", "b"]},
                    "minItems": 2,
                }
            },
            {"t": (["0"], "")},
            "bounds",
        ),
    ],
)
def test_invalid_values_are_left_out_and_a_required_one_is_missing(
    properties: dict[str, Any], answers: dict[str, tuple[list[str], str]], problem: str
) -> None:
    plan = planned(properties, required=list(properties))
    result = form_content(plan, answer(plan.ask, **answers))
    assert result.content == {}
    assert len(result.problems) == 1
    assert problem in result.problems[0]
    assert result.missing == tuple(properties)


def test_free_text_equal_to_an_enum_value_is_that_value() -> None:
    plan = planned({"e": {"type": "string", "enum": ["alpha", "beta"]}, "b": {"type": "boolean"}})
    result = form_content(plan, answer(plan.ask, e=([], "beta"), b=([], "YES")))
    assert result.content == {"e": "beta", "b": True}


def test_skipped_optional_fields_are_left_out_without_a_problem() -> None:
    plan = planned(
        {
            "a": {"type": "string"},
            "t": {"type": "array", "items": {"type": "string", "enum": ["x"]}},
        }
    )
    result = form_content(plan, answer(plan.ask))
    assert (result.content, result.problems, result.missing) == ({}, (), ())


def test_a_required_property_is_a_question_compass_will_not_let_be_skipped() -> None:
    plan = planned(
        {
            "n": {"type": "integer"},
            "c": {"type": "string", "enum": ["x", "y"]},
            "o": {"type": "string"},
        },
        required=["n", "c"],
    )
    assert [(q.question_id, q.answer_required) for q in plan.ask.questions] == [
        ("n", True),
        ("c", True),
        ("o", False),
    ]


@pytest.mark.parametrize(
    ("properties", "reason"),
    [
        ({}, "no properties"),
        ({"": {"type": "string"}}, "cannot be a question id"),
        ({"k" * 201: {"type": "string"}}, "cannot be a question id"),
        ({f"p{i}": {"type": "string"} for i in range(101)}, "at most 100"),
        ({"e": {"type": "string", "enum": [str(i) for i in range(101)]}}, "more than 100"),
        ({"e": {"type": "string", "title": "a\x00b"}}, "NUL"),
    ],
)
def test_forms_the_server_would_refuse_are_not_presented(
    properties: dict[str, Any], reason: str
) -> None:
    plan = plan_form("m", schema_of(properties))
    assert isinstance(plan, str)
    assert reason in plan


_label = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=12)


@given(
    values=st.lists(_label, min_size=1, max_size=6, unique=True),
    multi=st.booleans(),
    picks=st.lists(st.integers(0, 5), max_size=4, unique=True),
)
def test_any_choice_round_trips_to_the_offered_values(
    values: list[str], multi: bool, picks: list[int]
) -> None:
    prop: dict[str, Any] = (
        {"type": "array", "items": {"type": "string", "enum": values}}
        if multi
        else {"type": "string", "enum": values}
    )
    plan = planned({"k": prop})
    chosen = [str(i) for i in picks if i < len(values)]
    if not multi:
        chosen = chosen[:1]
    result = form_content(plan, answer(plan.ask, k=(chosen, "")))
    expected = [values[int(i)] for i in chosen]
    if multi:
        assert result.content == ({"k": expected} if chosen else {})
    else:
        assert result.content == ({"k": expected[0]} if chosen else {})
    assert result.problems == ()
