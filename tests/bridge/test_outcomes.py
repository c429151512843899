"""Every ask ends with a typed outcome (design record, resolved decision 11), both transports,
against the in-process AgentService peer (_fake_service.py):

- ANSWERED is delivered (also from a server that writes no status);
- DECLINED by a participant gets the runtime's cancel (RPC: `{"cancelled": true}` for the
  pending dialog or request; ACP: `decline` for the form, `cancelled` for a permission);
- the runtime stops waiting first: CloseAsk(WITHDRAWN, reason), once, after the ask's id is
  minted, retried like a post;
- the runtime's own timeout answered: CloseAsk(TIMED_OUT) with its picks as option ids;
- RPC: a held select announcing the timeout gives the posted ask its deadline.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

import pytest
from acp.client.router import (
    _mode_from_create_elicitation_request,  # pyright: ignore[reportPrivateUsage]
    _validate_create_elicitation_request,  # pyright: ignore[reportPrivateUsage]
)
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    SessionNotification,
    ToolCallUpdate,
)

from compass_bridge.bridge_core import BridgeCore, Reason
from compass_bridge.client import RpcError
from compass_bridge.replies import runtime_timeout
from gen.compass.v1 import comms_pb2
from tests._wait import eventually
from tests.bridge import _events as ev
from tests.bridge._inproc import acp_bridge, harness
from tests.bridge.omp._omp_ask import ask_dialogs
from tests.bridge.test_forms import omp_ask_form

if TYPE_CHECKING:
    from compass_bridge.acp.bridge import AcpBridge
    from tests.bridge._fake_service import FakeAgentService
    from tests.bridge._inproc import Harness

Frame = dict[str, Any]
WITHDRAWN = comms_pb2.ASK_STATUS_WITHDRAWN
TIMED_OUT = comms_pb2.ASK_STATUS_TIMED_OUT
GALLERY = ev.gallery_questions()
ONE = [GALLERY[0]]

# What omp 18.2.3's ask tool returns when its `ask.timeout` answered (src/tools/ask.ts):
# per question for several, flat for one; labels, not ids.
GALLERY_TIMED_OUT = {
    "content": [
        {
            "type": "text",
            "text": "User answers:\ndb: Postgres (auto-selected after timeout)\n"
            "features: [Email + password] (auto-selected after timeout)",
        }
    ],
    "details": {
        "results": [
            {
                "id": "db",
                "question": GALLERY[0]["question"],
                "options": ["Postgres", "SQLite", "MongoDB"],
                "multi": False,
                "selectedOptions": ["Postgres"],
                "timedOut": True,
            },
            {
                "id": "features",
                "question": GALLERY[1]["question"],
                "options": [
                    "Email + password",
                    "OAuth (Google, GitHub)",
                    "Magic links",
                    "SAML SSO",
                ],
                "multi": True,
                "selectedOptions": ["Email + password"],
                "timedOut": True,
            },
        ]
    },
}
ONE_TIMED_OUT = {
    "content": [{"type": "text", "text": "User selected: MongoDB (auto-selected after timeout)"}],
    "details": {
        "question": GALLERY[0]["question"],
        "options": ["Postgres", "SQLite", "MongoDB"],
        "multi": False,
        "selectedOptions": ["MongoDB"],
        "timedOut": True,
    },
}


def _tool_end(call_id: str, *, is_error: bool = False, result: Any = None) -> Frame:
    return {
        "type": "tool_execution_end",
        "toolCallId": call_id,
        "toolName": "ask",
        "result": result
        if result is not None
        else {"content": [{"type": "text", "text": "Ask input was cancelled"}], "details": {}},
        "isError": is_error,
    }


def _select(questions: list[dict[str, Any]], timeout_ms: float | None = None) -> Frame:
    frame = next(ask_dialogs(questions))
    if timeout_ms is not None:
        frame["timeout"] = timeout_ms
    return frame


def _cancel(target: str) -> Frame:
    return {"type": "extension_ui_request", "id": "x", "method": "cancel", "targetId": target}


async def _posted(
    h: Harness, questions: list[dict[str, Any]], *, timeout_ms: float | None = None
) -> str:
    """The real order (message, first select, call start); the ask's id once stored."""
    h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", questions)]))
    h.feed(_select(questions, timeout_ms), ev.ask_start("c1", questions))
    await h.settle()
    (ask_id,) = h.service.ask_ids()
    return ask_id


