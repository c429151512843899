"""Property tests: whatever EventMapper.map is given, it never raises, and every output is
either a well-formed frame or a counted UnmappedEvent (docs/spec.md §2.2).

Mutations of the runtime's well-formed gallery ask are also checked against a small,
separately written reference derivation, so "well-formed frame" means "the right frame".
"""

from __future__ import annotations

import copy
import math
from typing import Any

from hypothesis import HealthCheck, event as note_event, given, settings, strategies as st

from compass_core import (
    RESERVED_OPTION_LABELS,
    ConversationUpdated,
    EventMapper,
    MapOutput,
    UnmappedEvent,
)
from compass_server import domain
from gen.compass.v1 import comms_pb2
from tests.unit.core._events import SESSION, assistant_end, assistant_start, gallery_args

SETTINGS = settings(
    max_examples=400,
    deadline=None,  # a shared 2-core machine; speed is measured in bench/, not here
    suppress_health_check=[HealthCheck.too_slow],
)

KEYS = [
    "type", "toolName", "toolCallId", "args", "isError", "result", "message", "messageId",
    "role", "content", "text", "questions", "id", "question", "header", "options", "multi",
    "recommended", "label", "description", "preview",
]  # fmt: skip
WORDS = [
    *sorted(RESERVED_OPTION_LABELS), "", " ", "ask", "assistant", "user", "text",
    "tool_execution_start", "tool_execution_end", "message_start", "message_end",
    "\ud800", "x\udfff", "Next \u2192 ", "\x00", "a\x00b", "i" * 200, "i" * 201,
]  # fmt: skip

any_text = (
    st.text(max_size=12)
    | st.sampled_from(WORDS)
    | st.text(
        st.characters(exclude_categories=()),
        max_size=4,  # includes lone surrogates
    )
)
numbers = (
    st.integers()
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.sampled_from([0, 1, -1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 10**400])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0.0, -0.0, 1.0, 1.5, 2.0**31, math.nan, math.inf])
)
scalars = st.none() | st.booleans() | numbers | any_text
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), children, max_size=5)
    ),
    max_leaves=24,
)
event_types = st.sampled_from([
    "tool_execution_start", "tool_execution_update", "tool_execution_end",
    "message_start", "message_update", "message_end", "turn_start", "agent_end",
])  # fmt: skip
event_shaped = st.fixed_dictionaries(
    {"type": event_types},
    optional={
        "toolName": st.just("ask") | json_values,
        "toolCallId": any_text | json_values,
        "args": json_values,
        "isError": st.just(True) | json_values,
        "result": json_values,
        "message": st.fixed_dictionaries(
            {},
            optional={
                "role": st.sampled_from(["assistant", "user"]) | json_values,
                "content": json_values,
            },
        )
        | json_values,
        "messageId": any_text | json_values,
    },
)


def _check(mapper: EventMapper, event: object) -> list[MapOutput]:
    """Map `event`, asserting the universal invariants; return the outputs."""
    before = dict(mapper.unmapped_counts)
    outputs = mapper.map(event)  # must not raise: an exception fails the property

    assert isinstance(outputs, list)
    unmapped: dict[str, int] = {}
    for out in outputs:
        if isinstance(out, UnmappedEvent):
            assert out.kind == "unmapped"
            assert out.event_type
            assert out.reason
            assert not out.reason.startswith("internal error"), out  # a bug, not bad input
            out.reason.encode("utf-8")
            unmapped[out.event_type] = unmapped.get(out.event_type, 0) + 1
        else:
            assert isinstance(out, ConversationUpdated)
            _check_frame(out)
    after = dict(mapper.unmapped_counts)
    for event_type in set(before) | set(after):
        grew = after.get(event_type, 0) - before.get(event_type, 0)
        assert grew == unmapped.get(event_type, 0), (event_type, before, after)
    return outputs


def _check_frame(frame: ConversationUpdated) -> None:
    value = frame.value
    assert frame.kind == "conversationUpdated"
    assert value.message_id == ""
    assert value.client_message_id
    value.SerializeToString()  # every string is encodable
    # The server takes every frame the mapper makes: the bridge appends it as it is.
    assert domain.block_violations(value.blocks, minted=False) == []
    kinds = [block.WhichOneof("block") for block in value.blocks]
    assert None not in kinds
    assert kinds == sorted(kinds, key=lambda kind: kind != "text")  # text first, then asks
    for block in value.blocks:
        if block.HasField("ask"):
            _check_ask(block.ask)
    if frame.block_index is not None:
        assert frame.block_index == len(value.blocks) - 1
        assert kinds[-1] == "ask"


