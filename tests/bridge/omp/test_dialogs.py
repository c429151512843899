"""The published runtime's ask protocol (oh-my-pi 18.2.3 `--mode rpc-ui`): select and editor
dialogs, driven from the stored answer.

Three layers of evidence: the recorded real runtime (tests/bridge/omp/recorded/), a Python port
of its ask loop (_omp_ask.py) checked against every recording, and the bridge run against
both: the recordings replayed exactly, and the port driven with generated asks and answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from compass_bridge.omp.frames import DONE_SELECTING_LABELS, OTHER_OPTION, sanitize
from gen.compass.v1 import comms_pb2
from tests._wait import eventually
from tests.bridge import _events as ev
from tests.bridge._inproc import harness
from tests.bridge.omp import _recorded
from tests.bridge.omp._omp_ask import DONE_LABEL, Outcome, ask_dialogs

if TYPE_CHECKING:
    from collections.abc import Generator

    from tests.bridge._inproc import Harness

Frame = dict[str, Any]
Answers = dict[str, tuple[list[str], str]]

# -- the port against the real runtime --------------------------------------------------------


@pytest.mark.parametrize("name", _recorded.NAMES)
def test_the_port_of_the_runtime_replays_every_recording(name: str) -> None:
    recording = _recorded.load(name)
    dialogs, replies = recording.dialogs(), recording.replies()
    assert len(dialogs) == len(replies)
    simulated = ask_dialogs(recording.questions())
    request = next(simulated)
    outcome: Outcome | None = None
    for index, (real, reply) in enumerate(zip(dialogs, replies, strict=True)):
        assert _comparable(request) == _comparable(real), f"dialog {index}"
        try:
            request = simulated.send(reply)
        except StopIteration as stop:
            assert index == len(dialogs) - 1, "the port ended early"
            outcome = stop.value
    assert outcome is not None, "the port asked more than the runtime did"
    end = recording.tool_end()
    assert outcome.is_error == end["isError"]
    assert outcome.text == end["result"]["content"][0]["text"]
    assert outcome.details == end["result"]["details"]


def _comparable(request: Frame) -> Frame:
    """A request without its id; an editor's title only up to its first option row."""
    frame = {k: v for k, v in request.items() if k != "id"}
    if frame["method"] == "editor":
        frame["title"] = frame["title"].split("\n\n")[0]
    return frame


def test_the_recordings_show_the_protocol_the_bridge_relies_on() -> None:
    gallery = _recorded.load("gallery")
    kinds = [(f.get("type"), f.get("method")) for f in gallery.runtime()]
    first_select = kinds.index(("extension_ui_request", "select"))
    assert kinds[first_select + 1] == ("tool_execution_start", None)  # the select comes first
    assert gallery.runtime()[0]["type"] == "ready"
    refused = _recorded.load("askdialog").runtime()[1]
    assert refused == {
        "type": "response",
        "command": "set_ask_dialog",
        "success": False,
        "error": "Unknown command: set_ask_dialog",
    }
    assert _recorded.load("cancel").tool_end()["isError"] is True  # a cancel aborts the run
    assert _recorded.load("empty-multi-one").tool_end()["isError"] is True


# -- the bridge replays the recordings --------------------------------------------------------

REPLAYS: dict[str, Answers] = {
    "gallery": {"db": (["0"], ""), "features": (["0", "1"], "")},
    "gallery-other": {"db": ([], "Oracle"), "features": (["0"], "Passkeys too")},
    "single-multi": {"features": (["0", "3"], "")},
    "dis": {"r": (["1"], "")},
    "skip-empty": {"db": ([], "")},
    "skip-multi-q": {"db": ([], ""), "features": ([], "")},
    "odd-labels": {"odd\rid": (["1"], ""), "none": ([], "svc"), "m": (["1"], "")},
    "askdialog": {"db": (["1"], "")},
}
"""The participant's answer that makes the bridge send exactly the recorded replies."""

