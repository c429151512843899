"""Every ask ends with a typed outcome (design record, resolved decision 11): the store's
transitions, refusals, read-back, the deadline sweep, and rows migrated from version 1."""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg
import pytest

from compass_server.domain.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
)
from compass_server.store import AccountKind
from compass_server.store.migrate import migrate
from compass_server.store.postgres import SWEEPER_LOCK_KEY, PostgresStore
from gen.compass.v1 import comms_pb2
from tests.integration.store._seed import (
    World,
    answer,
    answer_ask,
    ask,
    close_ask,
    decline_ask,
    question,
    seed,
    text,
    update_message,
)

if TYPE_CHECKING:
    from compass_server.store import AccountRow

REPO_MIGRATIONS = Path(__file__).resolve().parents[3] / "compass_server" / "store" / "migrations"
S = comms_pb2
NO_GRACE = timedelta(0)


def deadline_ask(
    *, deadline: datetime | None = None, policy: int = S.ASK_TIMEOUT_POLICY_UNSPECIFIED
) -> comms_pb2.MessageBlock:
    block = ask(question("db", "0", "1", recommended=0), question("x", "a", "b", multi=True))
    if deadline is not None:
        block.ask.deadline.FromDatetime(deadline)
    block.ask.on_timeout = policy  # pyright: ignore[reportAttributeAccessIssue] - an int enum
    return block


async def new_ask(store: PostgresStore, world: World, **kwargs: object) -> str:
    message = await world.post(store, text("hi"), deadline_ask(**kwargs))  # pyright: ignore[reportArgumentType]
    (ask_id,) = message.ask_ids
    return ask_id


TIMEOUT_ANSWERS = (answer("db", "0"), answer("x", "a"))
HUMAN_ANSWERS = (answer("db", "1"), answer("x"))


# -- read-back ---------------------------------------------------------------------------------


async def test_a_new_ask_is_pending_with_the_deadline_and_policy_it_was_sent_with(
    store: PostgresStore, world: World
) -> None:
    when = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    message = await world.post(
        store, deadline_ask(deadline=when, policy=S.ASK_TIMEOUT_POLICY_PICK_RECOMMENDED)
    )
    (block,) = message.blocks
    assert block.ask.status == S.ASK_STATUS_PENDING
    assert block.ask.deadline.ToDatetime(tzinfo=UTC) == when
    assert block.ask.on_timeout == S.ASK_TIMEOUT_POLICY_PICK_RECOMMENDED
    got = await store.get_ask(world.human, message.ask_ids[0])
    assert got.ask == block.ask
    (listed,) = (await store.list_messages(world.human, world.channel.channel_id)).messages
    assert listed.blocks[0].ask == block.ask
    # An update keeps the stored deadline and policy, whatever the agent sends for them.
    resent = comms_pb2.MessageBlock()
    resent.CopyFrom(block)
    resent.ask.ClearField("deadline")
    resent.ask.on_timeout = S.ASK_TIMEOUT_POLICY_FAIL
    updated = await update_message(store, world.agent, message.message_id, [text("t"), resent])
    assert updated.blocks[1].ask == block.ask
    # A new ask added by an update is pending with its own deadline.
    added = deadline_ask(deadline=when + timedelta(hours=1), policy=S.ASK_TIMEOUT_POLICY_FAIL)
    again = await update_message(store, world.agent, message.message_id, [*updated.blocks, added])
    new = again.blocks[2].ask
    assert new.status == S.ASK_STATUS_PENDING
    assert new.on_timeout == S.ASK_TIMEOUT_POLICY_FAIL
    assert new.deadline.ToDatetime(tzinfo=UTC) == when + timedelta(hours=1)
    assert (await store.get_ask(world.human, new.ask_id)).ask == new


# -- transitions -------------------------------------------------------------------------------