async def _closes(
    bridge: BridgeCore, service: FakeAgentService, count: int
) -> list[tuple[str, int, str]]:
    """The CloseAsk calls, once `count` were made and every close the bridge started ended."""
    await eventually(lambda: len(service.closes) >= count, f"{count} CloseAsk call(s)")
    await bridge.asks.settle()
    return [(c.ask_id, c.status, c.reason) for c in service.closes]


def _answers(request: Any) -> list[tuple[str, list[str], str]]:
    return [(a.question_id, list(a.chosen_option_ids), a.custom_text) for a in request.answers]


# -- the outcome, read from the Ask -----------------------------------------------------------


def _gallery_ask() -> comms_pb2.Ask:
    ask = comms_pb2.Ask()
    for question in GALLERY:
        q = ask.questions.add(
            question_id=question["id"], allow_multiple=bool(question.get("multi"))
        )
        for index, option in enumerate(question["options"]):
            q.options.add(id=str(index), label=option["label"])
    return ask


def test_the_runtimes_timeout_picks_become_option_ids() -> None:
    ask = _gallery_ask()
    found = runtime_timeout(ask, GALLERY_TIMED_OUT)
    assert found is not None
    assert [(a.question_id, list(a.chosen_option_ids)) for a in found.answers] == [
        ("db", ["0"]),
        ("features", ["0"]),
    ]
    assert found.problems == ()
    one = comms_pb2.Ask()
    one.questions.add().CopyFrom(ask.questions[0])
    found = runtime_timeout(one, ONE_TIMED_OUT)
    assert found is not None
    assert [(a.question_id, list(a.chosen_option_ids)) for a in found.answers] == [("db", ["2"])]


def test_a_result_without_a_timeout_or_with_odd_labels() -> None:
    ask = _gallery_ask()
    answered = {"details": {"results": [{"id": "db", "selectedOptions": ["SQLite"]}]}}
    assert runtime_timeout(ask, answered) is None
    assert runtime_timeout(ask, {"content": []}) is None
    assert runtime_timeout(ask, "text") is None
    odd = {"details": {"results": [{"id": "db", "selectedOptions": ["Oracle"], "timedOut": True}]}}
    found = runtime_timeout(ask, odd)
    assert found is not None
    assert [list(a.chosen_option_ids) for a in found.answers] == [[], []]
    assert len(found.problems) == 2  # the unknown label, the missing question


# -- RPC (omp --mode rpc-ui): the runtime stops waiting ----------------------------------------


async def test_rpc_an_aborted_run_withdraws_the_ask_once(caplog: pytest.LogCaptureFixture) -> None:
    async with harness() as h:
        ask_id = await _posted(h, GALLERY)
        # omp's abort: a cancel for the pending select, then the call's failed end.
        h.feed(_cancel("omp-1"), _tool_end("c1", is_error=True))
        assert await _closes(h.bridge, h.service, 1) == [
            (ask_id, WITHDRAWN, Reason.RUNTIME_CANCELLED)
        ]
        assert h.bridge.waiting == 0
        assert h.service.ask(ask_id).status == WITHDRAWN
        assert h.sink.lines == []
    assert f"ask {ask_id} is closed in Compass as WITHDRAWN: runtime cancelled the request" in [
        r.getMessage() for r in caplog.records
    ]


@pytest.mark.parametrize(
    ("is_error", "reason"),
    [(True, Reason.TOOL_CALL_ABORTED), (False, Reason.TOOL_CALL_ENDED)],
)
async def test_rpc_a_call_that_ends_unanswered_withdraws_the_ask(
    is_error: bool, reason: str
) -> None:
    async with harness() as h:
        ask_id = await _posted(h, GALLERY)
        h.feed(_tool_end("c1", is_error=is_error))
        assert await _closes(h.bridge, h.service, 1) == [(ask_id, WITHDRAWN, reason)]
        assert not h.service.closes[0].answers


