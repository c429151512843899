"""Webhook endpoints, the outbox filled by the asks triggers, claims and reminders (real
PostgreSQL; migrations/0005_webhooks.sql, compass_server/store/postgres/webhooks.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

import pytest

from compass_server.domain.errors import InvalidArgumentError, NotFoundError
from compass_server.domain.webhook_targets import AllowList
from compass_server.store.postgres.webhooks import EVENT_TYPES, WebhookStore
from compass_server.webhooks.sender import event_payload
from gen.compass.v1 import comms_pb2
from tests.integration.store._seed import (
    answer,
    answer_ask,
    ask,
    decline_ask,
    question,
    report_delivery,
)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from compass_server.store.postgres import PostgresStore
    from tests.integration.store._seed import World

S = comms_pb2


async def _post_ask(store: PostgresStore, world: World) -> str:
    message = await world.post(store, ask(question("db", "0", "1")))
    (ask_id,) = message.ask_ids
    return ask_id


async def _events(store: PostgresStore) -> list[tuple[str, str, str]]:
    """(webhook_id, event_type, ask_id) of every delivery, in the order they were made."""
    async with store.connection() as conn:
        rows = await conn.fetch(
            "SELECT webhook_id, event_type, ask_id FROM webhook_deliveries "
            "ORDER BY occurred_at, event_type"
        )
    return [(r["webhook_id"], r["event_type"], r["ask_id"]) for r in rows]


async def test_endpoints_are_added_listed_and_removed(store: PostgresStore, world: World) -> None:
    hooks = WebhookStore(store)
    row, secret = await hooks.add(world.workspace.workspace_id, "https://example.test/hook")
    assert secret.startswith("whsec_")
    assert row.events == EVENT_TYPES
    (listed,) = await hooks.list(world.workspace.workspace_id)
    assert listed == row
    assert secret not in repr(listed.to_json())
    assert await hooks.list(world.other_workspace.workspace_id) == []
    await hooks.remove(row.webhook_id)
    assert await hooks.list(world.workspace.workspace_id) == []
    with pytest.raises(NotFoundError):
        await hooks.remove(row.webhook_id)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.test/",
        "https://",
        "example.test/hook",
        "https://a b/",
        "javascript:x",
        "http://example.test:99999/",  # issue 24 G2: stored, then killed the worker
        "http://[::1/x",  # G9: a traceback
        "http://127.0.0.1/",  # G6: internal, and not allowed
    ],
)
async def test_bad_urls_are_refused(store: PostgresStore, world: World, url: str) -> None:
    with pytest.raises(InvalidArgumentError):
        await WebhookStore(store).add(world.workspace.workspace_id, url)


async def test_bad_events_and_workspaces_are_refused(store: PostgresStore, world: World) -> None:
    hooks = WebhookStore(store)
    with pytest.raises(InvalidArgumentError, match=r"ask\.typo"):
        await hooks.add(world.workspace.workspace_id, "https://e.test/", ["ask.typo"])
    with pytest.raises(NotFoundError):
        await hooks.add("ws_missing", "https://e.test/")


async def test_ask_changes_enqueue_one_delivery_per_subscribed_endpoint(
    store: PostgresStore, world: World
) -> None:
    hooks = WebhookStore(store)
    everything, _ = await hooks.add(world.workspace.workspace_id, "https://a.test/")
    closed_only, _ = await hooks.add(
        world.workspace.workspace_id, "https://b.test/", ["ask.closed"]
    )
    elsewhere, _ = await hooks.add(world.other_workspace.workspace_id, "https://c.test/")

    answered = await _post_ask(store, world)
    declined = await _post_ask(store, world)
    await answer_ask(store, world.human, answered, [answer("db", "1")])
    await decline_ask(store, world.human, declined, "not mine")

    events = await _events(store)
    assert (everything.webhook_id, "ask.created", answered) in events
    assert (everything.webhook_id, "ask.created", declined) in events
    assert (everything.webhook_id, "ask.answered", answered) in events
    assert (everything.webhook_id, "ask.closed", declined) in events
    assert [e for e in events if e[0] == closed_only.webhook_id] == [
        (closed_only.webhook_id, "ask.closed", declined)
    ]
    assert not [e for e in events if e[0] == elsewhere.webhook_id]
    assert len(events) == 5
    # An identical retry of the answer changes nothing, so it tells nothing.
    await answer_ask(store, world.human, answered, [answer("db", "1")])
    assert len(await _events(store)) == 5


async def test_a_rolled_back_change_enqueues_nothing(store: PostgresStore, world: World) -> None:
    """The outbox row is part of the change's transaction: no change, no event."""
    await WebhookStore(store).add(world.workspace.workspace_id, "https://a.test/")
    ask_id = await _post_ask(store, world)
    before = await _events(store)

    class AbortError(Exception):
        pass

    async def expire_then_abort() -> None:
        async with store.transaction() as conn:
            await conn.execute(
                "UPDATE asks SET status = 'expired', closed_at = now() WHERE ask_id = $1", ask_id
            )
            inside = await conn.fetch("SELECT 1 FROM webhook_deliveries")
            assert len(inside) == len(before) + 1  # enqueued by the change ...
            raise AbortError

    with pytest.raises(AbortError):
        await expire_then_abort()
    assert await _events(store) == before  # ... and gone with it