async def test_answer_sets_answered(store: PostgresStore, world: World) -> None:
    ask_id = await new_ask(store, world)
    row = await answer_ask(store, world.human, ask_id, HUMAN_ANSWERS)
    assert row.ask.status == S.ASK_STATUS_ANSWERED
    assert (await store.get_ask(world.human, ask_id)).ask == row.ask
    assert not row.ask.closed_by_account_id
    assert not row.ask.HasField("closed_at")


async def test_decline_sets_declined_with_who_and_why(store: PostgresStore, world: World) -> None:
    ask_id = await new_ask(store, world)
    before = (await store.get_channel(world.human, world.channel.channel_id)).revision
    row = await decline_ask(store, world.human, ask_id, "not my call")
    assert row.ask.status == S.ASK_STATUS_DECLINED
    assert row.ask.closed_by_account_id == world.human.account_id
    assert row.ask.closed_by_name == "Ada"
    assert row.ask.close_reason == "not my call"
    assert row.ask.HasField("closed_at")
    assert not row.ask.answered_by_account_id
    assert (await store.get_ask(world.agent, ask_id)).ask == row.ask
    after = await store.get_channel(world.human, world.channel.channel_id)
    assert after.revision == before + 1
    (message,) = await store.messages_after(world.human, world.channel.channel_id, before)
    assert message.revision == after.revision
    assert message.blocks[1].ask == row.ask


async def test_withdraw_sets_withdrawn(store: PostgresStore, world: World) -> None:
    ask_id = await new_ask(store, world)
    row = await close_ask(store, world.agent, ask_id, S.ASK_STATUS_WITHDRAWN, "tool call aborted")
    assert row.ask.status == S.ASK_STATUS_WITHDRAWN
    assert row.ask.closed_by_account_id == world.agent.account_id
    assert row.ask.closed_by_name == "Coding Agent"
    assert row.ask.close_reason == "tool call aborted"
    assert not row.ask.answered_by_account_id
    assert all(not q.chosen_option_ids for q in row.ask.questions)


async def test_timed_out_stores_the_runtime_answers_with_timed_out_set(
    store: PostgresStore, world: World
) -> None:
    ask_id = await new_ask(store, world)
    row = await close_ask(store, world.agent, ask_id, S.ASK_STATUS_TIMED_OUT, "", TIMEOUT_ANSWERS)
    assert row.ask.status == S.ASK_STATUS_TIMED_OUT
    assert row.ask.answered_by_account_id == world.agent.account_id
    assert row.ask.closed_by_account_id == world.agent.account_id
    assert [list(q.chosen_option_ids) for q in row.ask.questions] == [["0"], ["a"]]
    assert all(q.timed_out for q in row.ask.questions)
    assert (await store.get_ask(world.human, ask_id)).ask == row.ask


# -- refusals ----------------------------------------------------------------------------------


async def _final(store: PostgresStore, world: World, status: int) -> str:
    ask_id = await new_ask(store, world)
    if status == S.ASK_STATUS_ANSWERED:
        await answer_ask(store, world.human, ask_id, HUMAN_ANSWERS)
    elif status == S.ASK_STATUS_DECLINED:
        await decline_ask(store, world.human, ask_id, "no")
    elif status == S.ASK_STATUS_WITHDRAWN:
        await close_ask(store, world.agent, ask_id, S.ASK_STATUS_WITHDRAWN, "gone")
    elif status == S.ASK_STATUS_TIMED_OUT:
        await close_ask(store, world.agent, ask_id, S.ASK_STATUS_TIMED_OUT, "", TIMEOUT_ANSWERS)
    else:
        await _expire(store, ask_id)
    return ask_id


async def _expire(store: PostgresStore, ask_id: str) -> None:
    async with store._write() as conn:  # pyright: ignore[reportPrivateUsage] - test setup
        await conn.execute(
            "UPDATE asks SET deadline = now() - interval '1 hour' WHERE ask_id = $1", ask_id
        )
    assert ask_id in await store.expire_due(datetime.now(UTC), NO_GRACE)


