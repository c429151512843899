"""Scripted model servers on 127.0.0.1 for the agents: the Anthropic Messages API (Claude
Code, `ANTHROPIC_BASE_URL`), the OpenAI Responses API (Codex, a `wire_api = "responses"`
provider), both streaming SSE, the Gemini API's generateContent / streamGenerateContent (Gemini
CLI, `GOOGLE_GEMINI_BASE_URL`), and OpenAI chat completions streamed or not (Qwen Code,
OpenCode, Copilot CLI, Cline: `ChatModel`, which unlike model_server.ScriptedModelServer tells
an agent's side calls, e.g. OpenCode's title request, from its main loop).

Each answers the agent's main-loop request N with scripted turn N (`Turn` and `ToolCall` of
model_server.py: text, tool calls, or both) and records every request, so a test reads back
exactly what the model was sent: `tool_result(call_id)` is the tool result text of a call.
A request that is not the main loop's (Claude Code's side calls: titles, summaries, quota
probes; they carry no tools) is recorded and answered with a short text, never a turn.

Usage:
    with AnthropicModel([Turn.call("AskUserQuestion", args, "toolu_1"), Turn.say("ok")]) as m:
        env["ANTHROPIC_BASE_URL"] = m.base_url
        ...
        m.wait_for_turns(2)[1].tool_result("toolu_1")  # what the model read
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from tests.realagent.loopback_http import LoopbackHTTPServer
from tests.realagent.model_server import EXHAUSTED_TEXT, ToolCall, Turn

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "AnthropicModel",
    "ChatModel",
    "GeminiModel",
    "ModelRequest",
    "ResponsesModel",
    "ScriptedWire",
]

SIDE_TEXT = "ok"
"""The answer to a request that is not the main loop's."""


