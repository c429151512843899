"""answer_ask on PostgreSQL: guard order, the validation matrix, atomicity, identical retry."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import asyncpg
import pytest

from compass_server.domain.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
)
from tests.integration.store._seed import World, answer, answer_ask, ask, question, text

if TYPE_CHECKING:
    from compass_server.store.postgres import PostgresStore
    from gen.compass.v1 import comms_pb2

QUESTIONS = (
    question("db", "pg", "my"),  # single-select
    question("auth", "pw", "sso", "otp", multi=True),
    question("why"),  # no options: free text only
)
VALID = [answer("db", "pg"), answer("auth", "pw", "sso"), answer("why", custom_text="because")]


async def post_ask(store: PostgresStore, world: World) -> tuple[str, str]:
    message = await world.post(store, text("Questions:"), ask(*QUESTIONS))
    return message.message_id, message.ask_ids[0]


async def test_a_valid_answer_is_stored_with_who_and_when(
    store: PostgresStore, world: World
) -> None:
    message_id, ask_id = await post_ask(store, world)
    before = datetime.now(UTC)
    returned = await answer_ask(store, world.human, ask_id, VALID)
    stored = await store.get_ask(world.human2, ask_id)
    assert stored == returned
    assert stored.answered
    assert (stored.message_id, stored.channel_id) == (message_id, world.channel.channel_id)
    got = stored.ask
    assert [list(q.chosen_option_ids) for q in got.questions] == [["pg"], ["pw", "sso"], []]
    assert [q.custom_text for q in got.questions] == ["", "", "because"]
    assert not any(q.timed_out for q in got.questions)
    assert got.answered_by_account_id == world.human.account_id
    assert got.answered_by_name == "Ada"
    answered_at = got.answered_at.ToDatetime(tzinfo=UTC)
    assert before - timedelta(seconds=5) <= answered_at <= datetime.now(UTC) + timedelta(seconds=5)
    # The message shows the answer too, at a new revision.
    (message,) = (await store.list_messages(world.human, world.channel.channel_id)).messages
    assert message.blocks[1].ask == got
    assert message.revision == 2
    assert message.updated_at > message.created_at


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        pytest.param([VALID[0], VALID[1]], [("answers", "why")], id="missing"),
        pytest.param(
            [*VALID, answer("db", "my")], [("answers[3].question_id", "db")], id="repeated"
        ),
        pytest.param(
            [*VALID, answer("zz")], [("answers[3].question_id", "zz")], id="unknown-question"
        ),
        pytest.param(
            [answer("db", "sqlite"), VALID[1], VALID[2]],
            [("answers[0].chosen_option_ids[0]", "db")],
            id="unknown-option",
        ),
        pytest.param(
            [VALID[0], answer("auth", "sso", "sso"), VALID[2]],
            [("answers[1].chosen_option_ids[1]", "auth")],
            id="repeated-option",
        ),
        pytest.param(
            [answer("db", "pg", "my"), VALID[1], VALID[2]],
            [("answers[0].chosen_option_ids", "db")],
            id="two-picks-single-select",
        ),
        pytest.param(
            [answer("db", "pg", custom_text="or both"), VALID[1], VALID[2]],
            [("answers[0].custom_text", "db")],
            id="pick-plus-text-single-select",
        ),
        pytest.param(
            [VALID[0], VALID[1], answer("why", "pg")],
            [("answers[2].chosen_option_ids[0]", "why")],
            id="pick-on-zero-option-question",
        ),
    ],
)
async def test_validation_rejections_name_the_question_and_store_nothing(
    store: PostgresStore,
    world: World,
    answers: list[comms_pb2.AskQuestionAnswer],
    expected: list[tuple[str, str]],
) -> None:
    _, ask_id = await post_ask(store, world)
    with pytest.raises(InvalidArgumentError) as caught:
        await answer_ask(store, world.human, ask_id, answers)
    violations = caught.value.violations
    assert [(v.field, v.question_id) for v in violations] == expected
    for violation in violations:
        assert f'question "{violation.question_id}"' in violation.description
    assert not (await store.get_ask(world.human, ask_id)).answered
    assert (await store.get_channel(world.human, world.channel.channel_id)).revision == 1


@pytest.mark.parametrize(
    ("answers", "chosen", "texts"),
    [
        pytest.param(
            [VALID[0], answer("auth", "otp", custom_text="and passkeys"), VALID[2]],
            [["pg"], ["otp"], []],
            ["", "and passkeys", "because"],
            id="free-text-alongside-picks-on-multi",
        ),
        pytest.param(
            [answer("db"), answer("auth"), answer("why")],
            [[], [], []],
            ["", "", ""],
            id="empty-entries-are-skips",
        ),
        pytest.param(
            [
                answer("db", custom_text="sqlite"),
                VALID[1],
                answer("why", custom_text="free text only"),
            ],
            [[], ["pw", "sso"], []],
            ["sqlite", "", "free text only"],
            id="free-text-instead-of-a-pick-and-zero-option-question",
        ),
    ],
)
async def test_accepted_answers_are_stored_as_sent(
    store: PostgresStore,
    world: World,
    answers: list[comms_pb2.AskQuestionAnswer],
    chosen: list[list[str]],
    texts: list[str],
) -> None:
    _, ask_id = await post_ask(store, world)
    await answer_ask(store, world.human, ask_id, answers)
    got = (await store.get_ask(world.human, ask_id)).ask
    assert [list(q.chosen_option_ids) for q in got.questions] == chosen
    assert [q.custom_text for q in got.questions] == texts


# -- guard order (docs/spec.md §4 steps 2-6) --------------------------------------------------------


async def test_missing_and_invisible_asks_are_the_same_not_found(
    store: PostgresStore, world: World
) -> None:
    _, ask_id = await post_ask(store, world)
    with pytest.raises(NotFoundError) as missing:
        await answer_ask(store, world.human, "ask_doesnotexist", VALID)
    with pytest.raises(NotFoundError) as invisible:
        await answer_ask(store, world.outsider, ask_id, VALID)
    assert missing.value.message == invisible.value.message == "ask not found"
    with pytest.raises(NotFoundError, match=r"^ask not found$"):
        await store.get_ask(world.outsider, ask_id)


async def test_a_member_who_is_not_a_participant_sees_but_may_not_answer(
    store: PostgresStore, world: World
) -> None:
    _, ask_id = await post_ask(store, world)
    assert (await store.get_ask(world.member, ask_id)).ask.questions[0].question_id == "db"
    with pytest.raises(PermissionDeniedError):
        await answer_ask(store, world.member, ask_id, [answer("nope")])  # 4 before 6
    assert not (await store.get_ask(world.human, ask_id)).answered


async def test_already_answered_comes_before_validation(store: PostgresStore, world: World) -> None:
    _, ask_id = await post_ask(store, world)
    await answer_ask(store, world.human, ask_id, VALID)
    with pytest.raises(FailedPreconditionError):
        await answer_ask(store, world.human2, ask_id, VALID)  # identical, but another account
    with pytest.raises(FailedPreconditionError):
        await answer_ask(store, world.human, ask_id, [answer("zz")])  # invalid: still step 5
    with pytest.raises(FailedPreconditionError):
        await answer_ask(store, world.human, ask_id, [VALID[0], answer("auth", "pw"), VALID[2]])


async def test_an_identical_retry_by_the_same_account_succeeds_and_changes_nothing(
    store: PostgresStore, world: World
) -> None:
    _, ask_id = await post_ask(store, world)
    first = await answer_ask(store, world.human, ask_id, VALID)
    revision = (await store.get_channel(world.human, world.channel.channel_id)).revision
    retry = [answer("why", custom_text="because"), answer("auth", "sso", "pw"), answer("db", "pg")]
    again = await answer_ask(store, world.human, ask_id, retry)
    assert again == first  # same answer, same answered_at
    assert (await store.get_ask(world.human, ask_id)) == first
    assert (await store.get_channel(world.human, world.channel.channel_id)).revision == revision


async def test_thirty_two_concurrent_answers_have_exactly_one_winner(
    store: PostgresStore, world: World
) -> None:
    message = await world.post(store, ask(question("n", *[str(i) for i in range(32)])))
    ask_id = message.ask_ids[0]
    results = await asyncio.gather(
        *(answer_ask(store, world.human, ask_id, [answer("n", str(i))]) for i in range(32)),
        return_exceptions=True,
    )
    winners = [(i, r) for i, r in enumerate(results) if not isinstance(r, BaseException)]
    losers = [r for r in results if isinstance(r, BaseException)]
    assert len(winners) == 1
    assert len(losers) == 31
    assert all(isinstance(r, FailedPreconditionError) for r in losers)
    index, _ = winners[0]
    stored = (await store.get_ask(world.human, ask_id)).ask
    assert list(stored.questions[0].chosen_option_ids) == [str(index)]
    # Exactly one write: one new revision.
    assert (await store.get_channel(world.human, world.channel.channel_id)).revision == 2


async def test_concurrent_answers_from_different_accounts_have_one_winner(
    store: PostgresStore, world: World
) -> None:
    _, ask_id = await post_ask(store, world)
    results = await asyncio.gather(
        answer_ask(store, world.human, ask_id, VALID),
        answer_ask(store, world.human2, ask_id, VALID),
        return_exceptions=True,
    )
    assert sorted(type(r).__name__ for r in results) == ["AskRow", "FailedPreconditionError"]


# -- answers that wait for the channel lock (each test holds it from a connection of its own)


async def _hold_channel_lock(database_url: str, channel_id: str) -> asyncpg.Connection:
    conn = await asyncpg.connect(database_url)
    await conn.execute("BEGIN")
    await conn.execute("SELECT 1 FROM channels WHERE channel_id = $1 FOR NO KEY UPDATE", channel_id)
    return conn


async def _until_waiting(database_url: str, count: int) -> None:
    """Until `count` of the store's connections wait for a lock. (Asked on a connection of its
    own: within a transaction pg_stat_activity keeps showing what it showed first.)"""
    conn = await asyncpg.connect(database_url)
    try:
        for _ in range(500):
            waiting = await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND application_name = 'compass' AND wait_event_type = 'Lock'"
            )
            if waiting == count:
                return
            await asyncio.sleep(0.01)
    finally:
        await conn.close()
    raise AssertionError(f"never saw {count} store connections waiting for a lock")


async def test_identical_answers_that_queued_for_the_lock_both_succeed(
    store: PostgresStore, world: World, database_url: str
) -> None:
    # Both read the ask unanswered, then their writes queue behind the holder. The first
    # writes; the second finds the channel moved on, judges the ask again under the lock and
    # finds it answered, identically by the same account: OK, and no second write.
    _, ask_id = await post_ask(store, world)
    holder = await _hold_channel_lock(database_url, world.channel.channel_id)
    try:
        first = asyncio.ensure_future(answer_ask(store, world.human, ask_id, VALID))
        second = asyncio.ensure_future(answer_ask(store, world.human, ask_id, VALID))
        await _until_waiting(database_url, 2)
        await holder.execute("COMMIT")
        results = await asyncio.gather(first, second)
    finally:
        await holder.close()
    assert results[0] == results[1] == await store.get_ask(world.human, ask_id)
    assert results[0].answered
    assert (await store.get_channel(world.human, world.channel.channel_id)).revision == 2


async def test_an_answer_that_queued_for_the_lock_is_judged_by_the_questions_it_finds(
    store: PostgresStore, world: World, database_url: str
) -> None:
    # The answer does not fit the ask as first read, so it is judged again under the lock,
    # which it gets only after the holder changed the ask's options (as an update does: under
    # the lock, with a new revision): judged by the new options, it is accepted.
    message = await world.post(store, ask(question("db", "pg", "my")))
    channel_id = world.channel.channel_id
    holder = await _hold_channel_lock(database_url, channel_id)
    try:
        answering = asyncio.ensure_future(
            answer_ask(store, world.human, message.ask_ids[0], [answer("db", "sqlite")])
        )
        await _until_waiting(database_url, 1)
        revision = await holder.fetchval(
            "UPDATE channels SET revision = revision + 1 WHERE channel_id = $1 RETURNING revision",
            channel_id,
        )
        await holder.execute(
            """UPDATE messages
               SET blocks = jsonb_set(blocks, '{0,ask,questions,0,options,1,id}', '"sqlite"'),
                   revision = $2, updated_at = now()
               WHERE message_id = $1""",
            message.message_id,
            revision,
        )
        await holder.execute("COMMIT")
        answered = await answering
    finally:
        await holder.close()
    assert [o.id for o in answered.ask.questions[0].options] == ["pg", "sqlite"]
    assert list(answered.ask.questions[0].chosen_option_ids) == ["sqlite"]
    assert answered == await store.get_ask(world.human, message.ask_ids[0])
    (stored,) = (await store.list_messages(world.human, channel_id)).messages
    assert stored.revision == 3  # append 1, the holder's change 2, the answer 3