OUTCOME_MESSAGES: dict[int, str] = {
    S.ASK_STATUS_ANSWERED: "the ask is already answered",
    S.ASK_STATUS_DECLINED: "the ask was declined by Ada",
    S.ASK_STATUS_WITHDRAWN: "the ask was withdrawn by the agent",
    S.ASK_STATUS_TIMED_OUT: "the ask timed out",
    S.ASK_STATUS_EXPIRED: "the ask expired",
}


@pytest.mark.parametrize("status", list(OUTCOME_MESSAGES), ids=S.AskStatus.Name)
async def test_every_write_to_a_final_ask_fails_naming_the_outcome(
    store: PostgresStore, world: World, status: int
) -> None:
    ask_id = await _final(store, world, status)
    before = await store.get_ask(world.human, ask_id)
    message = OUTCOME_MESSAGES[status]
    with pytest.raises(FailedPreconditionError, match=f"^{re.escape(message)}$"):
        await answer_ask(store, world.human2, ask_id, HUMAN_ANSWERS)
    with pytest.raises(FailedPreconditionError, match=f"^{re.escape(message)}$"):
        await decline_ask(store, world.human2, ask_id, "no")
    with pytest.raises(FailedPreconditionError, match=f"^{re.escape(message)}$"):
        await close_ask(store, world.agent, ask_id, S.ASK_STATUS_WITHDRAWN, "other")
    assert await store.expire_due(datetime.now(UTC) + timedelta(days=1), NO_GRACE) == []
    assert (await store.get_ask(world.human, ask_id)).ask == before.ask


async def test_identical_repeats_by_the_same_account_are_ok(
    store: PostgresStore, world: World
) -> None:
    declined = await new_ask(store, world)
    first = await decline_ask(store, world.human, declined, "no")
    assert (await decline_ask(store, world.human, declined, "no")).ask == first.ask
    with pytest.raises(FailedPreconditionError):
        await decline_ask(store, world.human, declined, "other reason")
    with pytest.raises(FailedPreconditionError):
        await decline_ask(store, world.human2, declined, "no")

    withdrawn = await new_ask(store, world)
    first = await close_ask(store, world.agent, withdrawn, S.ASK_STATUS_WITHDRAWN, "r")
    again = await close_ask(store, world.agent, withdrawn, S.ASK_STATUS_WITHDRAWN, "r")
    assert again.ask == first.ask
    with pytest.raises(FailedPreconditionError):
        await close_ask(store, world.agent, withdrawn, S.ASK_STATUS_WITHDRAWN, "")

    timed_out = await new_ask(store, world)
    first = await close_ask(
        store, world.agent, timed_out, S.ASK_STATUS_TIMED_OUT, "", TIMEOUT_ANSWERS
    )
    reordered = (answer("x", "a"), answer("db", "0"))
    again = await close_ask(store, world.agent, timed_out, S.ASK_STATUS_TIMED_OUT, "", reordered)
    assert again.ask == first.ask
    with pytest.raises(FailedPreconditionError, match=r"^the ask timed out$"):
        await close_ask(
            store,
            world.agent,
            timed_out,
            S.ASK_STATUS_TIMED_OUT,
            "",
            (answer("db", "1"), answer("x")),
        )
    # An agent's TIMED_OUT answers are no participant's answer to repeat.
    with pytest.raises(FailedPreconditionError, match=r"^the ask timed out$"):
        await answer_ask(store, world.human, timed_out, TIMEOUT_ANSWERS)


async def _second_agent(store: PostgresStore, world: World) -> AccountRow:
    other, _ = await store.create_account(AccountKind.AGENT, "Other Agent")
    await store.add_participant(world.channel.channel_id, other.account_id)
    return other