async def test_rpc_the_runtimes_output_ending_withdraws_the_ask() -> None:
    async with harness() as h:
        ask_id = await _posted(h, GALLERY)
        await h.bridge.stop_waiting()
        assert await _closes(h.bridge, h.service, 1) == [(ask_id, WITHDRAWN, Reason.RUNTIME_EXITED)]


async def test_rpc_a_signal_names_the_shutdown_as_the_reason() -> None:
    async with harness() as h:
        ask_id = await _posted(h, GALLERY)
        h.bridge.shutting_down("SIGINT")
        h.feed(_cancel("omp-1"))  # the runtime got the signal too
        await h.bridge.stop_waiting()
        assert await _closes(h.bridge, h.service, 1) == [
            (ask_id, WITHDRAWN, "bridge shut down (SIGINT)")
        ]


async def test_rpc_a_request_of_the_newer_protocol_cancelled_withdraws_its_ask() -> None:
    async with harness(hold_seconds=2.0) as h:
        h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", GALLERY)]))
        h.feed(ev.ask_request("r1", GALLERY), ev.ask_start("c1", GALLERY))
        await h.settle()
        (ask_id,) = h.service.ask_ids()
        h.feed(_cancel("r1"))
        assert await _closes(h.bridge, h.service, 1) == [
            (ask_id, WITHDRAWN, Reason.RUNTIME_CANCELLED)
        ]


async def test_rpc_an_ask_minted_after_its_call_ended_is_closed_once_minted() -> None:
    async with harness() as h:
        h.service.failures["AppendMessage"] = [RpcError("unavailable", "down")] * 3
        h.feed(
            *ev.assistant_message("m1", "Hi.", asks=[("c1", GALLERY)]), ev.ask_start("c1", GALLERY)
        )
        h.feed(_tool_end("c1"))
        await h.settle()
        (ask_id,) = h.service.ask_ids()
        assert await _closes(h.bridge, h.service, 1) == [
            (ask_id, WITHDRAWN, Reason.TOOL_CALL_ENDED)
        ]


async def test_rpc_close_ask_is_retried_on_transient_errors() -> None:
    async with harness() as h:
        h.service.failures["CloseAsk"] = [RpcError("unavailable", "down")] * 2
        ask_id = await _posted(h, GALLERY)
        h.feed(_tool_end("c1", is_error=True))
        closes = await _closes(h.bridge, h.service, 3)
        assert closes == [(ask_id, WITHDRAWN, Reason.TOOL_CALL_ABORTED)] * 3
        assert h.service.ask(ask_id).status == WITHDRAWN
        assert h.bridge.closed == 1


async def test_rpc_an_answered_ask_is_not_closed() -> None:
    async with harness() as h:
        ask_id = await _posted(h, ONE)
        h.service.answer(ask_id, {"db": (["1"], "")})
        (reply,) = await h.replies(1)
        assert reply["value"] == "SQLite"
        h.feed(_tool_end("c1", result={"content": [], "details": {"selectedOptions": ["SQLite"]}}))
        await h.bridge.stop_waiting()
        await h.bridge.asks.settle()  # every close it started has ended
        assert h.service.closes == []


async def test_rpc_a_close_that_loses_the_race_to_an_answer_is_no_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with harness() as h:
        caplog.set_level(logging.INFO, logger="compass_bridge")
        ask_id = await _posted(h, GALLERY)
        h.service.answer(ask_id, {"db": (["1"], ""), "features": ([], "")})
        h.feed(_tool_end("c1", is_error=True))  # before the bridge saw the answer
        await _closes(h.bridge, h.service, 1)
    assert not [r for r in caplog.records if "left answerable" in r.getMessage()]
    assert any("already has its outcome" in r.getMessage() for r in caplog.records)


