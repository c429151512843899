"""`compass agent-bridge`: a live agent runtime connected to a Compass channel (SPEC §2.3).

Two transports (README, "Connecting an agent"): oh-my-pi's JSON-lines RPC mode
(`--protocol rpc`) and the Agent Client Protocol (`--protocol acp`, preferred). Either way
the bridge maps the runtime's events with `compass_agent.EventMapper`,
posts the frames through AgentService (the first frame of a message as AppendMessage, every
later one as UpdateMessage with the minted ask ids written back by position, so an ask that
starts after its message was stored joins that message), and for every ask the runtime waits
on, follows WatchAsk until the ask is final and writes the answer (or, for a decline, the
runtime's cancel) to the runtime's stdin; an ask the runtime stops waiting for is closed
(WITHDRAWN, or TIMED_OUT with the runtime's auto-picks; core.py). Modules:

- `runtime`: the runtime's RPC frames beyond what the mapper maps (ask requests, cancels);
- `answers`: an answered Ask -> the runtime's label-keyed reply (pure);
- `client`: AgentService on connectrpc's generated client; error classes and backoff;
- `poster`: ordered, idempotent, retried posting and ask-id reconciliation;
- `core`: what both transports share: mapper, poster, the outcome wait (`watch`), and
  closing asks nobody waits for (CloseAsk, retried with the poster's `call_with_retry`);
- `runner`: `Bridge`, the RPC transport's core (mapping, correlation, answer delivery
  through omp's select/editor dialogs);
- `session`: the RPC transport's child process or stdin/stdout, signals, exit codes;
- `acp`: `AcpBridge`, the ACP client (session updates, form elicitations, permission
  requests); `acp_events`: ACP updates -> the mapper's events; `forms`: ACP form schemas
  <-> typed Asks (`companions`: the free-text fields Claude Code and Codex put beside a
  choice); `acp_settings`: `--mode` and `--config-option`; `acp_run`: the agent process,
  one prompt turn, signals, exit codes.

Layering: the bridge is an AgentService *client*. It imports compass_agent, gen, connectrpc's
client and the ACP library, never the store, asyncpg or the server's handlers (import-linter).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import argparse

__all__ = [
    "TokenFileError",
    "add_arguments",
    "add_connection_arguments",
    "add_mcp_arguments",
    "main",
    "mcp_main",
    "read_token",
]

EXIT_USAGE: Final = 2


class TokenFileError(Exception):
    """The token file cannot be used; the message says why (never the token)."""


def read_token(path: Path) -> str:
    """The token in `path`, stripped of surrounding whitespace.

    Raises:
        TokenFileError: the file is missing, unreadable, empty or holds more than a token.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TokenFileError(f"token file {str(path)!r} does not exist") from None
    except OSError as exc:
        raise TokenFileError(f"cannot read token file {str(path)!r}: {exc.strerror}") from None
    try:
        token = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        raise TokenFileError(f"token file {str(path)!r} is not ASCII text") from None
    if not token:
        raise TokenFileError(f"token file {str(path)!r} is empty")
    if not token.isprintable() or any(ch.isspace() for ch in token):
        raise TokenFileError(f"token file {str(path)!r} must hold exactly one token")
    return token


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """--server, --channel and --token-file (`compass agent-bridge`, `compass mcp`)."""
    parser.add_argument("--server", required=True, help="Compass server URL (http or https)")
    parser.add_argument("--channel", required=True, help="channel id to post in")
    parser.add_argument(
        "--token-file", required=True, type=Path, help="file holding the agent account's token"
    )


def _connection(args: argparse.Namespace, command: str) -> tuple[str, str, str] | None:
    """(server, channel, token) from --server, --channel, --token-file; None after saying
    on stderr what is wrong with them."""
    server: str = args.server
    parts = urlsplit(server)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        sys.stderr.write(f"compass {command}: --server must be an http(s) URL, got {server!r}\n")
        return None
    channel: str = args.channel
    if not channel.strip():
        sys.stderr.write(f"compass {command}: --channel must not be empty\n")
        return None
    try:
        token = read_token(args.token_file)
    except TokenFileError as exc:
        sys.stderr.write(f"compass {command}: {exc}\n")
        return None
    return server, channel, token


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add `compass agent-bridge`'s arguments to its subparser."""
    add_connection_arguments(parser)
    parser.add_argument(
        "--protocol",
        choices=("rpc", "acp"),
        default="rpc",
        help="how to talk to the runtime: 'acp' (Agent Client Protocol, preferred: one whole "
        "form per ask) or 'rpc' (oh-my-pi's JSON-lines RPC mode; default)",
    )
    prompt = parser.add_mutually_exclusive_group()
    prompt.add_argument("--prompt", help="the prompt to send the agent once it is ready")
    prompt.add_argument(
        "--prompt-file", type=Path, help="a UTF-8 file holding the prompt to send the agent"
    )
    parser.add_argument(
        "--mode",
        metavar="ID",
        help="ACP only: the session mode to run the agent in (session/set_mode), one the "
        "agent offers, e.g. 'default' (Claude Code's Manual: it asks before acting) or "
        "'read-only' (Codex)",
    )
    parser.add_argument(
        "--config-option",
        metavar="ID=VALUE",
        action="append",
        default=[],
        help="ACP only, repeatable: a session configuration option to set "
        "(session/set_config_option), e.g. 'collaboration_mode=plan' (Codex)",
    )
    parser.add_argument(
        "--no-ask-dialog",
        dest="ask_dialog",
        action="store_false",
        help="do not send set_ask_dialog to the runtime first",
    )
    parser.add_argument(
        "--max-backoff",
        type=float,
        default=5.0,
        help="longest wait between retries while the server is unreachable (seconds)",
    )
    parser.add_argument(
        "--drain-timeout",
        type=float,
        default=None,
        help="when the runtime ends, give up posting queued frames after this many seconds "
        "(default: keep retrying)",
    )
    parser.add_argument(
        "command",
        nargs="*",
        metavar="-- COMMAND",
        help="the runtime to start (its stdout is read, replies go to its stdin); "
        "without it, events are read from stdin and replies written to stdout",
    )