class _HeldOpen:
    """The store, except that its transactions stay open (their locks held) until `release`
    is set: one claimer caught between its UPDATE and its commit."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store
        self.reached = asyncio.Event()
        self.release = asyncio.Event()

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncGenerator[Any]:
        async with self._store.transaction() as conn:
            yield conn
            self.reached.set()
            await self.release.wait()


async def test_a_claim_locks_only_what_it_takes(store: PostgresStore, world: World) -> None:
    # A claimer that takes 5 must not hold the rest of the endpoint's due deliveries while it
    # commits: another worker claiming at that moment gets the next ones, not nothing.
    await WebhookStore(store).add(world.workspace.workspace_id, "https://a.test/")
    for _ in range(12):
        await _post_ask(store, world)
    now = datetime.now(UTC)
    held = _HeldOpen(store)
    first = asyncio.create_task(
        WebhookStore(cast("PostgresStore", held)).claim(
            now, timedelta(seconds=30), 5, per_endpoint=50
        )
    )
    await asyncio.wait_for(held.reached.wait(), 10)
    try:
        second = await asyncio.wait_for(
            WebhookStore(store).claim(now, timedelta(seconds=30), 5, per_endpoint=50), 10
        )
    finally:
        held.release.set()
    taken = await first
    assert len(taken) == len(second) == 5
    assert not {d.delivery_id for d in taken} & {d.delivery_id for d in second}


async def test_concurrent_claims_never_share_a_delivery(store: PostgresStore, world: World) -> None:
    hooks = WebhookStore(store)
    await hooks.add(world.workspace.workspace_id, "https://a.test/")
    for _ in range(12):
        await _post_ask(store, world)
    now = datetime.now(UTC)
    claims = await asyncio.gather(
        *(hooks.claim(now, timedelta(seconds=30), 5, per_endpoint=50) for _ in range(4))
    )
    claimed = [d.delivery_id for batch in claims for d in batch]
    assert len(claimed) == len(set(claimed)) == 12
    # Leased: nothing is due again until the lease ends, then everything is.
    assert (
        await hooks.claim(now + timedelta(seconds=29), timedelta(seconds=30), 50, per_endpoint=50)
        == []
    )
    assert (
        len(
            await hooks.claim(
                now + timedelta(seconds=31), timedelta(seconds=30), 50, per_endpoint=50
            )
        )
        == 12
    )


async def test_attempts_are_logged_and_settle_the_delivery(
    store: PostgresStore, world: World
) -> None:
    hooks = WebhookStore(store)
    row, _ = await hooks.add(world.workspace.workspace_id, "https://a.test/", ["ask.created"])
    ask_id = await _post_ask(store, world)
    now = datetime.now(UTC)
    (first,) = await hooks.claim(now, timedelta(seconds=30), 10, per_endpoint=50)
    assert (first.payload, first.attempts, first.ask_id) == (None, 0, ask_id)
    await hooks.record(
        first,
        payload='{"type":"ask.created"}',
        duration_ms=3,
        outcome="http 500",
        delivered=False,
        retry_at=now + timedelta(seconds=5),
    )
    assert (
        await hooks.claim(now + timedelta(seconds=4), timedelta(seconds=30), 10, per_endpoint=50)
        == []
    )
    (second,) = await hooks.claim(
        now + timedelta(seconds=6), timedelta(seconds=30), 10, per_endpoint=50
    )
    assert second.delivery_id == first.delivery_id  # the same webhook-id on the retry
    assert second.payload == '{"type":"ask.created"}'  # fixed at the first attempt, as sent
    assert second.attempts == 1
    await hooks.record(
        second,
        payload=second.payload,
        duration_ms=2,
        outcome="http 200",
        delivered=True,
        retry_at=None,
    )
    (log,) = await hooks.deliveries(row.webhook_id)
    assert log.state == "delivered"
    assert [(a.attempt, a.outcome) for a in log.attempts] == [(1, "http 500"), (2, "http 200")]
    assert (
        await hooks.claim(now + timedelta(days=1), timedelta(seconds=30), 10, per_endpoint=50) == []
    )


async def test_reminders_repeat_up_to_the_most_and_stop_once_answered(
    store: PostgresStore, world: World
) -> None:
    hooks = WebhookStore(store)
    await hooks.add(world.workspace.workspace_id, "https://a.test/", ["ask.reminder"])
    waiting = await _post_ask(store, world)
    answered = await _post_ask(store, world)
    start = datetime.now(UTC)
    after = timedelta(minutes=15)

    assert await hooks.remind(start + timedelta(minutes=14), after, 2) == []
    assert set(await hooks.remind(start + timedelta(minutes=16), after, 2)) == {waiting, answered}
    assert await hooks.remind(start + timedelta(minutes=17), after, 2) == []  # not again yet
    await answer_ask(store, world.human, answered, [answer("db", "0")])
    assert await hooks.remind(start + timedelta(minutes=32), after, 2) == [waiting]
    assert await hooks.remind(start + timedelta(hours=5), after, 2) == []  # two at most
    reminders = [e for e in await _events(store) if e[1] == "ask.reminder"]
    assert sorted(e[2] for e in reminders) == sorted([waiting, answered, waiting])


async def test_no_reminders_without_a_subscribed_endpoint(
    store: PostgresStore, world: World
) -> None:
    await WebhookStore(store).add(world.workspace.workspace_id, "https://a.test/", ["ask.created"])
    await _post_ask(store, world)
    later = datetime.now(UTC) + timedelta(hours=1)
    assert await WebhookStore(store).remind(later, timedelta(minutes=1), 3) == []


async def test_a_not_delivered_receipt_enqueues_ask_not_delivered_only(
    store: PostgresStore, world: World
) -> None:
    hooks = WebhookStore(store)
    everything, _ = await hooks.add(world.workspace.workspace_id, "https://a.test/")
    receipts, _ = await hooks.add(
        world.workspace.workspace_id, "https://b.test/", ["ask.not_delivered"]
    )
    lost = await _post_ask(store, world)
    fine = await _post_ask(store, world)
    changed = await _post_ask(store, world)
    declined = await _post_ask(store, world)
    for ask_id in (lost, fine, changed):
        await answer_ask(store, world.human, ask_id, [answer("db", "1")])
    await decline_ask(store, world.human, declined, "no")
    before = await _events(store)
    await report_delivery(store, world.agent, lost, S.DELIVERY_STATE_NOT_DELIVERED, "cancelled")
    await report_delivery(store, world.agent, lost, S.DELIVERY_STATE_NOT_DELIVERED, "cancelled")
    await report_delivery(store, world.agent, fine, S.DELIVERY_STATE_DELIVERED)
    await report_delivery(store, world.agent, changed, S.DELIVERY_STATE_DELIVERED_WITH_CHANGES, "x")
    await report_delivery(store, world.agent, declined, S.DELIVERY_STATE_NOT_DELIVERED, "gone")
    added = (await _events(store))[len(before) :]
    assert sorted(added) == sorted(
        [
            (everything.webhook_id, "ask.not_delivered", lost),
            (receipts.webhook_id, "ask.not_delivered", lost),
            (everything.webhook_id, "ask.not_delivered", declined),
            (receipts.webhook_id, "ask.not_delivered", declined),
        ]
    )
    # The endpoint subscribed to receipts only heard of nothing else.
    assert {e[1] for e in await _events(store) if e[0] == receipts.webhook_id} == {
        "ask.not_delivered"
    }


async def test_the_not_delivered_body_carries_the_state_but_never_the_detail_or_payload(
    store: PostgresStore, world: World
) -> None:
    ask_id = await _post_ask(store, world)
    await answer_ask(store, world.human, ask_id, [answer("db", "1", custom_text="")])
    detail, payload = 'sent "my secret reason" as a note', '{"db":"my secret pick"}'
    await report_delivery(
        store, world.agent, ask_id, S.DELIVERY_STATE_NOT_DELIVERED, detail, payload
    )
    found = await store.notified_ask(ask_id)
    assert found is not None
    row, workspace_id, kind = found
    occurred = datetime(2026, 1, 1, tzinfo=UTC)
    body = event_payload("ask.not_delivered", occurred, row, workspace_id, kind, "https://c.test/")
    data = body["data"]
    assert isinstance(data, dict)
    assert data["delivery"] == {
        "state": "not_delivered",
        "reported_by": {"account_id": world.agent.account_id, "name": "Coding Agent"},
        "reported_at": row.ask.ask.delivery.reported_at.ToDatetime(UTC).isoformat(),
    }
    assert data["status"] == "answered"
    assert data["link"] == f"https://c.test/#/ask/{ask_id}"
    text = json.dumps(body)
    assert "secret" not in text
    assert "detail" not in text
    assert "payload" not in text
    # Other events never carry the receipt.
    answered = event_payload("ask.answered", occurred, row, workspace_id, kind, "https://c.test/")
    assert "delivery" not in json.dumps(answered)


async def test_an_upper_case_scheme_is_stored_as_the_database_wants_it(
    store: PostgresStore, world: World
) -> None:
    """`HTTP://...` passed the old check and broke the database's rule (`^https?://`): a
    traceback whose DETAIL printed the new secret (issue 24 G9)."""
    row, _ = await WebhookStore(store).add(
        world.workspace.workspace_id, "HTTPS://Example.test/Hook"
    )
    assert row.url == "https://Example.test/Hook"


async def test_a_check_violation_never_shows_the_failing_row(
    store: PostgresStore, world: World
) -> None:
    with pytest.raises(InvalidArgumentError) as refused:
        async with store.transaction() as conn:
            await conn.execute(
                "INSERT INTO webhooks (webhook_id, workspace_id, url, secret, events) "
                "VALUES ('wh_x', $1, 'gopher://x', 'whsec_sEcReT', ARRAY['ask.created'])",
                world.workspace.workspace_id,
            )
    assert "sEcReT" not in str(refused.value)
    assert refused.value.__cause__ is None
    assert refused.value.__suppress_context__


async def test_an_allowed_internal_host_is_accepted(store: PostgresStore, world: World) -> None:
    allow = AllowList.parse("127.0.0.1, hooks.internal")
    hooks = WebhookStore(store)
    row, _ = await hooks.add(world.workspace.workspace_id, "http://127.0.0.1:9/h", allow=allow)
    assert row.url == "http://127.0.0.1:9/h"
    await hooks.add(world.workspace.workspace_id, "http://hooks.internal/h", allow=allow)
    with pytest.raises(InvalidArgumentError, match="internal"):
        await hooks.add(world.workspace.workspace_id, "http://10.0.0.1/h", allow=allow)


async def test_claims_take_few_per_endpoint_so_a_backlog_starves_no_one(
    store: PostgresStore, world: World
) -> None:
    """Issue 24 G4: one endpoint's backlog (or a slow endpoint's attempts in flight) must
    leave room for the others'."""
    hooks = WebhookStore(store)
    busy, _ = await hooks.add(world.workspace.workspace_id, "https://busy.test/", ["ask.created"])
    other, _ = await hooks.add(
        world.workspace.workspace_id, "https://other.test/", ["ask.answered"]
    )
    asks = [await _post_ask(store, world) for _ in range(6)]
    await answer_ask(store, world.human, asks[0], [answer("db", "1")])  # the newest delivery
    now, lease = datetime.now(UTC), timedelta(seconds=30)
    claimed = await hooks.claim(now, lease, 10, per_endpoint=2)
    by_endpoint = [d.webhook_id for d in claimed]
    assert sorted(by_endpoint) == sorted([busy.webhook_id] * 2 + [other.webhook_id])
    # Two of the busy endpoint's attempts in flight here: none more for it.
    assert await hooks.claim(now, lease, 10, per_endpoint=2, busy={busy.webhook_id: 2}) == []
    (one,) = await hooks.claim(now, lease, 10, per_endpoint=2, busy={busy.webhook_id: 1})
    assert one.webhook_id == busy.webhook_id


async def test_the_worker_says_whether_it_is_alive(store: PostgresStore, world: World) -> None:
    """What /readyz and compass_webhook_worker_up read (issue 24 G2: the worker died and
    nothing said so)."""
    from compass_server.webhooks.sender import WebhookSender

    sender = WebhookSender(
        WebhookStore(store), store, public_url="http://c.test/", poll_seconds=0.05
    )
    assert not sender.alive()
    running = asyncio.create_task(sender.run())
    try:
        await asyncio.wait_for(sender.first_round.wait(), 10)
        assert sender.alive()
    finally:
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
    assert not sender.alive()
