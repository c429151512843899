"""The forms of Claude Code and Codex as published, recorded from the real agents
(tests/bridge/acp/recorded/, captured with tests/realagent/acp_tee.py through the bridge):
each maps to the Ask a person should see (companions folded, headers, previews, what free
text reaches the agent) and an answer goes back in the form's own terms."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ElicitationSchema, NewSessionResponse
from hypothesis import given, strategies as st

from compass_bridge.acp.settings import SessionSettings, parse_config_option
from compass_bridge.forms import FormPlan, could_be_ask_form, form_content, plan_form
from gen.compass.v1 import comms_pb2

RECORDED = Path(__file__).resolve().parent / "recorded"


def agent_messages(name: str) -> list[dict[str, Any]]:
    lines = (RECORDED / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["agent"] for line in lines if '"agent"' in line[:10]]


def recorded_form(name: str) -> tuple[str, ElicitationSchema]:
    (params,) = [
        m["params"] for m in agent_messages(name) if m.get("method") == "elicitation/create"
    ]
    return params["message"], ElicitationSchema.model_validate(params["requestedSchema"])


def recorded_session(name: str) -> NewSessionResponse:
    (result,) = [
        m["result"] for m in agent_messages(name) if "sessionId" in (m.get("result") or {})
    ]
    return NewSessionResponse.model_validate(result)


def planned(name: str) -> FormPlan:
    message, schema = recorded_form(name)
    plan = plan_form(message, schema)
    assert isinstance(plan, FormPlan), plan
    return plan


def answered(plan: FormPlan, **answers: tuple[list[str], str]) -> comms_pb2.Ask:
    ask = comms_pb2.Ask()
    ask.CopyFrom(plan.ask)
    for question in ask.questions:
        chosen, text = answers.get(question.question_id, ([], ""))
        question.chosen_option_ids.extend(chosen)
        question.custom_text = text
    return ask


def test_claude_code_form_folds_each_other_box_into_its_question() -> None:
    plan = planned("claude-ask")
    first, second = plan.ask.questions
    assert [q.question_id for q in plan.ask.questions] == ["question_0", "question_1"]
    assert (first.header, first.question) == (
        "Database",
        "Which database should the new service use?",
    )
    assert [(o.label, o.description, o.preview) for o in first.options] == [
        ("Postgres", "Relational", "CREATE TABLE t (id int);"),
        ("SQLite", "Embedded", ""),
    ]
    assert (second.header, second.allow_multiple) == ("Auth", True)
    assert {q.free_text for q in plan.ask.questions} == {comms_pb2.FREE_TEXT_ACCEPTED}
    assert plan.intro == "Please answer the following questions."
    assert not could_be_ask_form(recorded_form("claude-ask")[1])
    result = form_content(
        plan, answered(plan, question_0=([], "CockroachDB"), question_1=(["1"], "Passkeys"))
    )
    assert result.content == {
        "question_0_custom": "CockroachDB",
        "question_1": ["OAuth"],
        "question_1_custom": "Passkeys",
    }
    assert (result.problems, result.missing) == ((), ())


def test_a_one_question_claude_form_heads_the_message_with_its_header() -> None:
    """Claude Code puts a lone question in the form's message and its header in `title`."""
    _, schema = recorded_form("claude-ask")
    assert schema.properties is not None
    one = ElicitationSchema.model_validate(
        {
            "type": "object",
            "properties": {
                "question_0": {
                    **schema.properties["question_0"].model_dump(by_alias=True, exclude_none=True),
                    "description": None,
                },
                "question_0_custom": schema.properties["question_0_custom"].model_dump(
                    by_alias=True, exclude_none=True
                ),
            },
        }
    )
    plan = plan_form("Which database should the new service use?", one)
    assert isinstance(plan, FormPlan)
    (question,) = plan.ask.questions
    assert (question.header, question.question) == (
        "Database",
        "Which database should the new service use?",
    )
    assert plan.intro == ""


def test_codex_form_hides_its_other_choice_and_sends_it_for_text() -> None:
    plan = planned("codex-ask")
    first, second = plan.ask.questions
    assert [q.question_id for q in plan.ask.questions] == ["db", "name"]
    assert (first.header, first.question) == (
        "Database",
        "Which database should the new service use?",
    )
    assert [o.label for o in first.options] == ["Postgres (Recommended)", "SQLite"]
    assert [o.label for o in second.options] == ["ledger", "books"]
    assert {q.free_text for q in plan.ask.questions} == {comms_pb2.FREE_TEXT_ACCEPTED}
    result = form_content(plan, answered(plan, db=([], "CockroachDB"), name=(["1"], "")))
    assert result.content == {"db": "None of the above", "db_note": "CockroachDB", "name": "books"}
    assert (result.problems, result.missing) == ((), ())


