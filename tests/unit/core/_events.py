"""Builders for agent runtime events, and loaders for the samples in tests/fixtures/events."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "events"

SESSION = "test"
"""The fixed session prefix tests give the mapper, so numbered client_message_ids are known."""


def gallery() -> dict[str, Any]:
    """The runtime's own 2-question ask example (copied from ../shared/spec)."""
    return json.loads((FIXTURES / "gallery-ask-fixture.json").read_text(encoding="utf-8"))


def gallery_args() -> dict[str, Any]:
    return gallery()["args"]


def load_event(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def load_jsonl(name: str) -> list[object]:
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def assistant_start(message_id: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "message_start",
        "message": {"role": "assistant", "content": [], "stopReason": "stop"},
    }
    if message_id is not None:
        event["messageId"] = message_id
    return event


def assistant_end(*texts: str, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text} for text in texts]
    content.extend(tool_calls or [])
    return {"type": "message_end", "message": {"role": "assistant", "content": content}}


def text_update(delta: str) -> dict[str, Any]:
    partial = {"role": "assistant", "content": [{"type": "text", "text": delta}]}
    return {
        "type": "message_update",
        "message": partial,
        "assistantMessageEvent": {
            "type": "text_delta",
            "contentIndex": 0,
            "delta": delta,
            "partial": partial,
        },
    }


def role_message(kind: str, role: str) -> dict[str, Any]:
    return {"type": kind, "message": {"role": role, "content": [{"type": "text", "text": "hi"}]}}


def ask_start(args: object, tool_call_id: str = "call_1") -> dict[str, Any]:
    return {
        "type": "tool_execution_start",
        "toolCallId": tool_call_id,
        "toolName": "ask",
        "args": copy.deepcopy(args),
    }


def ask_update(args: object, tool_call_id: str = "call_1") -> dict[str, Any]:
    return {
        "type": "tool_execution_update",
        "toolCallId": tool_call_id,
        "toolName": "ask",
        "args": copy.deepcopy(args),
        "partialResult": {"content": [{"type": "text", "text": "waiting"}], "details": {}},
    }


def ask_end(
    *, is_error: object = False, tool_call_id: str = "call_1", text: str = "done"
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "tool_execution_end",
        "toolCallId": tool_call_id,
        "toolName": "ask",
        "result": {"content": [{"type": "text", "text": text}], "details": {}},
    }
    if is_error is not None:
        event["isError"] = is_error
    return event


def question(
    qid: str = "q",
    *labels: str,
    **extra: object,
) -> dict[str, Any]:
    """A well-formed question with the given option labels (and any extra keys)."""
    item: dict[str, Any] = {
        "id": qid,
        "question": f"Question {qid}?",
        "options": [{"label": label} for label in labels],
    }
    item.update(extra)
    return item