def main(args: argparse.Namespace) -> int:
    """Run `compass agent-bridge` with parsed `args`; return the exit code."""
    connection = _connection(args, "agent-bridge")
    if connection is None:
        return EXIT_USAGE
    server, channel, token = connection
    try:
        prompt = _prompt(args)
    except ValueError as exc:
        sys.stderr.write(f"compass agent-bridge: {exc}\n")
        return EXIT_USAGE
    protocol: str = args.protocol
    if protocol == "acp" and (not args.command or prompt is None):
        sys.stderr.write(
            "compass agent-bridge: --protocol acp needs the agent's COMMAND and a prompt "
            "(--prompt or --prompt-file)\n"
        )
        return EXIT_USAGE
    mode: str | None = args.mode
    raw_options: list[str] = args.config_option
    if protocol != "acp" and (mode is not None or raw_options):
        sys.stderr.write("compass agent-bridge: --mode and --config-option need --protocol acp\n")
        return EXIT_USAGE
    from compass_bridge.acp_settings import SessionSettings, parse_config_option

    try:
        settings = SessionSettings(
            mode=mode, config_options=tuple(parse_config_option(o) for o in raw_options)
        )
    except ValueError as exc:
        sys.stderr.write(f"compass agent-bridge: {exc}\n")
        return EXIT_USAGE
    max_backoff: float = args.max_backoff
    drain_timeout: float | None = args.drain_timeout
    if not 0 < max_backoff <= 3600 or (drain_timeout is not None and drain_timeout < 0):
        sys.stderr.write("compass agent-bridge: --max-backoff/--drain-timeout out of range\n")
        return EXIT_USAGE
    # Imported here: `compass --help` and the other commands need none of the client or the mapper.
    from compass_bridge.session import BridgeOptions, run

    options = BridgeOptions(
        server=server,
        channel_id=channel,
        token=token,
        command=tuple(args.command),
        ask_dialog=args.ask_dialog,
        max_backoff=max_backoff,
        drain_timeout=drain_timeout,
        prompt=prompt,
        settings=settings,
    )
    from compass_bridge.startup import start_problem

    problem = asyncio.run(start_problem(server, token, channel))
    if problem is not None:
        sys.stderr.write(f"compass agent-bridge: {problem}\n")
        return EXIT_USAGE
    if protocol == "acp":
        from compass_bridge import acp_run

        return asyncio.run(acp_run.run(options))
    return asyncio.run(run(options))


def add_mcp_arguments(parser: argparse.ArgumentParser) -> None:
    """Add `compass mcp`'s arguments to its subparser."""
    add_connection_arguments(parser)
    from compass_bridge.mcp_stdio import add_arguments as add_stdio_arguments

    add_stdio_arguments(parser)


def mcp_main(args: argparse.Namespace) -> int:
    """Run `compass mcp` (the MCP tools over stdio) with parsed `args`; the exit code."""
    connection = _connection(args, "mcp")
    if connection is None:
        return EXIT_USAGE
    server, channel, token = connection
    wait: float = args.wait_seconds
    grace: float = args.grace_seconds
    progress: float = args.progress_seconds
    max_backoff: float = args.max_backoff
    if (
        not 0 <= wait <= 3600
        or not 0 <= grace <= 86400
        or not 0.05 <= progress <= 600
        or not 0 < max_backoff <= 3600
    ):
        sys.stderr.write(
            "compass mcp: --wait-seconds, --grace-seconds, --progress-seconds or --max-backoff "
            "out of range\n"
        )
        return EXIT_USAGE
    from compass_bridge.startup import start_problem

    problem = asyncio.run(start_problem(server, token, channel))
    if problem is not None:
        sys.stderr.write(f"compass mcp: {problem}\n")
        return EXIT_USAGE
    from compass_bridge.mcp_stdio import McpOptions, run

    options = McpOptions(
        server=server,
        channel_id=channel,
        token=token,
        wait_seconds=wait,
        grace_seconds=grace,
        progress_seconds=progress,
        max_backoff=max_backoff,
    )
    return asyncio.run(run(options))


def _prompt(args: argparse.Namespace) -> str | None:
    """The prompt from --prompt or --prompt-file, or None.

    Raises:
        ValueError: the prompt file cannot be read, or the prompt is empty (says which).
    """
    text: str | None = args.prompt
    path: Path | None = args.prompt_file
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise ValueError(f"cannot read prompt file {str(path)!r}: {reason}") from None
    if text is not None and not text.strip():
        raise ValueError("the prompt is empty")
    return text