async def test_only_the_appending_agent_may_close_and_others_get_not_found(
    store: PostgresStore, world: World
) -> None:
    ask_id = await new_ask(store, world)
    other = await _second_agent(store, world)
    for actor in (other, world.human, world.member, world.outsider):
        with pytest.raises(NotFoundError, match=r"^ask not found$"):
            await close_ask(store, actor, ask_id, S.ASK_STATUS_WITHDRAWN)
    with pytest.raises(NotFoundError, match=r"^ask not found$"):
        await close_ask(store, world.agent, "ask_missing", S.ASK_STATUS_WITHDRAWN)
    assert (await store.get_ask(world.human, ask_id)).ask.status == S.ASK_STATUS_PENDING


async def test_decline_follows_the_participant_rules_of_answer(
    store: PostgresStore, world: World
) -> None:
    ask_id = await new_ask(store, world)
    with pytest.raises(NotFoundError, match=r"^ask not found$"):
        await decline_ask(store, world.outsider, ask_id)
    with pytest.raises(NotFoundError, match=r"^ask not found$"):
        await decline_ask(store, world.human, "ask_missing")
    with pytest.raises(
        PermissionDeniedError, match=r"^only participants of the ask's channel may decline it$"
    ):
        await decline_ask(store, world.member, ask_id)
    assert (await decline_ask(store, world.human, ask_id, "x" * 500)).ask.close_reason == "x" * 500


async def test_timed_out_answers_that_do_not_fit_are_invalid_after_the_state_checks(
    store: PostgresStore, world: World
) -> None:
    ask_id = await new_ask(store, world)
    with pytest.raises(InvalidArgumentError) as raised:
        await close_ask(
            store,
            world.agent,
            ask_id,
            S.ASK_STATUS_TIMED_OUT,
            "",
            (answer("db", "9"), answer("nope")),
        )
    assert {v.question_id for v in raised.value.violations} >= {"db", "nope", "x"}
    assert (await store.get_ask(world.human, ask_id)).ask.status == S.ASK_STATUS_PENDING
    # Final first: a FAILED_PRECONDITION outranks the answers' problems.
    await decline_ask(store, world.human, ask_id)
    with pytest.raises(FailedPreconditionError):
        await close_ask(
            store, world.agent, ask_id, S.ASK_STATUS_TIMED_OUT, "", (answer("db", "9"),)
        )


# -- the deadline sweep ------------------------------------------------------------------------


async def test_expire_due_honours_deadlines_policies_and_the_grace(
    store: PostgresStore, world: World
) -> None:
    now = datetime(2031, 5, 1, 12, 0, tzinfo=UTC)
    fail = await new_ask(store, world, deadline=now, policy=S.ASK_TIMEOUT_POLICY_FAIL)
    unspecified = await new_ask(store, world, deadline=now - timedelta(seconds=1))
    pick = await new_ask(store, world, deadline=now, policy=S.ASK_TIMEOUT_POLICY_PICK_RECOMMENDED)
    later = await new_ask(store, world, deadline=now + timedelta(seconds=1))
    never = await new_ask(store, world)
    grace = timedelta(seconds=60)
    assert sorted(await store.expire_due(now - timedelta(seconds=2), grace)) == []
    assert sorted(await store.expire_due(now, grace)) == sorted([fail, unspecified])
    assert await store.expire_due(now, grace) == []  # exactly once
    assert await store.expire_due(now + timedelta(seconds=59), grace) == [later]
    assert await store.expire_due(now + timedelta(seconds=60), grace) == [pick]
    assert await store.expire_due(now + timedelta(days=3650), grace) == []
    for ask_id in (fail, unspecified, pick, later):
        row = await store.get_ask(world.human, ask_id)
        assert row.ask.status == S.ASK_STATUS_EXPIRED
        assert not row.ask.closed_by_account_id
        assert row.ask.HasField("closed_at")
    assert (await store.get_ask(world.human, never)).ask.status == S.ASK_STATUS_PENDING


