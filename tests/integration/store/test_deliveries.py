"""Delivery receipts on PostgreSQL (ReportDelivery; migrations/0006_delivery_receipts.sql):
who may report, when, what a repeat does, how every read carries the receipt, the change it
notifies, races, the CHECKs, and asks stored before the migration."""

from __future__ import annotations

import asyncio
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg
import pytest

from compass_server.domain.errors import (
    FailedPreconditionError,
    NotFoundError,
    PermissionDeniedError,
)
from compass_server.store import AccountKind, ChangeEvent
from compass_server.store.migrate import migrate
from compass_server.store.postgres import PostgresStore
from gen.compass.v1 import comms_pb2
from tests.integration.store._notify import listen, nothing_notified
from tests.integration.store._seed import (
    World,
    answer,
    answer_ask,
    ask,
    close_ask,
    decline_ask,
    question,
    report_delivery,
    seed,
    text,
    update_message,
    with_ask_ids,
)

if TYPE_CHECKING:
    from compass_server.store import AskRow

REPO_MIGRATIONS = Path(__file__).resolve().parents[3] / "compass_server" / "store" / "migrations"
S = comms_pb2
NOT_DELIVERED = S.DELIVERY_STATE_NOT_DELIVERED
WITH_CHANGES = S.DELIVERY_STATE_DELIVERED_WITH_CHANGES
DETAIL = 'the form was cancelled: the agent read "(cancelled)"'
PAYLOAD = '{"action":"cancel"}'


async def _answered(store: PostgresStore, world: World) -> tuple[str, str]:
    message = await world.post(store, text("hi"), ask(question("db", "0", "1")))
    (ask_id,) = message.ask_ids
    await answer_ask(store, world.human, ask_id, [answer("db", "1")])
    return message.message_id, ask_id


async def _revision(store: PostgresStore, world: World) -> int:
    return (await store.get_channel(world.human, world.channel.channel_id)).revision


async def test_a_receipt_is_stored_once_and_every_read_carries_it(
    store: PostgresStore, world: World, database_url: str
) -> None:
    message_id, ask_id = await _answered(store, world)
    before = await _revision(store, world)
    (answered_message,) = await store.messages_after(world.human, world.channel.channel_id, 0)
    listener, heard = await listen(database_url)
    try:
        row = await report_delivery(store, world.agent, ask_id, NOT_DELIVERED, DETAIL, PAYLOAD)
        event = ChangeEvent.from_payload(await asyncio.wait_for(heard.get(), 5))
    finally:
        await listener.close()
    delivery = row.ask.delivery
    assert (delivery.state, delivery.detail, delivery.payload) == (NOT_DELIVERED, DETAIL, PAYLOAD)
    assert delivery.reported_by_account_id == world.agent.account_id
    assert delivery.reported_by_name == "Coding Agent"
    reported_at = delivery.reported_at.ToDatetime(tzinfo=UTC)
    assert abs(reported_at - datetime.now(UTC)) < timedelta(minutes=1)
    # The answer itself is untouched.
    assert row.ask.status == S.ASK_STATUS_ANSWERED
    assert list(row.ask.questions[0].chosen_option_ids) == ["1"]
    # A change like an answer: one revision, the message touched, watchers told.
    after = await _revision(store, world)
    assert after == before + 1
    assert event == ChangeEvent(
        channel_id=world.channel.channel_id,
        revision=after,
        message_id=message_id,
        ask_ids=(ask_id,),
    )
    (changed,) = await store.messages_after(world.human, world.channel.channel_id, before)
    assert changed.revision == after
    assert changed.updated_at > answered_message.updated_at
    assert changed.blocks[1].ask == row.ask
    # Every read merges it in: GetAsk (and so WatchAsk), for people and the agent; ListMessages.
    assert (await store.get_ask(world.human, ask_id)).ask == row.ask
    assert (await store.get_ask(world.agent, ask_id)).ask == row.ask
    (listed,) = (await store.list_messages(world.member, world.channel.channel_id)).messages
    assert listed.blocks[1].ask == row.ask


async def test_an_ask_without_a_receipt_has_none(store: PostgresStore, world: World) -> None:
    _, ask_id = await _answered(store, world)
    assert not (await store.get_ask(world.human, ask_id)).ask.HasField("delivery")
    pending = await world.post(store, ask(question("x", "0")))
    (inbox,) = (await store.list_pending_asks(world.human)).asks
    assert inbox.ask.ask.ask_id == pending.ask_ids[0]
    assert not inbox.ask.ask.HasField("delivery")


