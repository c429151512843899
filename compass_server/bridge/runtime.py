"""The agent runtime's RPC frames the bridge reads and writes, beyond what EventMapper maps.

Pure: decoded JSON in, small values out; nothing here raises on odd input.

What the runtime (oh-my-pi's RPC mode) sends on its stdout, as the bridge reads it:

- `{"type": "extension_ui_request", "id": R, "method": "ask", "questions": [...], "timeout"?}`:
  the native ask tool waits for the host's answer to request R. Each question is the tool's
  own `{id, question, options, ...}`. Being liberal, the bridge also takes the questions from
  `params.questions` or `args.questions`, and a `toolCallId` (top level or in `params`) when a
  runtime sends one.
- `{"type": "extension_ui_request", "id": C, "method": "cancel", "targetId": R}`: the runtime
  stopped waiting for R (aborted, or timed out). `{"type": "extension_ui_cancel", "id": R}`
  (or with `targetId`) is taken to mean the same.
- other dialog methods (`select`, `confirm`, `input`, `editor`) wait for an answer the bridge
  cannot give; fire-and-forget ones (`notify`, `setStatus`, ...) need none.
- `{"type": "response", "command": "set_ask_dialog", "success": ...}` acknowledges the opt-in.

What the bridge writes to the runtime's stdin, one JSON object per line: the opt-in command
`{"type": "set_ask_dialog", "enabled": true}` (the runtime sends `method: "ask"` requests only
after it) and `extension_ui_response` replies (see answers.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, TypeAlias, cast

__all__ = [
    "ASK_DIALOG_COMMAND",
    "AskRequest",
    "CancelRequest",
    "DialogRequest",
    "NoticeRequest",
    "UIRequest",
    "UnreadableRequest",
    "as_object",
    "parse_ui_request",
]

ASK_TOOL: Final = "ask"
ASK_DIALOG_COMMAND_ID: Final = "compass-bridge-ask-dialog"
ASK_DIALOG_COMMAND: Final[dict[str, object]] = {
    "id": ASK_DIALOG_COMMAND_ID,
    "type": "set_ask_dialog",
    "enabled": True,
}
"""Sent to the runtime first: without it, the runtime asks through select/editor dialogs."""

#: Dialogs that block the runtime until the host answers; the bridge answers them cancelled.
DIALOG_METHODS: Final = frozenset({"select", "confirm", "input", "editor"})
#: UI requests that expect no answer.
NOTICE_METHODS: Final = frozenset(
    {"notify", "setStatus", "setWidget", "setTitle", "set_editor_text", "open_url"}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class AskRequest:
    """The runtime waits for the answer to one ask call."""

    request_id: str
    question_ids: tuple[str, ...]
    question_texts: tuple[str, ...]
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelRequest:
    """The runtime no longer waits for request `target_id`."""

    target_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DialogRequest:
    """A dialog the bridge cannot present; the runtime waits for an answer to it."""

    request_id: str
    method: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NoticeRequest:
    """A UI request that needs no answer (`notify`, `setStatus`, ...)."""

    method: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UnreadableRequest:
    """A UI request the bridge cannot make sense of; `reason` says why."""

    method: str
    reason: str
    request_id: str | None = None


UIRequest: TypeAlias = (
    AskRequest | CancelRequest | DialogRequest | NoticeRequest | UnreadableRequest
)


def as_object(value: object) -> dict[str, object] | None:
    """`value` as a JSON object, or None."""
    if not isinstance(value, dict):
        return None
    # The one cast at the JSON boundary: json.loads makes str keys, values stay `object`.
    return cast("dict[str, object]", value)


def parse_ui_request(event: dict[str, object]) -> UIRequest:
    """Classify an `extension_ui_request` (or `extension_ui_cancel`) event."""
    request_id = event.get("id")
    rid = request_id if isinstance(request_id, str) and request_id else None
    if event.get("type") == "extension_ui_cancel":
        target = _target(event) or rid
        if target is None:
            return UnreadableRequest(method="cancel", reason="no id to cancel")
        return CancelRequest(target_id=target)
    method = event.get("method")
    if not isinstance(method, str):
        return UnreadableRequest(method="?", reason="method is not a string", request_id=rid)
    if method == "cancel":
        target = _target(event)
        if target is None:
            return UnreadableRequest(method=method, reason="targetId is missing", request_id=rid)
        return CancelRequest(target_id=target)
    if method in NOTICE_METHODS:
        return NoticeRequest(method=method)
    if rid is None:
        return UnreadableRequest(method=method, reason="id is missing or not a string")
    if method in DIALOG_METHODS:
        return DialogRequest(request_id=rid, method=method)
    if method != ASK_TOOL:
        return UnreadableRequest(method=method, reason="unknown method", request_id=rid)
    return _ask_request(event, rid)


def _ask_request(event: dict[str, object], request_id: str) -> UIRequest:
    params = as_object(event.get("params")) or {}
    questions = event.get("questions")
    if questions is None:
        questions = params.get("questions")
    if questions is None:
        questions = (as_object(event.get("args")) or {}).get("questions")
    if not isinstance(questions, list) or not questions:
        return UnreadableRequest(
            method=ASK_TOOL, reason="questions is missing or empty", request_id=request_id
        )
    ids: list[str] = []
    texts: list[str] = []
    for index, item in enumerate(cast("list[object]", questions)):
        question = as_object(item)
        qid = question.get("id") if question is not None else None
        if question is None or not isinstance(qid, str):
            return UnreadableRequest(
                method=ASK_TOOL,
                reason=f"questions[{index}].id is missing or not a string",
                request_id=request_id,
            )
        text = question.get("question")
        ids.append(qid)
        texts.append(text if isinstance(text, str) else "")
    call_id = event.get("toolCallId", params.get("toolCallId"))
    return AskRequest(
        request_id=request_id,
        question_ids=tuple(ids),
        question_texts=tuple(texts),
        tool_call_id=call_id if isinstance(call_id, str) and call_id else None,
    )


def _target(event: dict[str, object]) -> str | None:
    target = event.get("targetId")
    return target if isinstance(target, str) and target else None
