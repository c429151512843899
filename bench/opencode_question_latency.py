"""Answer-to-model latency of OpenCode's own `question` tool answered in Compass: from a
person's RespondToAsk to OpenCode's next model request carrying the tool's result, through
Compass's plugin and `compass opencode ask` (issue 34), against the WatchAsk floor of the same
run.

Run from the repository root:

    .venv/bin/python -m bench.opencode_question_latency                 # 20 asks
    .venv/bin/python -m bench.opencode_question_latency --asks 100

Where the database comes from: as in bench/respond.py (`COMPASS_BENCH_DATABASE_URL`, else
`COMPASS_TEST_DATABASE_URL`, an admin DSN where a database of its own is created and dropped,
else a temporary local cluster). OpenCode is the pinned package of tests/realagent/opencode
(scripts/ensure-npm opencode), run as tests/realagent/test_opencode.py runs it
(tests/realagent/served_opencode.py: `opencode serve` in a fresh HOME with the plugin
installed by `compass opencode install`, every other request refused by a loopback proxy).

Set-up, once: one `compass serve` subprocess on a fresh database and a seeded world; ONE
`opencode serve` and one session, prompted once, whose scripted model
(tests/realagent/wire_models.ChatModel, in this process) calls `question` once per turn with
two questions (the first numbered, the second a multi-select), `--warmup` + `--asks` times.

Per ask: the plugin runs `compass opencode ask`, which posts it; the participant (this
process, Connect-JSON over httpx as a browser) finds it with ListPendingAsks, opens the
floor's watcher and waits for its first state, lets `--think` seconds pass (default 0.5: the
command is waiting on its own WatchAsk by then, as it is when a person answers), calls
RespondToAsk (SQLite; Email and SSO) and takes t0 = time.monotonic() right after the OK.

- subject: the time the scripted model received OpenCode's next main-loop request (the one
  carrying the tool result; checked: it is the exact text OpenCode writes), as
  `time.monotonic()` in this process. On the way: the command's WatchAsk wakes, it prints the
  reply, the plugin posts it to OpenCode's in-process /question/{id}/reply, the tool returns,
  OpenCode calls the model.
- floor: a plain WatchAsk client in this process (the bridge's AgentClient.watch_ask with the
  agent's token), opened on the same ask before the answer: when it yields the answered
  state. What any watcher of the ask pays and nothing of the plugin or OpenCode.

Also printed: question -> ask in Compass (from the model request answered with the call to
when ListPendingAsks first lists the ask: the tool starting, the plugin starting `compass
opencode ask`, its start-up check and AppendMessage; polled every 10 ms), and answer ->
receipt stored (the database's answered_at and delivery_reported_at: the command reports
once OpenCode published the tool's result).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from bench import _answer_to_model
from bench._answer_to_model import PROMPT, answer_each, header, report
from bench._receipts import receipt_delays
from bench._timing import machine
from bench.mcp_latency import BenchError
from bench.respond import served_database
from tests import _server
from tests.realagent.model_server import Turn
from tests.realagent.proxy import RefusingProxy
from tests.realagent.served_opencode import served_opencode
from tests.realagent.wire_models import ChatModel

if TYPE_CHECKING:
    import argparse

    from bench._answer_to_model import Answered, Answers

AUTH = "Which auth flows ship in v1?"


def _question(number: int) -> str:
    return f"Which database for service {number}?"


def _ask(number: int) -> dict[str, Any]:
    return {
        "questions": [
            {
                "question": _question(number),
                "header": "DB",
                "options": [
                    {"label": "Postgres", "description": "relational"},
                    {"label": "SQLite", "description": "a file"},
                ],
            },
            {
                "question": AUTH,
                "header": "Auth",
                "multiple": True,
                "options": [
                    {"label": "Email", "description": "links"},
                    {"label": "OAuth", "description": "providers"},
                    {"label": "SSO", "description": "SAML"},
                ],
            },
        ]
    }


def script(count: int) -> list[Turn]:
    calls = [Turn.call("question", _ask(n), f"call_{n}") for n in range(count)]
    return [*calls, Turn.say("All set.")]


def expected(number: int) -> str:
    """What OpenCode 1.18.33 hands its model for SQLite; Email and SSO."""
    return (
        f'User has answered your questions: "{_question(number)}"="SQLite", "{AUTH}"="Email, '
        "SSO\". You can now continue with the user's answers in mind."
    )


ANSWERS: Answers = [
    {"questionId": "q1", "chosenOptionIds": ["1"]},
    {"questionId": "q2", "chosenOptionIds": ["0", "2"]},
]
"""SQLite; Email and SSO (the plugin's question ids are q1, q2, ...)."""


async def measure(
    server_url: str, dsn: str, *, asks: int, warmup: int, think: float
) -> tuple[Answered, list[float]]:
    world = await _server.seed_world(dsn, prefix="opencode-question-")
    total = warmup + asks
    with (
        tempfile.TemporaryDirectory(prefix="compass-opencode-question-latency-") as tmp,
        ChatModel(script(total)) as model,
        RefusingProxy() as proxy,
        served_opencode(
            tmp=Path(tmp),
            model=model,
            proxy_env=proxy.env(),
            server_url=server_url,
            channel_id=world.channel_id,
            token=world.agent.token,
        ) as opencode,
    ):
        opencode.prompt(opencode.session(), PROMPT)
        async with httpx.AsyncClient(base_url=server_url, timeout=30) as http:
            try:
                measured = await answer_each(
                    http,
                    server_url,
                    world,
                    model,
                    total=total,
                    warmup=warmup,
                    think=think,
                    answers=lambda _: ANSWERS,
                    read_ok=lambda number, read: read == expected(number),
                )
            except (BenchError, TimeoutError) as exc:
                raise BenchError(f"{exc!r}; OpenCode's log:\n{opencode.log()[-2000:]}") from exc
        if proxy.refused:
            print(f"refused by the proxy: {proxy.refused}", file=sys.stderr)
    return measured, await receipt_delays(dsn, ask_ids=measured.ask_ids)


async def run_all(args: argparse.Namespace, admin: str, where: str) -> int:
    async with served_database(admin) as (server, dsn, settings):
        print(f"database: {where}; {settings}; {machine()}")
        print(header("OpenCode's next model request carrying the question tool's result", args))
        try:
            measured, receipts = await measure(
                server.url, dsn, asks=args.asks, warmup=args.warmup, think=args.think
            )
        except (BenchError, TimeoutError) as exc:
            print(f"FAILED: {exc!r}")
            return 1
    ordered = sorted(measured.asked)
    middle = ordered[len(ordered) // 2] if ordered else float("nan")
    asked = (
        f"question -> ask in Compass: p50 {middle * 1000:.0f} ms, max "
        f"{(ordered[-1] if ordered else float('nan')) * 1000:.0f} ms"
    )
    title = (
        f"OpenCode 1.18.33 (opencode serve) with Compass's plugin ({len(measured.subject)} asks)"
    )
    for line in report(title, measured, receipts, ratio="plugin+OpenCode / floor", extra=[asked]):
        print(line)
    return 0


def main(argv: list[str] | None = None) -> int:
    return _answer_to_model.main("opencode_question_latency", __doc__, argv, run_all, asks=20)


if __name__ == "__main__":
    raise SystemExit(main())