async def test_a_runtime_report_within_the_grace_wins_over_expiry(
    store: PostgresStore, world: World
) -> None:
    now = datetime(2031, 5, 1, 12, 0, tzinfo=UTC)
    pick = await new_ask(store, world, deadline=now, policy=S.ASK_TIMEOUT_POLICY_PICK_RECOMMENDED)
    assert await store.expire_due(now + timedelta(seconds=30), timedelta(seconds=60)) == []
    await close_ask(store, world.agent, pick, S.ASK_STATUS_TIMED_OUT, "", TIMEOUT_ANSWERS)
    assert await store.expire_due(now + timedelta(days=1), timedelta(seconds=60)) == []


async def test_only_one_sweeper_at_a_time_and_each_ask_expires_once(
    store: PostgresStore, world: World, database_url: str
) -> None:
    now = datetime(2032, 1, 1, tzinfo=UTC)
    ids = {await new_ask(store, world, deadline=now) for _ in range(5)}
    # While another session holds the sweeper lock, a sweep does nothing.
    holder = await asyncpg.connect(database_url)
    try:
        async with holder.transaction():
            assert await holder.fetchval("SELECT pg_try_advisory_xact_lock($1)", SWEEPER_LOCK_KEY)
            assert await store.expire_due(now, NO_GRACE) == []
    finally:
        await holder.close()
    async with (
        PostgresStore(database_url) as second,
        PostgresStore(database_url) as third,
    ):
        results = await asyncio.gather(
            *(s.expire_due(now, NO_GRACE) for s in (store, second, third, store, second))
        )
    expired = [ask_id for result in results for ask_id in result]
    assert sorted(expired) == sorted(ids)


# -- racers ------------------------------------------------------------------------------------


async def test_racing_answer_decline_and_close_have_exactly_one_winner(
    store: PostgresStore, world: World
) -> None:
    for _ in range(3):
        ask_id = await new_ask(store, world)
        calls = [
            answer_ask(store, world.human, ask_id, HUMAN_ANSWERS),
            decline_ask(store, world.human2, ask_id, "no"),
            close_ask(store, world.agent, ask_id, S.ASK_STATUS_WITHDRAWN, "gone"),
            close_ask(store, world.agent, ask_id, S.ASK_STATUS_TIMED_OUT, "", TIMEOUT_ANSWERS),
        ] * 4
        results = await asyncio.gather(*calls, return_exceptions=True)
        final = (await store.get_ask(world.human, ask_id)).ask
        ok = [r for r in results if not isinstance(r, BaseException)]
        failed = [r for r in results if isinstance(r, BaseException)]
        assert all(isinstance(r, FailedPreconditionError) for r in failed), failed
        assert all(r.ask == final for r in ok)
        assert 1 <= len(ok) <= 4  # the winner and its identical repeats
        assert final.status != S.ASK_STATUS_PENDING


# -- rows of version 1 -------------------------------------------------------------------------


