"""GitHub Copilot CLI as published on npm (copilot_native.py), its own `ask_user` tool answered
from Compass: `compass agent-bridge --protocol copilot` runs it headless under the SDK's
JSON-RPC against `compass serve` on a fresh database, and a participant answers through
CommsService over HTTP. Each test asserts the exact tool result the model's next request
carries (the scripted model records it), the receipt, and that nothing left 127.0.0.1 but
through the refusing proxy.

The model is offered `ask_user` because the bridge's session asks to hear questions
(`requestUserInput`); `copilot -p` and `copilot --acp` never offer it (research: issue 34).
"""

from __future__ import annotations

import contextlib
import signal
from typing import TYPE_CHECKING, Any

import pytest

from tests.realagent.copilot_native import copilot_launch
from tests.realagent.harness import (
    agents_receipt,
    answer,
    bridge_process,
    decline,
    messages,
    respond,
    wait_for_asks,
    wait_for_status,
)
from tests.realagent.model_server import ToolCall, Turn
from tests.realagent.wire_models import ChatModel

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Sequence
    from pathlib import Path

    import httpx

    from tests import _server
    from tests.realagent.harness import Run
    from tests.realagent.proxy import RefusingProxy

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

ASK_CALL = "call_ask_1"
QUESTION = "Which database should the new service use?"
CHOICES = ["Postgres", "SQLite"]
FORM = {
    "message": "Set up the new service",
    "requestedSchema": {
        "properties": {
            "db": {"type": "string", "title": "Database", "enum": ["Postgres", "SQLite"]},
            "extras": {
                "type": "array",
                "title": "Extras",
                "items": {"type": "string", "enum": ["cache", "queue"]},
            },
            "note": {"type": "string", "title": "Anything else?"},
        },
        "required": ["db"],
    },
}


@pytest.fixture
def start(
    proxy: RefusingProxy,
    tmp_path: Path,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
    request: pytest.FixtureRequest,
) -> Callable[..., contextlib.AbstractContextManager[Run]]:
    """`start(turns, extra=())`: a context manager running Copilot through the bridge."""

    @contextlib.contextmanager
    def run(turns: list[Turn], extra: Sequence[str] = ()) -> Generator[Run]:
        with ChatModel(turns) as model:
            launch = copilot_launch(
                tmp_path, model.base_url, proxy.env(), record_as=request.node.name
            )
            with bridge_process(
                agent=launch.argv,
                env=launch.env,
                cwd=launch.cwd,
                tmp_path=tmp_path,
                server_url=module_server.url,
                world=world,
                protocol="copilot",
                model=model,
                extra=extra,
            ) as running:
                yield running
        assert proxy.hosts() == set(), proxy.refused

    return run


def ask_turns(arguments: dict[str, Any]) -> list[Turn]:
    call = ToolCall("ask_user", arguments, ASK_CALL)
    return [Turn(text="One question first.", tool_calls=(call,)), Turn.say("Thanks.")]


CHOICE_TURNS = ask_turns({"question": QUESTION, "choices": CHOICES})


def read_by_model(run: Run) -> str:
    """The `ask_user` result the model read in its second request."""
    return run.model.wait_for_turns(2)[1].tool_result(ASK_CALL)


