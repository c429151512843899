"""The MCP tools' arguments and results (compass_mcp.tools): one mapping with the native ask
(the mapper's limits and messages), and results that carry the whole answer."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from compass_core import build_ask
from compass_core.jsonvalues import MappingError
from compass_mcp import tools
from gen.compass.v1 import comms_pb2

GALLERY = Path(__file__).parents[2] / "fixtures" / "events" / "gallery-ask-fixture.json"

TWO: dict[str, object] = {
    "questions": [
        {
            "id": "db",
            "question": "Which database?",
            "header": "DB",
            "options": [{"label": "Postgres", "description": "relational"}, {"label": "SQLite"}],
            "recommended": 1,
        },
        {
            "id": "features",
            "question": "Which features?",
            "options": [{"label": "Email"}, {"label": "OAuth"}, {"label": "SSO"}],
            "multi": True,
        },
    ]
}


def _answered(
    ask: comms_pb2.Ask, picks: dict[str, list[str]], texts: dict[str, str] | None = None
) -> comms_pb2.Ask:
    done = comms_pb2.Ask()
    done.CopyFrom(ask)
    done.ask_id = "ask_1"
    done.status = comms_pb2.ASK_STATUS_ANSWERED
    done.answered_by_name = "Ada"
    for question in done.questions:
        question.chosen_option_ids.extend(picks.get(question.question_id, []))
        question.custom_text = (texts or {}).get(question.question_id, "")
    return done


def test_ask_takes_the_native_schema_and_accepts_free_text() -> None:
    call = tools.parse_ask({**TWO, "context": "We start the service.", "wait_seconds": 5})
    expected = build_ask(TWO)
    for question in expected.questions:
        question.free_text = comms_pb2.FREE_TEXT_ACCEPTED
    assert call.ask == expected
    assert (call.context, call.channel, call.wait_seconds) == ("We start the service.", None, 5.0)
    assert call.deadline_seconds is None
    assert call.on_timeout == comms_pb2.ASK_TIMEOUT_POLICY_UNSPECIFIED


def test_the_gallery_ask_is_a_well_formed_call() -> None:
    event = json.loads(GALLERY.read_text(encoding="utf-8"))
    call = tools.parse_ask(event["args"])
    assert [q.question_id for q in call.ask.questions] == [
        q["id"] for q in event["args"]["questions"]
    ]


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ({}, "questions is missing"),
        ({"questions": []}, "questions is empty"),
        (
            {"questions": [{"id": f"q{i}", "question": "?", "options": []} for i in range(1000)]},
            "questions has more than 100 items (got 1000)",
        ),
        ({"questions": [{"id": "", "question": "?", "options": []}]}, "questions[0].id is empty"),
        (
            {"questions": [{"id": "a", "question": "?", "options": [{"label": "Next →"}]}]},
            "questions[0].options[0].label is the reserved runtime label 'Next →'",
        ),
        ({**TWO, "context": 3}, "context is not a string (got number)"),
        ({**TWO, "channel": ""}, "channel is empty"),
        ({**TWO, "deadline_seconds": 0}, "deadline_seconds must be more than 0"),
        ({**TWO, "deadline_seconds": True}, "deadline_seconds is not a number (got boolean)"),
        ({**TWO, "on_timeout": "pick_recommended"}, "on_timeout needs deadline_seconds"),
        (
            {**TWO, "deadline_seconds": 5, "on_timeout": "later"},
            "on_timeout must be one of fail, pick_recommended",
        ),
        ({**TWO, "wait_seconds": -1}, "wait_seconds must be from 0 to 3600 seconds"),
        ({**TWO, "wait_seconds": 1e9}, "wait_seconds must be from 0 to 3600 seconds"),
    ],
)
def test_bad_ask_arguments_are_named_as_the_mapper_names_them(
    args: dict[str, object], reason: str
) -> None:
    with pytest.raises(MappingError) as caught:
        tools.parse_ask(args)
    assert caught.value.reason == reason


def test_a_deadline_without_a_policy_fails_and_pick_recommended_is_kept() -> None:
    assert (
        tools.parse_ask({**TWO, "deadline_seconds": 30}).on_timeout
        == comms_pb2.ASK_TIMEOUT_POLICY_FAIL
    )
    call = tools.parse_ask({**TWO, "deadline_seconds": 30, "on_timeout": "pick_recommended"})
    assert call.on_timeout == comms_pb2.ASK_TIMEOUT_POLICY_PICK_RECOMMENDED
    now = datetime(2026, 1, 1, tzinfo=UTC)
    [ask_block] = tools.blocks_for(call, now)
    assert ask_block.ask.deadline.ToDatetime(tzinfo=UTC) == now + timedelta(seconds=30)
    assert ask_block.ask.on_timeout == comms_pb2.ASK_TIMEOUT_POLICY_PICK_RECOMMENDED


def test_context_is_a_text_block_before_the_ask() -> None:
    call = tools.parse_ask({**TWO, "context": "Read this first."})
    blocks = tools.blocks_for(call, datetime.now(UTC))
    assert [block.WhichOneof("block") for block in blocks] == ["text", "ask"]
    assert blocks[0].text.text == "Read this first."
    assert not blocks[1].ask.HasField("deadline")


def test_wait_and_cancel_arguments() -> None:
    assert tools.parse_wait({"ask_id": "ask_1"}) == tools.WaitCall(
        ask_id="ask_1", wait_seconds=None
    )
    assert tools.parse_wait({"ask_id": "ask_1", "wait_seconds": 0}).wait_seconds == 0
    assert tools.parse_cancel({"ask_id": "ask_1"}).reason == tools.CANCELLED
    assert tools.parse_cancel({"ask_id": "ask_1", "reason": "not needed"}).reason == "not needed"
    for args, reason in [
        ({}, "ask_id is missing"),
        ({"ask_id": ""}, "ask_id is empty"),
        ({"ask_id": "a" * 201}, "ask_id is not an id"),
    ]:
        with pytest.raises(MappingError) as caught:
            tools.parse_wait(args)
        assert caught.value.reason == reason
    with pytest.raises(MappingError) as caught:
        tools.parse_cancel({"ask_id": "ask_1", "reason": "x" * 501})
    assert caught.value.reason == "reason is longer than 500 characters"


def test_the_wait_header() -> None:
    assert tools.parse_wait_header(None) is None
    assert tools.parse_wait_header("240") == 240.0
    for bad in ("soon", "-1", "99999", "nan"):
        with pytest.raises(MappingError):
            tools.parse_wait_header(bad)


def test_the_call_key_is_the_arguments_but_the_hold() -> None:
    key = tools.call_key(TWO)
    assert tools.call_key({**TWO, "wait_seconds": 5}) == key
    assert tools.call_key(dict(reversed(list({**TWO, "context": "c"}.items())))) == tools.call_key(
        {**TWO, "context": "c"}
    )
    assert tools.call_key({**TWO, "context": "c"}) != key
    assert tools.call_key({**TWO, "deadline_seconds": 5}) != key
    assert len(key) == 64


def test_recommended_answers_pick_the_recommended_else_the_first_else_nothing() -> None:
    ask = build_ask(
        {
            "questions": [
                {
                    "id": "a",
                    "question": "?",
                    "options": [{"label": "x"}, {"label": "y"}],
                    "recommended": 1,
                },
                {"id": "b", "question": "?", "options": [{"label": "x"}], "recommended": 7},
                {"id": "c", "question": "?", "options": [{"label": "x"}, {"label": "y"}]},
                {"id": "d", "question": "?", "options": []},
            ]
        }
    )
    answers = tools.recommended_answers(ask)
    assert [(a.question_id, list(a.chosen_option_ids)) for a in answers] == [
        ("a", ["1"]),
        ("b", ["0"]),
        ("c", ["0"]),
        ("d", []),
    ]


def test_an_answer_in_structured_content_and_in_omp_s_words() -> None:
    ask = _answered(
        build_ask(TWO), {"db": ["1"], "features": ["0", "2"]}, {"features": "later: SCIM"}
    )
    assert tools.result_content(ask, link="http://c/#/ask/ask_1") == {
        "status": "answered",
        "ask_id": "ask_1",
        "answers": [
            {
                "question_id": "db",
                "chosen_labels": ["SQLite"],
                "chosen_option_ids": ["1"],
                "custom_text": "",
                "skipped": False,
                "timed_out": False,
            },
            {
                "question_id": "features",
                "chosen_labels": ["Email", "SSO"],
                "chosen_option_ids": ["0", "2"],
                "custom_text": "later: SCIM",
                "skipped": False,
                "timed_out": False,
            },
        ],
        "answered_by": "Ada",
        "link": "http://c/#/ask/ask_1",
    }
    # omp's own summary would show only the text of `features`; this one keeps the picks.
    assert tools.result_text(ask) == (
        "User answers:\n"
        "db: SQLite\n"
        'features: [Email, SSO] + "later: SCIM"\n'
        "(answered by Ada in Compass)"
    )


def test_one_question_reads_as_omp_s_single_question_response() -> None:
    one = build_ask({"questions": [TWO["questions"][1]]})  # type: ignore[index] - test data
    assert tools.result_text(_answered(one, {"features": ["1"]})).splitlines()[0] == (
        "User selected: OAuth"
    )
    both = tools.result_text(_answered(one, {"features": ["1"]}, {"features": "a\nb"}))
    assert both.splitlines()[:4] == [
        "User selected: OAuth",
        "User provided custom input:",
        "  a",
        "  b",
    ]
    assert tools.result_text(_answered(one, {})).startswith("User did not select any options")
    single = build_ask({"questions": [TWO["questions"][0]]})  # type: ignore[index] - test data
    assert tools.result_text(_answered(single, {})).startswith("User skipped the question")
    skipped = tools.result_content(_answered(single, {}))["answers"]
    assert skipped == [
        {
            "question_id": "db",
            "chosen_labels": [],
            "chosen_option_ids": [],
            "custom_text": "",
            "skipped": True,
            "timed_out": False,
        }
    ]


def test_a_timed_out_ask_says_the_pick_was_automatic() -> None:
    ask = _answered(build_ask(TWO), {"db": ["1"], "features": ["0"]})
    ask.status = comms_pb2.ASK_STATUS_TIMED_OUT
    ask.close_reason = tools.TIMED_OUT_REASON
    for question in ask.questions:
        question.timed_out = True
    content = tools.result_content(ask)
    assert content["status"] == "timed_out"
    assert "answered_by" not in content
    assert content["close_reason"] == tools.TIMED_OUT_REASON
    assert tools.result_text(ask) == (
        "User answers:\n"
        "db: SQLite (auto-selected after timeout)\n"
        "features: [Email] (auto-selected after timeout)"
    )


@pytest.mark.parametrize(
    ("status", "reason", "by", "text"),
    [
        (
            comms_pb2.ASK_STATUS_DECLINED,
            "ask me tomorrow",
            "Ada",
            "Ada declined to answer (ask me tomorrow). Do not ask the same again; carry on "
            "without it.",
        ),
        (
            comms_pb2.ASK_STATUS_WITHDRAWN,
            "agent stopped waiting",
            "",
            "The ask was withdrawn (agent stopped waiting); nobody will answer it.",
        ),
        (
            comms_pb2.ASK_STATUS_EXPIRED,
            "",
            "",
            "Nobody answered before the deadline; the ask expired.",
        ),
    ],
)
def test_outcomes_without_an_answer_are_normal_results(
    status: comms_pb2.AskStatus, reason: str, by: str, text: str
) -> None:
    ask = build_ask(TWO)
    ask.ask_id, ask.status, ask.close_reason, ask.closed_by_name = "ask_1", status, reason, by
    content = tools.result_content(ask)
    assert content["status"] == tools.STATUS[status]
    assert content["answers"] == []
    assert content.get("close_reason", "") == reason
    assert content.get("answered_by", "") == by
    assert tools.result_text(ask) == text


def test_pending_says_how_to_keep_waiting() -> None:
    ask = build_ask(TWO)
    ask.ask_id, ask.status = "ask_1", comms_pb2.ASK_STATUS_PENDING
    assert tools.result_content(ask, link="L") == {
        "status": "pending",
        "ask_id": "ask_1",
        "answers": [],
        "link": "L",
    }
    assert tools.result_text(ask, link="L") == (
        "No answer yet (ask_id ask_1). People answer it at L. To keep waiting, call ask_wait "
        'with {"ask_id": "ask_1"} now (an ask nobody waits for is withdrawn after a grace '
        "period); to give up, call ask_cancel."
    )


_texts = st.text(min_size=1, max_size=20).filter(lambda t: "\x00" not in t)


@given(
    labels=st.lists(_texts, min_size=1, max_size=5, unique=True),
    picks=st.lists(st.booleans(), min_size=5, max_size=5),
    custom=st.one_of(st.just(""), _texts),
    multi=st.booleans(),
    questions=st.integers(min_value=1, max_value=3),
)
def test_the_text_block_carries_every_pick_and_every_word(
    labels: list[str], picks: list[bool], custom: str, multi: bool, questions: int
) -> None:
    """Some clients give the model only the text: nothing of an answer may be missing."""
    args = {
        "questions": [
            {
                "id": f"q{n}",
                "question": "?",
                "options": [{"label": label} for label in labels],
                "multi": multi,
            }
            for n in range(questions)
        ]
    }
    chosen = [str(i) for i, label in enumerate(labels) if picks[i]]
    if not multi:
        chosen = chosen[:1]
    ask = _answered(
        build_ask(args),
        {f"q{n}": chosen for n in range(questions)},
        {f"q{n}": custom for n in range(questions)} if multi or not chosen else None,
    )
    text = tools.result_text(ask)
    for question in ask.questions:
        assert question.question_id in text or questions == 1
        for option_id in question.chosen_option_ids:
            assert question.options[int(option_id)].label in text
        for line in question.custom_text.split("\n"):
            assert line in text
