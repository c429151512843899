"""ACP session updates -> runtime events (acp_events.py), and `--protocol acp` usage."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from acp.schema import SessionNotification

from compass_bridge.acp.events import AcpTranslator
from compass_core import ConversationUpdated, EventMapper
from compass_server import cli

if TYPE_CHECKING:
    from pathlib import Path

ARGS = {"questions": [{"id": "q", "question": "Which?", "options": [{"label": "A"}]}]}


def update(**fields: Any) -> object:
    """One `session/update` as the ACP library parses it from the agent's JSON."""
    return SessionNotification.model_validate({"sessionId": "s", "update": fields}).update


def chunk(text: str, message_id: str | None = "m1") -> object:
    fields: dict[str, Any] = {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text},
    }
    if message_id is not None:
        fields["messageId"] = message_id
    return update(**fields)


def ask_call(call_id: str = "c1", title: str = "ask", raw: object = ARGS) -> object:
    return update(
        sessionUpdate="tool_call",
        toolCallId=call_id,
        title=title,
        kind="other",
        status="pending",
        rawInput=raw,
    )


def frames(events: list[dict[str, object]]) -> list[ConversationUpdated]:
    mapper = EventMapper(session="t")
    out = [o for e in events for o in mapper.map(e)]
    assert all(isinstance(o, ConversationUpdated) for o in out), out
    return [o for o in out if isinstance(o, ConversationUpdated)]


def test_text_settles_before_the_ask_and_both_land_in_one_message() -> None:
    t = AcpTranslator()
    events = [
        *t.translate(chunk("Two ")),
        *t.translate(chunk("questions.")),
        *t.translate(ask_call()),
    ]
    assert [e["type"] for e in events] == ["message_start", "message_end", "tool_execution_start"]
    text_frame, ask_frame = frames(events)
    assert text_frame.value.client_message_id == ask_frame.value.client_message_id == "m1"
    blocks = ask_frame.value.blocks
    assert blocks[0].text.text == "Two questions."
    assert blocks[1].ask.questions[0].question_id == "q"
    assert ask_frame.tool_call_id == "c1"


def test_a_new_message_id_starts_a_new_message_and_the_turn_end_settles_it() -> None:
    t = AcpTranslator()
    events = [*t.translate(chunk("one", "m1")), *t.translate(chunk("two", "m2")), *t.end_turn()]
    out = frames(events)
    assert [(f.value.client_message_id, f.value.blocks[0].text.text) for f in out] == [
        ("m1", "one"),
        ("m2", "two"),
    ]
    assert t.end_turn() == []  # nothing new to settle


def test_without_message_ids_a_tool_call_ends_the_message_before_it() -> None:
    """Qwen Code sends no message ids: the text after a tool call is the model's next reply,
    a message of its own, not more of the lead-in (which stays as it was posted). Its empty
    chunks (usage figures) add nothing."""
    t = AcpTranslator()
    bash = update(sessionUpdate="tool_call", toolCallId="b", title="Shell", rawInput={})
    events = [
        *t.translate(chunk("I will look.", None)),
        *t.translate(bash),
        *t.translate(chunk("", None)),
        *t.translate(chunk("Done.", None)),
        *t.end_turn(),
    ]
    out = frames(events)
    assert [f.value.blocks[0].text.text for f in out] == ["I will look.", "Done."]
    assert out[0].value.client_message_id != out[1].value.client_message_id


def test_with_message_ids_text_after_a_tool_call_stays_in_its_message() -> None:
    t = AcpTranslator()
    bash = update(sessionUpdate="tool_call", toolCallId="b", title="bash", rawInput={})
    events = [
        *t.translate(chunk("one ")),
        *t.translate(bash),
        *t.translate(chunk("two")),
        *t.end_turn(),
    ]
    out = frames(events)
    assert [(f.value.client_message_id, f.value.blocks[0].text.text) for f in out] == [
        ("m1", "one "),
        ("m1", "one two"),
    ]


def test_a_tool_call_without_text_opens_a_message_of_its_own() -> None:
    t = AcpTranslator()
    (ask_frame,) = frames(t.translate(ask_call()))
    assert len(ask_frame.value.blocks) == 1


