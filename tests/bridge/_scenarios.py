"""Scenarios shared by the end-to-end bridge tests: the runtime's gallery ask, answered."""

from __future__ import annotations

from typing import Any

from tests.bridge import _events as ev

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
        *ev.emit([ev.ask_start("call-ask-1", questions)]),
        # The runtime sends `method: "ask"` only to a host that opted in.
        {"await_command": "set_ask_dialog"},
        *ev.emit([ev.ask_request("req-1", questions)]),
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