def _check_ask(ask: comms_pb2.Ask) -> None:
    assert ask.ask_id == ""
    assert ask.answered_by_account_id == ""
    assert ask.answered_by_name == ""
    assert not ask.HasField("answered_at")
    assert len(ask.questions) >= 1
    ids = [q.question_id for q in ask.questions]
    assert all(ids)
    assert len(set(ids)) == len(ids)
    for q in ask.questions:
        assert [o.id for o in q.options] == [str(n) for n in range(len(q.options))]
        assert all(o.label not in RESERVED_OPTION_LABELS for o in q.options)
        assert list(q.chosen_option_ids) == []
        assert q.custom_text == ""
        assert not q.timed_out


@SETTINGS
@given(event=json_values)
def test_any_json_value_is_safe(event: object) -> None:
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())
    _check(mapper, event)


@SETTINGS
@given(events=st.lists(event_shaped | json_values, max_size=12))
def test_any_event_sequence_is_safe(events: list[object]) -> None:
    mapper = EventMapper(session=SESSION)
    for event in events:
        _check(mapper, event)


@SETTINGS
@given(args=json_values, tool_call_id=any_text | json_values)
def test_any_ask_arguments_are_safe(args: object, tool_call_id: object) -> None:
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())
    event = {"type": "tool_execution_start", "toolName": "ask", "toolCallId": tool_call_id}
    event["args"] = args
    outputs = _check(mapper, event)
    assert len(outputs) == 1
    _agrees_with_reference(outputs[0], args)


# Values where JSON and Python disagree, or where the contract is stricter than the runtime.
TRICKY = st.sampled_from([
    True, False, None, "", " ", "0", "1", 0, 1, -1, 1.0, 1.5, -0.0, 2**31, -(2**31) - 1,
    math.nan, math.inf, [], {}, ["0"], {"label": "x"}, "\ud800", *sorted(RESERVED_OPTION_LABELS),
    "\x00", "x\x00", "i" * 200, "i" * 201, [{"label": str(n)} for n in range(101)],
    [{"id": str(n), "question": "?", "options": []} for n in range(101)],
])  # fmt: skip


def _same_type(value: object) -> st.SearchStrategy[Any]:
    """Another value of `value`'s JSON type: keeps many mutants well-formed, while still
    reaching empty ids, reserved labels, lone surrogates and out-of-range numbers."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int | float):
        return st.integers(min_value=-2, max_value=8) | numbers
    if isinstance(value, str):
        return st.text(max_size=12) | any_text
    if isinstance(value, list):
        return st.permutations(value)  # reordered questions or options
    if isinstance(value, dict):  # the same object with one key the schema does not name
        return st.builds(lambda extra: {**value, "extra": extra}, json_values)
    return json_values


@st.composite
def mutated_gallery_args(draw: st.DrawFn) -> object:
    """The gallery args after 1-3 random mutations: retype a value (same JSON type), set it to
    a TRICKY value or any JSON value, drop it, or give one question another question's id."""
    args: dict[str, Any] = gallery_args()
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        # Never the root: test_any_ask_arguments_are_safe covers arbitrary whole arguments.
        paths = _paths(args)[1:]
        if not paths:  # `questions` itself was dropped
            break
        path = draw(st.sampled_from(paths))
        action = draw(
            st.sampled_from(["retype"] * 4 + ["tricky", "replace", "drop", "duplicate_id"])
        )
        if action == "duplicate_id":
            questions = args.get("questions") if isinstance(args, dict) else None
            if isinstance(questions, list) and len(questions) >= 2:
                first, second = questions[0], questions[1]
                if isinstance(first, dict) and isinstance(second, dict):
                    second["id"] = first.get("id")
                    continue
            action = "drop"
        parent = _at(args, path[:-1])
        key = path[-1]
        if action == "retype":
            parent[key] = draw(_same_type(parent[key]))
        elif action == "tricky":
            # A copy: sampled_from hands out the same [] and {} objects every time, and a
            # later mutation must not change them for the examples that follow.
            parent[key] = copy.deepcopy(draw(TRICKY))
        elif action == "replace":
            parent[key] = draw(json_values)
        else:  # a dict key, or a list item (later items move down)
            del parent[key]
    return args


