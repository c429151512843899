"""Web Push on PostgreSQL (migrations/0009_push.sql, store/postgres/push.py): devices, the one
VAPID key, answer tokens, and the push outbox its triggers fill and the shared outbox
statements claim (store/postgres/outbox.py)."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from compass_server.domain.errors import NotFoundError, ResourceExhaustedError
from compass_server.domain.push import MAX_SUBSCRIPTIONS, NewSubscription
from compass_server.domain.vapid import VapidKey, generate_private_key
from compass_server.store.postgres import PostgresStore
from compass_server.store.postgres.push import PostgresPushStore
from compass_server.store.postgres.webhooks import WebhookStore
from gen.compass.v1 import comms_pb2
from tests.integration.store._seed import (
    answer,
    answer_ask,
    ask,
    close_ask,
    decline_ask,
    question,
)

if TYPE_CHECKING:
    from compass_server.store import AccountRow
    from tests.integration.store._seed import World

S = comms_pb2
KEY = "B" + "A" * 86  # the columns' lengths: 87 and 22 base64url characters
AUTH = "A" * 22


def device(n: int = 0, name: str = "phone") -> NewSubscription:
    return NewSubscription(
        endpoint=f"https://push.example.com/send/{n}", p256dh=KEY, auth=AUTH, device_name=name
    )


async def _subscribe(store: PostgresStore, who: AccountRow, n: int = 0) -> str:
    return await store.push().add_push_subscription(who, device(n), most=MAX_SUBSCRIPTIONS)


async def _post_ask(store: PostgresStore, world: World) -> str:
    message = await world.post(store, ask(question("db", "0", "1")))
    (ask_id,) = message.ask_ids
    return ask_id


async def _pushes(store: PostgresStore) -> list[tuple[str, str, str]]:
    """(subscription_id, event_type, ask_id) of every push, in the order they were made."""
    async with store.connection() as conn:
        rows = await conn.fetch(
            "SELECT subscription_id, event_type, ask_id FROM push_deliveries "
            "ORDER BY occurred_at, event_type"
        )
    return [(r["subscription_id"], r["event_type"], r["ask_id"]) for r in rows]


async def test_devices_are_added_once_per_endpoint_and_listed_and_removed_by_their_person(
    store: PostgresStore, world: World
) -> None:
    push = store.push()
    first = await push.add_push_subscription(world.human, device(0), most=MAX_SUBSCRIPTIONS)
    again = await push.add_push_subscription(world.human, device(0, "renamed"), most=20)
    assert again == first
    theirs = await push.add_push_subscription(world.human2, device(0), most=20)
    assert theirs != first  # the same browser, another person: their own subscription
    (listed,) = await push.list_push_subscriptions(world.human)
    assert (listed.subscription_id, listed.device_name) == (first, "renamed")
    assert (listed.last_success_at, listed.last_error) == (None, "")
    with pytest.raises(NotFoundError):
        await push.remove_push_subscription(world.human, theirs)
    await push.remove_push_subscription(world.human, first)
    assert await push.list_push_subscriptions(world.human) == []


async def test_at_most_twenty_devices_even_when_added_at_once(
    store: PostgresStore, world: World
) -> None:
    push = store.push()
    results = await asyncio.gather(
        *(
            push.add_push_subscription(world.human, device(n), most=MAX_SUBSCRIPTIONS)
            for n in range(MAX_SUBSCRIPTIONS + 5)
        ),
        return_exceptions=True,
    )
    assert sum(isinstance(r, str) for r in results) == MAX_SUBSCRIPTIONS
    assert all(isinstance(r, (str, ResourceExhaustedError)) for r in results)
    assert len(await push.list_push_subscriptions(world.human)) == MAX_SUBSCRIPTIONS


async def test_one_vapid_key_for_every_process_even_when_they_race(database_url: str) -> None:
    stores = [PostgresStore(database_url, pool_min=1, pool_max=2) for _ in range(4)]
    for opened in stores:
        await opened.__aenter__()
    try:
        candidates = [generate_private_key() for _ in stores]
        keys = await asyncio.gather(
            *(s.push().vapid_private_key(c) for s, c in zip(stores, candidates, strict=True))
        )
        assert len(set(keys)) == 1
        assert keys[0] in candidates
        assert VapidKey.parse(keys[0]).public_key
        assert await stores[0].push().vapid_private_key(generate_private_key()) == keys[0]
    finally:
        for opened in stores:
            await opened.__aexit__(None, None, None)


async def test_an_ask_is_pushed_to_the_other_participants_devices_and_its_end_to_the_same(
    store: PostgresStore, world: World
) -> None:
    ada = await _subscribe(store, world.human, 0)
    ada_laptop = await _subscribe(store, world.human, 1)
    grace = await _subscribe(store, world.human2, 2)
    await _subscribe(store, world.member, 3)  # sees the channel, takes no part
    await _subscribe(store, world.outsider, 4)
    ask_id = await _post_ask(store, world)
    assert sorted(await _pushes(store)) == sorted(
        [(ada, "ask", ask_id), (ada_laptop, "ask", ask_id), (grace, "ask", ask_id)]
    )
    late = await _subscribe(store, world.human2, 5)  # added after the ask: never told of it
    await answer_ask(store, world.human, ask_id, [answer("db", "1")])
    closed = [p for p in await _pushes(store) if p[1] == "ask_closed"]
    assert sorted(closed) == sorted(
        [
            (ada, "ask_closed", ask_id),
            (ada_laptop, "ask_closed", ask_id),
            (grace, "ask_closed", ask_id),
        ]
    )
    assert late not in {p[0] for p in await _pushes(store)}


@pytest.mark.parametrize("ending", ["declined", "withdrawn", "timed_out"])
async def test_every_ending_is_pushed(store: PostgresStore, world: World, ending: str) -> None:
    ada = await _subscribe(store, world.human)
    ask_id = await _post_ask(store, world)
    if ending == "declined":
        await decline_ask(store, world.human2, ask_id)
    elif ending == "withdrawn":
        await close_ask(store, world.agent, ask_id, S.ASK_STATUS_WITHDRAWN)
    else:
        await close_ask(
            store, world.agent, ask_id, S.ASK_STATUS_TIMED_OUT, answers=[answer("db", "0")]
        )
    assert await _pushes(store) == [(ada, "ask", ask_id), (ada, "ask_closed", ask_id)]


async def test_an_expired_ask_is_pushed_closed(store: PostgresStore, world: World) -> None:
    ada = await _subscribe(store, world.human)
    block = ask(question("db", "0", "1"))
    block.ask.deadline.FromDatetime(datetime.now(UTC) + timedelta(seconds=1))
    (ask_id,) = (await world.post(store, block)).ask_ids
    assert await store.expire_due(datetime.now(UTC) + timedelta(minutes=1), timedelta(0))
    assert await _pushes(store) == [(ada, "ask", ask_id), (ada, "ask_closed", ask_id)]


async def test_a_disabled_person_is_not_pushed(store: PostgresStore, world: World) -> None:
    await _subscribe(store, world.human)
    await store.disable_account(world.human.account_id)
    await _post_ask(store, world)
    assert await _pushes(store) == []


async def test_reminders_re_push_to_the_devices_told_of_the_ask(
    store: PostgresStore, world: World
) -> None:
    ada = await _subscribe(store, world.human)
    ask_id = await _post_ask(store, world)
    later = datetime.now(UTC) + timedelta(minutes=20)
    # No webhook subscribes to reminders: the pushes alone make the ask worth reminding of.
    assert await WebhookStore(store).remind(later, timedelta(minutes=15), 3) == [ask_id]
    assert await _pushes(store) == [(ada, "ask", ask_id), (ada, "ask.reminder", ask_id)]


async def test_claims_take_each_push_once_and_one_at_a_time_per_device(
    store: PostgresStore, world: World
) -> None:
    ada = await _subscribe(store, world.human, 0)
    grace = await _subscribe(store, world.human2, 1)
    first = await _post_ask(store, world)
    await _post_ask(store, world)
    outbox = store.push_outbox()
    now, lease = datetime.now(UTC) + timedelta(seconds=1), timedelta(seconds=30)
    claimed = await outbox.claim(now, lease, 10, per_endpoint=1)
    assert sorted(p.subscription_id for p in claimed) == sorted([ada, grace])
    assert {p.ask_id for p in claimed} == {first}  # each device's oldest first
    (mine,) = [p for p in claimed if p.subscription_id == ada]
    assert (mine.account_id, mine.endpoint, mine.event_type) == (
        world.human.account_id,
        "https://push.example.com/send/0",
        "ask",
    )
    # Leased: nobody takes them again; the busy devices get no second push here.
    assert await outbox.claim(now, lease, 10, per_endpoint=1, busy={ada: 1, grace: 1}) == []
    await outbox.record(mine, result="sent", outcome="http 201", retry_at=None)
    (listed,) = await store.push().list_push_subscriptions(world.human)
    assert listed.last_success_at is not None
    assert listed.last_error == ""


async def test_a_failure_is_kept_on_the_device_and_gone_removes_it(
    store: PostgresStore, world: World
) -> None:
    ada = await _subscribe(store, world.human)
    await _post_ask(store, world)
    outbox = store.push_outbox()
    now, lease = datetime.now(UTC) + timedelta(seconds=1), timedelta(seconds=30)
    (push,) = await outbox.claim(now, lease, 10, per_endpoint=1)
    await outbox.record(push, result="retried", outcome="http 503", retry_at=now)
    (listed,) = await store.push().list_push_subscriptions(world.human)
    assert listed.last_error == "http 503"
    (again,) = await outbox.claim(now, lease, 10, per_endpoint=1)
    assert (again.delivery_id, again.attempts) == (push.delivery_id, 1)
    await outbox.record(again, result="gone", outcome="http 410", retry_at=None)
    assert await store.push().list_push_subscriptions(world.human) == []
    assert [p for p in await _pushes(store) if p[0] == ada] == []  # its pushes went with it


async def test_answer_tokens_are_known_by_hash_spent_once_and_voided_by_revoke_sessions(
    store: PostgresStore, world: World
) -> None:
    ask_id = await _post_ask(store, world)
    outbox = store.push_outbox()
    token = await outbox.new_answer_token(ask_id, world.human.account_id)
    async with store.connection() as conn:
        stored = await conn.fetchval("SELECT token_hash FROM push_answer_tokens")
        dumped = await conn.fetchval("SELECT row_to_json(t)::text FROM push_answer_tokens t")
    assert bytes(stored) == hashlib.sha256(token.encode()).digest()
    assert token not in str(dumped)
    found = await store.push().answer_token(token)
    assert found is not None
    assert (found.ask_id, found.account.account_id, found.used) == (
        ask_id,
        world.human.account_id,
        False,
    )
    assert await store.push().spend_answer_token(token)
    assert not await store.push().spend_answer_token(token)
    found = await store.push().answer_token(token)
    assert found is not None
    assert found.used
    assert await store.push().answer_token(token + "x") is None
    # revoke-sessions: the devices go, and the tokens pushed to them stop working.
    await _subscribe(store, world.human)
    other = await outbox.new_answer_token(ask_id, world.human.account_id)
    await store.revoke_sessions(world.human.account_id)
    assert await store.push().list_push_subscriptions(world.human) == []
    voided = await store.push().answer_token(other)
    assert voided is not None
    assert voided.used


async def test_tokens_of_ended_asks_are_purged_a_while_later(
    store: PostgresStore, world: World
) -> None:
    ended, waiting = await _post_ask(store, world), await _post_ask(store, world)
    outbox = store.push_outbox()
    old = await outbox.new_answer_token(ended, world.human.account_id)
    kept = await outbox.new_answer_token(waiting, world.human.account_id)
    await answer_ask(store, world.human2, ended, [answer("db", "0")])
    assert await outbox.purge(datetime.now(UTC) - timedelta(hours=1)) == 0
    assert await outbox.purge(datetime.now(UTC) + timedelta(seconds=1)) == 1
    assert await store.push().answer_token(old) is None
    assert await store.push().answer_token(kept) is not None


def test_the_push_store_serves_both_ports(store: PostgresStore) -> None:
    assert isinstance(store.push(), PostgresPushStore)
    assert isinstance(store.push_outbox(), PostgresPushStore)
