"""End to end: a scripted runtime under `compass agent-bridge`, a real server and database, a
participant answering over HTTP; the runtime must receive exactly the expected reply."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

import pytest

from tests._wait import eventually
from tests.bridge import _events as ev
from tests.bridge._harness import list_messages, respond, start_bridge, wait_exit, wait_for_asks
from tests.bridge._scenarios import (
    DEPLOY_ANSWERS,
    DEPLOY_REPLY_FIELDS,
    GALLERY_ANSWERS,
    GALLERY_REPLY,
    INTRO,
    one_ask_script,
    recorded_script,
)

if TYPE_CHECKING:
    from pathlib import Path

    import httpx

    from tests._server import RunningServer, SeededWorld

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


async def test_an_answer_travels_from_the_participant_to_the_waiting_runtime(
    module_server: RunningServer, world: SeededWorld, comms: httpx.AsyncClient, tmp_path: Path
) -> None:
    with start_bridge(
        server_url=module_server.url,
        channel_id=world.channel_id,
        token=world.agent.token,
        steps=one_ask_script(),
        workdir=tmp_path,
    ) as bridge:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1)
        assert [q["questionId"] for q in ask["questions"]] == ["db", "features"]
        assert "answeredByAccountId" not in ask
        await respond(comms, world.human.token, ask["askId"], GALLERY_ANSWERS)
        code = await wait_exit(bridge)
        assert code == 0, bridge.log()

    (message,) = await list_messages(comms, world.human.token, world.channel_id)
    assert message["authorAccountId"] == world.agent.account_id
    text, ask_block = message["blocks"]
    assert text == {"text": {"text": INTRO}}
    stored = ask_block["ask"]
    assert stored["askId"] == ask["askId"]
    assert stored["answeredByAccountId"] == world.human.account_id
    assert [q.get("chosenOptionIds", []) for q in stored["questions"]] == [["0"], ["0", "1"]]
    assert "got the expected reply for req-1" in bridge.log()


def _by_first_question(asks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {ask["questions"][0]["questionId"]: ask for ask in asks}


async def test_two_asks_started_together_are_both_answered_to_their_own_requests(
    module_server: RunningServer, world: SeededWorld, comms: httpx.AsyncClient, tmp_path: Path
) -> None:
    q1, q2 = ev.gallery_questions(), ev.deploy_questions()
    reply_a = {**GALLERY_REPLY, "id": "req-a"}
    reply_b = ev.reply("req-b", *DEPLOY_REPLY_FIELDS)
    steps = [
        *ev.emit(ev.assistant_message("m-1", INTRO, asks=[("c1", q1), ("c2", q2)])),
        *ev.emit([ev.ask_start("c1", q1), ev.ask_start("c2", q2)]),
        {"await_command": "set_ask_dialog"},
        *ev.emit([ev.ask_request("req-a", q1), ev.ask_request("req-b", q2)]),
        {"expect_replies": [reply_a, reply_b]},
        *ev.emit(ev.ask_end("c1", reply_a, q1)),
        *ev.emit(ev.ask_end("c2", reply_b, q2)),
        *ev.emit([{"type": "turn_end"}, {"type": "agent_end"}]),
    ]
    with start_bridge(
        server_url=module_server.url,
        channel_id=world.channel_id,
        token=world.agent.token,
        steps=steps,
        workdir=tmp_path,
    ) as bridge:
        asks = _by_first_question(
            await wait_for_asks(comms, world.human.token, world.channel_id, 2)
        )
        # Answer the second ask first: each answer must still reach its own request.
        await respond(comms, world.human.token, asks["region"]["askId"], DEPLOY_ANSWERS)
        await respond(comms, world.human.token, asks["db"]["askId"], GALLERY_ANSWERS)
        assert await wait_exit(bridge) == 0, bridge.log()

    _assert_one_message_with_both_asks(
        await list_messages(comms, world.human.token, world.channel_id), asks, world
    )
    log = bridge.log()
    assert "got the expected reply for req-a" in log
    assert "got the expected reply for req-b" in log


def _assert_one_message_with_both_asks(
    messages: list[dict[str, Any]], asks: dict[str, dict[str, Any]], world: SeededWorld
) -> None:
    """The assistant message holds its text, then ask 1, then ask 2, both answered (docs/spec.md §2.2)."""
    (message,) = messages
    text, first, second = message["blocks"]
    assert text == {"text": {"text": INTRO}}
    assert [q["questionId"] for q in first["ask"]["questions"]] == ["db", "features"]
    assert [q["questionId"] for q in second["ask"]["questions"]] == ["region", "name"]
    assert first["ask"]["askId"] == asks["db"]["askId"]
    assert second["ask"]["askId"] == asks["region"]["askId"]
    assert first["ask"]["answeredByAccountId"] == world.human.account_id
    assert second["ask"]["answeredByAccountId"] == world.human.account_id


async def test_a_second_ask_after_the_first_was_answered_is_answered_too(
    module_server: RunningServer, world: SeededWorld, comms: httpx.AsyncClient, tmp_path: Path
) -> None:
    q1, q2 = ev.gallery_questions(), ev.deploy_questions()
    reply_a = {**GALLERY_REPLY, "id": "req-a"}
    reply_b = ev.reply("req-b", *DEPLOY_REPLY_FIELDS)
    steps = [
        *ev.emit(ev.assistant_message("m-1", INTRO, asks=[("c1", q1), ("c2", q2)])),
        {"await_command": "set_ask_dialog"},
        *ev.emit([ev.ask_request("req-a", q1), ev.ask_start("c1", q1)]),
        {"expect_replies": [reply_a]},
        *ev.emit(ev.ask_end("c1", reply_a, q1)),
        *ev.emit([ev.ask_request("req-b", q2), ev.ask_start("c2", q2)]),
        {"expect_replies": [reply_b]},
        *ev.emit(ev.ask_end("c2", reply_b, q2)),
        *ev.emit([{"type": "turn_end"}, {"type": "agent_end"}]),
    ]
    with start_bridge(
        server_url=module_server.url,
        channel_id=world.channel_id,
        token=world.agent.token,
        steps=steps,
        workdir=tmp_path,
    ) as bridge:
        (first,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1)
        await respond(comms, world.human.token, first["askId"], GALLERY_ANSWERS)
        asks = _by_first_question(
            await wait_for_asks(comms, world.human.token, world.channel_id, 2)
        )
        assert asks["db"]["askId"] == first["askId"]
        await respond(comms, world.human.token, asks["region"]["askId"], DEPLOY_ANSWERS)
        assert await wait_exit(bridge) == 0, bridge.log()

    # The second ask started after the first was answered, when the message was long
    # stored: an UpdateMessage added it to that same message.
    _assert_one_message_with_both_asks(
        await list_messages(comms, world.human.token, world.channel_id), asks, world
    )
    log = bridge.log()
    assert "got the expected reply for req-a" in log
    assert "got the expected reply for req-b" in log
    assert "dropping" not in log


async def test_a_bridge_the_server_refuses_stops_its_runtime_and_exits_1(
    module_server: RunningServer, world: SeededWorld, tmp_path: Path
) -> None:
    # A token that passes the start-up check and is refused later (its account disabled
    # while the runtime runs): the bridge stops the runtime and exits 1.
    from compass_server.store import AccountKind
    from compass_server.store.postgres import PostgresStore

    async with PostgresStore(module_server.dsn, pool_min=1, pool_max=1) as store:
        agent, token = await store.create_account(AccountKind.AGENT, "Short-lived Agent")
        await store.add_participant(world.channel_id, agent.account_id)
    started, go = tmp_path / "started", tmp_path / "go"
    steps = [
        {"touch": str(started)},
        {"wait_file": str(go)},
        *ev.emit(ev.assistant_message("m-1", "Hello.")),
        {"wait_file": str(tmp_path / "never")},
    ]
    with start_bridge(
        server_url=module_server.url,
        channel_id=world.channel_id,
        token=token,
        steps=steps,
        workdir=tmp_path,
    ) as bridge:
        async with PostgresStore(module_server.dsn, pool_min=1, pool_max=1) as store:
            # The runtime starts once the start-up check passed.
            await eventually(
                lambda: started.exists() or bridge.process.poll() is not None,
                "the runtime's start",
                within=30,
            )
            assert started.exists(), bridge.log()
            await store.disable_account(agent.account_id)
        go.touch()
        assert await wait_exit(bridge, seconds=30) == 1, bridge.log()
    assert "unauthenticated" in bridge.log()
    assert token not in bridge.log()


async def test_stdin_mode_reads_events_on_stdin_and_replies_on_stdout(
    module_server: RunningServer, world: SeededWorld, comms: httpx.AsyncClient, tmp_path: Path
) -> None:
    token_file = tmp_path / "agent.token"
    token_file.write_text(world.agent.token)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "compass_server.cli", "agent-bridge",
        "--server", module_server.url, "--channel", world.channel_id,
        "--token-file", str(token_file),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        async with asyncio.timeout(60):
            command = json.loads(await process.stdout.readline())
            assert command["type"] == "set_ask_dialog"
            assert command["enabled"] is True
            questions = ev.gallery_questions()
            events = [
                *ev.assistant_message("m-1", INTRO, asks=[("c1", questions)]),
                ev.ask_start("c1", questions),
                ev.ask_request("req-1", questions),
            ]
            process.stdin.write(b"".join(json.dumps(e).encode() + b"\n" for e in events))
            await process.stdin.drain()
            (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1)
            await respond(comms, world.human.token, ask["askId"], GALLERY_ANSWERS)
            assert json.loads(await process.stdout.readline()) == GALLERY_REPLY
            process.stdin.close()
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_a_message_settled_again_is_updated_in_place_keeping_ask_ids_and_answers(
    module_server: RunningServer, world: SeededWorld, comms: httpx.AsyncClient, tmp_path: Path
) -> None:
    q1, q2 = ev.gallery_questions(), ev.deploy_questions()
    reply_a = {**GALLERY_REPLY, "id": "req-a"}
    reply_b = ev.reply("req-b", *DEPLOY_REPLY_FIELDS)
    revised = "Two decisions first (revised)."
    resettle = ev.assistant_message("m-1", revised, asks=[("c1", q1), ("c2", q2)])[-1]
    steps = [
        *ev.emit(ev.assistant_message("m-1", INTRO, asks=[("c1", q1), ("c2", q2)])),
        *ev.emit([ev.ask_start("c1", q1), ev.ask_start("c2", q2)]),
        {"await_command": "set_ask_dialog"},
        *ev.emit([ev.ask_request("req-a", q1)]),
        {"expect_replies": [reply_a]},
        # The same message settles again with other text: an UpdateMessage that must carry
        # both minted ask ids, one of them already answered.
        *ev.emit([resettle]),
        *ev.emit([ev.ask_request("req-b", q2)]),
        {"expect_replies": [reply_b]},
        *ev.emit([{"type": "turn_end"}, {"type": "agent_end"}]),
    ]
    with start_bridge(
        server_url=module_server.url,
        channel_id=world.channel_id,
        token=world.agent.token,
        steps=steps,
        workdir=tmp_path,
    ) as bridge:
        before = _by_first_question(
            await wait_for_asks(comms, world.human.token, world.channel_id, 2)
        )
        await respond(comms, world.human.token, before["db"]["askId"], GALLERY_ANSWERS)
        deadline = asyncio.get_running_loop().time() + 30
        while True:  # wait for the update to land before answering the second ask
            (message,) = await list_messages(comms, world.human.token, world.channel_id)
            if message["blocks"][0]["text"]["text"] == revised:
                break
            assert asyncio.get_running_loop().time() < deadline, bridge.log()
            await asyncio.sleep(0.1)
        await respond(comms, world.human.token, before["region"]["askId"], DEPLOY_ANSWERS)
        assert await wait_exit(bridge) == 0, bridge.log()

    (message,) = await list_messages(comms, world.human.token, world.channel_id)
    text, first, second = message["blocks"]
    assert text == {"text": {"text": revised}}
    assert first["ask"]["askId"] == before["db"]["askId"]
    assert second["ask"]["askId"] == before["region"]["askId"]
    assert first["ask"]["answeredByAccountId"] == world.human.account_id
    assert second["ask"]["answeredByAccountId"] == world.human.account_id
    assert "dropping" not in bridge.log()


async def test_the_published_runtimes_select_and_editor_dialogs_carry_the_answer(
    module_server: RunningServer, world: SeededWorld, comms: httpx.AsyncClient, tmp_path: Path
) -> None:
    """oh-my-pi 18.2.3 as recorded: no set_ask_dialog; a select per question step, an editor
    for "Other"; the first select before the call starts. Every reply must be the recorded
    one, which made the real runtime report `db: "Oracle"` and the features answer."""
    with start_bridge(
        server_url=module_server.url,
        channel_id=world.channel_id,
        token=world.agent.token,
        steps=recorded_script("gallery-other"),
        workdir=tmp_path,
        extra=("--prompt", "go"),
    ) as bridge:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1)
        answers = [
            {"questionId": "db", "customText": "Oracle"},
            {"questionId": "features", "chosenOptionIds": ["0"], "customText": "Passkeys too"},
        ]
        await respond(comms, world.human.token, ask["askId"], answers)
        assert await wait_exit(bridge) == 0, bridge.log()
    log = bridge.log()
    assert "does not know set_ask_dialog" in log
    assert "left answerable" not in log
    assert "1 answer(s) delivered" in log
    asking, thanks = await list_messages(comms, world.human.token, world.channel_id)
    (stored,) = [block["ask"] for block in asking["blocks"] if "ask" in block]
    assert stored["answeredByAccountId"] == world.human.account_id
    assert thanks["blocks"] == [{"text": {"text": "thanks"}}]  # the model's next turn