LOSSES = {
    "gallery-other": ["shows only the text"],
    "skip-empty": ["was skipped"],
    "skip-multi-q": ["was skipped"],
}


@pytest.mark.parametrize("name", sorted(REPLAYS))
async def test_the_bridge_answers_the_recorded_dialogs_exactly(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    recording = _recorded.load(name)
    caplog.set_level(logging.INFO, logger="compass_bridge")
    async with harness(hold_seconds=2.0) as h:
        replies = await _replay(h, recording, REPLAYS[name])
        assert replies == recording.replies()
        assert h.bridge.delivered == 1
        assert h.bridge.unmapped_counts() == {}
        await eventually(lambda: len(h.service.receipts) == 1, "the delivery receipt")
    expected = LOSSES.get(name, [])
    # The receipt: what the model read (the call's result text), and the losses in words.
    (receipt,) = h.service.receipts
    (ask_id,) = h.service.ask_ids()
    assert receipt.ask_id == ask_id
    assert receipt.payload == _result_text(recording)
    if expected:
        assert receipt.state == comms_pb2.DELIVERY_STATE_DELIVERED_WITH_CHANGES
        for text in expected:
            assert text in receipt.detail
    else:
        assert receipt.state == comms_pb2.DELIVERY_STATE_DELIVERED
        assert receipt.detail == ""
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == len(expected), warnings
    for text, warning in zip(expected, warnings, strict=True):
        assert text in warning
        assert warning.startswith("ask ask_")  # names the ask


def _result_text(recording: _recorded.Recording) -> str:
    """The text the recorded ask call's result handed the model."""
    (end,) = [f for f in recording.runtime() if f.get("type") == "tool_execution_end"]
    return "\n".join(part["text"] for part in end["result"]["content"])


async def _replay(h: Harness, recording: _recorded.Recording, answers: Answers) -> list[Frame]:
    """Feed the runtime's side; answer the ask once stored; the replies the bridge wrote.

    Before the runtime's next dialog (and before the call's end) the bridge must have
    answered every dialog so far, as the real runtime waits for each answer.
    """
    asked = 0
    for frame in recording.runtime():
        dialog = frame.get("type") == "extension_ui_request" and frame.get("method") in {
            "select",
            "editor",
        }
        if (dialog or frame.get("type") == "tool_execution_end") and asked:
            await h.replies(asked)
        h.feed(frame)
        asked += dialog
        if frame.get("type") == "tool_execution_start":
            await h.settle()
            (ask_id,) = h.service.ask_ids()
            h.service.answer(ask_id, answers)
    return await h.replies(asked)


async def test_a_refused_set_ask_dialog_is_recognised_without_an_id_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    refused = _recorded.load("askdialog").runtime()[1]
    caplog.set_level(logging.INFO, logger="compass_bridge")
    async with harness() as h:
        h.feed(refused, refused)
    said = [r.getMessage() for r in caplog.records if "set_ask_dialog" in r.getMessage()]
    assert len(said) == 1
    assert "does not know set_ask_dialog" in said[0]
    assert "select/editor dialogs instead" in said[0]
    assert h.bridge.unmapped_counts() == {}


# -- the bridge drives the port: generated asks and answers -----------------------------------


async def _drive(
    h: Harness,
    questions: list[dict[str, Any]],
    answers: Answers,
    *,
    done_label: str = DONE_LABEL,
    call_id: str = "c1",
    message_id: str = "m1",
) -> Outcome:
    """The real order: the assistant message, the first dialog, the call's start; then each
    dialog after the bridge answered the one before."""
    simulated = ask_dialogs(questions, done_label=done_label)
    h.feed(*ev.assistant_message(message_id, "Some questions.", asks=[(call_id, questions)]))
    before = len(h.sink.lines)
    h.feed(next(simulated))
    h.feed(ev.ask_start(call_id, questions))
    await h.settle()
    h.service.answer(h.service.ask_ids()[-1], answers)
    while True:
        reply = (await h.replies(before + 1))[before]
        before += 1
        try:
            request = simulated.send(reply)
        except StopIteration as stop:
            outcome: Outcome = stop.value
            break
        h.feed(request)
    h.feed(_tool_end(call_id, outcome))
    await asyncio.sleep(0)
    return outcome


def _tool_end(call_id: str, outcome: Outcome) -> Frame:
    return {
        "type": "tool_execution_end",
        "toolCallId": call_id,
        "toolName": "ask",
        "result": {"content": [{"type": "text", "text": outcome.text}], "details": outcome.details},
        "isError": outcome.is_error,
    }


def _results(outcome: Outcome, questions: list[dict[str, Any]]) -> list[tuple[list[str], Any]]:
    """(selectedOptions, customInput or None) per question, as the runtime reported them."""
    assert not outcome.is_error, outcome.text
    details = outcome.details
    results = details["results"] if len(questions) > 1 else [details]
    return [(r["selectedOptions"], r.get("customInput")) for r in results]


def _expected(
    questions: list[dict[str, Any]], answers: Answers
) -> tuple[list[tuple[list[str], Any]], list[str]]:
    """What the runtime should report for a Compass answer, and the losses to be logged."""
    results: list[tuple[list[str], Any]] = []
    losses: list[str] = []
    single_question = len(questions) == 1
    for question in questions:
        chosen, text = answers[question["id"]]
        labels = [sanitize(question["options"][int(i)]["label"]) for i in chosen]
        if not question.get("multi"):
            if labels:
                results.append((labels, None))
            elif text:
                results.append(([], text))
            else:
                results.append(([], ""))
                losses.append("was skipped")
        elif text:
            results.append((labels, text))
            if labels and not single_question:
                losses.append("shows only the text")
        elif single_question and not labels:
            results.append(([], ""))
            losses.append("nothing chosen")
        else:
            results.append((labels, None))
    return results, losses


_RESERVED = {OTHER_OPTION, "Chat about this", "Next →"}
# Few bases make collisions common: "a" recommended beside "a (Recommended)" (the runtime
# shows "a (Recommended) (2)"), "a\rb" beside "a b" (the same once sanitized).
_label_endings = st.sampled_from(
    ["", " (Recommended)", " (2)", " (Recommended) (2)", " (Recommended)\r"]
)
_labels = st.one_of(
    st.builds(str.__add__, st.sampled_from(["a", "a b", "a\rb", ""]), _label_endings),
    st.builds(str.__add__, st.text(alphabet="ab \r()2", max_size=5), _label_endings),
    st.sampled_from([*DONE_SELECTING_LABELS[1:], "Other", "(1 selected) a"]),
)
_texts = st.builds(
    lambda prefix, body, suffix: prefix + body + suffix,
    st.sampled_from(["", "(1 selected) ", "(2 selected) "]),
    st.text(alphabet="Which?\r\n ab", min_size=1, max_size=8),
    st.sampled_from(["", " (1/2)", " (2/2)", " (1/3)"]),
)
_free_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)


