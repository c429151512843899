"""A scripted OpenAI-compatible model server for driving the real omp runtime, plus helpers
to configure and launch `omp` (`@oh-my-pi/pi-coding-agent`, installed by scripts/ensure-omp)
against it with a throwaway HOME.

omp's `openai-completions` provider sends `POST {baseUrl}/chat/completions` with
`Authorization: Bearer <apiKey>`, `Accept: text/event-stream` and a body of `model`,
`messages` (system, user, assistant with `tool_calls`, `role: "tool"` with a string
`content` and `tool_call_id`), `tools`, `stream: true`, `stream_options.include_usage`,
`store: false` and `max_completion_tokens`. The server answers request N with turn N as
`chat.completion.chunk` SSE events (a finish_reason chunk, a usage-only chunk, `[DONE]`) and
records every request, so a test can read back what the model was sent, e.g. the
`role: "tool"` message carrying the ask tool's result.

Usage:
    with ScriptedModelServer([Turn.call("ask", args), Turn.say("done")]) as model:
        write_omp_config(home, model.base_url, ask_timeout=0)
        launch = omp_launch(ensure_omp(), "rpc-ui", home=home, workspace=ws,
                            proxy_port=model.port)
        proc = launch.popen(stderr=log_file)
        ...  # drive the JSON-lines protocol on proc.stdin / proc.stdout
        model.wait_for_completions(2)[1].tool_result_text()  # "User answers:\n..."
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import IO, TYPE_CHECKING, Any, Literal

from tests.realagent.installs import ensure_npm
from tests.realagent.loopback_http import LoopbackHTTPServer

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path


PROVIDER = "scripted"
"""Provider id written to models.yml."""
MODEL = "scripted-model"
"""Model id written to models.yml; omp selects it as `scripted/scripted-model`."""
EXHAUSTED_TEXT = "(the scripted model has no more turns)"
"""Text answered once the script is used up (the request is still recorded)."""


@dataclass(frozen=True)
class ToolCall:
    """One function call in an assistant turn; `arguments` is sent JSON-encoded."""

    name: str
    arguments: Mapping[str, Any]
    call_id: str = ""
    """`tool_calls[].id` (omp echoes it as `toolCallId`); empty means a generated one."""
    namespace: str = ""
    """The Responses API's `namespace` of a function call (wire_models.ResponsesModel only):
    Codex calls a deferred MCP tool found by its tool search as `name` in `mcp__<server>`."""


@dataclass(frozen=True)
class Turn:
    """One scripted assistant reply: text, tool calls, or both (text first)."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()

    @classmethod
    def say(cls, text: str) -> Turn:
        return cls(text=text)

    @classmethod
    def call(cls, name: str, arguments: Mapping[str, Any], call_id: str = "") -> Turn:
        return cls(tool_calls=(ToolCall(name, arguments, call_id),))

    @classmethod
    def calls(cls, *calls: ToolCall) -> Turn:
        """Several tool calls in one assistant message (omp runs `ask` alone in its batch)."""
        return cls(tool_calls=calls)


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received, with the time it arrived (`time.monotonic()`)."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float
    turn: Turn | None
    """The turn answered, or None (script exhausted, or not a chat completion)."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages")
        return messages if isinstance(messages, list) else []

    def tool_messages(self) -> list[dict[str, Any]]:
        """The `role: "tool"` messages of this request, in order."""
        return [m for m in self.messages if m.get("role") == "tool"]

    def tool_result_text(self, call_id: str | None = None) -> str:
        """Text of the last tool message (or the one answering `call_id`)."""
        candidates = [
            m for m in self.tool_messages() if call_id is None or m.get("tool_call_id") == call_id
        ]
        if not candidates:
            raise LookupError(f"no tool message{f' for {call_id}' if call_id else ''} in request")
        return message_text(candidates[-1])

    def tool_names(self) -> list[str]:
        tools = self.body.get("tools")
        if not isinstance(tools, list):
            return []
        return [str(t.get("function", {}).get("name")) for t in tools if isinstance(t, dict)]


def message_text(message: Mapping[str, Any]) -> str:
    """A chat message's content as text (a string, or the text parts of a part list)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


