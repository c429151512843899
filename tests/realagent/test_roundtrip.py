"""The published omp, over ACP (`--protocol acp`, `omp --mode acp`) and over its RPC mode
(`--protocol rpc`, `omp --mode rpc-ui`): the answer given in Compass reaches the real agent,
and the model reads exactly omp's own formatting of it. Where the two transports differ,
the expectation says why (README: the RPC mode's limits)."""

from __future__ import annotations

import functools
import json
import signal
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import pytest

from tests.realagent.harness import (
    Run,
    answer,
    bridge_run,
    decline,
    messages,
    respond,
    wait_for_asks,
    wait_for_receipt,
    wait_for_status,
)
from tests.realagent.model_server import ToolCall, Turn
from tests.unit.core._events import gallery_args

if TYPE_CHECKING:
    from pathlib import Path

    import httpx

    from tests import _server

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

GALLERY: dict[str, Any] = gallery_args()


@pytest.fixture(params=["acp", "rpc"])
def protocol(request: pytest.FixtureRequest) -> str:
    return str(request.param)


Start = Callable[..., AbstractContextManager[Run]]


@pytest.fixture
def start(
    protocol: str,
    omp_bin: Path,
    tmp_path: Path,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
) -> Start:
    """`bridge_run` for this test's protocol, server, world and directory; pass `turns=`."""
    return functools.partial(
        bridge_run,
        omp_bin=omp_bin,
        tmp_path=tmp_path,
        server_url=module_server.url,
        world=world,
        protocol=protocol,
    )


def with_header(args: dict[str, Any]) -> dict[str, Any]:
    """The gallery ask with a header and a preview, so full fidelity is visible."""
    args = json.loads(json.dumps(args))
    args["questions"][0]["header"] = "Database"
    args["questions"][1]["options"][0]["preview"] = "POST /login\n{email, password}"
    return args


