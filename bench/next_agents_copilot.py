"""Answer-to-model latency of GitHub Copilot CLI's own `ask_user` over `compass agent-bridge
--protocol copilot`: from a person's RespondToAsk to Copilot's next model request carrying the
tool's result, against the WatchAsk floor of the same run (issue 34).

Run from the repository root:

    .venv/bin/python -m bench.next_agents_copilot                  # 20 asks
    .venv/bin/python -m bench.next_agents_copilot --asks 50 --think 0

Where the database comes from: as in bench/respond.py (`COMPASS_BENCH_DATABASE_URL`, else
`COMPASS_TEST_DATABASE_URL`, an admin DSN where a database of its own is created and dropped,
else a temporary local cluster). The agent is the pinned package of tests/realagent/copilot
(scripts/ensure-npm), launched as tests/realagent/test_copilot_native.py launches it
(tests/realagent/copilot_native.copilot_launch: HOME in a temp dir, offline, its BYOK
variables at the scripted model, every other request refused by a loopback proxy), under
the bridge as docs/agents/copilot-cli.md gives it (`--protocol copilot -- copilot`).

Set-up, once: one `compass serve` subprocess on a fresh database, a seeded world, a scripted
chat-completions model (tests/realagent/wire_models.ChatModel, in this process) whose turns
1..N each call `ask_user` with one numbered question and two choices and whose turn N+1 is
plain text, and ONE bridge process running Copilot CLI for one prompt that makes all N calls.

Per ask: the participant (this process, Connect-JSON over httpx as a browser) finds it with
ListPendingAsks, opens the floor's watcher and waits for its first state, lets `--think`
seconds pass (default 0.5: the bridge is following the ask by then, as it is when a person
answers), calls RespondToAsk (SQLite) and takes t0 = time.monotonic() right after the OK
arrived.

- subject: the time the scripted model received Copilot's next main-loop request (checked:
  its tool result is exactly `User selected: SQLite`). On the way: the server's change
  notification wakes the bridge's WatchAsk, the bridge sends `session.ui.handlePendingUserInput`
  over the CLI's stdin, Copilot completes the tool call and sends the next request.
- floor: a plain WatchAsk client in this process (the bridge's AgentClient.watch_ask with the
  agent's token), opened on the same ask before the answer: when it yields the answered state.

Reported: p50, p99 and max of both, the ratios subject/floor at p50 and p99, and answer ->
receipt stored (the database's answered_at and delivery_reported_at: the bridge reports once
the call's `tool.execution_complete` carried what the model read).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench import _answer_to_model
from bench._answer_to_model import measure_run, print_setting, run_agent, under_bridge
from bench.respond import served_database
from tests.realagent.copilot_native import VERSION, copilot_launch
from tests.realagent.model_server import Turn

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from bench._answer_to_model import Answers
    from tests.realagent.copilot_native import CopilotLaunch
    from tests.realagent.wire_models import ChatModel

TITLE = f"Copilot CLI {VERSION}"
READ = "User selected: SQLite"
"""What the model must read for each answer (checked on every ask)."""
ANSWERS: Answers = [{"questionId": "answer", "chosenOptionIds": ["1"]}]
"""SQLite."""


def _ask(number: int) -> dict[str, Any]:
    return {"question": f"Which database for service {number}?", "choices": ["Postgres", "SQLite"]}


def script(count: int) -> list[Turn]:
    calls = [Turn.call("ask_user", _ask(n), f"call_{n}") for n in range(count)]
    return [*calls, Turn.say("All set.")]


def _copilot(
    tmp: Path, model: ChatModel, proxy_env: dict[str, str]
) -> tuple[CopilotLaunch, list[str]]:
    """Copilot CLI as tests/realagent/test_copilot_native.py launches it (the bridge adds
    its server's flags)."""
    return copilot_launch(tmp, model.base_url, proxy_env), []


def _read_ok(_number: int, read: str) -> bool:
    return read == READ


async def run_all(args: argparse.Namespace, admin: str, where: str) -> int:
    async with served_database(admin) as (server, dsn, settings):
        print_setting(
            where, settings, "Copilot's next model request carrying the `ask_user` result", args
        )
        run = under_bridge(server.url, "copilot", _copilot, script)
        ok = await run_agent(
            "copilot",
            measure_run(
                server.url, dsn, args, name="copilot", run=run, answers=ANSWERS, read_ok=_read_ok
            ),
            title=(
                f"copilot: {TITLE}, its own ask_user (agent-bridge --protocol copilot; "
                "{asks} asks)"
            ),
            ratio="copilot's ask_user / floor",
        )
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    return _answer_to_model.main("next_agents_copilot", __doc__, argv, run_all, asks=20)


if __name__ == "__main__":
    raise SystemExit(main())