@st.composite
def asks_and_answers(draw: st.DrawFn) -> tuple[list[dict[str, Any]], Answers]:
    """An ask the runtime and the mapper both accept, and an answer RespondToAsk accepts."""
    questions: list[dict[str, Any]] = []
    answers: Answers = {}
    for index in range(draw(st.integers(min_value=1, max_value=3))):
        multi = draw(st.booleans())
        reserved = _RESERVED | ({DONE_LABEL} if multi else set())
        raw = draw(st.lists(_labels, max_size=5))
        if draw(st.booleans()):  # a collision family: "a" (to be recommended) and its badges
            family = ["a", "a (Recommended)", "a (Recommended) (2)", "a (2)"]
            raw = draw(st.permutations(family[: draw(st.integers(2, 4))] + raw[:2]))
        labels: list[str] = []
        seen: set[str] = set()
        for label in raw:  # the runtime refuses an ask with duplicate or reserved labels
            if sanitize(label) not in seen and sanitize(label) not in reserved:
                seen.add(sanitize(label))
                labels.append(label)
        question: dict[str, Any] = {
            "id": f"q{index}",
            "question": draw(_texts),
            "options": [{"label": label} for label in labels],
        }
        if multi:
            question["multi"] = True
        recommended = draw(st.none() | st.integers(min_value=-1, max_value=len(labels)))
        if "a" in labels and draw(st.booleans()):
            recommended = labels.index("a")
        if recommended is not None:
            question["recommended"] = recommended
        ids = [str(i) for i in range(len(labels))]
        if multi:
            chosen = draw(st.lists(st.sampled_from(ids), unique=True)) if ids else []
            text = draw(st.just("") | _free_text)
        else:
            kind = draw(st.sampled_from(["pick", "text", "skip"] if ids else ["text", "skip"]))
            chosen = [draw(st.sampled_from(ids))] if kind == "pick" else []
            text = draw(_free_text) if kind == "text" else ""
        questions.append(question)
        answers[question["id"]] = (chosen, text)
        if not multi and _collides(labels, recommended):
            event("single-select labels the runtime disambiguates")
    return questions, answers