def test_a_skipped_required_codex_question_is_said_missing() -> None:
    plan = planned("codex-ask")
    result = form_content(plan, answered(plan, db=(["0"], "")))
    assert result.content == {"db": "Postgres (Recommended)"}
    assert result.missing == ("name",)


def test_a_choice_without_a_companion_refuses_free_text() -> None:
    _, schema = recorded_form("codex-ask")
    assert schema.properties is not None
    bare = {
        key: prop.model_dump(by_alias=True, exclude_none=True)
        for key, prop in schema.properties.items()
        if not key.endswith("_note")
    }
    plan = plan_form("m", ElicitationSchema.model_validate({"type": "object", "properties": bare}))
    assert isinstance(plan, FormPlan)
    assert {q.free_text for q in plan.ask.questions} == {comms_pb2.FREE_TEXT_REFUSED}
    # Without its note the "None of the above" value is an option like any other.
    assert plan.ask.questions[0].options[-1].label == "None of the above"


def test_booleans_refuse_and_text_and_numbers_accept_free_text() -> None:
    schema = ElicitationSchema.model_validate(
        {
            "type": "object",
            "properties": {
                "ok": {"type": "boolean"},
                "name": {"type": "string"},
                "n": {"type": "integer"},
            },
        }
    )
    plan = plan_form("m", schema)
    assert isinstance(plan, FormPlan)
    assert [q.free_text for q in plan.ask.questions] == [
        comms_pb2.FREE_TEXT_REFUSED,
        comms_pb2.FREE_TEXT_ACCEPTED,
        comms_pb2.FREE_TEXT_ACCEPTED,
    ]


_text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=40)


@given(title=_text, description=_text)
def test_of_a_title_and_a_description_the_short_one_heads_the_other(
    title: str, description: str
) -> None:
    schema = ElicitationSchema.model_validate(
        {
            "type": "object",
            "properties": {
                "k": {"type": "string", "title": title, "description": description},
                "j": {"type": "string"},
            },
        }
    )
    plan = plan_form("m", schema)
    assert isinstance(plan, FormPlan)
    question = plan.ask.questions[0]
    short, long = sorted((title, description), key=len)
    if len(short) <= 32 and "\n" not in short and short != long:
        assert (question.header, question.question) == (short, long)
    else:
        assert (question.header, question.question) == ("", f"{title}\n\n{description}")


def test_permission_requests_were_recorded_with_their_kinds() -> None:
    """What the bridge shows in words: the kinds both agents send."""
    for name, kinds in (
        ("claude-permission", ["allow_once", "reject_once"]),
        ("codex-permission", ["allow_once", "allow_always", "reject_once"]),
    ):
        (params,) = [
            m["params"]
            for m in agent_messages(name)
            if m.get("method") == "session/request_permission"
        ]
        assert [o["kind"] for o in params["options"]] == kinds


@pytest.mark.parametrize(
    ("name", "settings", "problem"),
    [
        ("claude-ask", SessionSettings(mode="default"), None),
        ("claude-ask", SessionSettings(mode="manual"), "no mode 'manual' (it offers: default,"),
        ("codex-ask", SessionSettings(mode="read-only"), None),
        (
            "codex-ask",
            SessionSettings(config_options=(("collaboration_mode", "plan"),)),
            None,
        ),
        (
            "codex-ask",
            SessionSettings(config_options=(("collaboration_mode", "fast"),)),
            "has no value 'fast' (it offers: default, plan)",
        ),
        (
            "codex-ask",
            SessionSettings(config_options=(("colour", "red"),)),
            "no configuration option 'colour' (it offers: mode,",
        ),
    ],
)
def test_modes_and_config_options_are_checked_against_what_the_agent_offers(
    name: str, settings: SessionSettings, problem: str | None
) -> None:
    found = settings.problem(recorded_session(name))
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem in found


@pytest.mark.parametrize("text", ["plan", "=plan", " =x"])
def test_a_config_option_needs_an_id_and_a_value(text: str) -> None:
    with pytest.raises(ValueError, match="ID=VALUE"):
        parse_config_option(text)


def test_a_config_option_keeps_everything_after_the_first_equals() -> None:
    assert parse_config_option("a=b=c") == ("a", "b=c")
