"""The agent commands: argparse and main for `compass agent-bridge`, `compass mcp` and
`compass claude-hook` (with its `install`), the registration of `compass opencode` (its
`install` and `ask`: compass_bridge/opencode/command.py), and the token they read.

`register(commands)` adds the three to a parent parser's subcommands (compass_server's CLI
calls it); each subcommand's `handler` runs it and returns the exit status. Every command
checks its arguments and the server (startup.start_problem: reachable, the token, the
channel) before it starts; a problem is a usage error (exit 2; `claude-hook` exits 1, as
exit 2 would block Claude Code's tool call or decline its form: claude/hook.py; its
`install` checks before it writes, unless --no-check, and exits 2). `--protocol` picks the integration that runs the
agent (`_runner`, a chooser holding no protocol code, as uvicorn's protocols/http/auto.py):
`omp.process.run` (oh-my-pi's RPC mode), `acp.process.run` (the Agent Client Protocol) or
`copilot.process.run` (Copilot CLI under its SDK's JSON-RPC).

Everything heavy (the client, the mapper, the ACP library, the `mcp` SDK) is imported when a
command runs, not when the parser is built: `compass --help` and the server's commands need
none of it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol
from urllib.parse import urlsplit

from compass_bridge.process import EXIT_USAGE, BridgeOptions

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Coroutine


class Subcommands(Protocol):
    """A parser's subcommands (what `ArgumentParser.add_subparsers` returns)."""

    def add_parser(self, name: str, *, help: str) -> argparse.ArgumentParser: ...


__all__ = [
    "TOKEN_ENV",
    "Subcommands",
    "TokenFileError",
    "add_arguments",
    "add_claude_hook_arguments",
    "add_connection_arguments",
    "add_mcp_arguments",
    "claude_hook_main",
    "main",
    "mcp_main",
    "opencode_main",
    "read_token",
    "register",
]


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
    return _checked_token(raw, f"token file {str(path)!r}")


def _checked_token(raw: bytes, source: str) -> str:
    try:
        token = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        raise TokenFileError(f"{source} is not ASCII text") from None
    if not token:
        raise TokenFileError(f"{source} is empty")
    if not token.isprintable() or any(ch.isspace() for ch in token):
        raise TokenFileError(f"{source} must hold exactly one token")
    return token


def add_connection_arguments(
    parser: argparse.ArgumentParser, *, token_help: str = "", required: bool = True
) -> None:
    """--server, --channel and --token-file (`compass agent-bridge`, `compass mcp`,
    `compass claude-hook`, which also takes the token from TOKEN_ENV)."""
    parser.add_argument("--server", required=required, help="Compass server URL (http or https)")
    parser.add_argument("--channel", required=required, help="channel id to post in")
    parser.add_argument(
        "--token-file",
        required=required and not token_help,
        type=Path,
        help=token_help or "file holding the agent account's token",
    )


def _target(args: argparse.Namespace, command: str) -> tuple[str, str] | None:
    """(server, channel) from --server and --channel; None after saying what is wrong."""
    server: str | None = args.server
    channel: str | None = args.channel
    if server is None or channel is None:
        sys.stderr.write(f"compass {command}: --server and --channel are required\n")
        return None
    parts = urlsplit(server)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        sys.stderr.write(f"compass {command}: --server must be an http(s) URL, got {server!r}\n")
        return None
    if not channel.strip():
        sys.stderr.write(f"compass {command}: --channel must not be empty\n")
        return None
    return server, channel


def _install_token(token_file: Path | None) -> str | None:
    """The token an install command checks: from `token_file` (a wrong path fails now, not at
    the agent's first question), else from TOKEN_ENV; None without either.

    Raises:
        TokenFileError: the token file or the variable cannot be used.
    """
    if token_file is not None:
        return read_token(token_file)
    if os.environ.get(TOKEN_ENV):
        return _checked_token(os.environ[TOKEN_ENV].encode(), f"${TOKEN_ENV}")
    return None