def _collides(labels: list[str], recommended: int | None) -> bool:
    shown = [sanitize(label) for label in labels]
    for index, label in enumerate(shown):
        if index == recommended and not label.endswith(" (Recommended)"):
            shown[index] = label + " (Recommended)"
    return len(set(shown)) < len(shown)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _warnings() -> Generator[_Records]:
    records = _Records()
    logger = logging.getLogger("compass_bridge")
    logger.addHandler(records)
    try:
        yield records
    finally:
        logger.removeHandler(records)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(asks_and_answers())
def test_every_answer_reaches_the_runtime_as_given_or_with_its_loss_logged(
    case: tuple[list[dict[str, Any]], Answers],
) -> None:
    questions, answers = case

    async def scenario() -> None:
        with _warnings() as logged:
            async with harness() as h:
                outcome = await _drive(h, questions, answers)
                assert h.bridge.unmapped_counts() == {}
        expected, losses = _expected(questions, answers)
        assert _results(outcome, questions) == expected
        assert len(logged.messages) == len(losses), logged.messages
        for loss in losses:
            assert any(loss in message for message in logged.messages), (loss, logged.messages)

    asyncio.run(scenario())


# -- multi-select done labels -----------------------------------------------------------------

FEATURES = ev.gallery_questions()[1]


async def test_a_done_label_the_runtime_showed_is_used_where_it_does_not_show_it() -> None:
    ascii_done = "[ok] Done selecting"  # the ascii symbol preset's
    async with harness() as h:
        first = await _drive(h, [FEATURES], {"features": (["1"], "")}, done_label=ascii_done)
        assert _results(first, [FEATURES]) == [(["OAuth (Google, GitHub)"], None)]
        before = len(h.sink.lines)
        two = [ev.deploy_questions()[0], FEATURES]
        second = await _drive(
            h,
            two,
            {"region": (["0"], ""), "features": (["2"], "")},
            done_label=ascii_done,
            call_id="c2",
            message_id="m2",
        )
        assert _results(second, two) == [(["eu-west-1"], None), (["Magic links"], None)]
        values = [r.get("value") for r in await h.replies(len(h.sink.lines))][before:]
        assert values == ["eu-west-1 (Recommended)", "Magic links", ascii_done]