async def test_gallery_ask_answered_in_compass_reaches_the_model(
    start: Start,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    args = with_header(GALLERY)
    turns = [Turn.call("ask", args), Turn.say("Thanks, setting it up.")]
    with start(
        turns=turns,
    ) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        # Full fidelity from the tool call's arguments: ids, header, recommended, previews.
        db, features = ask["questions"]
        assert (db["questionId"], db["header"], db.get("recommended")) == ("db", "Database", 0)
        assert [o["label"] for o in db["options"]] == ["Postgres", "SQLite", "MongoDB"]
        assert features["allowMultiple"] is True
        assert features["options"][0]["preview"] == "POST /login\n{email, password}"
        await respond(
            comms,
            world.human.token,
            ask["askId"],
            answer("db", "1"),
            answer("features", "0", "1"),
        )
        assert await run.wait() == 0, run.log()
    completions = run.model.completions
    assert len(completions) == 2, run.log()
    read = "User answers:\ndb: SQLite\nfeatures: [Email + password, OAuth (Google, GitHub)]"
    assert completions[1].tool_result_text() == read
    # The receipt says it arrived whole, with what the model read, reported by the agent.
    receipt = await wait_for_receipt(comms, world.human.token, world.channel_id, ask["askId"])
    assert receipt["state"] == "DELIVERY_STATE_DELIVERED", receipt
    assert receipt["payload"] == read
    assert receipt["reportedByAccountId"] == world.agent.account_id
    assert not receipt.get("detail"), receipt
    final = await messages(comms, world.human.token, world.channel_id)
    assert any(
        block.get("text", {}).get("text") == "Thanks, setting it up."
        for message in final
        for block in message["blocks"]
    ), final


async def answer_one(
    start: Start,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
    args: dict[str, Any],
    answers: list[dict[str, Any]],
) -> tuple[str, dict[str, Any]]:
    """Run one ask through the real omp, answer it: the tool result the model got, and the
    ask's delivery receipt."""
    with start(
        turns=[Turn.call("ask", args), Turn.say("ok")],
    ) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        await respond(comms, world.human.token, ask["askId"], *answers)
        assert await run.wait() == 0, run.log()
    completions = run.model.completions
    assert len(completions) == 2, run.log()
    receipt = await wait_for_receipt(comms, world.human.token, world.channel_id, ask["askId"])
    text = completions[1].tool_result_text()
    assert receipt["payload"] == text  # what the model read
    return text, receipt


@pytest.mark.parametrize(
    ("answers", "expected", "changed"),
    [
        pytest.param(
            [answer("db", custom_text="CockroachDB"), answer("features", custom_text="Passkeys")],
            'User answers:\ndb: "CockroachDB"\nfeatures: "Passkeys"',
            {},
            id="other-text",
        ),
        pytest.param(
            [answer("db"), answer("features", "3")],
            # RPC mode has no skip (a cancel aborts the run): the bridge sends empty Other text.
            {
                "acp": "User answers:\ndb: (cancelled)\nfeatures: [SAML SSO]",
                "rpc": 'User answers:\ndb: ""\nfeatures: [SAML SSO]',
            },
            {"rpc": "was skipped"},
            id="skip-single",
        ),
        pytest.param(
            [answer("db", "0"), answer("features")],
            "User answers:\ndb: Postgres\nfeatures: []",
            {},
            id="skip-multi",
        ),
        pytest.param(
            [answer("db", "2"), answer("features", "2", custom_text="and WebAuthn")],
            'User answers:\ndb: MongoDB\nfeatures: "and WebAuthn"',
            {"acp": "shows only the text", "rpc": "shows only the text"},
            id="picks-and-text",
        ),
    ],
)
async def test_other_text_and_skips_reach_the_model_in_omps_terms(
    protocol: str,
    answers: list[dict[str, Any]],
    expected: str | dict[str, str],
    changed: dict[str, str],
    start: Start,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    text, receipt = await answer_one(start, world, comms, GALLERY, answers)
    assert text == (expected if isinstance(expected, str) else expected[protocol])
    # What did not arrive as given is said in the receipt (`changed`, per transport).
    want = changed.get(protocol)
    if want is None:
        assert receipt["state"] == "DELIVERY_STATE_DELIVERED", receipt
    else:
        assert receipt["state"] == "DELIVERY_STATE_DELIVERED_WITH_CHANGES", receipt
        assert want in receipt["detail"], receipt


async def test_free_text_only_question(
    start: Start,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    args = {
        "questions": [
            {"id": "name", "question": "What should the service be called?", "options": []}
        ]
    }
    text, receipt = await answer_one(
        start, world, comms, args, [answer("name", custom_text="ledger")]
    )
    assert text == "User provided custom input: ledger"
    assert receipt["state"] == "DELIVERY_STATE_DELIVERED", receipt


async def test_two_asks_in_one_turn_each_answer_reaches_its_call(
    start: Start,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    first = {
        "questions": [
            {
                "id": "lang",
                "question": "Which language?",
                "options": [{"label": "Python"}, {"label": "Go"}],
            }
        ]
    }
    second = {
        "questions": [
            {
                "id": "ci",
                "question": "Which CI?",
                "options": [{"label": "GitHub"}, {"label": "GitLab"}],
            }
        ]
    }
    turn = Turn(tool_calls=(ToolCall("ask", first, "call_a"), ToolCall("ask", second, "call_b")))
    with start(
        turns=[turn, Turn.say("ok")],
    ) as run:
        (ask_a,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        await respond(comms, world.human.token, ask_a["askId"], answer("lang", "1"))
        _, ask_b = await wait_for_asks(comms, world.human.token, world.channel_id, 2, run)
        await respond(comms, world.human.token, ask_b["askId"], answer("ci", "0"))
        assert await run.wait() == 0, run.log()
    found = await messages(comms, world.human.token, world.channel_id)
    holding = [m for m in found if sum("ask" in b for b in m["blocks"]) == 2]
    assert len(holding) == 1, found  # both asks of the turn in the message that made them
    request = run.model.completions[1]
    assert request.tool_result_text("call_a") == "User selected: Go"
    assert request.tool_result_text("call_b") == "User selected: GitHub"


async def test_stopping_the_bridge_withdraws_the_open_ask(
    start: Start,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    """Ctrl-C to the bridge (ACP: session/cancel; RPC: the signal passed on to omp): the ask
    nobody waits for any more ends WITHDRAWN, saying why."""
    with start(
        turns=[Turn.call("ask", GALLERY), Turn.say("never sent")],
    ) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        run.process.send_signal(signal.SIGINT)  # the person stops the agent
        assert await run.wait() == 128 + signal.SIGINT, run.log()
    log = run.log()
    assert f"ask {ask['askId']} is closed in Compass as WITHDRAWN: bridge shut down (SIGINT)" in log
    assert len(run.model.completions) == 1, log  # the model never got an answer
    (closed,) = [a for a in await _asks(comms, world) if a["askId"] == ask["askId"]]
    assert closed["status"] == "ASK_STATUS_WITHDRAWN", closed
    assert closed["closeReason"] == "bridge shut down (SIGINT)"
    assert closed["closedByAccountId"] == world.agent.account_id
    assert not closed.get("answeredByAccountId"), closed


async def test_a_participants_decline_is_the_runtimes_cancel(
    protocol: str,
    start: Start,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    """DeclineAsk in Compass: over ACP the form is declined, omp aborts the ask call and the
    prompt turn ends `cancelled`; over RPC the pending select is cancelled and omp aborts the
    run. Either way the model gets no second request."""
    with start(
        turns=[Turn.call("ask", GALLERY), Turn.say("never sent")],
    ) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        await decline(comms, world.human.token, ask["askId"], "not now")
        assert await run.wait() == 0, run.log()
    log = run.log()
    assert f"ask {ask['askId']} was declined in Compass (not now)" in log, log
    if protocol == "acp":
        assert "the prompt turn ended (cancelled)" in log, log
    assert len(run.model.completions) == 1, log
    declined = await wait_for_status(comms, world.human.token, world.channel_id, ask["askId"])
    assert declined["status"] == "ASK_STATUS_DECLINED", declined
    assert declined["closeReason"] == "not now"
    assert "CloseAsk" not in log  # the bridge closes nothing: the ask has its outcome
    receipt = await wait_for_receipt(comms, world.human.token, world.channel_id, ask["askId"])
    assert receipt["state"] == "DELIVERY_STATE_DELIVERED", receipt  # the agent got the cancel


async def _asks(comms: httpx.AsyncClient, world: _server.SeededWorld) -> list[dict[str, Any]]:
    found = await messages(comms, world.human.token, world.channel_id)
    return [b["ask"] for m in found for b in m["blocks"] if "ask" in b]


@pytest.mark.parametrize("protocol", ["acp"])
@pytest.mark.parametrize("kind", ["allow_once", "reject_once"])
async def test_a_tool_permission_is_a_typed_ask(
    kind: str,
    start: Start,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    """omp asks `session/request_permission` before bash; the person decides in Compass.
    (Its RPC mode asks no permission: ACP only.)"""
    with start(
        turns=[Turn.call("bash", {"command": "echo compass-was-here"}), Turn.say("ok")],
    ) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        (question,) = ask["questions"]
        assert question["header"] == "Permission"
        assert "echo compass-was-here" in question["question"]
        # The option's kind in words ("allow once", "reject once").
        (option,) = [o for o in question["options"] if o["description"] == kind.replace("_", " ")]
        await respond(comms, world.human.token, ask["askId"], answer("permission", option["id"]))
        assert await run.wait() == 0, run.log()
    result = run.model.completions[1].tool_result_text()
    if kind == "allow_once":
        assert result.startswith("compass-was-here\n"), result
    else:
        assert result == "Tool call rejected by user (bash)"


async def test_the_runtimes_timeout_is_recorded_as_timed_out_with_its_picks(
    protocol: str,
    start: Start,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    """omp's `ask.timeout` ends the call with its own auto-picks; nobody answered in Compass.
    The bridge records them: TIMED_OUT, the picks as option ids, `timedOut` per question.
    Over RPC the select announced the timeout, so the posted ask carries a deadline."""
    with start(
        turns=[Turn.call("ask", GALLERY), Turn.say("ok")],
        ask_timeout=2,
    ) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        assert await run.wait() == 0, run.log()
    assert run.model.completions[1].tool_result_text() == (
        "User answers:\ndb: Postgres (auto-selected after timeout)\n"
        "features: [Email + password] (auto-selected after timeout)"
    )
    log = run.log()
    assert f"ask {ask['askId']} is closed in Compass as TIMED_OUT" in log, log
    timed_out = await wait_for_status(comms, world.human.token, world.channel_id, ask["askId"])
    assert timed_out["status"] == "ASK_STATUS_TIMED_OUT", timed_out
    assert timed_out["closeReason"] == "runtime timeout picked the answer"
    picks = [
        (q["questionId"], q.get("chosenOptionIds", []), q.get("timedOut", False))
        for q in timed_out["questions"]
    ]
    assert picks == [("db", ["0"], True), ("features", ["0"], True)], timed_out
    assert timed_out["closedByAccountId"] == world.agent.account_id, timed_out
    if protocol == "rpc":
        assert timed_out["onTimeout"] == "ASK_TIMEOUT_POLICY_PICK_RECOMMENDED", timed_out
        assert "deadline" in timed_out, timed_out
    else:  # ACP announces no timeout
        assert "deadline" not in timed_out, timed_out


async def test_skipping_a_lone_single_select_is_a_documented_loss(
    protocol: str,
    start: Start,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    """Compass accepts a deliberate skip. Over ACP, omp 18.2.3 reads an empty single-select
    answer to a one-question ask as a cancel and stops the turn; the bridge delivers it and
    says so. Its RPC mode has no skip at all (a cancel aborts the run): the bridge answers
    with empty free text and says so."""
    args = {"questions": GALLERY["questions"][:1]}
    with start(
        turns=[Turn.call("ask", args), Turn.say("ok")],
    ) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        await respond(comms, world.human.token, ask["askId"], answer("db"))
        assert await run.wait() == 0, run.log()
    if protocol == "acp":
        assert "stops the agent's turn" in run.log()
        assert "the prompt turn ended (cancelled)" in run.log()
        assert len(run.model.completions) == 1
    else:
        assert "'db' was skipped, which the runtime's select dialog cannot say" in run.log()
        assert run.model.completions[1].tool_result_text() == "User provided custom input: "
