"""OpenCode as published (tests/realagent/opencode: opencode-ai 1.18.33), headless with
Compass's plugin installed by `compass opencode install` (run as docs/agents/opencode.md
gives it, into a throwaway HOME) and its model a scripted chat-completions server on
127.0.0.1 (wire_models.ChatModel); every other request goes to the refusing proxy. Shared by
tests/realagent/test_opencode.py and bench/opencode_question_latency.py. `opencode_tui` runs
its TUI instead, in a pseudo-terminal, as a person runs it.

Why `opencode serve` and not `opencode run`: `opencode run` creates its session with
`permission: [{permission: "question", action: "deny"}]` (unless `--mini`, which needs a
terminal), so its model is told "Model tried to call unavailable tool 'question'", and a
config's `permission.question: "allow"` does not lift it (both measured). A session created
over `opencode serve`'s HTTP API (as its web UI, the desktop app and SDK clients create
theirs, and as the TUI's own are) keeps the build agent's `question: allow`. The test drives
the server as such a client would (create a session, prompt it, abort it, or answer the
question itself as the TUI would); the plugin runs inside the server and needs no port of
its own.

The test bed's part of the configuration is given in OPENCODE_CONFIG_CONTENT (the loopback
model as a custom `@ai-sdk/openai-compatible` provider, no update, no sharing) with
OPENCODE_DISABLE_MODELS_FETCH, OPENCODE_DISABLE_AUTOUPDATE and
OPENCODE_DISABLE_DEFAULT_PLUGINS; Compass's part is only what the install command wrote.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from tests.realagent.acp_agents import ensure_npm

if TYPE_CHECKING:
    from collections.abc import Generator, Mapping, Sequence

    from tests.realagent.wire_models import ChatModel

__all__ = ["MODEL", "OpenCode", "install_compass", "opencode_tui", "served_opencode"]

MODEL = "scripted-model"
_LISTENING = re.compile(rb"listening on (http://127\.0\.0\.1:\d+)")


@dataclass
class OpenCode:
    """One `opencode serve` process with Compass's plugin, and a client of its HTTP API."""

    process: subprocess.Popen[bytes]
    url: str
    log_path: Path
    model: ChatModel
    config_path: Path
    """The config file `compass opencode install` wrote."""

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def _call(self, method: str, path: str, body: object = None) -> Any:
        with httpx.Client(base_url=self.url, timeout=60, trust_env=False) as http:
            reply = http.request(method, path, json=body)
        assert reply.status_code < 300, (reply.status_code, reply.text, self.log()[-3000:])
        return reply.json() if reply.content else None

    def session(self) -> str:
        """A new session (the build agent, the default model)."""
        return str(self._call("POST", "/session", {})["id"])

    def prompt(self, session_id: str, text: str, *, agent: str = "") -> None:
        """Send `text` to the session (to `agent`, else the default); returns at once (the
        session runs on)."""
        body: dict[str, Any] = {"parts": [_text(text)]}
        if agent:
            body["agent"] = agent
        self._call("POST", f"/session/{session_id}/prompt_async", body)

    def abort(self, session_id: str) -> None:
        self._call("POST", f"/session/{session_id}/abort")

    def questions(self) -> list[dict[str, Any]]:
        """The questions OpenCode is waiting on (GET /question)."""
        return list(self._call("GET", "/question"))

    def reply(self, request_id: str, answers: list[list[str]]) -> None:
        """Answer a question in OpenCode itself, as its TUI does."""
        self._call("POST", f"/question/{request_id}/reply", {"answers": answers})

    def idle(self, session_id: str) -> bool:
        """Whether the session is not running (GET /session/status lists the busy ones)."""
        status = self._call("GET", "/session/status")
        entry = status.get(session_id) if isinstance(status, dict) else None
        return entry is None or entry.get("type") == "idle"


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def _env(bin_dir: Path, home: Path, proxy_env: Mapping[str, str]) -> dict[str, str]:
    return {
        "HOME": str(home),
        "PATH": os.pathsep.join([str(bin_dir), os.environ.get("PATH", "/usr/bin:/bin")]),
        "LANG": "C.UTF-8",
        "SHELL": "/bin/bash",
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),  # noqa: S108 - the system's, as given
        "NO_COLOR": "1",
        **proxy_env,
    }


