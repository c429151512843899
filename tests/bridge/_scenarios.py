"""Scenarios shared by the end-to-end bridge tests: the runtime's gallery ask, answered."""

from __future__ import annotations

from typing import Any

from tests.bridge import _events as ev
from tests.bridge.omp import _recorded

INTRO = "Before I scaffold the service I need two decisions from you."

GALLERY_REPLY = ev.reply(
    "req-1",
    {"id": "db", "selectedOptions": ["Postgres"]},
    {
        "id": "features",
        "selectedOptions": ["Email + password", "OAuth (Google, GitHub)"],
        "customInput": "Passkeys too",
    },
)
GALLERY_ANSWERS = [
    {"questionId": "db", "chosenOptionIds": ["0"]},
    {"questionId": "features", "chosenOptionIds": ["0", "1"], "customText": "Passkeys too"},
]


def one_ask_script() -> list[dict[str, Any]]:
    questions = ev.gallery_questions()
    return [
        *ev.emit([{"type": "agent_start"}, {"type": "turn_start"}]),
        *ev.emit(ev.user_prompt("m-user", "Set up the new accounts service.")),
        *ev.emit(ev.assistant_message("m-1", INTRO, asks=[("call-ask-1", questions)])),
        # The runtime sends `method: "ask"` only to a host that opted in; like the real
        # runtime's dialogs, a few ms before the call's tool_execution_start.
        {"await_command": "set_ask_dialog"},
        *ev.emit([ev.ask_request("req-1", questions), ev.ask_start("call-ask-1", questions)]),
        {"expect_replies": [GALLERY_REPLY]},
        *ev.emit(ev.ask_end("call-ask-1", GALLERY_REPLY, questions)),
        *ev.emit([{"type": "turn_end"}, {"type": "agent_end"}]),
    ]


DEPLOY_REPLY_FIELDS = [
    {"id": "region", "selectedOptions": ["us-east-1"]},
    {"id": "name", "selectedOptions": [], "customInput": "accounts-api"},
]
DEPLOY_ANSWERS = [
    {"questionId": "region", "chosenOptionIds": ["1"]},
    {"questionId": "name", "customText": "accounts-api"},
]


def recorded_script(name: str) -> dict[str, Any]:
    """A fake-runtime script replaying a recording of the real runtime (18.2.3): its events
    and dialogs in their recorded order, each reply expected before the next dialog."""
    recording = _recorded.load(name)
    steps: list[dict[str, Any]] = [{"await_command": "set_ask_dialog"}, {"await_command": "prompt"}]
    expected: list[dict[str, Any]] = []
    for side, frame in recording.lines:
        kind = frame.get("type")
        if side == "host":
            if kind == "extension_ui_response":
                expected.append(frame)
            continue
        if kind in {"ready", "response"}:  # the fake runtime answers commands itself
            continue
        dialog = kind == "extension_ui_request" and frame.get("method") in {"select", "editor"}
        if expected and (dialog or kind == "tool_execution_end"):
            steps.append({"expect_replies": expected})
            expected = []
        steps.append({"emit": frame})
    if expected:
        steps.append({"expect_replies": expected})
    return {"knows_set_ask_dialog": False, "steps": steps}