async def test_rpc_a_server_without_close_ask_leaves_the_ask_answerable_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with harness() as h:
        h.service.legacy = True
        ask_id = await _posted(h, GALLERY)
        h.feed(_tool_end("c1", is_error=True))
        await _closes(h.bridge, h.service, 1)
    (left,) = [r.getMessage() for r in caplog.records if "left answerable" in r.getMessage()]
    assert left.startswith(f"ask {ask_id} is left answerable in Compass: tool call aborted")


async def test_rpc_a_server_without_status_still_delivers_answers() -> None:
    async with harness() as h:
        h.service.legacy = True
        ask_id = await _posted(h, ONE)
        h.service.answer(ask_id, {"db": (["2"], "")})
        (reply,) = await h.replies(1)
        assert reply["value"] == "MongoDB"


# -- RPC: the runtime's own timeout ------------------------------------------------------------


async def test_rpc_a_held_select_with_a_timeout_gives_the_posted_ask_its_deadline() -> None:
    async with harness(hold_seconds=2.0) as h:
        before = time.time()
        await _posted(h, GALLERY, timeout_ms=30_000)
        (append,) = h.appends()
        (block,) = [b for b in append.frame.blocks if b.HasField("ask")]
        assert block.ask.on_timeout == comms_pb2.ASK_TIMEOUT_POLICY_PICK_RECOMMENDED
        # Each of the two questions' dialogs gets the whole timeout.
        deadline = block.ask.deadline.ToMilliseconds() / 1000
        assert before + 60 - 0.01 <= deadline <= time.time() + 60


async def test_rpc_an_ask_without_an_announced_timeout_has_no_deadline() -> None:
    async with harness(hold_seconds=2.0) as h:
        await _posted(h, GALLERY)
        (append,) = h.appends()
        (block,) = [b for b in append.frame.blocks if b.HasField("ask")]
        assert not block.ask.HasField("deadline")
        assert block.ask.on_timeout == comms_pb2.ASK_TIMEOUT_POLICY_UNSPECIFIED


async def test_rpc_the_runtimes_timeout_closes_the_ask_timed_out_with_its_picks() -> None:
    async with harness(hold_seconds=2.0) as h:
        ask_id = await _posted(h, GALLERY, timeout_ms=2000)
        # omp's timer fired for both dialogs (no cancel is sent), then the call ended.
        h.feed(_tool_end("c1", result=GALLERY_TIMED_OUT))
        assert await _closes(h.bridge, h.service, 1) == [
            (ask_id, TIMED_OUT, Reason.RUNTIME_TIMEOUT)
        ]
        assert _answers(h.service.closes[0]) == [("db", ["0"], ""), ("features", ["0"], "")]
        stored = h.service.ask(ask_id)
        assert [(list(q.chosen_option_ids), q.timed_out) for q in stored.questions] == [
            (["0"], True),
            (["0"], True),
        ]
        assert h.sink.lines == []


async def test_rpc_a_one_question_timeout_is_read_from_the_flat_details() -> None:
    async with harness(hold_seconds=2.0) as h:
        ask_id = await _posted(h, ONE, timeout_ms=2000)
        h.feed(_tool_end("c1", result=ONE_TIMED_OUT))
        assert await _closes(h.bridge, h.service, 1) == [
            (ask_id, TIMED_OUT, Reason.RUNTIME_TIMEOUT)
        ]
        assert _answers(h.service.closes[0]) == [("db", ["2"], "")]


# -- RPC: a participant declines ---------------------------------------------------------------


async def test_rpc_a_declined_ask_cancels_the_pending_dialog_and_every_later_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with harness() as h:
        ask_id = await _posted(h, GALLERY)
        h.service.decline(ask_id, "not now")
        (reply,) = await h.replies(1)
        assert reply == {"type": "extension_ui_response", "id": "omp-1", "cancelled": True}
        # A later dialog of the same ask (another extension could re-ask) is cancelled too.
        dialog = _select(GALLERY)
        dialog["id"] = "omp-9"
        h.feed(dialog)
        replies = await h.replies(2)
        assert replies[1] == {"type": "extension_ui_response", "id": "omp-9", "cancelled": True}
        h.feed(_tool_end("c1", is_error=True))  # omp aborts the run
        await h.bridge.stop_waiting()
        await h.bridge.asks.settle()  # every close it started has ended
        assert h.service.closes == []
        assert h.bridge.delivered == 0
    assert any(
        f"ask {ask_id} was declined in Compass (not now)" in r.getMessage() for r in caplog.records
    )