def install_compass(
    home: Path, *, server_url: str, channel_id: str, token_file: Path, extra: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """`compass opencode install --server URL --channel ID --token-file FILE` as
    docs/agents/opencode.md gives it, run by a person whose HOME is `home` (the venv's own
    `compass`, so the plugin runs it by its absolute path)."""
    compass = Path(sys.executable).parent / "compass"
    env = {k: v for k, v in os.environ.items() if k not in {"COMPASS_TOKEN", "XDG_CONFIG_HOME"}}
    return subprocess.run(
        [
            str(compass),
            *("opencode", "install"),
            *("--server", server_url, "--channel", channel_id),
            *("--token-file", str(token_file)),
            *extra,
        ],
        env={**env, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@dataclass(frozen=True)
class _Setup:
    """A fresh HOME with Compass's plugin installed, and OpenCode's environment."""

    bin_dir: Path
    workspace: Path
    env: dict[str, str]
    config_path: Path


def _setup(
    tmp: Path,
    model: ChatModel,
    proxy_env: Mapping[str, str],
    *,
    server_url: str,
    channel_id: str,
    token: str,
    config: Mapping[str, Any] | None,
    env: Mapping[str, str] | None,
    install: Sequence[str] = (),
) -> _Setup:
    home, workspace = tmp / "home", tmp / "workspace"
    home.mkdir(parents=True, exist_ok=True)
    workspace.mkdir(parents=True, exist_ok=True)
    token_file = tmp / "agent.token"
    token_file.write_text(token + "\n", encoding="utf-8")
    done = install_compass(
        home, server_url=server_url, channel_id=channel_id, token_file=token_file, extra=install
    )
    assert done.returncode == 0, done.stderr
    bin_dir = ensure_npm("opencode")
    bed: dict[str, Any] = {
        "provider": {
            "scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted",
                "options": {"baseURL": model.base_url, "apiKey": "compass-test"},
                "models": {MODEL: {"name": "Scripted model"}},
            }
        },
        "model": f"scripted/{MODEL}",
        "autoupdate": False,
        "share": "disabled",
        **(config or {}),
    }
    launch_env = _env(bin_dir, home, proxy_env) | {
        "OPENCODE_CONFIG_CONTENT": json.dumps(bed),
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        **(env or {}),
    }
    return _Setup(bin_dir, workspace, launch_env, Path(json.loads(done.stdout)["config"]))


@contextlib.contextmanager
def served_opencode(
    *,
    tmp: Path,
    model: ChatModel,
    proxy_env: Mapping[str, str],
    server_url: str,
    channel_id: str,
    token: str,
    config: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    install: Sequence[str] = (),
) -> Generator[OpenCode]:
    """`opencode serve` in a fresh HOME under `tmp` with Compass's plugin installed for
    `channel_id` (`install`: more arguments of the install command); killed afterwards if
    still running. `config` is merged into the test bed's OPENCODE_CONFIG_CONTENT, `env` into
    its environment."""
    setup = _setup(
        tmp,
        model,
        proxy_env,
        server_url=server_url,
        channel_id=channel_id,
        token=token,
        config=config,
        env=env,
        install=install,
    )
    log_path = tmp / "opencode.log"
    argv = [str(setup.bin_dir / "opencode"), "serve", "--hostname", "127.0.0.1", "--port", "0"]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [*argv, "--print-logs", "--log-level", "INFO"],
            cwd=setup.workspace,
            env=setup.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        url = _listening(process, log_path)
        yield OpenCode(process, url, log_path, model, setup.config_path)
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def opencode_tui(
    *,
    tmp: Path,
    model: ChatModel,
    proxy_env: Mapping[str, str],
    server_url: str,
    channel_id: str,
    token: str,
    prompt: str,
    install: Sequence[str] = (),
) -> Generator[Path]:
    """OpenCode's TUI (`opencode --prompt PROMPT`, a person's way of running it) in a
    terminal of 120x40 (a pseudo-terminal: its screen goes to the file yielded), in a fresh
    HOME with Compass's plugin installed; ended afterwards (SIGTERM, then SIGKILL)."""
    setup = _setup(
        tmp,
        model,
        proxy_env,
        server_url=server_url,
        channel_id=channel_id,
        token=token,
        config=None,
        env={"TERM": "xterm-256color"},
        install=install,
    )
    screen = tmp / "tui.out"
    screen.write_bytes(b"")
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen(
        [str(setup.bin_dir / "opencode"), "--prompt", prompt],
        cwd=setup.workspace,
        env=setup.env,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        start_new_session=True,
    )
    os.close(follower)
    drain = threading.Thread(target=_drain, args=(leader, screen), daemon=True)
    drain.start()
    try:
        yield screen
    finally:
        _stop(process)
        os.close(leader)
        drain.join(5)


def _drain(leader: int, screen: Path) -> None:
    """Copy the terminal's output to `screen` until it closes (a terminal nobody reads
    blocks its program)."""
    with screen.open("ab") as out:
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the program and its terminal are gone
                return
            if not data:
                return
            out.write(data)
            out.flush()


def _listening(process: subprocess.Popen[bytes], log_path: Path, within: float = 60) -> str:
    """The URL `opencode serve` says it listens on (it may take another port than asked)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = _LISTENING.search(log_path.read_bytes())
        if found:
            return found.group(1).decode()
        if process.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(
        f"opencode serve did not listen (exit {process.poll()}):\n"
        f"{log_path.read_text(errors='replace')[-3000:]}"
    )
