"""pi (`@mariozechner/pi-coding-agent` 0.73.1, `pi --mode rpc`) with Compass's `ask_user`
extension: its select, confirm, input and editor dialogs answered from ONE Ask.

Three layers, as for omp's ask (test_dialogs.py): the recorded real pi
(tests/bridge/omp/recorded/pi/, tests/realagent/pi_record.py), a Python port of the
extension (_pi_ask.py) checked against them, and the bridge against both: the recordings
replayed exactly, and the port driven with generated asks and answers.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from compass_bridge.omp.frames import ConfirmRequest, SelectRequest
from compass_bridge.omp.pi_ask import PiDriver, locate_pi, pi_questions
from compass_bridge.receipts import DECLINE_PAYLOAD
from compass_core.ask import build_ask
from gen.compass.v1 import comms_pb2
from tests._wait import eventually
from tests.bridge._inproc import harness
from tests.bridge.omp import _recorded
from tests.bridge.omp._pi_ask import DISMISSED, Outcome, ask_user, summary

if TYPE_CHECKING:
    from tests.bridge._inproc import Harness

Frame = dict[str, Any]
Answers = dict[str, tuple[list[str], str]]

DIALOGS = {"select", "confirm", "input", "editor"}
ASK_CALLS = ["pi/four", "pi/other"]


def _dialogs(recording: _recorded.Recording) -> list[Frame]:
    return [
        f
        for f in recording.runtime()
        if f.get("type") == "extension_ui_request" and f.get("method") in DIALOGS
    ]


def _written(recording: _recorded.Recording) -> list[Frame]:
    """What the host wrote after its opening commands: what the bridge writes."""
    return [
        frame
        for side, frame in recording.lines
        if side == "host" and frame.get("type") not in {"set_ask_dialog", "prompt"}
    ]


def _result_text(recording: _recorded.Recording) -> str:
    end = recording.tool_end()
    return "\n".join(part["text"] for part in end["result"]["content"])


# -- the port against the real pi ------------------------------------------------------------


@pytest.mark.parametrize("name", ASK_CALLS)
def test_the_port_of_the_extension_replays_the_recordings(name: str) -> None:
    recording = _recorded.load(name)
    dialogs, replies = _dialogs(recording), recording.replies()
    simulated = ask_user(recording.questions())
    request = next(simulated)
    outcome: Outcome | None = None
    for index, (real, reply) in enumerate(zip(dialogs, replies, strict=True)):
        assert {k: v for k, v in request.items() if k != "id"} == {
            k: v for k, v in real.items() if k != "id"
        }, f"dialog {index}"
        try:
            request = simulated.send(reply)
        except StopIteration as stop:
            assert index == len(dialogs) - 1, "the port ended early"
            outcome = stop.value
    assert outcome is not None, "the port asked more than pi did"
    end = recording.tool_end()
    assert (outcome.is_error, outcome.text, outcome.details) == (
        end["isError"],
        _result_text(recording),
        end["result"]["details"],
    )


def test_the_recordings_show_the_protocol_the_bridge_relies_on() -> None:
    four = _recorded.load("pi/four")
    kinds = [(f.get("type"), f.get("method")) for f in four.runtime()]
    # No `ready` line: pi's first line answers the opt-in, without its id.
    assert four.runtime()[0] == {
        "type": "response",
        "command": "set_ask_dialog",
        "success": False,
        "error": "Unknown command: set_ask_dialog",
    }
    assert ("ready", None) not in kinds
    # The call starts before its first dialog (omp's select comes first).
    start = kinds.index(("tool_execution_start", None))
    assert kinds[start + 1] == ("extension_ui_request", "select")
    assert four.tool_end()["toolName"] == "ask_user"
    assert {f["method"] for f in _dialogs(four)} == DIALOGS
    # A decline: the abort ends the call (with the extension's words) and the run.
    declined = _recorded.load("pi/decline")
    assert declined.tool_end()["isError"] is True
    assert _result_text(declined) == DISMISSED


# -- the bridge replays the recordings --------------------------------------------------------


async def _replay(
    h: Harness, recording: _recorded.Recording, answer: Answers | None, reason: str = ""
) -> list[Frame]:
    """Feed pi's side in order, each line once the bridge wrote what the host had written
    before it; answer (or, with `answer` None, decline) the ask once it is stored. The
    bridge's lines."""
    written = 0
    acted = False
    for side, frame in recording.lines:
        if side == "host":
            if frame.get("type") not in {"set_ask_dialog", "prompt"}:
                written += 1
            continue
        if written:
            await h.replies(written)
        h.feed(frame)
        await h.settle()
        if not acted and h.service.ask_ids():
            acted = True
            (ask_id,) = h.service.ask_ids()
            if answer is None:
                h.service.decline(ask_id, reason)
            else:
                h.service.answer(ask_id, answer)
    return await h.replies(written)