@pytest.mark.parametrize(
    ("title", "raw", "is_ask"),
    [
        ("ask", ARGS, True),
        ("Pick a database", ARGS, True),  # a titled call (intent) whose input is an ask's
        ("bash", {"command": "ls"}, False),
        ("ask", None, True),  # the mapper refuses the input, counted
        # Claude Code's AskUserQuestion announced with its questions (claude-agent-acp's
        # ensureToolCallEmitted, when its permission callback beats the stream): no ids, no
        # Ask maps from them; its form is what is answered.
        (
            "Asking for your input",
            {"questions": [{"question": "Which?", "header": "DB", "multiSelect": False}]},
            False,
        ),
    ],
)
def test_which_tool_calls_are_asks(title: str, raw: object, is_ask: bool) -> None:
    t = AcpTranslator()
    events = t.translate(ask_call(title=title, raw=raw))
    assert any(e["type"] == "tool_execution_start" for e in events) is is_ask
    assert t.is_other_call("c1") is not is_ask


def test_only_a_finished_ask_call_ends() -> None:
    t = AcpTranslator()
    t.translate(ask_call("c1"))
    t.translate(
        update(sessionUpdate="tool_call", toolCallId="b", title="bash", rawInput={"command": "ls"})
    )
    assert (
        t.translate(update(sessionUpdate="tool_call_update", toolCallId="c1", status="in_progress"))
        == []
    )
    assert (
        t.translate(update(sessionUpdate="tool_call_update", toolCallId="b", status="completed"))
        == []
    )
    (end,) = t.translate(
        update(sessionUpdate="tool_call_update", toolCallId="c1", status="failed", rawOutput="x")
    )
    assert (end["type"], end["toolCallId"], end["isError"]) == ("tool_execution_end", "c1", True)
    assert (
        t.translate(update(sessionUpdate="tool_call_update", toolCallId="c1", status="completed"))
        == []
    )


def test_non_text_chunks_and_other_updates_are_ignored() -> None:
    t = AcpTranslator()
    image = update(
        sessionUpdate="agent_message_chunk",
        content={"type": "image", "data": "", "mimeType": "image/png"},
    )
    thought = update(sessionUpdate="agent_thought_chunk", content={"type": "text", "text": "hmm"})
    assert t.translate(image) == []
    assert t.translate(thought) == []
    assert t.end_turn() == []


def run_cli(*args: str) -> int:
    return cli.main(["agent-bridge", *args])


def test_acp_needs_a_command_and_a_prompt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = tmp_path / "t"
    token.write_text("tok")
    base = (
        "--server",
        "http://127.0.0.1:9/",
        "--channel",
        "ch",
        "--token-file",
        str(token),
        "--protocol",
        "acp",
    )
    assert run_cli(*base, "--", "agent") == 2
    assert "needs the agent's COMMAND and a prompt" in capsys.readouterr().err
    assert run_cli(*base, "--prompt", "hi") == 2
    assert run_cli(*base, "--prompt", "  ", "--", "agent") == 2
    assert "the prompt is empty" in capsys.readouterr().err
    assert run_cli(*base, "--prompt-file", str(tmp_path / "missing"), "--", "agent") == 2
    assert "cannot read prompt file" in capsys.readouterr().err
    (tmp_path / "bad").write_bytes(b"\xff\xfe")
    assert run_cli(*base, "--prompt-file", str(tmp_path / "bad"), "--", "agent") == 2
    assert "not UTF-8" in capsys.readouterr().err


def test_acp_agent_that_cannot_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    token = tmp_path / "t"
    token.write_text("tok")
    code = run_cli(
        "--server", "http://127.0.0.1:9/", "--channel", "ch", "--token-file", str(token),
        "--protocol", "acp", "--prompt", "hi", "--", str(tmp_path / "no-such-agent"),
    )  # fmt: skip
    assert code == 127
    assert "cannot start" in capsys.readouterr().err


def test_mode_and_config_options_are_acp_only_and_well_formed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = tmp_path / "t"
    token.write_text("tok")
    base = ("--server", "http://127.0.0.1:9/", "--channel", "ch", "--token-file", str(token))
    assert run_cli(*base, "--mode", "default", "--prompt", "hi", "--", "agent") == 2
    assert "--mode and --config-option need --protocol acp" in capsys.readouterr().err
    acp = (*base, "--protocol", "acp", "--prompt", "hi")
    assert run_cli(*acp, "--config-option", "plan", "--", "agent") == 2
    assert "--config-option must be ID=VALUE, got 'plan'" in capsys.readouterr().err