@dataclass(frozen=True)
class ModelRequest:
    """A request the server received, with the time it arrived (`time.monotonic()`)."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float
    turn: Turn | None
    """The scripted turn answered (None: a side request, or the script was used up)."""
    main: bool
    """A main-loop request (it offered tools)."""

    def tool_result(self, call_id: str) -> str:
        """The text of the tool result answering `call_id` in this request."""
        for message in self.body.get("messages") or ():
            content = message.get("content")
            if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
                return _text_of(content)
            if message.get("role") != "user" or not isinstance(content, list):
                continue
            for part in content:
                if part.get("type") == "tool_result" and part.get("tool_use_id") == call_id:
                    return _text_of(part.get("content"))
        for item in self.body.get("input") or ():
            if item.get("type") == "function_call_output" and item.get("call_id") == call_id:
                return _text_of(item.get("output"))
        for content in self.body.get("contents") or ():
            for part in content.get("parts") or ():
                response = part.get("functionResponse")
                if isinstance(response, dict) and response.get("id") == call_id:
                    return _text_of((response.get("response") or {}).get("output"))
        raise LookupError(f"no tool result for {call_id} in the request")

    def tool_search_output(self, call_id: str) -> list[dict[str, Any]]:
        """The tools a Responses-API client's own tool search handed back for `call_id` (its
        `tool_search_output` item in this request)."""
        for item in self.body.get("input") or ():
            if item.get("type") == "tool_search_output" and item.get("call_id") == call_id:
                return list(item.get("tools") or ())
        raise LookupError(f"no tool search output for {call_id} in the request")

    def tool_names(self) -> list[str]:
        names: list[str] = []
        for tool in self.body.get("tools") or ():
            name = tool.get("name") or tool.get("function", {}).get("name")
            if isinstance(name, str):
                names.append(name)
            # Gemini's tools are lists of function declarations.
            names.extend(d.get("name") for d in tool.get("functionDeclarations") or ())
        return names


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content  # pyright: ignore[reportUnknownVariableType]
            if isinstance(part, dict) and part.get("type") in {"text", "input_text"}  # pyright: ignore[reportUnknownMemberType]
        )
    return ""


class ScriptedWire(LoopbackHTTPServer):
    """The shared part: an HTTP server on 127.0.0.1 answering POSTs to `paths` with the next
    turn as SSE (`_events`), recording every request. Subclasses say what a main-loop request
    is and how a turn is streamed."""

    paths: tuple[str, ...] = ()

    def __init__(self, turns: Sequence[Turn], *, model: str) -> None:
        self.model = model
        self._turns = list(turns)
        self._next = 0
        self._lock = threading.Condition()
        self.requests: list[ModelRequest] = []
        super().__init__(_handler_for(self), name=type(self).__name__)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *turns: Turn) -> None:
        """Replace what is left of the script (a module's agent serves several tests)."""
        with self._lock:
            self._turns = list(turns)
            self._next = 0

    @property
    def turns(self) -> list[ModelRequest]:
        """The main-loop requests, in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.main]

    def wait_for_turns(self, count: int, timeout: float = 60.0) -> list[ModelRequest]:
        """Block until at least `count` main-loop requests arrived (counted from the start)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                done = [r for r in self.requests if r.main]
                if len(done) >= count:
                    return done
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{len(done)} of {count} model requests after {timeout}s")
                self._lock.wait(remaining)

    def is_main(self, body: Mapping[str, Any]) -> bool:
        """A main-loop request offers tools; the agents' side calls do not."""
        return bool(body.get("tools"))

    def serves(self, route: str) -> bool:
        """Whether POSTs to `route` (the path without its query) are model requests."""
        return route in self.paths

    def streams(self, route: str, body: Mapping[str, Any]) -> bool:
        """Whether a POST to `route` with `body` is answered with SSE (`events`), else with one
        JSON body (`reply`)."""
        del route, body
        return True

    def reply(self, turn: Turn) -> dict[str, Any]:
        """The JSON body answering `turn` on a route that does not stream."""
        raise NotImplementedError

    def listing(self) -> dict[str, Any] | None:
        """The body of `GET .../models`, or None (404)."""
        return None

    def _take(self, record: dict[str, Any], main: bool) -> Turn | None:
        with self._lock:
            turn = None
            if main and self._next < len(self._turns):
                turn = self._turns[self._next]
                self._next += 1
            self.requests.append(ModelRequest(turn=turn, main=main, **record))
            self._lock.notify_all()
            return turn

    def events(self, turn: Turn) -> Sequence[tuple[str, dict[str, Any] | str]]:
        """The SSE events (name, data) streaming `turn`; a str data is sent as it is (chat
        completions' closing `[DONE]`)."""
        raise NotImplementedError


def _handler_for(server: ScriptedWire) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # everything is in `server.requests`

        def _record(self, body: dict[str, Any]) -> dict[str, Any]:
            return {
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body,
                "at": time.monotonic(),
            }

        def _json(self, status: int, payload: Mapping[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            server._take(self._record({}), False)  # pyright: ignore[reportPrivateUsage]
            listing = server.listing()
            if listing is not None and self.path.split("?", 1)[0].endswith("/models"):
                self._json(200, listing)
                return
            self._json(404, {"error": {"type": "not_found_error", "message": "no route"}})

        do_HEAD = do_GET  # noqa: N815 - BaseHTTPRequestHandler's name

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                parsed: object = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                parsed = None
            body: dict[str, Any] = (
                parsed  # pyright: ignore[reportAssignmentType]
                if isinstance(parsed, dict)
                else {"_raw": raw.decode(errors="replace")}
            )
            route = self.path.split("?", 1)[0]
            if not server.serves(route):
                server._take(self._record(body), False)  # pyright: ignore[reportPrivateUsage]
                self._json(404, {"error": {"type": "not_found_error", "message": "no route"}})
                return
            main = server.is_main(body)
            turn = server._take(self._record(body), main)  # pyright: ignore[reportPrivateUsage]
            if turn is None:
                turn = Turn.say(EXHAUSTED_TEXT if main else SIDE_TEXT)
            if not server.streams(route, body):
                self._json(200, server.reply(turn))
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            try:
                for name, data in server.events(turn):
                    # An event without a name is a bare `data:` line (Gemini's SSE).
                    named = f"event: {name}\n" if name else ""
                    sent = data if isinstance(data, str) else json.dumps(data)
                    self.wfile.write(f"{named}data: {sent}\n\n".encode())
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the agent went away mid-answer; the request is recorded

    return Handler


class AnthropicModel(ScriptedWire):
    """`POST /v1/messages` (Claude Code appends `?beta=true`), streamed as Anthropic SSE."""

    paths = ("/v1/messages",)

    def __init__(self, turns: Sequence[Turn], *, model: str = "claude-sonnet-4-5") -> None:
        super().__init__(turns, model=model)

    def is_main(self, body: Mapping[str, Any]) -> bool:
        """With tools, and not Claude Code's prompt-suggestion request after a turn (it sends
        the main loop's tools along, and its last user message opens "[SUGGESTION MODE")."""
        messages = body.get("messages") or [{}]
        last = _text_of(messages[-1].get("content"))
        return super().is_main(body) and not last.startswith("[SUGGESTION MODE")

    def events(self, turn: Turn) -> list[tuple[str, dict[str, Any]]]:
        message = {
            "id": f"msg_{uuid.uuid4().hex[:16]}",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": message})
        ]
        blocks: list[tuple[dict[str, Any], dict[str, Any]]] = []
        if turn.text:
            blocks.append(
                (
                    {"type": "text", "text": ""},
                    {"type": "text_delta", "text": turn.text},
                )
            )
        for call in turn.tool_calls:
            call_id = call.call_id or f"toolu_{uuid.uuid4().hex[:16]}"
            blocks.append(
                (
                    {"type": "tool_use", "id": call_id, "name": call.name, "input": {}},
                    {"type": "input_json_delta", "partial_json": json.dumps(call.arguments)},
                )
            )
        for index, (start, delta) in enumerate(blocks):
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": start},
                )
            )
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        stop = "tool_use" if turn.tool_calls else "end_turn"
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        return events


class ResponsesModel(ScriptedWire):
    """`POST /v1/responses`, streamed as OpenAI Responses SSE (what Codex reads).

    A call named `tool_search` is streamed as a `tool_search_call` item executed by the
    client (`execution: "client"`, the arguments an object), the tool a Responses request
    offers as `{"type": "tool_search", "execution": "client"}`: Codex answers it with a
    `tool_search_output` item in its next request. A call with a `namespace` carries it (how
    the model calls a tool that search returned inside a namespace)."""

    paths = ("/v1/responses",)

    def __init__(self, turns: Sequence[Turn], *, model: str = "gpt-5.1-codex") -> None:
        super().__init__(turns, model=model)

    def events(self, turn: Turn) -> list[tuple[str, dict[str, Any]]]:
        response_id = f"resp_{uuid.uuid4().hex[:16]}"
        items: list[dict[str, Any]] = []
        if turn.text:
            items.append(
                {
                    "type": "message",
                    "id": f"msg_{uuid.uuid4().hex[:16]}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
                }
            )
        items.extend(_responses_call(call) for call in turn.tool_calls)
        base = {"id": response_id, "object": "response", "model": self.model}
        events: list[tuple[str, dict[str, Any]]] = [
            (
                "response.created",
                {"type": "response.created", "response": {**base, "status": "in_progress"}},
            )
        ]
        for index, item in enumerate(items):
            events.append(
                (
                    "response.output_item.added",
                    {"type": "response.output_item.added", "output_index": index, "item": item},
                )
            )
            if item["type"] == "message":
                events.append(
                    (
                        "response.output_text.delta",
                        {
                            "type": "response.output_text.delta",
                            "item_id": item["id"],
                            "output_index": index,
                            "content_index": 0,
                            "delta": turn.text,
                        },
                    )
                )
            events.append(
                (
                    "response.output_item.done",
                    {"type": "response.output_item.done", "output_index": index, "item": item},
                )
            )
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        events.append(
            (
                "response.completed",
                {
                    "type": "response.completed",
                    "response": {**base, "status": "completed", "output": items, "usage": usage},
                },
            )
        )
        return events


def _responses_call(call: ToolCall) -> dict[str, Any]:
    """The output item of one scripted call (see ResponsesModel)."""
    call_id = call.call_id or f"call_{uuid.uuid4().hex[:12]}"
    if call.name == "tool_search":
        return {
            "type": "tool_search_call",
            "id": f"tsc_{uuid.uuid4().hex[:16]}",
            "call_id": call_id,
            "execution": "client",
            "arguments": dict(call.arguments),
            "status": "completed",
        }
    item: dict[str, Any] = {
        "type": "function_call",
        "id": f"fc_{uuid.uuid4().hex[:16]}",
        "call_id": call_id,
        "name": call.name,
        "arguments": json.dumps(call.arguments),
        "status": "completed",
    }
    if call.namespace:
        item["namespace"] = call.namespace
    return item


class GeminiModel(ScriptedWire):
    """`POST /v1beta/models/<model>:streamGenerateContent?alt=sse` (bare `data:` SSE of
    GenerateContentResponse chunks) and `:generateContent` (one JSON body), as Gemini CLI
    calls them with `GOOGLE_GEMINI_BASE_URL` and a Gemini API key."""

    def __init__(self, turns: Sequence[Turn], *, model: str = "gemini-2.5-pro") -> None:
        super().__init__(turns, model=model)

    def serves(self, route: str) -> bool:
        return route.startswith("/v1beta/models/") and route.endswith(
            (":streamGenerateContent", ":generateContent")
        )

    def streams(self, route: str, body: Mapping[str, Any]) -> bool:
        del body
        return route.endswith(":streamGenerateContent")

    def is_main(self, body: Mapping[str, Any]) -> bool:
        return any(tool.get("functionDeclarations") for tool in body.get("tools") or ())

    def reply(self, turn: Turn) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        if turn.text:
            parts.append({"text": turn.text})
        parts.extend(
            {
                "functionCall": {
                    "id": call.call_id or f"call_{uuid.uuid4().hex[:12]}",
                    "name": call.name,
                    "args": dict(call.arguments),
                }
            }
            for call in turn.tool_calls
        )
        return {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 5,
                "totalTokenCount": 15,
            },
            "modelVersion": self.model,
        }

    def events(self, turn: Turn) -> list[tuple[str, dict[str, Any]]]:
        return [("", self.reply(turn))]