async def test_a_declined_ask_takes_a_receipt_too(store: PostgresStore, world: World) -> None:
    message = await world.post(store, ask(question("db", "0", "1")))
    (ask_id,) = message.ask_ids
    await decline_ask(store, world.human, ask_id, "not mine")
    row = await report_delivery(store, world.agent, ask_id, S.DELIVERY_STATE_DELIVERED)
    assert row.ask.status == S.ASK_STATUS_DECLINED
    assert row.ask.delivery.state == S.DELIVERY_STATE_DELIVERED
    assert row.ask.delivery.detail == ""
    assert row.ask.close_reason == "not mine"


async def test_an_identical_repeat_writes_nothing_and_another_receipt_is_refused(
    store: PostgresStore, world: World, database_url: str
) -> None:
    _, ask_id = await _answered(store, world)
    first = await report_delivery(store, world.agent, ask_id, WITH_CHANGES, DETAIL, PAYLOAD)
    revision = await _revision(store, world)
    listener, heard = await listen(database_url)
    try:
        again = await report_delivery(store, world.agent, ask_id, WITH_CHANGES, DETAIL, PAYLOAD)
        assert again.ask == first.ask
        message = (
            r"^the ask's delivery was already reported \(delivered with changes\); "
            r"a receipt cannot be changed$"
        )
        for state, detail, payload in (
            (S.DELIVERY_STATE_DELIVERED, "", ""),
            (WITH_CHANGES, "other words", PAYLOAD),
            (WITH_CHANGES, DETAIL, "{}"),
            (NOT_DELIVERED, DETAIL, PAYLOAD),
        ):
            with pytest.raises(FailedPreconditionError, match=message):
                await report_delivery(store, world.agent, ask_id, state, detail, payload)
        await nothing_notified(listener, heard)
    finally:
        await listener.close()
    assert await _revision(store, world) == revision
    assert (await store.get_ask(world.human, ask_id)).ask == first.ask


async def _in_status(store: PostgresStore, world: World, status: int) -> str:
    message = await world.post(store, ask(question("db", "0", "1")))
    (ask_id,) = message.ask_ids
    if status == S.ASK_STATUS_WITHDRAWN:
        await close_ask(store, world.agent, ask_id, S.ASK_STATUS_WITHDRAWN, "gone")
    elif status == S.ASK_STATUS_TIMED_OUT:
        await close_ask(store, world.agent, ask_id, S.ASK_STATUS_TIMED_OUT, "", [answer("db", "0")])
    elif status == S.ASK_STATUS_EXPIRED:
        async with store.transaction() as conn:
            await conn.execute(
                "UPDATE asks SET deadline = now() - interval '1 hour' WHERE ask_id = $1", ask_id
            )
        assert ask_id in await store.expire_due(datetime.now(UTC), timedelta(0))
    return ask_id


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (S.ASK_STATUS_PENDING, "the ask is still pending: nothing delivered yet"),
        (
            S.ASK_STATUS_WITHDRAWN,
            "the ask was withdrawn by the agent: there is no answer to deliver",
        ),
        (S.ASK_STATUS_TIMED_OUT, "the ask timed out: there is no answer to deliver"),
        (S.ASK_STATUS_EXPIRED, "the ask expired: there is no answer to deliver"),
    ],
    ids=lambda value: S.AskStatus.Name(value) if isinstance(value, int) else "",
)
async def test_only_an_answered_or_declined_ask_takes_a_receipt(
    store: PostgresStore, world: World, status: int, message: str
) -> None:
    ask_id = await _in_status(store, world, status)
    before = await store.get_ask(world.human, ask_id)
    with pytest.raises(FailedPreconditionError, match=f"^{re.escape(message)}$"):
        await report_delivery(store, world.agent, ask_id, NOT_DELIVERED, DETAIL)
    assert (await store.get_ask(world.human, ask_id)).ask == before.ask


async def test_only_the_agent_that_posted_the_ask_may_report(
    store: PostgresStore, world: World
) -> None:
    _, ask_id = await _answered(store, world)
    # Another agent in the channel sees the ask (its WatchAsk would) but did not post it.
    other, _ = await store.create_account(AccountKind.AGENT, "Other Agent")
    await store.add_participant(world.channel.channel_id, other.account_id)
    with pytest.raises(
        PermissionDeniedError,
        match=r"^only the agent account that posted the ask may report its delivery$",
    ):
        await report_delivery(store, other, ask_id, S.DELIVERY_STATE_DELIVERED)
    # An agent only in the workspace, or elsewhere, does not see it: as absent as no ask.
    member, _ = await store.create_account(AccountKind.AGENT, "Member Agent")
    await store.add_workspace_member(world.workspace.workspace_id, member.account_id)
    stranger, _ = await store.create_account(AccountKind.AGENT, "Stranger")
    await store.add_participant(world.other_channel.channel_id, stranger.account_id)
    for actor in (member, stranger):
        with pytest.raises(NotFoundError, match=r"^ask not found$"):
            await report_delivery(store, actor, ask_id, S.DELIVERY_STATE_DELIVERED)
    with pytest.raises(NotFoundError, match=r"^ask not found$"):
        await report_delivery(store, world.agent, "ask_missing", S.DELIVERY_STATE_DELIVERED)
    # A person is not its author either (people use CommsService; the gate stops them first).
    with pytest.raises(PermissionDeniedError):
        await report_delivery(store, world.human, ask_id, S.DELIVERY_STATE_DELIVERED)
    assert not (await store.get_ask(world.human, ask_id)).ask.HasField("delivery")


