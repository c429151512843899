"""Claude Code's questions as Asks and the hook's replies (compass_bridge/claude/questions.py):
question ids, the answer map and its multi-select encoding, declines, MCP forms.

Claude Code's own splitting of a multi-select answer is transcribed below (`claude_split`)
from its bundled AskUserQuestion tool (2.1.318, function `W`), the reference the encoding is
held to; tests/realagent/test_claude_hooks.py runs the binary's own code on it too.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, strategies as st

from compass_bridge.claude.questions import (
    FormCall,
    decline_reason,
    form_reply,
    join_labels,
    question_id,
    question_reply,
    read_form,
    read_questions,
    refusal_reply,
    schema_violations,
)
from compass_core.jsonvalues import MappingError
from gen.compass.v1 import comms_pb2

DATABASE: dict[str, Any] = {
    "question": "Which database?",
    "header": "DB",
    "options": [
        {"label": "Postgres", "description": "relational", "preview": "CREATE TABLE t ();"},
        {"label": "SQLite", "description": "a file"},
    ],
    "multiSelect": False,
}
AUTH: dict[str, Any] = {
    "question": "Which auth flows?",
    "header": "Auth",
    "options": [
        {"label": "Email, SMS", "description": "codes"},
        {"label": "OAuth", "description": "Google"},
        {"label": 'SSO "SAML"', "description": "companies"},
    ],
    "multiSelect": True,
}


def claude_split(text: str) -> list[str] | None:
    """Claude Code's parse of a joined multi-select answer (its `W`), line for line: a
    quoted label is a JSON string up to its closing quote, a bare one runs to the next ", "
    and may hold no '"'; None when the text is not such a list."""
    labels: list[str] = []
    rest = text
    while True:
        if rest.startswith('"'):
            end, escaped = -1, False
            for index in range(1, len(rest)):
                char = rest[index]
                if escaped:
                    escaped = False
                    continue
                if char == "\\":
                    escaped = True
                    continue
                if char == '"':
                    end = index
                    break
            if end == -1:
                return None
            try:
                label = json.loads(rest[: end + 1])
            except ValueError:
                return None
            if not isinstance(label, str):
                return None
            labels.append(label)
            rest = rest[end + 1 :]
        else:
            cut = rest.find(", ")
            label = rest if cut == -1 else rest[:cut]
            if '"' in label:
                return None
            labels.append(label)
            rest = "" if cut == -1 else rest[cut:]
        if rest == "":
            break
        if not rest.startswith(", "):
            return None
        rest = rest[2:]
        if rest == "":
            return None
    return labels


# -- question ids --------------------------------------------------------------------------


def test_a_question_id_is_a_slug_and_a_hash_of_the_text() -> None:
    key = question_id("Which database should the new service use?")
    assert re.fullmatch(r"which-database-should-the-new-service-us-[0-9a-f]{12}", key), key
    assert question_id("Which database should the new service use?") == key
    assert re.fullmatch(r"q-[0-9a-f]{12}", question_id("???"))  # no word to show


@given(st.text(max_size=500), st.text(max_size=500))
def test_question_ids_are_stable_valid_and_tell_texts_apart(first: str, second: str) -> None:
    key = question_id(first)
    assert key == question_id(first)
    assert 0 < len(key) <= 200
    assert re.fullmatch(r"[a-z0-9-]+", key), key
    if first != second:
        assert key != question_id(second)


# -- the multi-select encoding -----------------------------------------------------------


def test_labels_are_joined_as_claude_code_joins_them() -> None:
    assert join_labels(["OAuth", "SSO"]) == "OAuth, SSO"
    assert join_labels(["Email, SMS", "OAuth"]) == '"Email, SMS", OAuth'
    assert join_labels(['SSO "SAML"']) == '"SSO \\"SAML\\""'
    assert join_labels(["a,b", "tab\there"]) == "a,b, tab\there"  # no ", ", no quote: bare
    assert join_labels(['x, "y"\n']) == '"x, \\"y\\"\\n"'


FRAGMENTS = [*"ab ,\"\\'\n\t\x1f\u2028é😀", ", ", '", "', '"', ",,"]
LABEL = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=8).map("".join),
    st.text(min_size=1),
)
"""Labels built from what the encoding is about (commas, quotes, escapes), and any text."""


@given(st.lists(LABEL, min_size=1, max_size=6))
def test_claude_code_splits_the_joined_labels_back(labels: list[str]) -> None:
    assert claude_split(join_labels(labels)) == labels


# -- AskUserQuestion -> Ask ----------------------------------------------------------------


def test_questions_become_one_ask_with_headers_options_previews_and_free_text() -> None:
    call = read_questions({"questions": [DATABASE, AUTH]})
    first, second = call.ask.questions
    assert (first.question, first.header, first.allow_multiple) == ("Which database?", "DB", False)
    assert [(o.id, o.label, o.description, o.preview) for o in first.options] == [
        ("0", "Postgres", "relational", "CREATE TABLE t ();"),
        ("1", "SQLite", "a file", ""),
    ]
    assert (second.header, second.allow_multiple) == ("Auth", True)
    assert {q.free_text for q in call.ask.questions} == {comms_pb2.FREE_TEXT_ACCEPTED}
    assert call.texts == {
        first.question_id: "Which database?",
        second.question_id: "Which auth flows?",
    }
    assert first.question_id == question_id("Which database?")


def test_a_text_question_without_options_is_free_text_only() -> None:
    call = read_questions(
        {
            "questions": [
                {"question": "Name?", "header": "Name", "kind": "text", "description": "Short"}
            ]
        }
    )
    (question,) = call.ask.questions
    assert (question.question, list(question.options)) == ("Name?\n\nShort", [])
    assert call.texts == {question.question_id: "Name?"}


@pytest.mark.parametrize(
    ("tool_input", "reason"),
    [
        ({}, "tool_input.questions is missing"),
        ({"questions": "no"}, "tool_input.questions is not an array"),
        (
            {"questions": [DATABASE, DATABASE]},
            "tool_input.questions[1].question repeats a question",
        ),
        ({"questions": [{**DATABASE, "question": "a\x00b"}]}, "contains a NUL character"),
        ({"questions": []}, "questions is empty"),
    ],
)
def test_input_the_mapper_refuses(tool_input: dict[str, Any], reason: str) -> None:
    with pytest.raises(MappingError) as caught:
        read_questions(tool_input)
    assert reason in caught.value.reason


# -- answers -------------------------------------------------------------------------------


def answered(
    call_input: dict[str, Any], *answers: tuple[list[str], str]
) -> tuple[Any, comms_pb2.Ask]:
    call = read_questions(call_input)
    ask = comms_pb2.Ask()
    ask.CopyFrom(call.ask)
    ask.status = comms_pb2.ASK_STATUS_ANSWERED
    for question, (chosen, text) in zip(ask.questions, answers, strict=True):
        question.chosen_option_ids.extend(chosen)
        question.custom_text = text
    return call, ask


def updated_input(reply: Any) -> dict[str, Any]:
    specific = reply.output["hookSpecificOutput"]
    assert (specific["hookEventName"], specific["permissionDecision"]) == ("PreToolUse", "allow")
    return specific["updatedInput"]


def test_picks_free_text_and_skips_become_the_answer_map() -> None:
    call_input = {"questions": [DATABASE, AUTH]}
    call, ask = answered(call_input, (["1"], ""), (["0", "2"], ""))
    reply = question_reply(call, ask)
    assert updated_input(reply) == {
        **call_input,
        "answers": {
            "Which database?": "SQLite",
            "Which auth flows?": '"Email, SMS", "SSO \\"SAML\\""',
        },
    }
    assert reply.changes == ()
    call, ask = answered(call_input, ([], ""), ([], "later"))
    assert updated_input(question_reply(call, ask))["answers"] == {"Which auth flows?": "later"}


def test_a_single_label_with_a_comma_is_the_answer_as_it_is() -> None:
    single = {**DATABASE, "options": [{"label": "Yes, now"}, {"label": "No"}]}
    call, ask = answered({"questions": [single]}, (["0"], ""))
    assert updated_input(question_reply(call, ask))["answers"] == {"Which database?": "Yes, now"}


def test_picks_with_free_text_carry_the_text_as_a_note() -> None:
    call, ask = answered({"questions": [DATABASE, AUTH]}, ([], "DuckDB"), (["1"], "SCIM later"))
    updated = updated_input(question_reply(call, ask))
    assert updated["answers"] == {"Which database?": "DuckDB", "Which auth flows?": "OAuth"}
    assert updated["annotations"] == {"Which auth flows?": {"notes": "SCIM later"}}


def test_nothing_answered_is_an_empty_map() -> None:
    call, ask = answered({"questions": [DATABASE]}, ([], ""))
    updated = updated_input(question_reply(call, ask))
    assert updated["answers"] == {}
    assert "annotations" not in updated


def test_a_chosen_id_that_is_not_an_option_is_left_out_and_said() -> None:
    call, ask = answered({"questions": [AUTH]}, (["1", "7"], ""))
    reply = question_reply(call, ask)
    assert updated_input(reply)["answers"] == {"Which auth flows?": "OAuth"}
    (change,) = reply.changes
    assert "'7'" in change, change


def test_a_decline_denies_the_call_with_the_persons_reason() -> None:
    ask = comms_pb2.Ask(closed_by_name="Ada", close_reason="not now")
    assert decline_reason(ask) == "Ada declined to answer in Compass: not now"
    assert decline_reason(comms_pb2.Ask()) == "The person declined to answer in Compass."
    assert refusal_reply("PreToolUse", ask).output == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "Ada declined to answer in Compass: not now",
        }
    }
    assert refusal_reply("Elicitation", ask).output == {
        "hookSpecificOutput": {"hookEventName": "Elicitation", "action": "decline"}
    }


# -- MCP forms -----------------------------------------------------------------------------

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "env": {
            "type": "string",
            "title": "Environment",
            "description": "Where should it deploy?",
            "oneOf": [
                {"const": "staging", "title": "Staging"},
                {"const": "prod", "title": "Production"},
            ],
        },
        "replicas": {"type": "integer", "title": "Replicas", "minimum": 1, "maximum": 5},
        "email": {"type": "string", "title": "Contact", "format": "email"},
    },
    "required": ["env"],
}


def form(schema: dict[str, Any] = SCHEMA, **event: Any) -> FormCall:
    call = read_form(
        {"message": "Deploy settings", "mode": "form", "requested_schema": schema, **event}
    )
    assert isinstance(call, FormCall), call
    return call


def form_answered(call: FormCall, **answers: tuple[list[str], str]) -> comms_pb2.Ask:
    ask = comms_pb2.Ask()
    ask.CopyFrom(call.plan.ask)
    for question in ask.questions:
        chosen, text = answers.get(question.question_id, ([], ""))
        question.chosen_option_ids.extend(chosen)
        question.custom_text = text
    return ask


def test_a_form_is_mapped_by_the_bridges_mapper() -> None:
    call = form(mcp_server_name="forms")
    env, replicas, email = call.plan.ask.questions
    assert (env.header, env.question, [o.label for o in env.options]) == (
        "Environment",
        "Where should it deploy?",
        ["Staging", "Production"],
    )
    assert (replicas.question, email.question) == ("Replicas", "Contact")
    assert (call.plan.intro, call.server_name) == ("Deploy settings", "forms")


def test_a_valid_answer_is_accepted_with_its_content() -> None:
    call = form()
    reply = form_reply(call, form_answered(call, env=(["1"], ""), replicas=([], "3")))
    assert reply.output == {
        "hookSpecificOutput": {
            "hookEventName": "Elicitation",
            "action": "accept",
            "content": {"env": "prod", "replicas": 3},
        }
    }
    assert (reply.changes, reply.refused) == ((), "")


def test_what_the_schema_cannot_take_is_left_out_and_said() -> None:
    call = form()
    reply = form_reply(call, form_answered(call, env=(["0"], ""), replicas=([], "9")))
    output: Any = reply.output
    assert output["hookSpecificOutput"]["content"] == {"env": "staging"}
    assert reply.changes == ("replicas: 9 is out of the schema's bounds",)


def test_a_required_property_left_unanswered_cancels_the_form() -> None:
    call = form()
    reply = form_reply(call, form_answered(call, replicas=([], "2")))
    assert reply.output == {
        "hookSpecificOutput": {"hookEventName": "Elicitation", "action": "cancel"}
    }
    assert reply.refused.startswith("the form requires env, left without a valid answer")


def test_content_breaking_the_schema_cancels_the_form() -> None:
    call = form()
    reply = form_reply(call, form_answered(call, env=(["1"], ""), email=([], "not an address")))
    output: Any = reply.output
    assert output["hookSpecificOutput"]["action"] == "cancel"
    assert "$.email: 'not an address' is not a 'email'" in reply.refused, reply.refused


def test_schema_violations_are_where_and_what() -> None:
    assert schema_violations(SCHEMA, {"env": "prod"}) == []
    assert schema_violations(SCHEMA, {"env": "moon", "replicas": 0}) == [
        "$.env: 'moon' is not valid under any of the given schemas",
        "$.replicas: 0 is less than the minimum of 1",
    ]


@pytest.mark.parametrize(
    ("event", "why"),
    [
        ({"mode": "url", "url": "https://x"}, "a 'url' elicitation is not a form"),
        ({"requested_schema": "no"}, "the form has no requested_schema or message"),
        ({"requested_schema": {"type": "object", "properties": {}}}, "the form has no properties"),
        (
            {"requested_schema": {"type": "object", "properties": {"x": {"type": "object"}}}},
            "property 'x' has a type the bridge cannot present",
        ),
        (
            {"requested_schema": {"type": "object", "properties": {"x": "text"}}},
            "the form's schema is not one the bridge can present",
        ),
    ],
)
def test_forms_that_cannot_be_asked(event: dict[str, Any], why: str) -> None:
    found = read_form({"message": "m", "mode": "form", "requested_schema": SCHEMA, **event})
    assert isinstance(found, str)
    assert found.startswith(why), found