class ChatModel(ScriptedWire):
    """`POST /v1/chat/completions`, OpenAI chat completions: streamed as `chat.completion.chunk`
    SSE ending in `[DONE]` when the request says `stream`, else one `chat.completion` body.
    A main-loop request offers tools; a side call (OpenCode's title, a compression) is
    answered with a short text and takes no turn. `GET /v1/models` lists the model."""

    paths = ("/v1/chat/completions", "/chat/completions")

    def __init__(self, turns: Sequence[Turn], *, model: str = "scripted-model") -> None:
        super().__init__(turns, model=model)

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (the clients append `/chat/completions`)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def streams(self, route: str, body: Mapping[str, Any]) -> bool:
        del route
        return bool(body.get("stream"))

    def listing(self) -> dict[str, Any] | None:
        return {"object": "list", "data": [{"id": self.model, "object": "model"}]}

    def _calls(self, turn: Turn) -> list[dict[str, Any]]:
        return [
            {
                "id": call.call_id or f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in turn.tool_calls
        ]

    def reply(self, turn: Turn) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if turn.tool_calls:
            message["tool_calls"] = self._calls(turn)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if turn.tool_calls else "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    def events(self, turn: Turn) -> list[tuple[str, dict[str, Any] | str]]:
        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self.model,
        }
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": turn.text or ""}]
        deltas.extend(
            {"tool_calls": [{"index": index, **call}]}
            for index, call in enumerate(self._calls(turn))
        )
        finish = "tool_calls" if turn.tool_calls else "stop"
        chunks: list[dict[str, Any]] = [
            {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            for delta in deltas
        ]
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        chunks.append({**base, "choices": [], "usage": usage})
        return [*(("", chunk) for chunk in chunks), ("", "[DONE]")]