async def test_an_update_of_the_message_keeps_the_stored_receipt(
    store: PostgresStore, world: World
) -> None:
    original = (text("hi"), ask(question("db", "0", "1")))
    message = await world.post(store, *original)
    (ask_id,) = message.ask_ids
    await answer_ask(store, world.human, ask_id, [answer("db", "0")])
    reported = await report_delivery(store, world.agent, ask_id, NOT_DELIVERED, DETAIL)
    # The agent cannot forge or erase a receipt through an update: the stored one wins.
    forged = with_ask_ids(list(original), (ask_id,))
    forged[0] = text("hi, edited")
    forged[1].ask.delivery.state = S.DELIVERY_STATE_DELIVERED
    updated = await update_message(store, world.agent, message.message_id, forged)
    assert updated.blocks[1].ask == reported.ask
    erased = with_ask_ids(list(original), (ask_id,))
    again = await update_message(store, world.agent, message.message_id, erased)
    assert again.blocks[1].ask == reported.ask
    assert (await store.get_ask(world.human, ask_id)).ask == reported.ask


async def test_racing_receipts_store_exactly_one(store: PostgresStore, world: World) -> None:
    for _ in range(3):
        _, ask_id = await _answered(store, world)
        calls = [
            report_delivery(store, world.agent, ask_id, S.DELIVERY_STATE_DELIVERED),
            report_delivery(store, world.agent, ask_id, NOT_DELIVERED, DETAIL),
            report_delivery(store, world.agent, ask_id, WITH_CHANGES, DETAIL, PAYLOAD),
        ] * 4
        results = await asyncio.gather(*calls, return_exceptions=True)
        final = (await store.get_ask(world.human, ask_id)).ask
        ok: list[AskRow] = [r for r in results if not isinstance(r, BaseException)]
        failed = [r for r in results if isinstance(r, BaseException)]
        assert all(isinstance(r, FailedPreconditionError) for r in failed), failed
        assert 1 <= len(ok) <= 4  # the winner and its identical repeats
        assert all(r.ask == final for r in ok)
        assert final.HasField("delivery")


async def test_a_receipt_and_an_answer_race_without_a_receipt_on_a_pending_ask(
    store: PostgresStore, world: World
) -> None:
    # A receipt judged under the channel lock never lands on a pending ask: it follows the
    # answer or is refused.
    for _ in range(5):
        message = await world.post(store, ask(question("db", "0", "1")))
        (ask_id,) = message.ask_ids
        receipt, answered = await asyncio.gather(
            report_delivery(store, world.agent, ask_id, S.DELIVERY_STATE_DELIVERED),
            answer_ask(store, world.human, ask_id, [answer("db", "0")]),
            return_exceptions=True,
        )
        assert not isinstance(answered, BaseException), answered
        final = (await store.get_ask(world.human, ask_id)).ask
        if isinstance(receipt, BaseException):
            assert isinstance(receipt, FailedPreconditionError)
            assert not final.HasField("delivery")
        else:
            assert final.HasField("delivery")


# -- the schema: CHECKs, and asks stored before version 6 ------------------------------------


