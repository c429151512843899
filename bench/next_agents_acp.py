"""Answer-to-model latency of Qwen Code over `compass agent-bridge --protocol acp`: from a
person's RespondToAsk to Qwen Code's next model request carrying its `ask_user_question`
result, against the WatchAsk floor of the same run (issue 34).

Run from the repository root:

    .venv/bin/python -m bench.next_agents_acp                  # 20 asks
    .venv/bin/python -m bench.next_agents_acp --asks 50 --think 0

Where the database comes from: as in bench/respond.py (`COMPASS_BENCH_DATABASE_URL`, else
`COMPASS_TEST_DATABASE_URL`, an admin DSN where a database of its own is created and dropped,
else a temporary local cluster). The agent is the pinned package of tests/realagent/qwen
(scripts/ensure-npm), launched as tests/realagent/test_acp_agents.py launches it
(tests/realagent/acp_agents.qwen_launch: HOME in a temp dir, every other request refused by
a loopback proxy), under the bridge as docs/agents/acp.md gives it (`--mode default -- qwen
--acp`).

Set-up, once: one `compass serve` subprocess on a fresh database, a seeded world, a scripted
chat-completions model (tests/realagent/wire_models.ChatModel, in this process) whose turns
1..N each call `ask_user_question` with two questions (the second a multi-select; the first
numbered) and whose turn N+1 is plain text, and ONE bridge process running Qwen Code for one
prompt that makes all N calls.

Per ask: the participant (this process, Connect-JSON over httpx as a browser) finds it with
ListPendingAsks, opens the floor's watcher and waits for its first state, lets `--think`
seconds pass (default 0.5: the bridge is following the ask by then, as it is when a person
answers), calls RespondToAsk (DB: SQLite; Auth: Email and SSO) and takes t0 = time.monotonic()
right after the OK arrived.

- subject: the time the scripted model received Qwen Code's next main-loop request (checked:
  its tool result is exactly `User has provided the following answers:\\n\\n**DB**: SQLite\\n
  **Auth**: Email, SSO`). On the way: the server's change notification wakes the bridge's
  WatchAsk, the bridge answers the `session/request_permission` with Qwen's `answers`, Qwen
  Code runs the tool and sends the next request.
- floor: a plain WatchAsk client in this process (the bridge's AgentClient.watch_ask with the
  agent's token), opened on the same ask before the answer: when it yields the answered state.

Reported: p50, p99 and max of both, the ratios subject/floor at p50 and p99, and answer ->
receipt stored (the database's answered_at and delivery_reported_at: the bridge reports once
the call's completing update carried what the model read).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench import _answer_to_model
from bench._answer_to_model import measure_run, print_setting, run_agent, under_bridge
from bench.respond import served_database
from tests.realagent.acp_agents import ensure_npm, qwen_launch
from tests.realagent.model_server import Turn

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from bench._answer_to_model import Answers
    from tests.realagent.acp_agents import AgentLaunch
    from tests.realagent.wire_models import ChatModel

TITLE = "Qwen Code 0.24.4"
READ = "User has provided the following answers:\n\n**DB**: SQLite\n**Auth**: Email, SSO"
"""What the model must read for each answer (checked on every ask)."""
ANSWERS: Answers = [
    {"questionId": "question_0", "chosenOptionIds": ["1"]},
    {"questionId": "question_1", "chosenOptionIds": ["0", "2"]},
]
"""DB: SQLite; Auth: Email and SSO."""


def _ask(number: int) -> dict[str, Any]:
    return {
        "questions": [
            {
                "question": f"Which database for service {number}?",
                "header": "DB",
                "options": [
                    {"label": "Postgres", "description": "Relational"},
                    {"label": "SQLite", "description": "Embedded"},
                ],
            },
            {
                "question": "Which auth flows ship in v1?",
                "header": "Auth",
                "multiSelect": True,
                "options": [
                    {"label": "Email", "description": "classic"},
                    {"label": "OAuth", "description": "Google, GitHub"},
                    {"label": "SSO", "description": "SAML"},
                ],
            },
        ]
    }


def script(count: int) -> list[Turn]:
    calls = [Turn.call("ask_user_question", _ask(n), f"call_{n}") for n in range(count)]
    return [*calls, Turn.say("All set.")]


def _qwen(tmp: Path, model: ChatModel, proxy_env: dict[str, str]) -> tuple[AgentLaunch, list[str]]:
    """Qwen Code as tests/realagent/test_acp_agents.py launches it, and the bridge's
    `--mode default` it takes."""
    launch = qwen_launch(ensure_npm("qwen"), tmp, model.base_url, proxy_env)
    return launch, launch.bridge_args


def _read_ok(_number: int, read: str) -> bool:
    return read == READ


async def run_all(args: argparse.Namespace, admin: str, where: str) -> int:
    async with served_database(admin) as (server, dsn, settings):
        print_setting(
            where,
            settings,
            "Qwen Code's next model request carrying the `ask_user_question` result",
            args,
        )
        run = under_bridge(server.url, "acp", _qwen, script)
        ok = await run_agent(
            "qwen",
            measure_run(
                server.url, dsn, args, name="qwen-acp", run=run, answers=ANSWERS, read_ok=_read_ok
            ),
            title=f"qwen: {TITLE} over ACP (compass agent-bridge; {{asks}} asks)",
            ratio="qwen over ACP / floor",
        )
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    return _answer_to_model.main("next_agents_acp", __doc__, argv, run_all, asks=20)


if __name__ == "__main__":
    raise SystemExit(main())
