"""The published pi (`@mariozechner/pi-coding-agent` 0.73.1, pi_agent.py) in its RPC mode with
Compass's `ask_user` extension, bridged by `compass agent-bridge --protocol rpc -- pi --mode
rpc -e ask_user.ts` (a real process) to `compass serve`, answered by a participant over HTTP:
each of pi's four dialogs (select, confirm, input, editor) carries the person's answer, and
the model reads exactly it (the scripted model records the tool result of its next request).
"""

from __future__ import annotations

import json
import signal
from typing import TYPE_CHECKING, Any

import pytest

from compass_bridge.receipts import DECLINE_PAYLOAD
from tests.realagent.harness import (
    answer,
    decline,
    messages,
    respond,
    wait_for_asks,
    wait_for_receipt,
    wait_for_status,
)
from tests.realagent.model_server import ToolCall, Turn
from tests.realagent.pi_agent import ASK_USER_TS, pi_bridge_run
from tests.realagent.pi_record import FOUR, GATE_TS

if TYPE_CHECKING:
    from collections.abc import Sequence
    from contextlib import AbstractContextManager
    from pathlib import Path

    import httpx

    from tests import _server
    from tests.realagent.harness import Run

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def pi_run(
    tmp_path: Path,
    server_url: str,
    world: _server.SeededWorld,
    calls: Sequence[ToolCall],
    *,
    extensions: Sequence[Path] = (ASK_USER_TS,),
    installed: Sequence[Path] = (),
) -> AbstractContextManager[Run]:
    """The scripted model (CALLS, then "Thanks."), pi with `extensions` (`-e`) and
    `installed` (in ~/.pi/agent/extensions/), the real bridge."""
    return pi_bridge_run(
        tmp_path=tmp_path,
        server_url=server_url,
        world=world,
        turns=[Turn(tool_calls=tuple(calls)), Turn.say("Thanks.")],
        extensions=extensions,
        installed=installed,
    )


