"""Realistic runtime event streams for the bridge tests, in oh-my-pi's RPC-mode shapes.

Message lifecycle frames carry a `messageId` (RPC mode stamps them), an assistant message
streams its text in `message_update`s, its `message_end` lists its tool calls, each tool call
runs as tool_execution_start -> tool_execution_end, and a `toolResult` message follows. An
ask call's first `extension_ui_request` comes a few ms BEFORE its tool_execution_start (the
real runtime, tests/bridge/omp/recorded/). The 2-question ask is the runtime's own gallery
example. `ask_request` is the NEWER protocol's one-request ask (after `set_ask_dialog`); the
published 18.2.3 asks through select/editor dialogs instead (_omp_ask.py, _recorded.py).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "events"
FAKE_RUNTIME = Path(__file__).resolve().parent / "omp" / "fake_runtime.py"

Event = dict[str, Any]


def gallery_questions() -> list[dict[str, Any]]:
    doc = json.loads((FIXTURES / "gallery-ask-fixture.json").read_text(encoding="utf-8"))
    return doc["args"]["questions"]


def deploy_questions() -> list[dict[str, Any]]:
    return [
        {
            "id": "region",
            "header": "Region",
            "question": "Where should the service run?",
            "options": [{"label": "eu-west-1"}, {"label": "us-east-1"}],
            "recommended": 0,
        },
        {"id": "name", "question": "What should the service be called?", "options": []},
    ]


def _assistant(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "stopReason": stop,
        "timestamp": 1764683400900,
    }


def assistant_message(
    message_id: str, text: str, asks: list[tuple[str, list[dict[str, Any]]]] | None = None
) -> list[Event]:
    """message_start, the text streamed in three updates, message_end announcing the asks."""
    calls = [
        {"type": "toolCall", "id": call_id, "name": "ask", "arguments": {"questions": qs}}
        for call_id, qs in asks or []
    ]
    events: list[Event] = [
        {"type": "message_start", "messageId": message_id, "message": _assistant([], "stop")}
    ]
    cut = [len(text) // 3, 2 * len(text) // 3, len(text)]
    previous = 0
    for end in cut:
        partial = _assistant([{"type": "text", "text": text[:end]}], "stop")
        events.append(
            {
                "type": "message_update",
                "messageId": message_id,
                "message": partial,
                "assistantMessageEvent": {
                    "type": "text_delta",
                    "contentIndex": 0,
                    "delta": text[previous:end],
                    "partial": partial,
                },
            }
        )
        previous = end
    final = _assistant([{"type": "text", "text": text}, *calls], "toolUse" if calls else "stop")
    events.append({"type": "message_end", "messageId": message_id, "message": final})
    return events


def user_prompt(message_id: str, text: str) -> list[Event]:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}
    return [
        {"type": "message_start", "messageId": message_id, "message": message},
        {"type": "message_end", "messageId": message_id, "message": message},
    ]


def ask_start(call_id: str, questions: list[dict[str, Any]]) -> Event:
    return {
        "type": "tool_execution_start",
        "toolCallId": call_id,
        "toolName": "ask",
        "args": {"questions": copy.deepcopy(questions)},
    }


def ask_request(request_id: str, questions: list[dict[str, Any]]) -> Event:
    """What a runtime that accepted set_ask_dialog sends its host when the ask tool runs
    (newer sources than 18.2.3)."""
    return {
        "type": "extension_ui_request",
        "id": request_id,
        "method": "ask",
        "questions": copy.deepcopy(questions),
    }


def ask_end(call_id: str, reply: dict[str, Any], questions: list[dict[str, Any]]) -> list[Event]:
    """tool_execution_end with the label-keyed results, and the toolResult message."""
    by_id = {answer["id"]: answer for answer in reply["answers"]}
    results = [
        {
            "id": q["id"],
            "question": q["question"],
            "options": [o["label"] for o in q["options"]],
            "multi": bool(q.get("multi", False)),
            "selectedOptions": by_id[q["id"]]["selectedOptions"],
            **(
                {"customInput": by_id[q["id"]]["customInput"]}
                if "customInput" in by_id[q["id"]]
                else {}
            ),
        }
        for q in questions
    ]
    summary = "\n".join(f"{r['id']}: {', '.join(r['selectedOptions'])}" for r in results)
    result = {"content": [{"type": "text", "text": summary}], "details": {"results": results}}
    tool_message = {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "ask",
        "content": result["content"],
        "isError": False,
    }
    return [
        {
            "type": "tool_execution_end",
            "toolCallId": call_id,
            "toolName": "ask",
            "result": result,
            "isError": False,
        },
        {"type": "message_start", "messageId": f"{call_id}-result", "message": tool_message},
        {"type": "message_end", "messageId": f"{call_id}-result", "message": tool_message},
    ]


def reply(request_id: str, *answers: dict[str, Any]) -> dict[str, Any]:
    return {"type": "extension_ui_response", "id": request_id, "answers": list(answers)}


def emit(events: list[Event]) -> list[dict[str, Any]]:
    return [{"emit": event} for event in events]
