"""Email on PostgreSQL (migrations/0010_email.sql, store/postgres/email.py): addresses and the
switch, the outbox its trigger fills and the shared outbox statements claim, reply tokens
(one thread's spent together, voided by revoke-sessions), unsubscribe tokens, thread ids."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from compass_server.domain.errors import FailedPreconditionError, NotFoundError
from compass_server.store.postgres import PostgresStore
from tests.integration.store._seed import answer, answer_ask, ask, question

if TYPE_CHECKING:
    from tests.integration.store._seed import World

LEASE = timedelta(seconds=30)


async def _post_ask(store: PostgresStore, world: World) -> str:
    message = await world.post(store, ask(question("db", "0", "1")))
    (ask_id,) = message.ask_ids
    return ask_id


async def _mails(store: PostgresStore) -> list[tuple[str, str, str]]:
    async with store.connection() as conn:
        rows = await conn.fetch(
            "SELECT account_id, event_type, state FROM email_deliveries ORDER BY occurred_at"
        )
    return [(r["account_id"], r["event_type"], r["state"]) for r in rows]


async def test_an_ask_is_queued_for_each_participant_with_an_address_but_the_asker(
    store: PostgresStore, world: World
) -> None:
    email = store.email()
    await email.set_email(world.human.account_id, "Ana@Example.com")
    await email.set_email(world.human2.account_id, "bo@example.com")
    await email.set_email_asks(world.human2, False)  # off: not mailed
    await email.set_email(world.member.account_id, "member@example.com")  # not a participant
    await _post_ask(store, world)
    assert await _mails(store) == [(world.human.account_id, "ask", "pending")]
    settings = await email.email_settings(world.human.account_id)
    assert (settings.email, settings.email_asks) == ("Ana@Example.com", True)


async def test_agents_have_no_address_and_unknown_accounts_are_not_found(
    store: PostgresStore, world: World
) -> None:
    with pytest.raises(FailedPreconditionError):
        await store.email().set_email(world.agent.account_id, "bot@example.com")
    with pytest.raises(NotFoundError):
        await store.email().set_email("acct_nope", "x@example.com")
    with pytest.raises(NotFoundError):
        await store.email().email_settings("acct_nope")


async def test_the_database_refuses_a_malformed_address(store: PostgresStore, world: World) -> None:
    from compass_server.domain.errors import CompassError

    with pytest.raises(CompassError):
        await store.email().set_email(world.human.account_id, "not an address")


async def test_claims_take_each_mail_once_across_two_stores_and_defer_keeps_attempts(
    store: PostgresStore, world: World, database_url: str
) -> None:
    await store.email().set_email(world.human.account_id, "ana@example.com")
    await store.email().set_email(world.human2.account_id, "bo@example.com")
    await _post_ask(store, world)
    now = datetime.now(UTC) + timedelta(seconds=1)
    async with PostgresStore(database_url, pool_min=1, pool_max=4, timeout=10.0) as other:
        mine, theirs = await asyncio.gather(
            store.email_outbox().claim(now, LEASE, 10, per_endpoint=1),
            other.email_outbox().claim(now, LEASE, 10, per_endpoint=1),
        )
    taken = [m.account_id for m in [*mine, *theirs]]
    assert sorted(taken) == sorted([world.human.account_id, world.human2.account_id])
    assert await store.email_outbox().claim(now, LEASE, 10, per_endpoint=1) == []  # leased
    first = mine[0] if mine else theirs[0]
    assert first.email in {"ana@example.com", "bo@example.com"}
    assert first.payload is None
    await store.email_outbox().defer(first, now + timedelta(seconds=5))
    again = await store.email_outbox().claim(now + timedelta(seconds=6), LEASE, 10, per_endpoint=1)
    assert [m.delivery_id for m in again] == [first.delivery_id]
    assert again[0].attempts == 0  # a deferral is no attempt


async def test_a_record_settles_the_mail_and_a_retry_comes_back_due(
    store: PostgresStore, world: World
) -> None:
    await store.email().set_email(world.human.account_id, "ana@example.com")
    await _post_ask(store, world)
    outbox = store.email_outbox()
    now = datetime.now(UTC) + timedelta(seconds=1)
    (mail,) = await outbox.claim(now, LEASE, 10, per_endpoint=1)
    await outbox.record(mail, result="retried", outcome="smtp down", retry_at=now)
    (again,) = await outbox.claim(now, LEASE, 10, per_endpoint=1)
    assert again.attempts == 1
    await outbox.record(again, result="sent", outcome="250 ok", retry_at=None)
    assert await _mails(store) == [(world.human.account_id, "ask", "delivered")]
    assert await outbox.claim(now + LEASE * 3, LEASE, 10, per_endpoint=1) == []


async def test_reply_tokens_of_one_thread_are_spent_together_and_only_hashes_are_kept(
    store: PostgresStore, world: World
) -> None:
    await store.email().set_email(world.human.account_id, "ana@example.com")
    ask_id = await _post_ask(store, world)
    outbox = store.email_outbox()
    first = await outbox.new_reply_token(ask_id, world.human.account_id)
    second = await outbox.new_reply_token(ask_id, world.human.account_id)
    thread = await outbox.thread_id(ask_id, world.human.account_id, "<a@compass.test>")
    assert await outbox.thread_id(ask_id, world.human.account_id, "<b@compass.test>") == thread
    found = await store.email().reply_token(first)
    assert found is not None
    assert (found.ask_id, found.account.account_id, found.email, found.used) == (
        ask_id,
        world.human.account_id,
        "ana@example.com",
        False,
    )
    assert found.thread_id == "<a@compass.test>"
    async with store.connection() as conn:
        hashes = {
            bytes(r["token_hash"])
            for r in await conn.fetch("SELECT token_hash FROM email_reply_tokens")
        }
    assert hashes == {hashlib.sha256(t.encode()).digest() for t in (first, second)}
    assert await store.email().spend_reply_tokens(ask_id, world.human.account_id)
    assert not await store.email().spend_reply_tokens(ask_id, world.human.account_id)
    for token in (first, second):
        spent = await store.email().reply_token(token)
        assert spent is not None
        assert spent.used
    assert await store.email().reply_token("a" * 32) is None


async def test_revoke_sessions_voids_reply_tokens(store: PostgresStore, world: World) -> None:
    await store.email().set_email(world.human.account_id, "ana@example.com")
    ask_id = await _post_ask(store, world)
    token = await store.email_outbox().new_reply_token(ask_id, world.human.account_id)
    await store.revoke_sessions(world.human.account_id)
    found = await store.email().reply_token(token)
    assert found is not None
    assert found.used


async def test_an_unsubscribe_token_turns_email_asks_off_for_its_person(
    store: PostgresStore, world: World
) -> None:
    await store.email().set_email(world.human.account_id, "ana@example.com")
    token = await store.email_outbox().new_unsubscribe_token(world.human.account_id)
    assert await store.email().unsubscribe(token) == world.human.account_id
    assert await store.email().unsubscribe(token) == world.human.account_id  # idempotent
    assert await store.email().unsubscribe("b" * 32) is None
    assert not (await store.email().email_settings(world.human.account_id)).email_asks


async def test_reply_mails_are_queued_and_purge_forgets_tokens_of_ended_asks(
    store: PostgresStore, world: World
) -> None:
    await store.email().set_email(world.human.account_id, "ana@example.com")
    ask_id = await _post_ask(store, world)
    token = await store.email_outbox().new_reply_token(ask_id, world.human.account_id)
    assert await store.email().queue_reply(
        ask_id, world.human.account_id, "ended", '{"x": 1}', most=1
    )
    assert (  # one thread's mails back are capped
        await store.email().queue_reply(ask_id, world.human.account_id, "ended", "{}", most=1)
        is None
    )
    kinds = [kind for _, kind, _ in await _mails(store)]
    assert sorted(kinds) == ["ask", "ended"]
    assert await store.email_outbox().purge(datetime.now(UTC) + timedelta(seconds=1)) == 0
    await answer_ask(store, world.human, ask_id, [answer("db", "0")])
    assert await store.email_outbox().purge(datetime.now(UTC) + timedelta(seconds=1)) == 1
    assert await store.email().reply_token(token) is None