def _connection(
    args: argparse.Namespace, command: str, *, token_env: str = ""
) -> tuple[str, str, str] | None:
    """(server, channel, token) from --server, --channel, --token-file (or the environment
    variable `token_env`); None after saying on stderr what is wrong with them."""
    target = _target(args, command)
    if target is None:
        return None
    server, channel = target
    token_file: Path | None = args.token_file
    try:
        if token_file is not None:
            token = read_token(token_file)
        elif token_env and os.environ.get(token_env):
            token = _checked_token(os.environ[token_env].encode(), f"${token_env}")
        else:
            raise TokenFileError(f"give --token-file{f' or set {token_env}' if token_env else ''}")
    except TokenFileError as exc:
        sys.stderr.write(f"compass {command}: {exc}\n")
        return None
    return server, channel, token


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add `compass agent-bridge`'s arguments to its subparser."""
    add_connection_arguments(parser)
    parser.add_argument(
        "--protocol",
        choices=("rpc", "acp", "copilot"),
        default="rpc",
        help="how to talk to the runtime: 'acp' (Agent Client Protocol, preferred: one whole "
        "form per ask), 'copilot' (GitHub Copilot CLI, headless under its SDK's JSON-RPC: "
        "its own ask_user tool) or 'rpc' (oh-my-pi's JSON-lines RPC mode; default)",
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
        "--ask-user-variant",
        choices=("legacy", "elicitation"),
        help="copilot only: the shape of Copilot's ask_user tool, 'legacy' (one question with "
        "choices; Copilot's default) or 'elicitation' (a form of several fields)",
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
    if protocol in {"acp", "copilot"} and (not args.command or prompt is None):
        sys.stderr.write(
            f"compass agent-bridge: --protocol {protocol} needs the agent's COMMAND and a "
            "prompt (--prompt or --prompt-file)\n"
        )
        return EXIT_USAGE
    variant: str | None = args.ask_user_variant
    if protocol != "copilot" and variant is not None:
        sys.stderr.write("compass agent-bridge: --ask-user-variant needs --protocol copilot\n")
        return EXIT_USAGE
    mode: str | None = args.mode
    raw_options: list[str] = args.config_option
    if protocol != "acp" and (mode is not None or raw_options):
        sys.stderr.write("compass agent-bridge: --mode and --config-option need --protocol acp\n")
        return EXIT_USAGE
    from compass_bridge.acp.settings import parse_config_option

    try:
        config_options = tuple(parse_config_option(o) for o in raw_options)
    except ValueError as exc:
        sys.stderr.write(f"compass agent-bridge: {exc}\n")
        return EXIT_USAGE
    max_backoff: float = args.max_backoff
    drain_timeout: float | None = args.drain_timeout
    if not 0 < max_backoff <= 3600 or (drain_timeout is not None and drain_timeout < 0):
        sys.stderr.write("compass agent-bridge: --max-backoff/--drain-timeout out of range\n")
        return EXIT_USAGE
    options = BridgeOptions(
        server=server,
        channel_id=channel,
        token=token,
        command=tuple(args.command),
        ask_dialog=args.ask_dialog,
        max_backoff=max_backoff,
        drain_timeout=drain_timeout,
        prompt=prompt,
        mode=mode,
        config_options=config_options,
    )
    from compass_bridge.startup import start_problem

    problem = asyncio.run(start_problem(server, token, channel))
    if problem is not None:
        sys.stderr.write(f"compass agent-bridge: {problem}\n")
        return EXIT_USAGE
    return asyncio.run(_runner(protocol, variant)(options))


def _runner(
    protocol: str, variant: str | None = None
) -> Callable[[BridgeOptions], Coroutine[object, object, int]]:
    """The integration that runs the agent for `--protocol` (imported only now: it brings the
    client, the mapper and, for ACP, the ACP library)."""
    if protocol == "acp":
        from compass_bridge.acp.process import run
    elif protocol == "copilot":
        import functools

        from compass_bridge.copilot import process
        from compass_bridge.copilot.settings import ask_user_variant

        return functools.partial(process.run, ask_user_variant=ask_user_variant(variant))
    else:
        from compass_bridge.omp.process import run
    return run


def add_mcp_arguments(parser: argparse.ArgumentParser) -> None:
    """Add `compass mcp`'s arguments to its subparser. (Here rather than in mcp_stdio: that
    imports the `mcp` SDK, a second of start-up and a third of one at exit, which every
    command, `compass claude-hook` too, would otherwise pay to build its parser.)"""
    add_connection_arguments(parser)
    from compass_mcp import tools

    parser.add_argument(
        "--wait-seconds",
        type=float,
        default=tools.DEFAULT_WAIT_SECONDS,
        help="how long a call waits before it returns `pending` when it names no "
        "wait_seconds (default %(default)g; keep it under your client's tool timeout)",
    )
    parser.add_argument(
        "--grace-seconds",
        type=float,
        default=60.0,
        help="how long an ask stays answerable after its call was cancelled (default %(default)g)",
    )
    parser.add_argument(
        "--progress-seconds",
        type=float,
        default=tools.PROGRESS_SECONDS,
        help="how often a waiting call sends a progress notification (default %(default)g)",
    )
    parser.add_argument(
        "--max-backoff",
        type=float,
        default=5.0,
        help="longest wait between retries while the server is unreachable (seconds)",
    )


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


TOKEN_ENV: Final = "COMPASS_TOKEN"  # noqa: S105 - the name of a variable, not a token
"""Where `compass claude-hook` takes the agent's token from without --token-file."""


def add_claude_hook_arguments(parser: argparse.ArgumentParser) -> None:
    """Add `compass claude-hook`'s arguments (and its `install` subcommand) to its parser."""
    token_help = f"file holding the agent account's token (default: ${TOKEN_ENV})"
    add_connection_arguments(parser, token_help=token_help, required=False)
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="the hook entry's timeout in Claude Code's settings, in seconds (default 600, "
        "Claude Code's own): the ask's deadline, and when the hook gives up",
    )
    parser.add_argument(
        "--max-backoff",
        type=float,
        default=5.0,
        help="longest wait between retries while the server is unreachable (seconds)",
    )
    actions = parser.add_subparsers(dest="claude_hook_action", metavar="[install]")
    install = actions.add_parser(
        "install",
        help="write the hook entries into Claude Code's settings (default: the user's)",
        description="Write the PreToolUse (AskUserQuestion) and Elicitation hook entries "
        "running `compass claude-hook` into a Claude Code settings file, keeping its other "
        "hooks and settings. Running it again updates them in place.",
    )
    where = install.add_mutually_exclusive_group()
    where.add_argument(
        "--user",
        dest="scope",
        action="store_const",
        const="user",
        help="~/.claude/settings.json, or $CLAUDE_CONFIG_DIR/settings.json (the default)",
    )
    where.add_argument(
        "--project",
        dest="scope",
        action="store_const",
        const="project",
        help=".claude/settings.json of the current directory (shared with the project)",
    )
    where.add_argument(
        "--local",
        dest="scope",
        action="store_const",
        const="local",
        help=".claude/settings.local.json of the current directory (yours only)",
    )
    where.add_argument("--settings", type=Path, help="this settings file")
    add_connection_arguments(install, token_help=token_help)
    from compass_bridge.claude.install import DEFAULT_INSTALL_TIMEOUT

    install.add_argument(
        "--timeout",
        type=int,
        default=DEFAULT_INSTALL_TIMEOUT,
        help="seconds a person has to answer before Claude Code asks in the terminal "
        "instead (default %(default)s)",
    )
    install.add_argument(
        "--command",
        dest="compass_command",
        help="how the hook runs compass (default: this compass, by its absolute path)",
    )
    install.add_argument(
        "--no-check",
        dest="check",
        action="store_false",
        help="write the hooks without asking the server whether the token may post in the "
        "channel (GetChannel)",
    )