async def test_rows_answered_before_version_2_read_back_as_answered(
    empty_database: str, tmp_path: Path
) -> None:
    v1 = tmp_path / "v1"
    v1.mkdir()
    shutil.copy(REPO_MIGRATIONS / "0001_init.sql", v1)
    conn = await asyncpg.connect(empty_database)
    try:
        assert await migrate(conn, v1) == [1]
        async with PostgresStore(empty_database) as old:
            # Rows as version 1 wrote them: only the asks columns it knows.
            world = await seed(old)
            answered_msg = await conn.fetchval(
                """INSERT INTO messages (message_id, channel_id, author_account_id, blocks,
                                         created_revision, revision)
                   VALUES ('msg_a', $1, $2, $3::jsonb, 1, 1) RETURNING message_id""",
                world.channel.channel_id,
                world.agent.account_id,
                '[{"ask": {"ask_id": "ask_a", "questions": [{"question_id": "db", "question": "q",'
                ' "header": "", "allow_multiple": false, "options": [{"id": "0", "label": "l",'
                ' "description": "", "preview": ""}]}]}}]',
            )
            await conn.execute(
                """INSERT INTO asks (ask_id, message_id, channel_id, answers,
                                     answered_by_account_id, answered_at)
                   VALUES ('ask_a', $1, $2, $3::jsonb, $4, now())""",
                answered_msg,
                world.channel.channel_id,
                '[{"question_id": "db", "chosen_option_ids": ["0"], "custom_text": "",'
                ' "timed_out": false}]',
                world.human.account_id,
            )
            await conn.execute(
                """INSERT INTO messages (message_id, channel_id, author_account_id, blocks,
                                         created_revision, revision)
                   VALUES ('msg_p', $1, $2, $3::jsonb, 2, 2)""",
                world.channel.channel_id,
                world.agent.account_id,
                '[{"ask": {"ask_id": "ask_p", "questions": [{"question_id": "db", "question": "q",'
                ' "header": "", "allow_multiple": false, "options": []}]}}]',
            )
            await conn.execute(
                "INSERT INTO asks (ask_id, message_id, channel_id) VALUES ('ask_p', 'msg_p', $1)",
                world.channel.channel_id,
            )
        applied = await migrate(conn, REPO_MIGRATIONS)
        assert applied[0] == 2  # then any later versions, in order
        assert applied == sorted(applied)
        async with PostgresStore(empty_database) as new:
            answered = await new.get_ask(world.human, "ask_a")
            assert answered.ask.status == S.ASK_STATUS_ANSWERED
            assert answered.ask.answered_by_name == "Ada"
            pending = await new.get_ask(world.human, "ask_p")
            assert pending.ask.status == S.ASK_STATUS_PENDING
            assert pending.ask.on_timeout == S.ASK_TIMEOUT_POLICY_UNSPECIFIED
            assert not pending.ask.HasField("deadline")
        # The CHECK ties status to the answer and closed columns.
        for bad in (
            "UPDATE asks SET status = 'declined' WHERE ask_id = 'ask_p'",
            "UPDATE asks SET status = 'pending' WHERE ask_id = 'ask_a'",
            "UPDATE asks SET status = 'expired', closed_at = now(),"
            " closed_by_account_id = answered_by_account_id WHERE ask_id = 'ask_a'",
            "UPDATE asks SET status = 'bogus' WHERE ask_id = 'ask_p'",
            "UPDATE asks SET on_timeout = 'later' WHERE ask_id = 'ask_p'",
            "UPDATE asks SET close_reason = repeat('x', 501) WHERE ask_id = 'ask_p'",
        ):
            with pytest.raises(asyncpg.CheckViolationError):
                await conn.execute(bad)
    finally:
        await conn.close()


async def test_the_sweeper_uses_its_injected_clock_and_survives_a_failed_sweep(
    store: PostgresStore, world: World
) -> None:
    from compass_server.background.sweeper import Sweeper
    from compass_server.domain.errors import UnavailableError

    now = datetime(2040, 1, 1, tzinfo=UTC)
    ask_id = await new_ask(store, world, deadline=now, policy=S.ASK_TIMEOUT_POLICY_FAIL)
    clock = [now - timedelta(seconds=1)]
    sweeper = Sweeper(store, interval=0.01, grace=NO_GRACE, clock=lambda: clock[0])
    assert await sweeper.sweep_once() == []
    clock[0] = now
    assert await sweeper.sweep_once() == [ask_id]

    calls = 0
    third = asyncio.Event()

    class Flaky:
        async def expire_due(self, now: datetime, grace: timedelta) -> list[str]:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise UnavailableError("database unavailable")
            if calls == 2:
                raise RuntimeError("boom")
            third.set()
            return []

    flaky = Sweeper(Flaky(), interval=0.01)  # pyright: ignore[reportArgumentType] - a partial double
    told: list[list[str] | None] = []
    flaky.on_swept = lambda ids: told.append(None if ids is None else list(ids))
    task = asyncio.create_task(flaky.run())
    try:
        async with asyncio.timeout(5):
            await third.wait()  # the two failed sweeps did not end the loop
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert told[:3] == [None, None, []]  # each sweep is told, the failed ones as None
