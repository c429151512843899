"""OpenCode's own `question` tool answered in Compass (issue 34, item 2): the real OpenCode
from npm (tests/realagent/opencode: 1.18.33), headless under `opencode serve` with Compass's
plugin installed by `compass opencode install` into a throwaway HOME (served_opencode.py says
why not `opencode run`), its model scripted on 127.0.0.1, everything else it tries refused by
a loopback proxy; `compass serve` on PostgreSQL (one per module). A person answers over
Connect-JSON as the browser does. Each test asserts the exact tool result the model read in
its next request, and what Compass stored (the Ask, its outcome, the receipt).
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import TYPE_CHECKING, Any

import pytest

from tests._wait import eventually
from tests.realagent.harness import (
    agents_receipt,
    answer,
    asks_of,
    decline,
    first_ask,
    messages,
    respond,
    wait_for_status,
)
from tests.realagent.model_server import Turn
from tests.realagent.served_opencode import opencode_tui, served_opencode
from tests.realagent.wire_models import ChatModel

if TYPE_CHECKING:
    from collections.abc import Callable, Generator
    from pathlib import Path

    import httpx

    from tests import _server
    from tests.realagent.proxy import RefusingProxy
    from tests.realagent.served_opencode import OpenCode

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

CALL = "call_question_1"
DATABASE = "Which database should the new service use?"
AUTH = "Which auth flows should ship in v1?"
QUESTIONS: list[dict[str, Any]] = [
    {
        "question": DATABASE,
        "header": "Database",
        "options": [
            {"label": "Postgres (Recommended)", "description": "Relational, the team knows it"},
            {"label": "SQLite", "description": "Embedded, one file"},
        ],
    },
    {
        "question": AUTH,
        "header": "Auth",
        "multiple": True,
        "options": [
            {"label": "Email, SMS", "description": "codes by message"},
            {"label": "OAuth", "description": "Google, GitHub"},
            {"label": 'SSO "SAML"', "description": "for companies"},
        ],
    },
]
PROMPT = "Help me set up the new service."
THEN = "You can now continue with the user's answers in mind."
DISMISSED = "The user dismissed this question"
REFUSED_HOSTS = {"registry.npmjs.org:443"}
"""OpenCode installs its plugin SDK into its config folder in the background at every start;
offline that fails, harmlessly ("background dependency install failed")."""


def answered(*pairs: str) -> str:
    return f"User has answered your questions: {', '.join(pairs)}. {THEN}"


@pytest.fixture
def opencode(
    tmp_path: Path,
    proxy: RefusingProxy,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
) -> Callable[..., contextlib.AbstractContextManager[OpenCode]]:
    """`opencode(turns, config=...)`: a context manager running `opencode serve` with the
    plugin installed for this test's world and its model scripted with `turns`."""

    @contextlib.contextmanager
    def run(turns: list[Turn], *, token: str = "", **kwargs: Any) -> Generator[OpenCode]:
        with (
            ChatModel(turns) as model,
            served_opencode(
                tmp=tmp_path,
                model=model,
                proxy_env=proxy.env(),
                server_url=module_server.url,
                channel_id=world.channel_id,
                token=token or world.agent.token,
                **kwargs,
            ) as served,
        ):
            yield served
        assert {r.target for r in proxy.refused} <= REFUSED_HOSTS, proxy.refused

    return run


def ask_turns(*questions: dict[str, Any]) -> list[Turn]:
    return [Turn.call("question", {"questions": list(questions)}, CALL), Turn.say("All set.")]


async def the_ask(
    comms: httpx.AsyncClient, world: _server.SeededWorld, served: OpenCode
) -> dict[str, Any]:
    """The one ask the plugin's command posted, once it is there."""
    return await first_ask(
        comms,
        world,
        served.process,
        lambda: served.log()[-3000:],
        who="opencode serve",
        what="the plugin's ask",
    )


