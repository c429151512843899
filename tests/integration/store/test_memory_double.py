"""The in-memory store double (`tests/memory_store.py`) behaves as the PostgreSQL store.

The same scenario runs on both stores and must leave the same trace: every result (statuses,
answers, revisions, ask ids up to renaming) and every refusal (error class and message). The
handler tests in tests/unit/server/service trust the double because of this test.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from compass_server.domain.errors import CompassError, InvalidArgumentError
from compass_server.domain.push import NewSubscription
from compass_server.store import (
    AskRow,
    ChangeEvent,
    ChannelRow,
    MessagePage,
    MessageRow,
    PendingAskPage,
    PushStore,
)
from compass_server.store.postgres import PostgresStore
from gen.compass.v1 import comms_pb2
from tests.integration.store._seed import (
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
from tests.memory_store import MemoryStore

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.integration.store._seed import Seedable

    class Fed(Seedable, Protocol):
        """A store with the change feed and the pending count the composition root reads."""

        async def count_pending(self) -> int: ...
        async def listen(
            self,
            on_change: Callable[[ChangeEvent], None],
            on_resync: Callable[[], None],
            *,
            on_lost: Callable[[], None] = ...,
        ) -> None: ...


S = comms_pb2
_ID = re.compile(r"\b(ask|msg|acct|ch|ws)_[a-z0-9]{6,}")


def _summary(result: object) -> object:
    if isinstance(result, MessageRow):
        return (
            "message",
            result.revision,
            result.client_message_id,
            [_ask_summary(b.ask) if b.HasField("ask") else b.text.text for b in result.blocks],
        )
    if isinstance(result, AskRow):
        return ("ask", _ask_summary(result.ask))
    if isinstance(result, MessagePage):
        return ("page", _summary(result.messages), bool(result.next_page_token))
    if isinstance(result, PendingAskPage):
        return ("inbox", [_summary(row.ask) for row in result.asks], result.next_page_token)
    if isinstance(result, ChannelRow):
        return ("channel", result.channel_id, result.name, result.revision)
    if isinstance(result, list | tuple):
        return [_summary(item) for item in result]  # pyright: ignore[reportUnknownVariableType]
    return repr(result)


def _ask_summary(a: comms_pb2.Ask) -> tuple[object, ...]:
    return (
        a.ask_id,
        S.AskStatus.Name(a.status),
        [
            (q.question_id, list(q.chosen_option_ids), q.custom_text, q.timed_out, q.free_text)
            for q in a.questions
        ],
        a.answered_by_account_id,
        a.answered_by_name,
        a.closed_by_account_id,
        a.close_reason,
        a.HasField("answered_at"),
        a.HasField("closed_at"),
        (
            a.delivery.state,
            a.delivery.detail,
            a.delivery.payload,
            a.delivery.reported_by_account_id,
            a.delivery.reported_by_name,
            a.delivery.HasField("reported_at"),
        )
        if a.HasField("delivery")
        else None,
    )


async def _trace(store: Seedable) -> list[object]:
    world = await seed(store)
    trace: list[object] = []
    names: dict[str, str] = {}

    def rename(text_: str) -> str:  # ids differ between stores: name them by first use
        return _ID.sub(lambda m: names.setdefault(m.group(0), f"<{len(names)}>"), text_)

    async def step(label: str, call: Callable[[], Awaitable[object]]) -> object:
        try:
            result = await call()
        except InvalidArgumentError as exc:  # with the fields it names
            fields = [(v.field, v.question_id) for v in exc.violations]
            trace.append((label, type(exc).__name__, rename(str(exc)), fields))
            return None
        except CompassError as exc:
            trace.append((label, type(exc).__name__, rename(str(exc))))
            return None
        trace.append((label, rename(repr(_summary(result)))))
        return result

    channel = world.channel.channel_id
    original = (text("hi"), ask(question("db", "0", "1")), ask(question("x", "a", "b", multi=True)))
    posted = await step("post", lambda: world.post(store, *original, client_message_id="k1"))
    assert isinstance(posted, MessageRow)
    ids = posted.ask_ids
    await step("repeat", lambda: world.post(store, *original, client_message_id="k1"))
    await step("taken", lambda: world.post(store, text("other"), client_message_id="k1"))
    await step("outsider posts", lambda: store.append_message(world.outsider, channel, [text("x")]))
    await step("member posts", lambda: store.append_message(world.member, channel, [text("x")]))
    await step("unfit", lambda: answer_ask(store, world.human, ids[0], [answer("db", "9")]))
    await step("hidden", lambda: answer_ask(store, world.outsider, ids[0], [answer("db", "0")]))
    await step("member", lambda: answer_ask(store, world.member, ids[0], [answer("db", "0")]))
    await step("answer", lambda: answer_ask(store, world.human, ids[0], [answer("db", "1")]))
    await step("retry", lambda: answer_ask(store, world.human, ids[0], [answer("db", "1")]))
    await step("late", lambda: answer_ask(store, world.human2, ids[0], [answer("db", "1")]))
    await step("decline answered", lambda: decline_ask(store, world.human, ids[0], "no"))
    grown = [*with_ask_ids(list(original), ids), ask(question("auth", "sso", "pw"))]
    updated = await step(
        "grow", lambda: update_message(store, world.agent, posted.message_id, grown)
    )
    assert isinstance(updated, MessageRow)
    await step("grow again", lambda: update_message(store, world.agent, posted.message_id, grown))
    await step("drop", lambda: update_message(store, world.agent, posted.message_id, [text("x")]))
    await step(
        "same", lambda: update_message(store, world.agent, posted.message_id, updated.blocks)
    )
    await step(
        "not author", lambda: update_message(store, world.human, posted.message_id, [text("x")])
    )
    new_id = updated.ask_ids[2]
    await step("decline", lambda: decline_ask(store, world.human2, new_id, "not mine"))
    await step("decline again", lambda: decline_ask(store, world.human2, new_id, "not mine"))
    await step(
        "close declined", lambda: close_ask(store, world.agent, new_id, S.ASK_STATUS_WITHDRAWN)
    )
    await step(
        "close by human", lambda: close_ask(store, world.human, ids[1], S.ASK_STATUS_WITHDRAWN)
    )
    timeout = [answer("x", "a", "b")]
    await step(
        "time out",
        lambda: close_ask(store, world.agent, ids[1], S.ASK_STATUS_TIMED_OUT, "", timeout),
    )
    refusing = ask(question("db", "0", "1"), question("why"))
    refusing.ask.questions[0].free_text = S.FREE_TEXT_REFUSED
    refusing.ask.questions[1].free_text = S.FREE_TEXT_ACCEPTED
    posted2 = await step(
        "post refusing", lambda: world.post(store, refusing, client_message_id="k2")
    )
    assert isinstance(posted2, MessageRow)
    (refusing_id,) = posted2.ask_ids
    changed = ask(question("db", "0", "1"), question("why"))
    await step("repeat changed", lambda: world.post(store, changed, client_message_id="k2"))
    await step(
        "receipt pending",
        lambda: report_delivery(store, world.agent, refusing_id, S.DELIVERY_STATE_DELIVERED),
    )
    text_where_refused = [answer("db", custom_text="neither"), answer("why", custom_text="ok")]
    await step(
        "refused text", lambda: answer_ask(store, world.human, refusing_id, text_where_refused)
    )
    await step(
        "answer refusing",
        lambda: answer_ask(
            store, world.human, refusing_id, [answer("db", "0"), answer("why", custom_text="ok")]
        ),
    )
    gone = S.DELIVERY_STATE_NOT_DELIVERED
    await step(
        "receipt by human",
        lambda: report_delivery(store, world.human, ids[0], gone, "lost", "{}"),
    )
    await step(
        "receipt hidden",
        lambda: report_delivery(store, world.outsider, ids[0], gone, "lost", "{}"),
    )
    await step("receipt", lambda: report_delivery(store, world.agent, ids[0], gone, "lost", "{}"))
    await step(
        "receipt again", lambda: report_delivery(store, world.agent, ids[0], gone, "lost", "{}")
    )
    await step(
        "receipt changed",
        lambda: report_delivery(store, world.agent, ids[0], S.DELIVERY_STATE_DELIVERED),
    )
    await step(
        "receipt timed out",
        lambda: report_delivery(store, world.agent, ids[1], S.DELIVERY_STATE_DELIVERED),
    )
    await step(
        "receipt declined",
        lambda: report_delivery(store, world.agent, new_id, S.DELIVERY_STATE_DELIVERED),
    )
    await step(
        "receipt refusing",
        lambda: report_delivery(
            store,
            world.agent,
            refusing_id,
            S.DELIVERY_STATE_DELIVERED_WITH_CHANGES,
            "why: sent as a note",
            '{"db":"0"}',
        ),
    )
    await step("get", lambda: store.get_ask(world.member, ids[1]))
    await step("get receipt", lambda: store.get_ask(world.agent, ids[0]))
    await step("agent elsewhere", lambda: store.get_ask(world.outsider, ids[1]))
    await step("replay", lambda: store.messages_after(world.member, channel, 0))
    await step("replay late", lambda: store.messages_after(world.member, channel, 3, limit=1))
    await step("page", lambda: store.list_messages(world.human, channel, page_size=1))
    await step("inbox", lambda: store.list_pending_asks(world.human))
    await step("channel", lambda: store.get_channel(world.member, channel))
    await step("channels", lambda: store.list_channels(world.human))
    return trace


async def test_the_double_leaves_the_trace_postgres_leaves(database_url: str) -> None:
    async with PostgresStore(database_url) as postgres:
        real = await _trace(postgres)
    double = await _trace(MemoryStore())
    for got, expected in zip(double, real, strict=True):
        assert got == expected


async def _feed(store: Fed) -> list[object]:
    """What the composition root reads: the change feed (subscribed, each write told, lost
    when it ends) and the pending count."""
    world = await seed(store)
    trace: list[object] = []
    events: asyncio.Queue[ChangeEvent] = asyncio.Queue()
    subscribed = asyncio.Event()
    lost: list[None] = []
    listening = asyncio.create_task(
        store.listen(events.put_nowait, subscribed.set, on_lost=lambda: lost.append(None))
    )
    try:
        await asyncio.wait_for(subscribed.wait(), 10)
        trace.append(("pending", await store.count_pending()))
        posted = await world.post(
            store, text("hi"), ask(question("db", "0", "1")), ask(question("x", "a", "b"))
        )
        told = await asyncio.wait_for(events.get(), 10)
        trace.append(
            (
                "posted",
                told.revision,
                told.message_id == posted.message_id,
                told.ask_ids == posted.ask_ids,
            )
        )
        trace.append(("pending", await store.count_pending()))
        first = posted.ask_ids[0]
        await answer_ask(store, world.human, first, [answer("db", "1")])
        told = await asyncio.wait_for(events.get(), 10)
        trace.append(("answered", told.revision, told.ask_ids == (first,)))
        await decline_ask(store, world.human, posted.ask_ids[1], "no")
        told = await asyncio.wait_for(events.get(), 10)
        trace.append(("declined", told.revision, told.ask_ids == (posted.ask_ids[1],)))
        trace.append(("pending", await store.count_pending()))
        trace.append(("lost while listening", len(lost)))
    finally:
        listening.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await listening
    trace.append(("lost when it ended", len(lost)))
    return trace


async def test_the_double_feeds_changes_and_counts_pending_asks_as_postgres_does(
    database_url: str,
) -> None:
    async with PostgresStore(database_url) as postgres:
        real = await _feed(postgres)
    assert real == [
        ("pending", 0),
        ("posted", 1, True, True),
        ("pending", 2),
        ("answered", 2, True),
        ("declined", 3, True),
        ("pending", 0),
        ("lost while listening", 0),
        ("lost when it ended", 1),
    ]
    assert await _feed(MemoryStore()) == real


@runtime_checkable
class _PushingStore(Protocol):
    def push(self) -> PushStore: ...


async def _devices(store: Seedable, minted: Callable[[str, str], Awaitable[str]]) -> list[object]:
    """The push port (`PushStore`): devices per (person, endpoint), the cap, own-only
    removal, the one VAPID key, answer tokens spent once."""
    assert isinstance(store, _PushingStore)
    world = await seed(store)
    push = store.push()
    trace: list[object] = []

    def device(n: int, name: str = "phone") -> NewSubscription:
        return NewSubscription(
            endpoint=f"https://p.test/{n}", p256dh="B" + "A" * 86, auth="A" * 22, device_name=name
        )

    async def step(label: str, call: Callable[[], Awaitable[object]]) -> object:
        try:
            result = await call()
        except CompassError as exc:
            trace.append((label, type(exc).__name__, str(exc)))
            return None
        trace.append((label, result if isinstance(result, (bool, int, type(None))) else "ok"))
        return result

    first = await push.add_push_subscription(world.human, device(0), most=2)
    again = await push.add_push_subscription(world.human, device(0, "renamed"), most=2)
    trace.append(("same endpoint, same id", first == again))
    theirs = await push.add_push_subscription(world.human2, device(0), most=2)
    trace.append(("another person's own", theirs != first))
    await step("second", lambda: push.add_push_subscription(world.human, device(1), most=2))
    await step("third", lambda: push.add_push_subscription(world.human, device(2), most=2))
    listed = await push.list_push_subscriptions(world.human)
    trace.append(("listed", [(r.device_name, r.last_success_at, r.last_error) for r in listed]))
    trace.append(("first listed", listed[0].subscription_id == first))
    await step("remove theirs", lambda: push.remove_push_subscription(world.human, theirs))
    await step("remove mine", lambda: push.remove_push_subscription(world.human, first))
    trace.append(("left", len(await push.list_push_subscriptions(world.human))))
    key = await push.vapid_private_key("first candidate")
    trace.append(("one key", key, await push.vapid_private_key("second candidate")))
    (ask_id,) = (await world.post(store, ask(question("db", "0", "1")))).ask_ids
    token = await minted(ask_id, world.human.account_id)
    found = await push.answer_token(token)
    assert found is not None
    trace.append(("token", found.ask_id == ask_id, found.account == world.human, found.used))
    await step("spend", lambda: push.spend_answer_token(token))
    await step("spend again", lambda: push.spend_answer_token(token))
    await step("unknown", lambda: push.answer_token("cmpa_unknown"))
    return trace


async def test_the_double_keeps_devices_and_tokens_as_postgres_does(database_url: str) -> None:
    async with PostgresStore(database_url) as postgres:
        outbox = postgres.push_outbox()
        real = await _devices(postgres, outbox.new_answer_token)
    memory = MemoryStore()

    async def mint(ask_id: str, account_id: str) -> str:
        return memory.push().mint(ask_id, account_id)

    double = await _devices(memory, mint)
    assert double == real
    assert (
        "third",
        "ResourceExhaustedError",
        "this account already has 2 devices for notifications; remove one first",
    ) in real
    assert ("remove theirs", "NotFoundError", "push subscription not found") in real
    assert ("spend again", False) in real