def _paths(value: object, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


@SETTINGS
@given(args=mutated_gallery_args(), text_first=st.booleans())
def test_mutated_gallery_asks_map_exactly_like_the_reference(
    args: object, text_first: bool
) -> None:
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())
    if text_first:
        mapper.map(assistant_end("Some text"))
    event = {"type": "tool_execution_start", "toolName": "ask", "toolCallId": "t", "args": args}
    snapshot = copy.deepcopy(event)

    outputs = _check(mapper, event)

    assert event == snapshot or _has_nan(snapshot)  # the event is never changed
    assert len(outputs) == 1
    _agrees_with_reference(outputs[0], args)


def _has_nan(value: object) -> bool:
    # nan != nan, so an event holding one never compares equal to its own copy.
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, dict):
        return any(_has_nan(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_nan(v) for v in value)
    return False


def _agrees_with_reference(out: MapOutput, args: object) -> None:
    expected = _reference_ask(args)
    note_event(f"reference: {'malformed' if expected is None else 'well-formed'}")
    if expected is None:
        assert isinstance(out, UnmappedEvent), out
        assert out.event_type == "tool_execution_start:ask"
    else:
        assert isinstance(out, ConversationUpdated), out
        assert out.value.blocks[-1].ask == expected


def _reference_ask(args: object) -> comms_pb2.Ask | None:
    """An independent, plain reading of docs/spec.md §2.1-2.2 and of what the server accepts (the
    limits in compass_server.domain): the Ask, or None when malformed."""
    if not isinstance(args, dict) or not isinstance(args.get("questions"), list):
        return None
    questions: list[Any] = args["questions"]
    if not questions or not all(isinstance(q, dict) for q in questions):
        return None
    if len(questions) > domain.MAX_QUESTIONS_PER_ASK:
        return None
    built = []
    for q in questions:
        for key in ("id", "question"):
            if not isinstance(q.get(key), str) or "\x00" in q[key]:
                return None
        if len(q["id"]) > domain.MAX_ID_LENGTH:
            return None
        if "header" in q and (not isinstance(q["header"], str) or "\x00" in q["header"]):
            return None
        if "multi" in q and not isinstance(q["multi"], bool):
            return None
        recommended = None
        if "recommended" in q:
            r = q["recommended"]
            if isinstance(r, bool) or not isinstance(r, int | float):
                return None
            if isinstance(r, float) and not (math.isfinite(r) and r == int(r)):
                return None
            recommended = int(r)
            if not -(2**31) <= recommended <= 2**31 - 1:
                return None
        if not isinstance(q.get("options"), list):
            return None
        if len(q["options"]) > domain.MAX_OPTIONS_PER_QUESTION:
            return None
        options = []
        for n, o in enumerate(q["options"]):
            if not isinstance(o, dict) or not isinstance(o.get("label"), str):
                return None
            if o["label"] in RESERVED_OPTION_LABELS or "\x00" in o["label"]:
                return None
            for key in ("description", "preview"):
                if key in o and (not isinstance(o[key], str) or "\x00" in o[key]):
                    return None
            options.append(
                {
                    "id": str(n),
                    "label": o["label"],
                    "description": o.get("description", ""),
                    "preview": o.get("preview", ""),
                }
            )
        built.append(
            {
                "question_id": q["id"],
                "question": q["question"],
                "header": q.get("header", ""),
                "options": options,
                "allow_multiple": q.get("multi", False),
                "recommended": recommended,
            }
        )
    ids = [q["question_id"] for q in built]
    if "" in ids or len(set(ids)) != len(ids):
        return None
    try:
        return comms_pb2.Ask(questions=built)
    except UnicodeEncodeError:  # a lone surrogate somewhere
        return None


def _field_paths() -> list[tuple[Any, ...]]:
    """Every field of the gallery args, plus the optional ones it leaves out."""
    paths: list[tuple[Any, ...]] = []
    for i, q in enumerate(gallery_args()["questions"]):
        base = ("questions", i)
        paths += [(*base, key) for key in ("id", "question", "header", "options", "multi")]
        paths.append((*base, "recommended"))
        for j, _option in enumerate(q["options"]):
            opt = (*base, "options", j)
            paths += [opt, *((*opt, key) for key in ("label", "description", "preview"))]
    return paths


@SETTINGS
@given(path=st.sampled_from(_field_paths()), value=TRICKY | scalars)
def test_any_value_in_any_field_maps_exactly_like_the_reference(
    path: tuple[Any, ...], value: object
) -> None:
    args = gallery_args()
    _at(args, path[:-1])[path[-1]] = copy.deepcopy(value)
    mapper = EventMapper(session=SESSION)
    mapper.map(assistant_start())

    outputs = _check(mapper, {"type": "tool_execution_start", "toolName": "ask", "args": args})

    assert len(outputs) == 1
    _agrees_with_reference(outputs[0], args)