REPLAYS: dict[str, Answers] = {
    "pi/four": {
        "db": (["1"], ""),
        "tests": (["0"], ""),
        "name": ([], "ledger"),
        "auth": (["1"], "and passkeys"),
    },
    "pi/other": {
        "db": ([], "CockroachDB"),
        "tests": (["1"], ""),
        "name": ([], ""),
        "auth": (["1", "0"], ""),
    },
}


@pytest.mark.parametrize("name", sorted(REPLAYS))
async def test_the_bridge_answers_the_recorded_dialogs_exactly(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    recording = _recorded.load(name)
    async with harness() as h:
        replies = await _replay(h, recording, REPLAYS[name])
        assert replies == _written(recording)
        assert h.bridge.delivered == 1
        assert h.bridge.unmapped_counts() == {}
        await eventually(lambda: len(h.service.receipts) == 1, "the delivery receipt")
        (ask_id,) = h.service.ask_ids()
        stored = h.service.ask(ask_id)
    # ONE Ask, every question of the call; what each dialog carries, said up front.
    marks = [(q.question_id, q.free_text, q.answer_required) for q in stored.questions]
    assert marks == [
        ("db", comms_pb2.FREE_TEXT_ACCEPTED, True),
        ("tests", comms_pb2.FREE_TEXT_REFUSED, True),
        ("name", comms_pb2.FREE_TEXT_ACCEPTED, False),
        ("auth", comms_pb2.FREE_TEXT_ACCEPTED, False),
    ]
    (receipt,) = h.service.receipts
    assert receipt.state == comms_pb2.DELIVERY_STATE_DELIVERED, receipt
    assert receipt.payload == _result_text(recording)  # what the model read
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_a_decline_ends_pis_run_before_the_dialog_is_cancelled() -> None:
    """pi's confirm reads a cancel as "No": the abort comes first, so the extension sees its
    run aborted and the model reads no answer at all."""
    recording = _recorded.load("pi/decline")
    async with harness() as h:
        replies = await _replay(h, recording, None, "not now")
        assert replies == _written(recording)
        assert replies[0] == {"id": "compass-bridge-abort", "type": "abort"}
        await eventually(lambda: len(h.service.receipts) == 1, "the delivery receipt")
        assert h.service.closes == []  # the ask has its outcome: nothing to close
    (receipt,) = h.service.receipts
    assert receipt.state == comms_pb2.DELIVERY_STATE_DELIVERED
    assert receipt.payload == DECLINE_PAYLOAD


async def test_another_extensions_confirm_is_an_ask_of_its_own() -> None:
    recording = _recorded.load("pi/gate")
    async with harness() as h:
        replies = await _replay(h, recording, {"confirm": (["0"], "")})
        assert replies == _written(recording)
        await eventually(lambda: len(h.service.receipts) == 1, "the delivery receipt")
        (ask_id,) = h.service.ask_ids()
        (question,) = h.service.ask(ask_id).questions
        assert h.bridge.unmapped_counts() == {}
    assert question.question == "Run this command?\n\necho compass-was-here"
    assert [o.label for o in question.options] == ["Yes", "No"]
    assert question.free_text == comms_pb2.FREE_TEXT_REFUSED
    assert question.answer_required
    (receipt,) = h.service.receipts
    assert receipt.state == comms_pb2.DELIVERY_STATE_DELIVERED
    assert json.loads(receipt.payload)["confirmed"] is True


# -- the bridge drives the port: generated asks and answers ----------------------------------

_label = st.text(alphabet='ab "\\\n[]x,é', min_size=1, max_size=6)


@st.composite
def asks_and_answers(draw: st.DrawFn) -> tuple[list[dict[str, Any]], Answers]:
    """An ask_user call the mapper accepts, and an answer RespondToAsk accepts for it."""
    questions: list[dict[str, Any]] = []
    answers: Answers = {}
    for index in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["input", "confirm", "select", "multi"]))
        labels = ["Yes", "No"] if kind == "confirm" else []
        if kind in {"select", "multi"}:
            labels = draw(st.lists(_label, min_size=1, max_size=4, unique=True))
            labels = [label for label in labels if label not in {"Yes", "No"}] or ["c"]
        question: dict[str, Any] = {
            "id": f"q{index}",
            "question": draw(st.sampled_from(["Which?", "Which? (1/2)", "Pick"])),
            "options": [{"label": label} for label in labels],
        }
        if kind == "multi":
            question["multi"] = True
        ids = [str(i) for i in range(len(labels))]
        text = draw(st.just("") | st.text(min_size=1, max_size=8))
        if kind == "input":
            chosen = []
        elif kind == "confirm":
            chosen, text = [draw(st.sampled_from(ids))], ""
        elif kind == "select":
            chosen = [] if text else [draw(st.sampled_from(ids))]
        else:
            chosen = draw(st.lists(st.sampled_from(ids), unique=True))
        questions.append(question)
        answers[question["id"]] = (chosen, text)
    return questions, answers


