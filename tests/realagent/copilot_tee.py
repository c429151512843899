"""Record a Copilot CLI server conversation: `python -m tests.realagent.copilot_tee OUT.jsonl --
COPILOT ARGS...` runs the CLI with its stdin/stdout passed through byte for byte and writes
each JSON-RPC message (Content-Length framed, as the SDKs frame them) to OUT.jsonl as
`{"client": MESSAGE}` (what the bridge sent) or `{"agent": MESSAGE}` (what the CLI sent), in
the order they passed. Used as the agent command of `compass agent-bridge --protocol copilot`
(the bridge appends the server's flags, passed on) to capture
tests/bridge/copilot/recorded/. The CLI's stderr passes through.

Two events are recorded without their text, which is Copilot's own (its system prompt, some
70 KB a run) and nothing the bridge reads: `system.message`'s `content` and
`model.messages_snapshot`'s `messages` (both as `ELIDED`, with the length).
"""

from __future__ import annotations

import json
import sys
from typing import IO, TYPE_CHECKING, Any

from tests.realagent.acp_tee import tee

if TYPE_CHECKING:
    import threading

ELIDED = "[elided: Copilot's own text, {} characters]"


def _recorded(message: dict[str, Any]) -> dict[str, Any]:
    """`message` as recorded: the two events above without their text."""
    event = (
        (message.get("params") or {}).get("event")
        if message.get("method") == "session.event"
        else None
    )
    if not isinstance(event, dict):
        return message
    data = event.get("data")
    for kind, key in (("system.message", "content"), ("model.messages_snapshot", "messages")):
        if event.get("type") == kind and isinstance(data, dict) and key in data:
            data[key] = ELIDED.format(len(json.dumps(data[key])))
    return message


def _pump(
    source: IO[bytes], sink: IO[bytes], side: str, out: IO[str], lock: threading.Lock
) -> None:
    while True:
        headers = b""
        while not headers.endswith(b"\r\n\r\n"):
            byte = source.read(1)
            if not byte:
                sink.close()
                return
            headers += byte
        length = next(
            int(line.split(b":", 1)[1])
            for line in headers.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        body = source.read(length)
        sink.write(headers + body)
        sink.flush()
        with lock:
            out.write(json.dumps({side: _recorded(json.loads(body))}) + "\n")
            out.flush()


def main(argv: list[str]) -> int:
    usage = "usage: python -m tests.realagent.copilot_tee OUT.jsonl -- COPILOT ARGS...\n"
    return tee(argv, usage=usage, pump=_pump)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