async def answered(
    tmp_path: Path,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
    answers: list[dict[str, Any]],
    *,
    installed: bool = False,
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """pi asks the four questions; the person answers: what the model read, the receipt, the
    ask as Compass shows it. `installed`: the extension is in ~/.pi/agent/extensions/, not
    given with `-e` (docs/agents/pi.md's two ways)."""
    calls = [ToolCall("ask_user", FOUR, "call_ask_1")]
    bridged = (
        pi_run(tmp_path, module_server.url, world, calls, extensions=(), installed=(ASK_USER_TS,))
        if installed
        else pi_run(tmp_path, module_server.url, world, calls)
    )
    with bridged as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        await respond(comms, world.human.token, ask["askId"], *answers)
        assert await run.wait() == 0, run.log()
    completions = run.model.completions
    assert len(completions) == 2, run.log()
    text = completions[1].tool_result_text("call_ask_1")
    receipt = await wait_for_receipt(comms, world.human.token, world.channel_id, ask["askId"])
    return text, receipt, ask


@pytest.mark.parametrize("installed", [False, True], ids=["with-e", "installed"])
async def test_the_four_dialogs_carry_the_answer_to_the_model(
    installed: bool,
    tmp_path: Path,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    """A pick (select), Yes (confirm), text (input), a pick and text (select, then editor)."""
    text, receipt, ask = await answered(
        tmp_path,
        module_server,
        world,
        comms,
        [
            answer("db", "1"),
            answer("tests", "0"),
            answer("name", custom_text="ledger"),
            answer("auth", "1", custom_text="and passkeys"),
        ],
        installed=installed,
    )
    read = 'User answers:\ndb: SQLite\ntests: Yes\nname: "ledger"\nauth: ["OAuth"], other: "and passkeys"'
    assert text == read
    # ONE Ask with every question of the call, saying what each dialog carries.
    marks = [
        (q["questionId"], q.get("freeText"), q.get("answerRequired", False))
        for q in ask["questions"]
    ]
    assert marks == [
        ("db", "FREE_TEXT_ACCEPTED", True),
        ("tests", "FREE_TEXT_REFUSED", True),
        ("name", "FREE_TEXT_ACCEPTED", False),
        ("auth", "FREE_TEXT_ACCEPTED", False),
    ]
    assert receipt["state"] == "DELIVERY_STATE_DELIVERED", receipt
    assert receipt["payload"] == read
    assert not receipt.get("detail"), receipt


async def test_other_text_no_a_skip_and_two_picks(
    tmp_path: Path,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    """Free text instead of a pick ("Other", then the editor), No, a skipped free-text
    question (the empty text), two picks in the person's order."""
    text, receipt, _ = await answered(
        tmp_path,
        module_server,
        world,
        comms,
        [
            answer("db", custom_text="CockroachDB"),
            answer("tests", "1"),
            answer("name"),
            answer("auth", "1", "0"),
        ],
    )
    read = 'User answers:\ndb: "CockroachDB"\ntests: No\nname: ""\nauth: ["OAuth", "Email"]'
    assert text == read
    assert receipt["state"] == "DELIVERY_STATE_DELIVERED", receipt
    assert receipt["payload"] == read


async def test_a_decline_ends_the_run(
    tmp_path: Path,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    """DeclineAsk in Compass on a confirm question: the bridge aborts pi's run (its confirm
    reads a bare cancel as "No"), then cancels the dialog; the model gets no next request."""
    yes_no = {"questions": FOUR["questions"][1:2]}
    with pi_run(tmp_path, module_server.url, world, [ToolCall("ask_user", yes_no, "c1")]) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        await decline(comms, world.human.token, ask["askId"], "not now")
        assert await run.wait() == 0, run.log()
    log = run.log()
    assert f"ask {ask['askId']} was declined in Compass (not now)" in log, log
    assert len(run.model.completions) == 1, log
    declined = await wait_for_status(comms, world.human.token, world.channel_id, ask["askId"])
    assert declined["status"] == "ASK_STATUS_DECLINED", declined
    assert "CloseAsk" not in log  # the ask has its outcome: nothing to close
    receipt = await wait_for_receipt(comms, world.human.token, world.channel_id, ask["askId"])
    assert receipt["state"] == "DELIVERY_STATE_DELIVERED", receipt
    assert receipt["payload"] == DECLINE_PAYLOAD


@pytest.mark.parametrize(
    ("choice", "read"), [("0", "compass-was-here\n"), ("1", "Blocked by the user")]
)
async def test_another_extensions_confirm_is_an_ask_of_its_own(
    choice: str,
    read: str,
    tmp_path: Path,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    """The test bed's permission gate (pi/gate.ts) confirms before bash: a dialog of no ask
    call, asked in Compass as one Yes/No question."""
    bash = ToolCall("bash", {"command": "echo compass-was-here"}, "call_bash_1")
    extensions = (ASK_USER_TS, GATE_TS)
    with pi_run(tmp_path, module_server.url, world, [bash], extensions=extensions) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        (question,) = ask["questions"]
        assert question["question"] == "Run this command?\n\necho compass-was-here"
        assert [o["label"] for o in question["options"]] == ["Yes", "No"]
        await respond(comms, world.human.token, ask["askId"], answer("confirm", choice))
        assert await run.wait() == 0, run.log()
    assert run.model.completions[1].tool_result_text("call_bash_1") == read
    receipt = await wait_for_receipt(comms, world.human.token, world.channel_id, ask["askId"])
    assert receipt["state"] == "DELIVERY_STATE_DELIVERED", receipt
    assert json.loads(receipt["payload"])["confirmed"] is (choice == "0")


async def test_stopping_the_bridge_withdraws_the_open_ask(
    tmp_path: Path,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    with pi_run(tmp_path, module_server.url, world, [ToolCall("ask_user", FOUR, "c1")]) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        run.process.send_signal(signal.SIGINT)
        assert await run.wait() == 128 + signal.SIGINT, run.log()
    assert len(run.model.completions) == 1
    found = await messages(comms, world.human.token, world.channel_id)
    (closed,) = [
        b["ask"]
        for m in found
        for b in m["blocks"]
        if b.get("ask", {}).get("askId") == ask["askId"]
    ]
    assert closed["status"] == "ASK_STATUS_WITHDRAWN", closed
    assert closed["closeReason"] == "bridge shut down (SIGINT)"