def _expected(questions: list[dict[str, Any]], answers: Answers) -> str:
    """What the model should read: exactly the Compass answer, in the extension's words."""
    lines = []
    for question in questions:
        chosen, text = answers[question["id"]]
        labels = [question["options"][int(i)]["label"] for i in chosen]
        answer: dict[str, Any] = {"selected": labels}
        if text or not question["options"]:
            answer["text"] = text
        lines.append(f"{question['id']}: {summary(answer, question)}")
    return "User answers:\n" + "\n".join(lines)


async def _drive(h: Harness, questions: list[dict[str, Any]], answers: Answers) -> Outcome:
    call = {"type": "tool_execution_start", "toolCallId": "c1", "toolName": "ask_user"}
    h.feed(call | {"args": {"questions": questions}})
    await h.settle()
    h.service.answer(h.service.ask_ids()[-1], answers)
    simulated = ask_user(questions)
    request = next(simulated)
    before = len(h.sink.lines)
    while True:
        h.feed(request)
        reply = (await h.replies(before + 1))[before]
        before += 1
        try:
            request = simulated.send(reply)
        except StopIteration as stop:
            outcome: Outcome = stop.value
            break
    result = {"content": [{"type": "text", "text": outcome.text}], "details": outcome.details}
    h.feed(call | {"type": "tool_execution_end", "result": result, "isError": outcome.is_error})
    return outcome


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(asks_and_answers())
def test_every_answer_reaches_the_model_exactly(case: tuple[list[dict[str, Any]], Answers]) -> None:
    questions, answers = case

    async def scenario() -> None:
        async with harness() as h:
            outcome = await _drive(h, questions, answers)
            assert not outcome.is_error, outcome.text
            assert outcome.text == _expected(questions, answers)
            await eventually(lambda: len(h.service.receipts) == 1, "the delivery receipt")
            (receipt,) = h.service.receipts
            assert receipt.state == comms_pb2.DELIVERY_STATE_DELIVERED, receipt.detail
            assert receipt.payload == outcome.text
            assert h.bridge.unmapped_counts() == {}

    asyncio.run(scenario())


# -- what the dialogs cannot say -------------------------------------------------------------


def _ask(*questions: dict[str, Any], answers: Answers) -> comms_pb2.Ask:
    ask = build_ask({"questions": list(questions)})
    for question in ask.questions:
        chosen, text = answers.get(question.question_id, ([], ""))
        question.chosen_option_ids[:] = chosen
        question.custom_text = text
    return ask


YES_NO = {"id": "ok", "question": "Go?", "options": [{"label": "Yes"}, {"label": "No"}]}
PICK = {"id": "db", "question": "DB?", "options": [{"label": "A"}, {"label": "B"}]}


@pytest.mark.parametrize(
    ("question", "request_"),
    [
        (YES_NO, ConfirmRequest(request_id="r", title="Go?")),
        (
            PICK,
            SelectRequest(request_id="r", title="DB?", options=("A", "B", "Other (type your own)")),
        ),
    ],
    ids=["confirm", "select"],
)
def test_a_skip_the_dialog_cannot_say_ends_the_run_instead(
    question: dict[str, Any], request_: ConfirmRequest | SelectRequest
) -> None:
    """An answer is required there (the Ask says so); were a skip to arrive anyway, the run is
    ended: never a "No" or an empty pick the person did not give."""
    ask = _ask(question, answers={})
    questions = pi_questions(ask)
    match = locate_pi(request_, questions)
    assert match is not None
    step = PiDriver(questions, ask).answer(request_, match)
    assert step.abort
    assert step.reply == {"type": "extension_ui_response", "id": "r", "cancelled": True}
    assert "the agent's run was ended instead" in step.problems[0]


def test_free_text_with_a_pick_says_what_was_left_out() -> None:
    ask = _ask(YES_NO, answers={"ok": (["1"], "maybe")})
    questions = pi_questions(ask)
    request = ConfirmRequest(request_id="r", title="Go?")
    match = locate_pi(request, questions)
    assert match is not None
    step = PiDriver(questions, ask).answer(request, match)
    assert step.reply == {"type": "extension_ui_response", "id": "r", "confirmed": False}
    assert step.problems == ("question 'ok': a confirm takes no free text; the text is not sent",)


def test_dialogs_of_other_shapes_are_not_the_calls() -> None:
    questions = pi_questions(_ask(PICK, {"id": "n", "question": "N?", "options": []}, answers={}))
    assert questions[0].title == "DB? (1/2)"
    plain = SelectRequest(request_id="r", title="DB? (1/2)", options=("A", "B"))  # no "Other"
    assert locate_pi(plain, questions) is None
    confirm = ConfirmRequest(request_id="r", title="N? (2/2)")  # N? is free text
    assert locate_pi(confirm, questions) is None
