"""Record an ACP conversation: `python -m tests.realagent.acp_tee OUT.jsonl -- AGENT ARGS...`
runs the agent with its stdin/stdout passed through and writes each JSON-RPC line to
OUT.jsonl as `{"client": MESSAGE}` (what the client sent) or `{"agent": MESSAGE}` (what the
agent sent), in the order they passed. Used as the agent command of `compass agent-bridge`
to capture the transcripts in tests/bridge/acp/recorded/. The agent's stderr passes through.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO


def _pump(
    source: IO[bytes], sink: IO[bytes], side: str, out: IO[str], lock: threading.Lock
) -> None:
    for line in iter(source.readline, b""):
        sink.write(line)
        sink.flush()
        try:
            message: object = json.loads(line)
        except json.JSONDecodeError:
            message = {"unparsed": line.decode(errors="replace")}
        with lock:
            out.write(json.dumps({side: message}) + "\n")
            out.flush()
    sink.close()


Pump = Callable[[IO[bytes], IO[bytes], str, IO[str], threading.Lock], None]
"""Pass `source` on to `sink` (closed at the end), recording each message to `out` as
`{side: MESSAGE}` under the lock."""


def tee(argv: list[str], *, usage: str, pump: Pump) -> int:
    """`OUT.jsonl -- COMMAND...`: run COMMAND with its stdin and stdout passed through by
    `pump`, both sides recorded in OUT.jsonl; COMMAND's exit code (2 and `usage` on stderr
    for other arguments)."""
    out_path, separator, *command = argv
    if separator != "--" or not command:
        sys.stderr.write(usage)
        return 2
    agent = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert agent.stdin is not None
    assert agent.stdout is not None
    lock = threading.Lock()
    with Path(out_path).open("w", encoding="utf-8") as out:
        to_agent = threading.Thread(
            target=pump, args=(sys.stdin.buffer, agent.stdin, "client", out, lock), daemon=True
        )
        to_agent.start()
        pump(agent.stdout, sys.stdout.buffer, "agent", out, lock)
        return agent.wait()


def main(argv: list[str]) -> int:
    usage = "usage: python -m tests.realagent.acp_tee OUT.jsonl -- AGENT ARGS...\n"
    return tee(argv, usage=usage, pump=_pump)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