async def test_a_wrong_done_guess_is_unselected_and_the_next_one_tried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    nerd_done = DONE_SELECTING_LABELS[1]
    two = [ev.deploy_questions()[0], FEATURES]
    async with harness() as h:
        outcome = await _drive(
            h, two, {"region": (["1"], ""), "features": (["3"], "")}, done_label=nerd_done
        )
        values = [r.get("value") for r in await h.replies(len(h.sink.lines))]
    assert _results(outcome, two) == [(["us-east-1"], None), (["SAML SSO"], None)]
    assert values == ["us-east-1", "SAML SSO", DONE_LABEL, DONE_LABEL, nerd_done]
    assert any("took '✔ Done selecting' as an option" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("chosen", "result", "timed_out"),
    [(["0"], (["Email + password"], None), True), ([], ([], ""), False)],
    ids=["picks", "nothing"],
)
async def test_when_no_done_label_is_accepted_the_question_ends_with_its_loss_logged(
    caplog: pytest.LogCaptureFixture,
    chosen: list[str],
    result: tuple[list[str], Any],
    timed_out: bool,
) -> None:
    two = [ev.deploy_questions()[0], FEATURES]
    async with harness() as h:
        outcome = await _drive(
            h, two, {"region": (["0"], ""), "features": (chosen, "")}, done_label="Finished"
        )
    assert _results(outcome, two)[1] == result
    assert outcome.details["results"][1].get("timedOut", False) is timed_out
    assert any("accepted no done label" in r.getMessage() for r in caplog.records)


# -- holding, cancelling, ending ---------------------------------------------------------------


def _first_select(questions: list[dict[str, Any]]) -> Frame:
    return next(ask_dialogs(questions))


async def test_a_select_that_comes_before_its_call_starts_is_held_not_cancelled() -> None:
    q1 = ev.gallery_questions()
    async with harness(hold_seconds=2.0) as h:
        h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", q1)]), _first_select(q1))
        await asyncio.sleep(0.005)  # measured: the start follows within 0-5 ms
        h.feed(ev.ask_start("c1", q1))
        await h.settle()
        (ask_id,) = h.service.ask_ids()
        await eventually(lambda: ask_id in h.service.watching, "the wait on WatchAsk")
        assert h.sink.lines == []  # waiting for the participant, not cancelled
        h.service.answer(ask_id, {"db": (["2"], "")})
        (reply,) = await h.replies(1)
        assert reply == {"type": "extension_ui_response", "id": "omp-1", "value": "MongoDB"}


async def test_a_held_select_no_ask_claims_is_cancelled_after_the_hold() -> None:
    async with harness(hold_seconds=0.05) as h:
        started = asyncio.get_running_loop().time()
        h.feed(_first_select(ev.gallery_questions()))
        assert h.sink.lines == []
        (reply,) = await h.replies(1)
        # Cancelled once the hold is over, not before (less the loop's clock resolution).
        assert asyncio.get_running_loop().time() - started >= 0.04
        assert reply == {"type": "extension_ui_response", "id": "omp-1", "cancelled": True}
        assert h.bridge.unmapped_counts() == {"extension_ui_request:select": 1}


async def test_a_held_select_the_starting_call_does_not_match_is_cancelled_at_once() -> None:
    q1, q2 = ev.gallery_questions(), ev.deploy_questions()
    async with harness(hold_seconds=60) as h:
        h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", q2)]), _first_select(q1))
        h.feed(ev.ask_start("c1", q2))
        (reply,) = await h.replies(1)
        assert reply["cancelled"] is True


async def test_an_ask_request_of_the_newer_protocol_is_held_until_its_call_starts() -> None:
    q1 = ev.gallery_questions()
    async with harness(hold_seconds=2.0) as h:
        h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", q1)]), ev.ask_request("r1", q1))
        h.feed(ev.ask_start("c1", q1))
        await h.settle()
        h.service.answer(h.service.ask_ids()[0], {"db": (["1"], ""), "features": ([], "")})
        (reply,) = await h.replies(1)
        assert reply["answers"][0] == {"id": "db", "selectedOptions": ["SQLite"]}