async def test_rpc_a_declined_request_of_the_newer_protocol_is_cancelled() -> None:
    async with harness(hold_seconds=2.0) as h:
        h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", GALLERY)]))
        h.feed(ev.ask_request("r1", GALLERY), ev.ask_start("c1", GALLERY))
        await h.settle()
        (ask_id,) = h.service.ask_ids()
        h.service.decline(ask_id)
        (reply,) = await h.replies(1)
        assert reply == {"type": "extension_ui_response", "id": "r1", "cancelled": True}
        await h.bridge.stop_waiting()
        assert h.service.closes == []


# -- ACP ---------------------------------------------------------------------------------------


def _update(**fields: Any) -> object:
    return SessionNotification.model_validate({"sessionId": "s", "update": fields}).update


def _ask_call(questions: list[dict[str, Any]], call_id: str = "c1") -> object:
    return _update(
        sessionUpdate="tool_call",
        toolCallId=call_id,
        title="ask",
        kind="other",
        status="pending",
        rawInput={"questions": questions},
    )


def _call_end(call_id: str, status: str, raw_output: Any = None) -> object:
    fields: dict[str, Any] = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": status,
    }
    if raw_output is not None:
        fields["rawOutput"] = raw_output
    return _update(**fields)


def _form_mode(questions: list[dict[str, Any]]) -> Any:
    request = _validate_create_elicitation_request(
        {
            "mode": "form",
            "sessionId": "s",
            "message": "Answer",
            "requestedSchema": omp_ask_form(questions).model_dump(by_alias=True, exclude_none=True),
        }
    )
    return _mode_from_create_elicitation_request(request)


async def _acp_ask(
    bridge: AcpBridge, service: FakeAgentService, questions: list[dict[str, Any]]
) -> tuple[asyncio.Task[Any], str]:
    """The real order: the form first, then the call carrying the ask's arguments."""
    form = asyncio.create_task(bridge.create_elicitation("Answer", _form_mode(questions)))
    await asyncio.sleep(0)  # one step of the loop: the form runs until it is held
    assert not form.done()
    await bridge.session_update("s", _ask_call(questions))
    async with asyncio.timeout(5):
        await bridge.poster.drain()
    (ask_id,) = service.ask_ids()
    return form, ask_id


async def test_acp_a_declined_ask_declines_the_form() -> None:
    async with acp_bridge() as (bridge, service):
        form, ask_id = await _acp_ask(bridge, service, GALLERY)
        service.decline(ask_id, "not now")
        async with asyncio.timeout(5):
            response = await form
        assert response.action == "decline"
        # omp aborts the call and the turn ends cancelled: nothing to close.
        await bridge.session_update("s", _call_end("c1", "failed"))
        bridge.end_turn()
        await bridge.asks.settle()  # every close it started has ended
        assert service.closes == []


async def test_acp_an_answered_ask_is_accepted_and_not_closed() -> None:
    async with acp_bridge() as (bridge, service):
        form, ask_id = await _acp_ask(bridge, service, ONE)
        service.answer(ask_id, {"db": (["1"], "")})
        async with asyncio.timeout(5):
            response = await form
        assert response.action == "accept"
        await bridge.session_update("s", _call_end("c1", "completed", {"details": {}}))
        bridge.end_turn()
        await bridge.asks.settle()  # every close it started has ended
        assert service.closes == []


@pytest.mark.parametrize(
    ("status", "reason"),
    [("failed", Reason.TOOL_CALL_ABORTED), ("completed", Reason.TOOL_CALL_ENDED)],
)
async def test_acp_a_call_that_ends_unanswered_withdraws_the_ask(status: str, reason: str) -> None:
    async with acp_bridge() as (bridge, service):
        form, ask_id = await _acp_ask(bridge, service, GALLERY)
        await bridge.session_update("s", _call_end("c1", status, {"content": [], "details": {}}))
        async with asyncio.timeout(5):
            response = await form
        assert response.action == "cancel"
        assert await _closes(bridge, service, 1) == [(ask_id, WITHDRAWN, reason)]