async def test_a_choice_reaches_the_model(
    start: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    with start(CHOICE_TURNS) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        (question,) = ask["questions"]
        assert question["question"] == QUESTION
        assert [o["label"] for o in question["options"]] == CHOICES
        assert (question["freeText"], question["answerRequired"]) == ("FREE_TEXT_ACCEPTED", True)
        await respond(comms, world.human.token, ask["askId"], answer("answer", "1"))
        assert await run.wait() == 0, run.log()
    # Copilot offered its model ask_user only because the bridge asked to hear questions.
    assert "ask_user" in run.model.turns[0].tool_names()
    assert read_by_model(run) == "User selected: SQLite"
    receipt = await agents_receipt(comms, world, ask["askId"])
    assert (receipt["state"], receipt.get("detail", ""), receipt["payload"]) == (
        "DELIVERY_STATE_DELIVERED",
        "",
        "User selected: SQLite",
    )
    found = await messages(comms, world.human.token, world.channel_id)
    texts = [b["text"]["text"] for m in found for b in m["blocks"] if "text" in b]
    first_ask = next(i for i, m in enumerate(found) if any("ask" in b for b in m["blocks"]))
    lead = next(
        i
        for i, m in enumerate(found)
        if any(b.get("text", {}).get("text") == "One question first." for b in m["blocks"])
    )
    assert lead < first_ask, found
    assert "Thanks." in texts, texts


async def test_free_text_reaches_the_model_as_the_persons_words(
    start: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    with start(CHOICE_TURNS) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        await respond(
            comms, world.human.token, ask["askId"], answer("answer", custom_text="CockroachDB")
        )
        assert await run.wait() == 0, run.log()
    assert read_by_model(run) == "User responded: CockroachDB"
    receipt = await agents_receipt(comms, world, ask["askId"])
    assert (receipt["state"], receipt["payload"]) == (
        "DELIVERY_STATE_DELIVERED",
        "User responded: CockroachDB",
    )


async def test_a_decline_reaches_the_model_in_words(
    start: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    """Copilot's answer has no decline: the model reads the person's decline in the words the
    MCP `ask` tool uses, and goes on."""
    with start(CHOICE_TURNS) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        await decline(comms, world.human.token, ask["askId"], "not now")
        assert await run.wait() == 0, run.log()
    declined = await wait_for_status(comms, world.human.token, world.channel_id, ask["askId"])
    assert (declined["status"], declined["closeReason"]) == ("ASK_STATUS_DECLINED", "not now")
    expected = (
        f"User responded: {declined['closedByName']} declined to answer (not now). "
        "Do not ask the same again; carry on without it."
    )
    assert read_by_model(run) == expected
    receipt = await agents_receipt(comms, world, ask["askId"])
    assert (receipt["state"], receipt["payload"]) == ("DELIVERY_STATE_DELIVERED", expected)


async def test_the_form_variant_takes_choices_and_the_persons_own_words(
    start: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    with start(ask_turns(FORM), ["--ask-user-variant", "elicitation"]) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        db, extras, note = ask["questions"]
        assert (db["questionId"], db["question"], db["freeText"]) == (
            "db",
            "Database",
            "FREE_TEXT_ACCEPTED",
        )
        assert [o["label"] for o in db["options"]] == ["Postgres", "SQLite"]
        assert (extras["allowMultiple"], extras["freeText"]) == (True, "FREE_TEXT_ACCEPTED")
        assert (note.get("options", []), note["freeText"]) == ([], "FREE_TEXT_ACCEPTED")
        await respond(
            comms,
            world.human.token,
            ask["askId"],
            # Copilot's own form takes the person's words in a choice field.
            answer("db", custom_text="MariaDB"),
            answer("extras", "0", "1"),
            answer("note", custom_text="ship it friday"),
        )
        assert await run.wait() == 0, run.log()
    expected = "User responded: db=MariaDB, extras=cache, queue, note=ship it friday"
    assert read_by_model(run) == expected
    receipt = await agents_receipt(comms, world, ask["askId"])
    assert (receipt["state"], receipt["payload"]) == ("DELIVERY_STATE_DELIVERED", expected)


async def test_a_declined_form_is_copilots_own_decline(
    start: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    with start(ask_turns(FORM), ["--ask-user-variant", "elicitation"]) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        await decline(comms, world.human.token, ask["askId"], "not now")
        assert await run.wait() == 0, run.log()
    read = read_by_model(run)
    assert read.startswith(
        "The user is not available to respond and will review your work later."
    ), read
    receipt = await agents_receipt(comms, world, ask["askId"])
    assert (receipt["state"], receipt["payload"]) == ("DELIVERY_STATE_DELIVERED", read)


async def test_a_signal_withdraws_the_ask_copilot_stops_waiting_for(
    start: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    with start(CHOICE_TURNS) as run:
        (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1, run)
        run.process.send_signal(signal.SIGINT)
        assert await run.wait() == 128 + signal.SIGINT, run.log()
    closed = await wait_for_status(comms, world.human.token, world.channel_id, ask["askId"])
    assert (closed["status"], closed["closeReason"]) == (
        "ASK_STATUS_WITHDRAWN",
        "bridge shut down (SIGINT)",
    )
    assert len(run.model.turns) == 1, run.log()


async def test_without_a_login_or_a_model_provider_the_run_says_why(
    proxy: RefusingProxy,
    tmp_path: Path,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
) -> None:
    """Copilot's server needs a GitHub login or a model provider: with neither (and not
    offline, which refuses to start without a provider), its turn fails and the bridge exits
    1 with Copilot's words."""
    with ChatModel([Turn.say("never asked")]) as model:
        launch = copilot_launch(tmp_path, None, proxy.env())
        env = {k: v for k, v in launch.env.items() if k != "COPILOT_OFFLINE"}
        with bridge_process(
            agent=launch.argv,
            env=env,
            cwd=launch.cwd,
            tmp_path=tmp_path,
            server_url=module_server.url,
            world=world,
            protocol="copilot",
            model=model,
        ) as run:
            assert await run.wait() == 1, run.log()
        assert model.turns == [], run.log()
    assert (
        "compass agent-bridge: Copilot's turn failed: Execution failed: InvalidArg, "
        "No GitHub OAuth token or Copilot HMAC key provided" in run.log()
    ), run.log()