async def test_asks_from_before_version_6_read_back_without_a_receipt_and_take_one(
    empty_database: str, tmp_path: Path
) -> None:
    v5 = tmp_path / "v5"
    v5.mkdir()
    for path in sorted(REPO_MIGRATIONS.glob("000[1-5]_*.sql")):
        shutil.copy(path, v5)
    conn = await asyncpg.connect(empty_database)
    try:
        assert await migrate(conn, v5) == [1, 2, 3, 4, 5]
        world = await _seed_v5(conn, empty_database)
        later = sorted(int(p.name[:4]) for p in REPO_MIGRATIONS.glob("*.sql") if p.name >= "0006")
        assert await migrate(conn, REPO_MIGRATIONS) == later  # 6 and every version after it
        async with PostgresStore(empty_database) as store:
            for ask_id in ("ask_p", "ask_a", "ask_d"):
                got = (await store.get_ask(world.human, ask_id)).ask
                assert not got.HasField("delivery"), ask_id
                assert got.questions[0].free_text == S.FREE_TEXT_UNSPECIFIED
            answered = await store.get_ask(world.human, "ask_a")
            assert answered.ask.status == S.ASK_STATUS_ANSWERED
            row = await report_delivery(store, world.agent, "ask_a", NOT_DELIVERED, DETAIL)
            assert row.ask.delivery.reported_by_name == "Coding Agent"
            declined = await report_delivery(store, world.agent, "ask_d", WITH_CHANGES, "x")
            assert declined.ask.delivery.state == WITH_CHANGES
            with pytest.raises(FailedPreconditionError, match="still pending"):
                await report_delivery(store, world.agent, "ask_p", S.DELIVERY_STATE_DELIVERED)
        # The CHECKs: a receipt is whole or absent, only on an answered or declined ask,
        # with a known state and text within the limits.
        whole_receipt_on_pending = (
            "UPDATE asks SET delivery_state = 'delivered', delivery_detail = '',"
            " delivery_payload = '', delivery_reported_by = $1, delivery_reported_at = now()"
            " WHERE ask_id = 'ask_p'"
        )
        agent = world.agent.account_id
        unanswer = (
            "UPDATE asks SET status = 'pending', answers = NULL, answered_by_account_id = NULL,"
            " answered_at = NULL WHERE ask_id = 'ask_a'"
        )
        for bad, args in (
            (whole_receipt_on_pending, (agent,)),
            ("UPDATE asks SET delivery_state = 'delivered' WHERE ask_id = 'ask_p'", ()),
            ("UPDATE asks SET delivery_reported_at = NULL WHERE ask_id = 'ask_a'", ()),
            ("UPDATE asks SET delivery_payload = NULL WHERE ask_id = 'ask_a'", ()),
            ("UPDATE asks SET delivery_state = 'lost' WHERE ask_id = 'ask_a'", ()),
            ("UPDATE asks SET delivery_detail = repeat('d', 1001) WHERE ask_id = 'ask_a'", ()),
            ("UPDATE asks SET delivery_payload = repeat('p', 65537) WHERE ask_id = 'ask_a'", ()),
            (unanswer, ()),  # an ask with a receipt cannot become pending again
        ):
            with pytest.raises(asyncpg.CheckViolationError):
                await conn.execute(bad, *args)
        await conn.execute(
            "UPDATE asks SET delivery_detail = repeat('d', 1000),"
            " delivery_payload = repeat('p', 65536) WHERE ask_id = 'ask_a'"
        )
        with pytest.raises(asyncpg.ForeignKeyViolationError):
            await conn.execute(
                "UPDATE asks SET delivery_reported_by = 'acct_nobody' WHERE ask_id = 'ask_a'"
            )
    finally:
        await conn.close()


async def _seed_v5(conn: asyncpg.Connection, dsn: str) -> World:
    """A world and three asks (pending, answered, declined) as version 5 stores them; the
    blocks in their stored shape of then (no free_text key)."""
    async with PostgresStore(dsn) as old:  # accounts and channels only: no asks columns
        world = await seed(old)
    blocks = (
        '[{"ask": {"ask_id": "%s", "questions": [{"question_id": "db", "question": "q",'
        ' "header": "", "allow_multiple": false, "options": [{"id": "0", "label": "l",'
        ' "description": "", "preview": ""}]}]}}]'
    )
    for revision, ask_id in enumerate(("ask_p", "ask_a", "ask_d"), start=1):
        await conn.execute(
            """INSERT INTO messages (message_id, channel_id, author_account_id, blocks,
                                     created_revision, revision)
               VALUES ($1, $2, $3, $4::jsonb, $5, $5)""",
            f"msg_{ask_id}",
            world.channel.channel_id,
            world.agent.account_id,
            blocks % ask_id,
            revision,
        )
        await conn.execute(
            "INSERT INTO asks (ask_id, message_id, channel_id) VALUES ($1, $2, $3)",
            ask_id,
            f"msg_{ask_id}",
            world.channel.channel_id,
        )
    await conn.execute(
        "UPDATE channels SET revision = 3 WHERE channel_id = $1", world.channel.channel_id
    )
    await conn.execute(
        """UPDATE asks SET status = 'answered', answered_at = now(), answered_by_account_id = $1,
                  answers = '[{"question_id": "db", "chosen_option_ids": ["0"],
                               "custom_text": "", "timed_out": false}]'
           WHERE ask_id = 'ask_a'""",
        world.human.account_id,
    )
    await conn.execute(
        """UPDATE asks SET status = 'declined', closed_at = now(), closed_by_account_id = $1,
                  close_reason = 'no'
           WHERE ask_id = 'ask_d'""",
        world.human.account_id,
    )
    return world