@pytest.mark.parametrize(
    ("signal_name", "reason"),
    [(None, Reason.TURN_ENDED), ("SIGINT", "bridge shut down (SIGINT)")],
)
async def test_acp_the_turn_ending_withdraws_the_ask(signal_name: str | None, reason: str) -> None:
    async with acp_bridge() as (bridge, service):
        form, ask_id = await _acp_ask(bridge, service, GALLERY)
        if signal_name:
            bridge.shutting_down(signal_name)
        bridge.end_turn()
        async with asyncio.timeout(5):
            response = await form
        assert response.action == "cancel"
        # omp then fails the aborted call: the first reason stays.
        await bridge.session_update("s", _call_end("c1", "failed"))
        assert await _closes(bridge, service, 1) == [(ask_id, WITHDRAWN, reason)]


async def test_acp_the_agents_timeout_closes_the_ask_timed_out_with_its_picks() -> None:
    async with acp_bridge() as (bridge, service):
        form, ask_id = await _acp_ask(bridge, service, GALLERY)
        # omp stopped waiting for the form at its ask.timeout and completed the call.
        await bridge.session_update("s", _call_end("c1", "completed", GALLERY_TIMED_OUT))
        async with asyncio.timeout(5):
            assert (await form).action == "cancel"
        assert await _closes(bridge, service, 1) == [(ask_id, TIMED_OUT, Reason.RUNTIME_TIMEOUT)]
        assert _answers(service.closes[0]) == [("db", ["0"], ""), ("features", ["0"], "")]
        assert [q.timed_out for q in service.ask(ask_id).questions] == [True, True]


async def test_acp_a_declined_permission_is_cancelled() -> None:
    async with acp_bridge() as (bridge, service):
        options = [
            PermissionOption(option_id="a", name="Allow", kind="allow_once"),
            PermissionOption(option_id="r", name="Reject", kind="reject_once"),
        ]
        asking = asyncio.create_task(
            bridge.request_permission("s", ToolCallUpdate(tool_call_id="t", title="bash"), options)
        )
        await eventually(service.ask_ids, "the ask posted")
        (ask_id,) = service.ask_ids()
        service.decline(ask_id)
        async with asyncio.timeout(5):
            response = await asking
        assert isinstance(response.outcome, DeniedOutcome)
        assert not isinstance(response.outcome, AllowedOutcome)
        assert service.closes == []


async def test_acp_a_permission_still_asked_when_the_turn_ends_is_withdrawn() -> None:
    async with acp_bridge() as (bridge, service):
        options = [PermissionOption(option_id="a", name="Allow", kind="allow_once")]
        asking = asyncio.create_task(
            bridge.request_permission("s", ToolCallUpdate(tool_call_id="t", title="bash"), options)
        )
        await eventually(service.ask_ids, "the ask posted")
        (ask_id,) = service.ask_ids()
        bridge.end_turn()
        async with asyncio.timeout(5):
            response = await asking
        assert isinstance(response.outcome, DeniedOutcome)
        assert await _closes(bridge, service, 1) == [(ask_id, WITHDRAWN, Reason.TURN_ENDED)]


async def test_acp_a_declined_generic_form_is_declined() -> None:
    # A form of no ask call waits out the hold before it is posted: a short one here.
    async with acp_bridge(hold_seconds=0.05) as (bridge, service):
        request = _validate_create_elicitation_request(
            {
                "mode": "form",
                "sessionId": "s",
                "message": "Name?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "title": "Name"}},
                },
            }
        )
        form = asyncio.create_task(
            bridge.create_elicitation("Name?", _mode_from_create_elicitation_request(request))
        )
        await eventually(service.ask_ids, "the ask posted")
        (ask_id,) = service.ask_ids()
        service.decline(ask_id)
        async with asyncio.timeout(5):
            assert (await form).action == "decline"