def claude_hook_main(args: argparse.Namespace) -> int:
    """Run `compass claude-hook` (or its `install`) with parsed `args`; the exit status.

    A problem of the hook is exit 1, never 2: Claude Code takes 2 from a hook as "block the
    tool call and show stderr to the model", and declines an MCP form with it
    (claude/hook.py). `install` is a person's command: a problem there is exit 2."""
    if args.claude_hook_action == "install":
        return _install_claude_hook(args)
    connection = _connection(args, "claude-hook", token_env=TOKEN_ENV)
    if connection is None:
        return 1
    server, channel, token = connection
    timeout: float | None = args.timeout
    max_backoff: float = args.max_backoff
    if (timeout is not None and not 1 <= timeout <= 7 * 86400) or not 0 < max_backoff <= 3600:
        sys.stderr.write("compass claude-hook: --timeout or --max-backoff out of range\n")
        return 1
    from compass_bridge.claude.hook import DEFAULT_TIMEOUT, HookOptions, run, started_at

    started = started_at()
    logging.getLogger("httpx").setLevel(logging.WARNING)
    raw = sys.stdin.buffer.read()
    options = HookOptions(
        server=server,
        channel_id=channel,
        token=token,
        timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
        max_backoff=max_backoff,
    )
    code = run(options, raw, started)
    # Claude Code reads a hook's reply once the process has exited, and everything is done
    # (the reply printed, the receipt reported): the interpreter's teardown, freeing every
    # module (0.1 s here, more with the ACP library a form imports), would only delay the
    # person's answer. So the process ends here, its streams flushed.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _install_claude_hook(args: argparse.Namespace) -> int:
    """`compass claude-hook install`: the settings file is read and merged first, then the
    token and channel checked with the server (unless --no-check), then the file written.
    Any problem is one line on stderr, exit 2, and nothing written."""
    import json
    import shlex

    from compass_bridge import config_files
    from compass_bridge.claude.install import hook_command, merge, settings_path

    command_name = "claude-hook install"

    def refuse(problem: str) -> int:
        sys.stderr.write(f"compass {command_name}: {problem}\n")
        return EXIT_USAGE

    target = _target(args, command_name)
    if target is None:
        return EXIT_USAGE
    server, channel = target
    token_file: Path | None = args.token_file
    try:
        token = _install_token(token_file)
    except TokenFileError as exc:
        return refuse(str(exc))
    timeout: int = args.timeout
    if not 10 <= timeout <= 7 * 86400:
        return refuse("--timeout must be 10 to 604800 seconds")
    explicit: Path | None = args.settings
    path = explicit or settings_path(args.scope or "user", Path.cwd(), os.environ)
    compass: str | None = args.compass_command
    command = hook_command(
        shlex.split(compass) if compass else config_files.compass_argv(),
        server=server,
        channel_id=channel,
        token_file=token_file.absolute() if token_file is not None else None,
        timeout=timeout,
    )
    check = functools.partial(
        config_files.server_check, server, channel, token, token_env=TOKEN_ENV, agent="Claude Code"
    )
    try:
        changed = config_files.install_checked(
            path, merge(command, timeout), check=check if args.check else None
        )
    except config_files.ConfigFileError as exc:
        return refuse(str(exc))
    summary = {
        "settings": str(path),
        "changed": changed,
        "command": command,
        "timeout": timeout,
    }
    sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    if token_file is None:
        sys.stderr.write(
            f"compass {command_name}: the hook reads the token from ${TOKEN_ENV} in "
            "Claude Code's environment\n"
        )
    return 0


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