async def test_two_questions_the_model_reads_every_answer(
    opencode: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    with opencode(ask_turns(*QUESTIONS)) as served:
        session = served.session()
        served.prompt(session, PROMPT)
        ask = await the_ask(comms, world, served)
        database, auth = ask["questions"]
        # Headers, options with descriptions, the recommended one marked (its label without
        # the suffix), a multi-select, free text taken (OpenCode's "Type your own answer").
        assert (database["header"], database["question"], database.get("recommended")) == (
            "Database",
            DATABASE,
            0,
        )
        assert [(o["label"], o["description"]) for o in database["options"]] == [
            ("Postgres", "Relational, the team knows it"),
            ("SQLite", "Embedded, one file"),
        ]
        assert database.get("allowMultiple", False) is False
        assert (auth["header"], auth["allowMultiple"]) == ("Auth", True)
        assert [o["label"] for o in auth["options"]] == ["Email, SMS", "OAuth", 'SSO "SAML"']
        assert {database["freeText"], auth["freeText"]} == {"FREE_TEXT_ACCEPTED"}
        assert "deadline" not in ask, ask
        await respond(
            comms,
            world.human.token,
            ask["askId"],
            answer(database["questionId"], "0"),
            answer(auth["questionId"], "0", "2"),
        )
        read = served.model.wait_for_turns(2)[1].tool_result(CALL)
    # The labels exactly as OpenCode listed them, the recommended one with its suffix.
    expected = answered(
        f'"{DATABASE}"="Postgres (Recommended)"', f'"{AUTH}"="Email, SMS, SSO "SAML""'
    )
    assert read == expected
    found = await agents_receipt(comms, world, ask["askId"])
    assert (found["state"], found["payload"]) == ("DELIVERY_STATE_DELIVERED", expected)
    # One message holding the ask alone: nothing else was posted.
    (message,) = await messages(comms, world.human.token, world.channel_id)
    assert [list(block) for block in message["blocks"]] == [["ask"]]


async def test_free_text_is_an_entry_of_its_own_and_a_skip_is_unanswered(
    opencode: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    third = {"question": "Anything else?", "header": "Else", "options": []}
    with opencode(ask_turns(*QUESTIONS, third)) as served:
        served.prompt(served.session(), PROMPT)
        ask = await the_ask(comms, world, served)
        database, auth, other = (q["questionId"] for q in ask["questions"])
        await respond(
            comms,
            world.human.token,
            ask["askId"],
            answer(database, custom_text="DuckDB, embedded"),
            answer(auth, "1", custom_text="SCIM later"),
            answer(other),
        )
        read = served.model.wait_for_turns(2)[1].tool_result(CALL)
    expected = answered(
        f'"{DATABASE}"="DuckDB, embedded"',
        f'"{AUTH}"="OAuth, SCIM later"',
        '"Anything else?"="Unanswered"',
    )
    assert read == expected
    found = await agents_receipt(comms, world, ask["askId"])
    assert (found["state"], found["payload"]) == ("DELIVERY_STATE_DELIVERED", expected)


async def test_a_decline_rejects_the_question(
    opencode: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    """OpenCode's rejection takes no reason, and ends the turn (its default
    `experimental.continue_loop_on_deny: false`): the model reads the dismissal as the call's
    result at the next prompt; the receipt says the reason did not reach it."""
    turns = [*ask_turns(*QUESTIONS)[:1], Turn.say("Understood.")]
    with opencode(turns) as served:
        session = served.session()
        served.prompt(session, PROMPT)
        ask = await the_ask(comms, world, served)
        await decline(comms, world.human.token, ask["askId"], "ask me after lunch")
        found = await agents_receipt(comms, world, ask["askId"])

        async def stopped() -> bool:
            return served.idle(session)

        await eventually(stopped, "the session to stop after the rejection", within=30)
        assert len(served.model.turns) == 1  # the turn ended with the rejection
        served.prompt(session, "Go on.")
        read = served.model.wait_for_turns(2)[1].tool_result(CALL)
    assert read == DISMISSED
    assert (found["state"], found["payload"]) == (
        "DELIVERY_STATE_DELIVERED_WITH_CHANGES",
        DISMISSED,
    )
    assert found["detail"] == (
        f"OpenCode's rejection carries no reason: the model reads {DISMISSED!r} without "
        "'ask me after lunch'"
    )


async def test_the_decline_goes_on_at_once_where_opencode_is_told_to(
    opencode: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    with opencode(
        [*ask_turns(QUESTIONS[0])[:1], Turn.say("Ok.")],
        config={"experimental": {"continue_loop_on_deny": True}},
    ) as served:
        served.prompt(served.session(), PROMPT)
        ask = await the_ask(comms, world, served)
        await decline(comms, world.human.token, ask["askId"])
        read = served.model.wait_for_turns(2)[1].tool_result(CALL)
    assert read == DISMISSED
    found = await agents_receipt(comms, world, ask["askId"])
    assert (found["state"], found["payload"]) == ("DELIVERY_STATE_DELIVERED", DISMISSED)


async def test_an_interrupted_session_withdraws_the_ask(
    opencode: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    with opencode(ask_turns(QUESTIONS[0])) as served:
        session = served.session()
        served.prompt(session, PROMPT)
        ask = await the_ask(comms, world, served)
        served.abort(session)
        closed = await wait_for_status(comms, world.human.token, world.channel_id, ask["askId"])
    assert (closed["status"], closed["closeReason"]) == (
        "ASK_STATUS_WITHDRAWN",
        "the OpenCode session was interrupted",
    )


async def test_an_answer_given_in_opencode_withdraws_the_ask(
    opencode: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    """The person answers in OpenCode's own prompt first (as its TUI replies): the Compass
    ask is withdrawn, and the model reads the terminal's answer."""
    with opencode(ask_turns(QUESTIONS[0])) as served:
        served.prompt(served.session(), PROMPT)
        ask = await the_ask(comms, world, served)
        (pending,) = served.questions()
        served.reply(pending["id"], [["SQLite"]])
        closed = await wait_for_status(comms, world.human.token, world.channel_id, ask["askId"])
        read = served.model.wait_for_turns(2)[1].tool_result(CALL)
    assert (closed["status"], closed["closeReason"]) == (
        "ASK_STATUS_WITHDRAWN",
        "answered in OpenCode",
    )
    assert read == answered(f'"{DATABASE}"="SQLite"')


async def test_install_wrote_only_the_plugin_entry(
    opencode: Any, world: _server.SeededWorld
) -> None:
    with opencode(ask_turns(QUESTIONS[0])) as served:
        config = json.loads(served.config_path.read_text())
    assert served.config_path.name == "opencode.json"
    assert served.config_path.parent.parts[-2:] == (".config", "opencode")
    (entry,) = config["plugin"]
    path, options = entry
    assert path.endswith("compass_bridge/opencode/plugin/compass.js")
    command = options["command"]
    assert command[1:7] == [
        "opencode",
        "ask",
        "--server",
        command[4],
        "--channel",
        world.channel_id,
    ]
    assert world.agent.token not in json.dumps(config)


async def test_opencodes_own_question_refuses_free_text(
    opencode: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    """OpenCode's own questions may take no typed answer (`custom: false`): plan mode's
    plan_exit asks "switch to the build agent?" with Yes and No only. The model's result is
    the tool's own text, which the receipt carries."""
    with opencode(
        [Turn.call("plan_exit", {}, CALL), Turn.say("Switching.")],
        env={"OPENCODE_EXPERIMENTAL_PLAN_MODE": "1"},
    ) as served:
        served.prompt(served.session(), PROMPT, agent="plan")
        ask = await the_ask(comms, world, served)
        (question,) = ask["questions"]
        assert (question["header"], question["freeText"]) == ("Build Agent", "FREE_TEXT_REFUSED")
        assert [o["label"] for o in question["options"]] == ["Yes", "No"]
        await respond(comms, world.human.token, ask["askId"], answer(question["questionId"], "0"))
        read = served.model.wait_for_turns(2)[1].tool_result(CALL)
    assert read == "User approved switching to build agent. Wait for further instructions."
    found = await agents_receipt(comms, world, ask["askId"])
    assert (found["state"], found["payload"]) == ("DELIVERY_STATE_DELIVERED", read)


async def test_the_tui_asks_in_compass_too(
    tmp_path: Path,
    proxy: RefusingProxy,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
    comms: httpx.AsyncClient,
) -> None:
    """OpenCode as a person runs it: its TUI in a terminal. The question shows there (with
    its own "Type your own answer") and in Compass; answered in Compass, the model reads it."""
    with (
        ChatModel(ask_turns(QUESTIONS[0])) as model,
        opencode_tui(
            tmp=tmp_path,
            model=model,
            proxy_env=proxy.env(),
            server_url=module_server.url,
            channel_id=world.channel_id,
            token=world.agent.token,
            prompt=PROMPT,
        ) as screen,
    ):

        async def posted() -> dict[str, Any] | None:
            found = asks_of(await messages(comms, world.human.token, world.channel_id))
            return found[0] if found else None

        ask = await eventually(posted, "the plugin's ask", within=90, every=0.1)
        (question,) = ask["questions"]
        await respond(comms, world.human.token, ask["askId"], answer(question["questionId"], "1"))
        read = model.wait_for_turns(2)[1].tool_result(CALL)
    assert read == answered(f'"{DATABASE}"="SQLite"')
    found = await agents_receipt(comms, world, ask["askId"])
    assert (found["state"], found["payload"]) == ("DELIVERY_STATE_DELIVERED", read)
    shown = _text_of(screen)
    assert DATABASE in shown
    assert "Type your own answer" in shown


def _text_of(screen: Path) -> str:
    """What the terminal showed, its escape sequences taken out."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.read_text(errors="replace"))


async def test_the_tui_shows_why_compass_cannot_ask(
    tmp_path: Path,
    proxy: RefusingProxy,
    module_server: _server.RunningServer,
    world: _server.SeededWorld,
) -> None:
    """A token the server refuses (installed with --no-check): the TUI shows the command's
    line as a toast titled Compass, and its own prompt for the question."""
    with (
        ChatModel(ask_turns(QUESTIONS[0])) as model,
        opencode_tui(
            tmp=tmp_path,
            model=model,
            proxy_env=proxy.env(),
            server_url=module_server.url,
            channel_id=world.channel_id,
            token="cmp_" + "x" * 43,
            prompt=PROMPT,
            install=["--no-check"],
        ) as screen,
    ):

        async def shown() -> bool:
            return "cannot ask in Compass" in _text_of(screen)

        await eventually(shown, "the toast", within=90, every=0.1)
    text = " ".join(_text_of(screen).replace("┃", " ").split())
    assert (
        "Compass compass opencode ask: cannot ask in Compass: the server did not accept the" in text
    )
    assert "Type your own answer" in text


async def test_a_command_that_cannot_ask_leaves_opencodes_own_prompt(
    opencode: Any, world: _server.SeededWorld, comms: httpx.AsyncClient
) -> None:
    """A token the server refuses (installed with --no-check): the plugin's command says why
    in one line, which the plugin writes to OpenCode's log; the question stays OpenCode's."""
    with opencode(
        ask_turns(QUESTIONS[0]), token="cmp_" + "x" * 43, install=["--no-check"]
    ) as served:
        served.prompt(served.session(), PROMPT)
        problem = (
            "compass opencode ask: cannot ask in Compass: the server did not accept the token "
            "(unknown, or its account is disabled)"
        )

        async def logged() -> bool:
            return problem in served.log()

        await eventually(logged, "the plugin's log line", within=60, every=0.1)
        (pending,) = served.questions()
        assert pending["tool"]["callID"] == CALL
        assert len(served.model.turns) == 1
    assert await messages(comms, world.human.token, world.channel_id) == []
