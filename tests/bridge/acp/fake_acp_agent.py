"""A DOUBLE of an ACP agent (raw JSON-RPC lines on stdio), beside the tests against the real
oh-my-pi (tests/realagent/): it sends what omp does not send by default, so the bridge's
answers to those requests can be checked end to end.

Usage: fake_acp_agent.py SCRIPT.json OUT.json. SCRIPT is a list of requests
`{"method": ..., "params": {...}}` sent to the client, one after another, once the prompt
arrives (`params.sessionId` is filled in); each reply (result or error) is recorded in OUT,
then the prompt returns `stopReason: end_turn`. Also records the initialize params.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def read() -> dict[str, Any]:
    line = sys.stdin.readline()
    if not line:
        raise SystemExit(0)
    return json.loads(line)


def main() -> None:
    script: list[dict[str, Any]] = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    record: dict[str, Any] = {"replies": []}
    session = "fake-session"
    while True:
        message = read()
        method = message.get("method")
        if method == "initialize":
            record["initialize"] = message["params"]
            send({"id": message["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}}})
        elif method == "session/new":
            send({"id": message["id"], "result": {"sessionId": session}})
        elif method == "session/prompt":
            for index, request in enumerate(script):
                params = {"sessionId": session, **request["params"]}
                send({"id": f"r{index}", "method": request["method"], "params": params})
                while True:
                    reply = read()
                    if reply.get("id") == f"r{index}" and "method" not in reply:
                        break
                record["replies"].append({k: v for k, v in reply.items() if k != "jsonrpc"})
            out.write_text(json.dumps(record))
            send({"id": message["id"], "result": {"stopReason": "end_turn"}})
        elif "id" in message and method is not None:
            send({"id": message["id"], "error": {"code": -32601, "message": "not here"}})


if __name__ == "__main__":
    main()