class ScriptedModelServer(LoopbackHTTPServer):
    """OpenAI-compatible chat-completions server on 127.0.0.1 (ephemeral port) that answers
    request N with turn N. Use as a context manager, or `start()` / `close()`."""

    def __init__(self, turns: Sequence[Turn], *, model: str = MODEL) -> None:
        self.model = model
        self._turns = list(turns)
        self._next = 0
        self._lock = threading.Condition()
        self.requests: list[RecordedRequest] = []
        super().__init__(_handler_for(self), name="scripted-model")

    @property
    def base_url(self) -> str:
        """The `baseUrl` for models.yml (omp appends `/chat/completions`)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def add_turns(self, *turns: Turn) -> None:
        """Append turns to the script (e.g. for a second prompt)."""
        with self._lock:
            self._turns.extend(turns)

    @property
    def completions(self) -> list[RecordedRequest]:
        """The recorded chat-completion requests, in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def wait_for_completions(self, count: int, timeout: float = 30.0) -> list[RecordedRequest]:
        """Block until at least `count` chat-completion requests have arrived."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                done = [r for r in self.requests if r.path.endswith("/chat/completions")]
                if len(done) >= count:
                    return done
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"{len(done)} of {count} chat-completion requests after {timeout}s"
                    )
                self._lock.wait(remaining)

    @property
    def outbound(self) -> list[RecordedRequest]:
        """Requests omp sent through the proxy variables, i.e. aimed outside 127.0.0.1."""
        with self._lock:
            return [
                r
                for r in self.requests
                if r.method == "CONNECT" or r.path.startswith(("http://", "https://"))
            ]

    def _take_turn(self, record: dict[str, Any]) -> Turn | None:
        with self._lock:
            turn = self._turns[self._next] if self._next < len(self._turns) else None
            if turn is not None:
                self._next += 1
            self.requests.append(RecordedRequest(turn=turn, **record))
            self._lock.notify_all()
            return turn

    def _record(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(RecordedRequest(turn=None, **record))
            self._lock.notify_all()

    def _new_call_id(self) -> str:
        return f"call_{uuid.uuid4().hex[:12]}"


def _chunk(completion_id: str, model: str, choices: list[dict[str, Any]], **extra: Any) -> bytes:
    payload = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
        **extra,
    }
    return f"data: {json.dumps(payload)}\n\n".encode()


def _handler_for(server: ScriptedModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep pytest output clean; everything is in `server.requests`

        def _record_dict(self, body: dict[str, Any]) -> dict[str, Any]:
            return {
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body,
                "at": time.monotonic(),
            }

        def _send_json(self, status: int, payload: Mapping[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _refuse_outbound(self) -> bool:
            """Proxy-form requests (CONNECT host:443, GET http://host/...) are omp reaching
            past 127.0.0.1 through the proxy variables: record them and refuse."""
            if self.command != "CONNECT" and not self.path.startswith(("http://", "https://")):
                return False
            server._record(self._record_dict({}))
            self.close_connection = True
            self._send_json(403, {"error": {"message": "outbound network is disabled"}})
            return True

        def do_CONNECT(self) -> None:
            self._refuse_outbound()

        def do_GET(self) -> None:
            if self._refuse_outbound():
                return
            server._record(self._record_dict({}))
            if self.path.rstrip("/").endswith("/models"):
                self._send_json(
                    200,
                    {"object": "list", "data": [{"id": server.model, "object": "model"}]},
                )
            else:
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            if self._refuse_outbound():
                return
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
            if not self.path.rstrip("/").endswith("/chat/completions"):
                server._record(self._record_dict(body))
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            turn = server._take_turn(self._record_dict(body))
            if turn is None:
                turn = Turn.say(EXHAUSTED_TEXT)
            calls = [(call.call_id or server._new_call_id(), call) for call in turn.tool_calls]
            if body.get("stream"):
                self._stream(turn, calls)
            else:
                self._complete(turn, calls)

        def _complete(self, turn: Turn, calls: list[tuple[str, ToolCall]]) -> None:
            message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
            if calls:
                message["tool_calls"] = [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for call_id, c in calls
                ]
            self._send_json(
                200,
                {
                    "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": server.model,
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "tool_calls" if calls else "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                },
            )

        def _stream(self, turn: Turn, calls: list[tuple[str, ToolCall]]) -> None:
            """Everything in one go: omp only needs a well-formed chunk sequence."""
            cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"
            model = server.model
            events: list[bytes] = []
            if turn.text:
                delta = {"role": "assistant", "content": turn.text}
                events.append(_chunk(cid, model, [{"index": 0, "delta": delta}]))
            for index, (call_id, c) in enumerate(calls):
                tool_delta = {
                    "index": index,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                }
                delta = {"role": "assistant", "content": None, "tool_calls": [tool_delta]}
                events.append(_chunk(cid, model, [{"index": 0, "delta": delta}]))
            finish = "tool_calls" if calls else "stop"
            events.append(_chunk(cid, model, [{"index": 0, "delta": {}, "finish_reason": finish}]))
            usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            events.append(_chunk(cid, model, [], usage=usage))
            events.append(b"data: [DONE]\n\n")
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            try:
                for event in events:
                    self.wfile.write(event)
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # omp went away mid-answer (killed by the test); the request is recorded

    return Handler


# --------------------------------------------------------------------------------------
# omp configuration and launch
# --------------------------------------------------------------------------------------


OmpMode = Literal["acp", "rpc-ui", "rpc"]

DISABLED_PROVIDERS = ("ollama", "llama.cpp", "lm-studio")
"""Built-in keyless local providers omp probes at startup (127.0.0.1:11434, :8080, :1234):
disabled so omp never touches another service on this machine."""


def omp_settings(
    *, ask_timeout: float = 0, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The `~/.omp/agent/config.yml` content (nested keys; `ask.timeout` is in seconds,
    0 disables it). `extra` is merged on top (nested dicts merge)."""
    settings: dict[str, Any] = {
        "modelRoles": {"default": f"{PROVIDER}/{MODEL}"},
        "disabledProviders": list(DISABLED_PROVIDERS),
        "startup": {"checkUpdate": False, "setupWizard": False, "quiet": True},
        "ask": {"timeout": ask_timeout, "notify": "off"},
        "lsp": {"enabled": False},
        "recap": {"enabled": False},
    }
    if extra:
        _merge(settings, extra)
    return settings


def _merge(into: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        current = into.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            _merge(current, value)  # pyright: ignore[reportUnknownArgumentType]
        else:
            into[key] = value


def write_omp_config(
    home: Path,
    base_url: str,
    *,
    ask_timeout: float = 0,
    settings: Mapping[str, Any] | None = None,
) -> Path:
    """Write `models.yml` (one `openai-completions` provider at `base_url`) and `config.yml`
    under `home/.omp/agent`; return that directory. Both files are JSON, which YAML reads."""
    agent_dir = home / ".omp" / "agent"
    agent_dir.mkdir(parents=True, exist_ok=True)
    models = {
        "providers": {
            PROVIDER: {
                "baseUrl": base_url,
                "apiKey": "compass-test-key",
                "api": "openai-completions",
                "models": [
                    {
                        "id": MODEL,
                        "name": "Scripted model",
                        "contextWindow": 128000,
                        "maxTokens": 4096,
                        "input": ["text"],
                        "reasoning": False,
                    }
                ],
            }
        }
    }
    (agent_dir / "models.yml").write_text(json.dumps(models, indent=2) + "\n")
    config = omp_settings(ask_timeout=ask_timeout, extra=settings)
    (agent_dir / "config.yml").write_text(json.dumps(config, indent=2) + "\n")
    return agent_dir


@dataclass(frozen=True)
class OmpLaunch:
    """How to start omp: `subprocess.Popen(launch.argv, env=launch.env, cwd=launch.cwd)`."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path

    def popen(self, *, stderr: int | IO[bytes] | None = None) -> subprocess.Popen[bytes]:
        """Start omp with stdin/stdout pipes (binary; frames are JSON lines)."""
        return subprocess.Popen(
            self.argv,
            env=self.env,
            cwd=self.cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )


def omp_launch(
    bin_dir: Path,
    mode: OmpMode,
    *,
    home: Path,
    workspace: Path,
    proxy_port: int | None = None,
    extra_args: Sequence[str] = (),
) -> OmpLaunch:
    """argv/env/cwd for `omp --mode <mode>` with HOME at `home` and cwd `workspace`.

    The environment is built from scratch (no provider keys, XDG_*, OMP_*/PI_* from the
    caller leak in). Every proxy variable points at `proxy_port` (pass the scripted server's
    port: it records and refuses anything omp tries to reach outside 127.0.0.1, see
    `ScriptedModelServer.outbound`) or, by default, at a closed port; loopback bypasses it.
    """
    path = os.pathsep.join([str(bin_dir), os.environ.get("PATH", "/usr/bin:/bin")])
    proxy = f"http://127.0.0.1:{proxy_port or 9}"
    env = {
        "HOME": str(home),
        "PATH": path,
        "LANG": "C.UTF-8",
        "SHELL": "/bin/bash",
        "TMPDIR": tempfile.gettempdir(),
        "NO_COLOR": "1",
        "PI_NOTIFICATIONS": "off",
        "OMP_SKIP_SETUP": "1",
        "NO_PROXY": "127.0.0.1,localhost,::1",
        "no_proxy": "127.0.0.1,localhost,::1",
    }
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = proxy
        env[name.lower()] = proxy
    argv = [str(bin_dir / "omp"), "--mode", mode, "--model", f"{PROVIDER}/{MODEL}", *extra_args]
    return OmpLaunch(argv=argv, env=env, cwd=workspace)


def ensure_omp() -> Path:
    """The directory holding `omp` and `bun`: the pinned install (scripts/ensure-omp, once per
    process) or `COMPASS_NPM_DIR_OMP`'s (installs.py). Raises RuntimeError with the reason
    ("cannot install @oh-my-pi/pi-coding-agent from npm: ...") when there is none."""
    return ensure_npm("omp")
