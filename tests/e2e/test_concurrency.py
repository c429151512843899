"""64 concurrent RespondToAsk calls on one ask, over HTTP: exactly one answer wins.

The requests come from two participants with four different answers, sixteen copies of each.
Whichever request the store serialises first wins; the other copies of the winning answer from
the same account are identical retries (OK); everything else is FAILED_PRECONDITION. Nothing is
INTERNAL, and the stored answer is the winner's.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import TYPE_CHECKING

import httpx

from compass_server.store.postgres import PostgresStore
from tests._wait import eventually
from tests.e2e._asks import answer, post_ask, respond
from tests.e2e._connect import Reply, call

if TYPE_CHECKING:
    from tests._server import RunningServer, SeededWorld

CALLS = 64


async def test_64_concurrent_answers_to_one_ask_have_exactly_one_winner(
    compass_server: RunningServer, seeded: SeededWorld
) -> None:
    candidates = [
        (seeded.human, (answer("db", "0"), answer("features", "1"))),
        (seeded.human, (answer("db", "1"), answer("features"))),
        (seeded.human2, (answer("db", "0"), answer("features", "1"))),  # same picks, other account
        (seeded.human2, (answer("db", custom_text="neither"), answer("features", "0", "3"))),
    ]
    limits = httpx.Limits(max_connections=CALLS, max_keepalive_connections=CALLS)
    async with httpx.AsyncClient(base_url=compass_server.url, timeout=60, limits=limits) as client:
        ask_id = await post_ask(client, seeded.agent.token, seeded.channel_id)
        plan = list(itertools.islice(itertools.cycle(range(len(candidates))), CALLS))
        start = asyncio.Event()
        at_the_line: list[int] = []

        async def one(choice: int) -> tuple[int, Reply]:
            account, answers = candidates[choice]
            at_the_line.append(choice)
            await start.wait()
            return choice, await call(
                client, "RespondToAsk", respond(ask_id, *answers), account.token
            )

        tasks = [asyncio.create_task(one(choice)) for choice in plan]
        await eventually(lambda: len(at_the_line) == CALLS, "every task at the start line")
        start.set()
        results = await asyncio.gather(*tasks)

    codes = [(reply.code, reply.status) for _, reply in results]
    assert set(codes) <= {("ok", 200), ("failed_precondition", 400)}, codes
    winners = {choice for choice, reply in results if reply.ok}
    assert len(winners) == 1, winners
    (winner,) = winners
    for choice, reply in results:
        if choice == winner:
            assert reply.ok, reply  # the winning request and its identical retries
            assert reply.body == {}
        else:
            assert reply.message == "the ask is already answered", reply
    assert sum(reply.ok for _, reply in results) == plan.count(winner)

    account, answers = candidates[winner]
    async with PostgresStore(compass_server.dsn, pool_min=1, pool_max=1) as store:
        reader = await store.get_account(seeded.human.account_id)
        stored = (await store.get_ask(reader, ask_id)).ask
    assert stored.answered_by_account_id == account.account_id
    assert [
        (q.question_id, list(q.chosen_option_ids), q.custom_text) for q in stored.questions
    ] == [(a["questionId"], a["chosenOptionIds"], a.get("customText", "")) for a in answers]