def register(commands: Subcommands) -> None:
    """Add `agent-bridge`, `mcp`, `claude-hook` and `opencode` to a parent parser's subcommands, each with
    `handler` set to what runs it (given the parsed arguments, it returns the exit status).
    Each is a client of some server: the server's own COMPASS_* settings are not its own."""
    bridge = commands.add_parser(
        "agent-bridge", help="connect a running agent runtime to a Compass channel"
    )
    add_arguments(bridge)
    bridge.set_defaults(handler=main)
    mcp = commands.add_parser(
        "mcp", help="serve Compass's MCP tools (ask, ask_wait, ask_cancel) over stdio"
    )
    add_mcp_arguments(mcp)
    mcp.set_defaults(handler=mcp_main)
    hook = commands.add_parser(
        "claude-hook",
        help="answer Claude Code's own questions (AskUserQuestion, MCP forms) in Compass: "
        "the command of its hooks; `claude-hook install` writes them into its settings",
    )
    add_claude_hook_arguments(hook)
    hook.set_defaults(handler=claude_hook_main)
    opencode = commands.add_parser(
        "opencode",
        help="answer OpenCode's own questions (its question tool) in Compass: `opencode "
        "install` puts Compass's plugin into its config; `opencode ask` is the plugin's command",
    )
    from compass_bridge.opencode.command import add_arguments as add_opencode_arguments

    token_help = f"file holding the agent account's token (default: ${TOKEN_ENV})"
    add_opencode_arguments(
        opencode, functools.partial(add_connection_arguments, token_help=token_help)
    )
    opencode.set_defaults(handler=opencode_main)


def opencode_main(args: argparse.Namespace) -> int:
    """Run `compass opencode ask` or `install` with parsed `args`: the connection is read
    here, as for every agent command; the rest is compass_bridge/opencode/command.py's."""
    from compass_bridge.opencode import command

    name = f"opencode {args.opencode_action}"
    if args.opencode_action == "ask":
        connection = _connection(args, name, token_env=TOKEN_ENV)
        if connection is None:
            return EXIT_USAGE
        return command.ask_main(args, *connection)
    target = _target(args, name)
    if target is None:
        return EXIT_USAGE
    try:
        token = _install_token(args.token_file)
    except TokenFileError as exc:
        sys.stderr.write(f"compass {name}: {exc}\n")
        return EXIT_USAGE
    return command.install_main(args, *target, token=token, token_env=TOKEN_ENV)
