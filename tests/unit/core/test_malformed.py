"""Malformed ask arguments: exactly one counted UnmappedEvent naming the field, and nothing
partial, not even in a later frame of the same message (docs/spec.md §2.2)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import pytest

from compass_core import RESERVED_OPTION_LABELS, ConversationUpdated, EventMapper, UnmappedEvent
from compass_core.limits import (
    MAX_ASKS_PER_MESSAGE,
    MAX_ID_LENGTH,
    MAX_OPTIONS_PER_QUESTION,
    MAX_QUESTIONS_PER_ASK,
)
from tests.unit.core._events import (
    SESSION,
    ask_start,
    assistant_end,
    assistant_start,
    gallery_args,
    question,
)

if TYPE_CHECKING:
    from collections.abc import Callable

Args = dict[str, Any]


def _gallery_with(change: Callable[[Args], object]) -> Args:
    args = gallery_args()
    change(args)
    return args


def _set(path: str, value: object) -> Callable[[Args], None]:
    """Set `questions[i].key` or `questions[i].options[j].key` of the gallery args."""

    def change(args: Args) -> None:
        target: Any = args
        *parents, last = _parse(path)
        for part in parents:
            target = target[part]
        target[last] = value

    return change


def _drop(path: str) -> Callable[[Args], None]:
    def change(args: Args) -> None:
        target: Any = args
        *parents, last = _parse(path)
        for part in parents:
            target = target[part]
        del target[last]

    return change


def _parse(path: str) -> list[str | int]:
    pieces = path.replace("]", "").replace("[", ".").split(".")
    return [int(piece) if piece.isdigit() else piece for piece in pieces]


# (args, the exact reason). Each case breaks ONE thing of an otherwise well-formed call.
CASES: dict[str, tuple[object, str]] = {
    # the arguments as a whole
    "args null": (None, "args is not an object (got null)"),
    "args list": ([gallery_args()], "args is not an object (got array)"),
    "args string": ('{"questions": []}', "args is not an object (got string)"),
    "args number": (3, "args is not an object (got number)"),
    "questions missing": ({}, "questions is missing"),
    "questions empty": ({"questions": []}, "questions is empty"),
    "questions object": (
        {"questions": {"0": question()}},
        "questions is not an array (got object)",
    ),
    "questions string": ({"questions": "db"}, "questions is not an array (got string)"),
    "questions null": ({"questions": None}, "questions is not an array (got null)"),
    # a question of the wrong shape (the second, so a valid sibling precedes it)
    "question string": (
        {"questions": [question("a"), "b"]},
        "questions[1] is not an object (got string)",
    ),
    "question array": (
        {"questions": [question("a"), []]},
        "questions[1] is not an object (got array)",
    ),
    "question null": ({"questions": [None]}, "questions[0] is not an object (got null)"),
    # each question field: missing / wrong type
    "id missing": (_gallery_with(_drop("questions.1.id")), "questions[1].id is missing"),
    "id number": (
        _gallery_with(_set("questions.1.id", 2)),
        "questions[1].id is not a string (got number)",
    ),
    "id null": (
        _gallery_with(_set("questions.0.id", None)),
        "questions[0].id is not a string (got null)",
    ),
    "id empty": (_gallery_with(_set("questions.1.id", "")), "questions[1].id is empty"),
    "id duplicate": (
        _gallery_with(_set("questions.1.id", "db")),
        "questions[1].id repeats questions[0].id",
    ),
    "question missing": (
        _gallery_with(_drop("questions.0.question")),
        "questions[0].question is missing",
    ),
    "question list": (
        _gallery_with(_set("questions.0.question", ["Which?"])),
        "questions[0].question is not a string (got array)",
    ),
    "header number": (
        _gallery_with(_set("questions.1.header", 1)),
        "questions[1].header is not a string (got number)",
    ),
    "header null": (
        _gallery_with(_set("questions.1.header", None)),
        "questions[1].header is not a string (got null)",
    ),
    "multi string": (
        _gallery_with(_set("questions.1.multi", "true")),
        "questions[1].multi is not a boolean (got string)",
    ),
    "multi number": (
        _gallery_with(_set("questions.1.multi", 1)),
        "questions[1].multi is not a boolean (got number)",
    ),
    "multi null": (
        _gallery_with(_set("questions.1.multi", None)),
        "questions[1].multi is not a boolean (got null)",
    ),
    "recommended true": (
        _gallery_with(_set("questions.0.recommended", True)),
        "questions[0].recommended is not an integer (got boolean)",
    ),
    "recommended false": (
        _gallery_with(_set("questions.0.recommended", False)),
        "questions[0].recommended is not an integer (got boolean)",
    ),
    "recommended string": (
        _gallery_with(_set("questions.0.recommended", "1")),
        "questions[0].recommended is not an integer (got string)",
    ),
    "recommended 1.5": (
        _gallery_with(_set("questions.0.recommended", 1.5)),
        "questions[0].recommended is not an integer (got 1.5)",
    ),
    "recommended nan": (
        _gallery_with(_set("questions.0.recommended", float("nan"))),
        "questions[0].recommended is not an integer (got nan)",
    ),
    "recommended inf": (
        _gallery_with(_set("questions.0.recommended", float("inf"))),
        "questions[0].recommended is not an integer (got inf)",
    ),
    "recommended 2**31": (
        _gallery_with(_set("questions.0.recommended", 2**31)),
        "questions[0].recommended is outside the int32 range",
    ),
    "recommended -2**31-1": (
        _gallery_with(_set("questions.0.recommended", -(2**31) - 1)),
        "questions[0].recommended is outside the int32 range",
    ),
    "recommended 2.0**31": (
        _gallery_with(_set("questions.0.recommended", 2.0**31)),
        "questions[0].recommended is outside the int32 range",
    ),
    "recommended 10**400": (
        _gallery_with(_set("questions.0.recommended", 10**400)),
        "questions[0].recommended is outside the int32 range",
    ),
    "recommended null": (
        _gallery_with(_set("questions.0.recommended", None)),
        "questions[0].recommended is not an integer (got null)",
    ),
    "recommended list": (
        _gallery_with(_set("questions.0.recommended", [0])),
        "questions[0].recommended is not an integer (got array)",
    ),
    # options
    "options missing": (
        _gallery_with(_drop("questions.1.options")),
        "questions[1].options is missing",
    ),
    "options string": (
        _gallery_with(_set("questions.1.options", "Email, OAuth")),
        "questions[1].options is not an array (got string)",
    ),
    "options null": (
        _gallery_with(_set("questions.1.options", None)),
        "questions[1].options is not an array (got null)",
    ),
    "options bare strings": (
        {"questions": [{"id": "q", "question": "Which?", "options": ["Postgres", "SQLite"]}]},
        "questions[0].options[0] is not an object (got string)",
    ),
    "option null": (
        _gallery_with(_set("questions.1.options.3", None)),
        "questions[1].options[3] is not an object (got null)",
    ),
    "label missing": (
        _gallery_with(_drop("questions.1.options.2.label")),
        "questions[1].options[2].label is missing",
    ),
    "label number": (
        _gallery_with(_set("questions.1.options.0.label", 3)),
        "questions[1].options[0].label is not a string (got number)",
    ),
    "label object": (
        _gallery_with(_set("questions.0.options.2.label", {"text": "MongoDB"})),
        "questions[0].options[2].label is not a string (got object)",
    ),
    "description number": (
        _gallery_with(_set("questions.0.options.1.description", 0)),
        "questions[0].options[1].description is not a string (got number)",
    ),
    "description null": (
        _gallery_with(_set("questions.0.options.1.description", None)),
        "questions[0].options[1].description is not a string (got null)",
    ),
    "preview bool": (
        _gallery_with(_set("questions.1.options.3.preview", True)),
        "questions[1].options[3].preview is not a string (got boolean)",
    ),
    "preview list": (
        _gallery_with(_set("questions.0.options.0.preview", ["line"])),
        "questions[0].options[0].preview is not a string (got array)",
    ),
    # strings protobuf cannot carry (json.loads lets lone surrogates through)
    "id lone surrogate": (
        _gallery_with(_set("questions.1.id", "f\ud800")),
        "questions[1].id is not valid Unicode (lone surrogate)",
    ),
    "question lone surrogate": (
        _gallery_with(_set("questions.0.question", "\udfff?")),
        "questions[0].question is not valid Unicode (lone surrogate)",
    ),
    "header lone surrogate": (
        _gallery_with(_set("questions.1.header", "\ud83d")),
        "questions[1].header is not valid Unicode (lone surrogate)",
    ),
    "label lone surrogate": (
        _gallery_with(_set("questions.1.options.1.label", "\ud800")),
        "questions[1].options[1].label is not valid Unicode (lone surrogate)",
    ),
    "description lone surrogate": (
        _gallery_with(_set("questions.1.options.3.description", "x\ud800")),
        "questions[1].options[3].description is not valid Unicode (lone surrogate)",
    ),
    "preview lone surrogate": (
        _gallery_with(_set("questions.0.options.2.preview", "\ud800")),
        "questions[0].options[2].preview is not valid Unicode (lone surrogate)",
    ),
    # what the server would refuse (compass_core.limits), and with it the whole frame
    "too many questions": (
        {"questions": [question(f"q{n}") for n in range(MAX_QUESTIONS_PER_ASK + 1)]},
        "questions has more than 100 items (got 101)",
    ),
    "too many options": (
        {"questions": [question("q", *(f"o{n}" for n in range(MAX_OPTIONS_PER_QUESTION + 1)))]},
        "questions[0].options has more than 100 items (got 101)",
    ),
    "id too long": (
        _gallery_with(_set("questions.1.id", "f" * (MAX_ID_LENGTH + 1))),
        "questions[1].id is longer than 200 characters",
    ),
    "id NUL": (
        _gallery_with(_set("questions.1.id", "feat\x00ures")),
        "questions[1].id contains a NUL character",
    ),
    "question NUL": (
        _gallery_with(_set("questions.1.question", "Which\x00?")),
        "questions[1].question contains a NUL character",
    ),
    "header NUL": (
        _gallery_with(_set("questions.0.header", "\x00")),
        "questions[0].header contains a NUL character",
    ),
    "label NUL": (
        _gallery_with(_set("questions.1.options.3.label", "SAML\x00SSO")),
        "questions[1].options[3].label contains a NUL character",
    ),
    "description NUL": (
        _gallery_with(_set("questions.0.options.2.description", "Document\x00store")),
        "questions[0].options[2].description contains a NUL character",
    ),
    "preview NUL": (
        _gallery_with(_set("questions.0.options.0.preview", "SELECT 1;\x00")),
        "questions[0].options[0].preview contains a NUL character",
    ),
    "preview NUL without a description": (
        _gallery_with(_set("questions.1.options.0.preview", "\x00")),
        "questions[1].options[0].preview contains a NUL character",
    ),
    "preview NUL beside a description": (
        _gallery_with(_set("questions.0.options.1.preview", "\x00")),
        "questions[0].options[1].preview contains a NUL character",
    ),
}

# The three labels the runtime reserves for itself (docs/spec.md §2.1).
for _label in sorted(RESERVED_OPTION_LABELS):
    CASES[f"reserved label {_label}"] = (
        _gallery_with(_set("questions.1.options.2.label", _label)),
        f"questions[1].options[2].label is the reserved runtime label {_label!r}",
    )


def test_asks_at_the_server_limits_are_well_formed() -> None:
    at_limit = {
        "questions": [
            question("q0", *(f"o{n}" for n in range(MAX_OPTIONS_PER_QUESTION))),
            question("i" * MAX_ID_LENGTH, "x"),
            *(question(f"q{n}") for n in range(2, MAX_QUESTIONS_PER_ASK)),
        ]
    }
    mapper = EventMapper(session=SESSION)
    [frame] = mapper.map(ask_start(at_limit))
    assert isinstance(frame, ConversationUpdated)
    ask = frame.value.blocks[0].ask
    assert len(ask.questions) == MAX_QUESTIONS_PER_ASK
    assert [o.id for o in ask.questions[0].options] == [
        str(n) for n in range(MAX_OPTIONS_PER_QUESTION)
    ]
    assert ask.questions[1].question_id == "i" * MAX_ID_LENGTH


def test_the_limits_are_the_servers() -> None:
    from compass_server import domain

    assert (
        MAX_ASKS_PER_MESSAGE,
        MAX_ID_LENGTH,
        MAX_OPTIONS_PER_QUESTION,
        MAX_QUESTIONS_PER_ASK,
    ) == (
        domain.MAX_ASKS_PER_MESSAGE,
        domain.MAX_ID_LENGTH,
        domain.MAX_OPTIONS_PER_QUESTION,
        domain.MAX_QUESTIONS_PER_ASK,
    )


def test_an_ask_past_the_message_limit_is_bounced() -> None:
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())
    mapper.map(assistant_end("Many questions:"))
    frames = [
        mapper.map(ask_start({"questions": [question(f"q{n}")]}))
        for n in range(MAX_ASKS_PER_MESSAGE)
    ]
    assert all(isinstance(out, ConversationUpdated) for [out] in frames)
    [last] = frames[-1]
    assert isinstance(last, ConversationUpdated)
    assert len(last.value.blocks) == MAX_ASKS_PER_MESSAGE + 1  # the text, then the asks

    assert mapper.map(ask_start(gallery_args())) == [
        UnmappedEvent(
            "tool_execution_start:ask",
            "the message already holds 64 asks, the most one message may carry",
        )
    ]
    assert dict(mapper.unmapped_counts) == {"tool_execution_start:ask": 1}
    # The message keeps its 64 asks; a text update still settles; the next message is free.
    [settled] = mapper.map(assistant_end("Many questions, edited:"))
    assert isinstance(settled, ConversationUpdated)
    assert len(settled.value.blocks) == MAX_ASKS_PER_MESSAGE + 1
    mapper.map(assistant_start())
    [fresh] = mapper.map(ask_start(gallery_args()))
    assert isinstance(fresh, ConversationUpdated)
    assert fresh.block_index == 0


def test_the_reserved_labels_are_the_runtimes() -> None:
    assert frozenset({"Other (type your own)", "Chat about this", "Next \u2192"}) == (
        RESERVED_OPTION_LABELS
    )


@pytest.mark.parametrize(("args", "reason"), list(CASES.values()), ids=list(CASES))
def test_malformed_args_yield_one_counted_unmapped_event(args: object, reason: str) -> None:
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())
    mapper.map(assistant_end("Before the ask"))

    outputs = mapper.map(ask_start(args))

    assert outputs == [UnmappedEvent("tool_execution_start:ask", reason)]
    assert outputs[0].kind == "unmapped"
    assert dict(mapper.unmapped_counts) == {"tool_execution_start:ask": 1}
    # Nothing partial stays behind: the message still holds only its text.
    [frame] = mapper.map(assistant_end("Before the ask"))
    assert isinstance(frame, ConversationUpdated)
    assert [b.WhichOneof("block") for b in frame.value.blocks] == ["text"]


def _faults(*changes: Callable[[Args], object]) -> Args:
    args = gallery_args()
    for change in changes:
        change(args)
    return args


# Several faults at once: the reason names the first one in walk order (questions in order;
# in each, id, question, header, multi, recommended, options; in each option, label,
# description, preview), whichever kind of check finds it: a type check, a limit, a missing
# key found afterwards, or a string protobuf refuses on assignment.
@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (
            _faults(_set("questions.0.question", "\udfff?"), _set("questions.1.id", 2)),
            "questions[0].question is not valid Unicode (lone surrogate)",
        ),
        (
            _faults(_set("questions.0.options.1.label", "a\x00b"), _drop("questions.1.question")),
            "questions[0].options[1].label contains a NUL character",
        ),
        (
            _faults(_drop("questions.0.options"), _set("questions.1.id", "db")),
            "questions[0].options is missing",
        ),
        (
            _faults(
                _set("questions.1.options.0.description", "x\ud800"),
                _set("questions.1.options.2.label", "Next \u2192"),
            ),
            "questions[1].options[0].description is not valid Unicode (lone surrogate)",
        ),
        (
            _faults(_set("questions.0.header", 7), _set("questions.0.question", "\x00")),
            "questions[0].question contains a NUL character",
        ),
        (
            _faults(_set("questions.0.recommended", 1.5), _set("questions.0.multi", "yes")),
            "questions[0].multi is not a boolean (got string)",
        ),
    ],
)
def test_the_first_fault_in_walk_order_is_the_one_reported(args: Args, reason: str) -> None:
    mapper = EventMapper(session=SESSION)
    assert mapper.map(ask_start(args)) == [UnmappedEvent("tool_execution_start:ask", reason)]


def test_one_bad_question_bounces_the_whole_ask() -> None:
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())
    good = [question("a", "x"), question("b", "y")]
    bad = [*copy.deepcopy(good), question("c", "Chat about this")]

    assert [o.kind for o in mapper.map(ask_start(bad))] == ["unmapped"]
    [frame] = mapper.map(ask_start({"questions": good}))
    assert isinstance(frame, ConversationUpdated)
    assert len(frame.value.blocks) == 1
    assert [q.question_id for q in frame.value.blocks[0].ask.questions] == ["a", "b"]
    assert frame.block_index == 0


def test_missing_args_key_is_malformed() -> None:
    mapper = EventMapper(session=SESSION)
    event = ask_start({})
    del event["args"]
    assert mapper.map(event) == [
        UnmappedEvent("tool_execution_start:ask", "args is not an object (got missing)")
    ]


def test_counts_accumulate_per_event_type() -> None:
    mapper = EventMapper(session=SESSION)
    for args, _reason in list(CASES.values())[:5]:
        mapper.map(ask_start(args))
    assert dict(mapper.unmapped_counts) == {"tool_execution_start:ask": 5}


def test_unmapped_counts_is_read_only() -> None:
    mapper = EventMapper(session=SESSION)
    counts = mapper.unmapped_counts
    with pytest.raises(TypeError):
        counts["tool_execution_start:ask"] = 1  # type: ignore[index] -- proving it is refused
    mapper.map(ask_start(None))
    assert counts["tool_execution_start:ask"] == 1  # a live view


@pytest.mark.parametrize(
    ("event", "event_type", "reason"),
    [
        ({"type": "message_start"}, "message_start", "message is missing"),
        (
            {"type": "message_start", "message": "hi"},
            "message_start",
            "message is not an object (got string)",
        ),
        ({"type": "message_start", "message": {}}, "message_start", "message.role is missing"),
        (
            {"type": "message_end", "message": []},
            "message_end",
            "message is not an object (got array)",
        ),
        (
            {"type": "message_end", "message": {"role": 1}},
            "message_end",
            "message.role is not a string (got number)",
        ),
    ],
)
def test_message_events_without_a_usable_role_are_counted(
    event: object, event_type: str, reason: str
) -> None:
    mapper = EventMapper(session=SESSION)
    assert mapper.map(event) == [UnmappedEvent(event_type, reason)]
    assert dict(mapper.unmapped_counts) == {event_type: 1}


@pytest.mark.parametrize(
    ("content", "texts", "reason"),
    [
        (None, [], "message.content is not an array (got null)"),
        ("plain", ["plain"], None),
        (
            [{"type": "text", "text": 5}, {"type": "text", "text": "ok"}],
            ["ok"],
            "message.content[0].text is not a string (got number)",
        ),
        (
            ["raw", {"type": "text", "text": "ok"}],
            ["ok"],
            "message.content[0] is not an object (got string)",
        ),
        ([{"type": "text"}], [], "message.content[0].text is missing"),
        (
            [{"type": "text", "text": "a\ud800"}, {"type": "text", "text": "b"}],
            ["b"],
            "message.content[0].text is not valid Unicode",
        ),
        (
            [{"type": "text", "text": "a"}, {"type": "text", "text": "b\x00c"}],
            ["a"],
            "message.content[1].text contains a NUL character",
        ),
    ],
)
def test_malformed_assistant_content_settles_the_good_parts_and_counts_the_rest(
    content: object, texts: list[str], reason: str | None
) -> None:
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())
    [frame] = mapper.map(ask_start(gallery_args()))
    assert isinstance(frame, ConversationUpdated)
    event = {"type": "message_end", "message": {"role": "assistant", "content": content}}

    outputs = mapper.map(event)

    settled = outputs[0]
    assert isinstance(settled, ConversationUpdated)
    assert [b.text.text for b in settled.value.blocks if b.HasField("text")] == texts
    assert settled.value.blocks[-1] == frame.value.blocks[0]  # the ask is never lost
    if reason is None:
        assert len(outputs) == 1
    else:
        assert outputs[1:] == [UnmappedEvent("message_end", reason)]
        assert dict(mapper.unmapped_counts) == {"message_end": 1}


def test_missing_content_is_counted() -> None:
    mapper = EventMapper(session=SESSION)
    outputs = mapper.map({"type": "message_end", "message": {"role": "assistant"}})
    assert [o.kind for o in outputs] == ["conversationUpdated", "unmapped"]
    assert outputs[1] == UnmappedEvent("message_end", "message.content is missing")
