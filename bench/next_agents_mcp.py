"""Answer-to-model latency of the next agents over Compass's MCP front door: from a person's
RespondToAsk to the agent's next model request carrying the `ask` tool's result, for Qwen
Code, OpenCode, Copilot CLI and Cline (issue 34), each against the WatchAsk floor of the same
run.

Run from the repository root:

    .venv/bin/python -m bench.next_agents_mcp                        # all four, 20 asks each
    .venv/bin/python -m bench.next_agents_mcp --agents qwen,cline --asks 50

Where the database comes from: as in bench/respond.py (`COMPASS_BENCH_DATABASE_URL`, else
`COMPASS_TEST_DATABASE_URL`, an admin DSN where a database of its own is created and dropped,
else a temporary local cluster). The agents are the pinned packages of tests/realagent/NAME
(scripts/ensure-npm), launched as tests/mcp/test_next_agents.py launches them
(tests/realagent/mcp_agents.py: the configuration docs/agents/NAME.md gives, HOME in a temp
dir, every other request refused by a loopback proxy).

Set-up, once: one `compass serve` subprocess on a fresh database. Per agent: a seeded world;
a scripted chat-completions model (tests/realagent/wire_models.ChatModel, in this process)
whose turns 1..N each call the agent's name for `ask` with a two-question ask (the second a
multi-select; the question text numbered, so no call rejoins an earlier ask) and whose turn
N+1 is plain text; and ONE headless run of the agent (`qwen -p`, `opencode run`, `copilot
-p`, `cline "..."`) making all N calls in one prompt.

Per ask: the participant (this process, Connect-JSON over httpx as a browser) finds it with
ListPendingAsks, opens the floor's watcher and waits for its first state, lets `--think`
seconds pass (default 0.5: the agent's call is waiting on /mcp by then, as it is when a person
answers), calls RespondToAsk (db: SQLite; features: Email and SSO) and takes t0 =
time.monotonic() right after the OK arrived.

- subject: the time the scripted model received the agent's next main-loop request (the one
  carrying the tool result; checked: it names SQLite), as `time.monotonic()` in this process.
  On the way: the server's change notification wakes the call's wait on /mcp, the result goes
  out on the call's SSE stream, the agent's MCP client parses it, the agent formats it for
  its model and sends the next request.
- floor: a plain WatchAsk client in this process (the bridge's AgentClient.watch_ask with the
  agent's token), opened on the same ask before the answer: when it yields the answered state.
  What any watcher of the ask pays and nothing of MCP or the agent.

Reported per agent: p50, p99 and max of both, the ratios subject/floor at p50 and p99, and
answer -> receipt stored (the database's answered_at and delivery_reported_at: /mcp writes
the receipt once the result has gone out whole). An agent that does not get through its asks
fails with a message, the others still run, and the exit code is 1.
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import TYPE_CHECKING, Any

from bench import _answer_to_model
from bench._answer_to_model import (
    PROMPT,
    Headless,
    agent_process,
    measure_run,
    print_setting,
    run_agent,
)
from bench.respond import served_database
from tests.realagent.mcp_agents import AGENTS, launch
from tests.realagent.model_server import Turn

if TYPE_CHECKING:
    import asyncio
    from contextlib import AbstractAsyncContextManager
    from pathlib import Path

    from bench._answer_to_model import Answers
    from tests import _server
    from tests.realagent.mcp_agents import Name
    from tests.realagent.wire_models import ChatModel

ANSWERS: Answers = [
    {"questionId": "db", "chosenOptionIds": ["1"]},
    {"questionId": "features", "chosenOptionIds": ["0", "2"]},
]
"""db: SQLite; features: Email and SSO."""


def _ask(number: int) -> dict[str, Any]:
    return {
        "questions": [
            {
                "id": "db",
                "question": f"Which database for service {number}?",
                "options": [{"label": "Postgres"}, {"label": "SQLite"}],
            },
            {
                "id": "features",
                "question": "Which auth flows ship in v1?",
                "options": [{"label": "Email"}, {"label": "OAuth"}, {"label": "SSO"}],
                "multi": True,
            },
        ]
    }


def script(name: Name, count: int) -> list[Turn]:
    calls = [Turn.call(AGENTS[name].tool, _ask(n), f"call_{n}") for n in range(count)]
    return [*calls, Turn.say("All set.")]


def _headless(name: Name, server_url: str) -> Headless:
    """The agent running PROMPT, its output in tmp/agent.log."""

    def start(
        tmp: Path, world: _server.SeededWorld, model: ChatModel
    ) -> AbstractAsyncContextManager[asyncio.subprocess.Process]:
        return agent_process(
            lambda proxy_env: launch(
                name,
                tmp,
                mcp_url=f"{server_url}mcp",
                token=world.agent.token,
                model_url=model.base_url,
                proxy_env=proxy_env,
                prompt=PROMPT,
            ),
            tmp / "agent.log",
        )

    return Headless(start, "agent.log", "the agent", functools.partial(script, name))


def _read_ok(_number: int, read: str) -> bool:
    return "SQLite" in read and "SSO" in read


async def run_all(args: argparse.Namespace, admin: str, where: str) -> int:
    failed: list[str] = []
    async with served_database(admin) as (server, dsn, settings):
        print_setting(
            where,
            settings,
            "the agent's next model request carrying the `ask` result",
            args,
            per=" per agent",
        )
        for name in args.agents:
            ok = await run_agent(
                name,
                measure_run(
                    server.url,
                    dsn,
                    args,
                    name=name,
                    run=_headless(name, server.url),
                    answers=ANSWERS,
                    read_ok=_read_ok,
                ),
                title=f"{name}: {AGENTS[name].title} over /mcp ({{asks}} asks)",
                ratio=f"{name} over MCP / floor",
            )
            if not ok:
                failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _agents(value: str) -> list[str]:
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in AGENTS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(AGENTS)} (got {value!r})")
    return names


def _more(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agents",
        type=_agents,
        default=list(AGENTS),
        help=f"comma-separated, from {', '.join(AGENTS)} (default all)",
    )


def main(argv: list[str] | None = None) -> int:
    return _answer_to_model.main(
        "next_agents_mcp", __doc__, argv, run_all, asks=20, more=_more, per=" per agent"
    )


if __name__ == "__main__":
    raise SystemExit(main())
