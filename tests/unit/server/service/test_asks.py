"""The application API (`service/asks.py`) on the in-memory store double, called as every
front door calls it: a plain actor, the contract's request message, no Connect.

Each use case in its guard order: a malformed request is refused before any store call (the
store's call log is unchanged) and before the post quota is spent; then the store's guards
(visibility, participation, authorship) and the judge; then the metrics. Each refusal is
checked as the Connect code and message it becomes (`transport/error_mapping`).
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

import pytest
from connectrpc.code import Code

from compass_server.domain.errors import CompassError
from compass_server.live.hub import ChangeHub
from compass_server.live.revocation import Revocations
from compass_server.observe.metrics import Metrics
from compass_server.quota import PostQuota
from compass_server.service.asks import Asks, McpAsks
from compass_server.service.streams import REVOKED, SHUTTING_DOWN
from compass_server.transport.error_mapping import to_connect_error
from gen.compass.v1 import agent_pb2, comms_pb2
from tests.integration.store._seed import answer, ask, question, seed, text
from tests.unit.server.service._mcp_store import McpMemoryStore

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Awaitable, Generator, Sequence

    from compass_server.store import AccountRow
    from tests.unit.server.service.conftest import Service

S = comms_pb2
A = agent_pb2
T = TypeVar("T")


async def refused(call: Awaitable[object]) -> tuple[Code, str]:
    """The Connect code and message the domain error `call` raises becomes."""
    with pytest.raises(CompassError) as caught:
        await call
    error = to_connect_error(caught.value, "test")
    return error.code, error.message


def _metrics() -> Metrics:
    return Metrics(lambda: datetime.now(UTC))


def _value(metrics: Metrics, name: str, labels: dict[str, str] | None = None) -> float | None:
    return metrics.registry.get_sample_value(name, labels or {})


def _append(channel_id: str, *blocks: S.MessageBlock, key: str = "") -> A.AppendMessageRequest:
    return A.AppendMessageRequest(
        channel_id=channel_id, frame=S.MessageUpdated(client_message_id=key, blocks=blocks)
    )


async def _ask_id(service: Service, asks: Asks | None = None) -> str:
    request = _append(service.world.channel.channel_id, text("hi"), ask(question("db", "0", "1")))
    row = await (asks or service.asks).append_message(service.world.agent, request)
    return row.ask_ids[0]


@contextlib.contextmanager
def _unchanged(service: Service) -> Generator[None]:
    """Asserts the block made no store call."""
    before = list(service.store.calls)
    yield
    assert service.store.calls == before


# -- messages ----------------------------------------------------------------------------------


async def test_append_checks_the_request_then_the_quota_then_the_store(service: Service) -> None:
    world = service.world
    metrics = _metrics()
    asks = Asks(service.store, service.hub, metrics=metrics, quota=PostQuota(60, burst=1))
    channel = world.channel.channel_id
    with _unchanged(service):  # malformed: refused before the quota and the store
        code, _ = await refused(asks.append_message(world.agent, _append("", text("x"))))
        assert code is Code.INVALID_ARGUMENT
        code, _ = await refused(
            asks.append_message(
                world.agent, _append(channel, ask(question("db", "0"), ask_id="ask_x"))
            )
        )
        assert code is Code.INVALID_ARGUMENT
    row = await asks.append_message(world.agent, _append(channel, ask(question("db", "0"))))
    assert row.author_account_id == world.agent.account_id
    assert row.ask_ids[0].startswith("ask_")
    assert _value(metrics, "compass_asks_created_total") == 1
    with _unchanged(service):  # the burst of one is spent: refused before the store
        code, message = await refused(asks.append_message(world.agent, _append(channel, text("y"))))
    assert (code, message.startswith("posting too fast")) == (Code.RESOURCE_EXHAUSTED, True)
    assert await refused(asks.append_message(world.outsider, _append(channel, text("z")))) == (
        Code.NOT_FOUND,
        "channel not found",
    )
    code, _ = await refused(asks.append_message(world.member, _append(channel, text("z"))))
    assert code is Code.PERMISSION_DENIED


async def test_update_keeps_the_stored_ask_and_checks_first(service: Service) -> None:
    world = service.world
    original = await service.asks.append_message(
        world.agent, _append(world.channel.channel_id, text("t"), ask(question("db", "0")))
    )
    blocks = list(original.blocks)
    blocks.append(ask(question("auth", "0")))
    request = A.UpdateMessageRequest(
        frame=S.MessageUpdated(message_id=original.message_id, blocks=blocks)
    )
    with _unchanged(service):
        empty = A.UpdateMessageRequest(frame=S.MessageUpdated(blocks=blocks))
        code, _ = await refused(service.asks.update_message(world.agent, empty))
    assert code is Code.INVALID_ARGUMENT
    code, _ = await refused(service.asks.update_message(world.human, request))
    assert code is Code.PERMISSION_DENIED  # only the author
    updated = await service.asks.update_message(world.agent, request)
    assert updated.ask_ids[0] == original.ask_ids[0]
    assert len(updated.ask_ids) == 2
    assert updated.revision == original.revision + 1


# -- outcomes and receipts ---------------------------------------------------------------------


async def test_respond_runs_the_guards_in_spec_order(service: Service) -> None:
    world = service.world
    metrics = _metrics()
    asks = Asks(service.store, service.hub, metrics=metrics)
    ask_id = await _ask_id(service, asks)
    unfit = S.RespondToAskRequest(ask_id=ask_id, answers=[answer("nope")])
    with _unchanged(service):  # step 2 before 3: malformed from an outsider is not NOT_FOUND
        malformed = S.RespondToAskRequest(ask_id="", answers=[answer("db", "1")])
        code, _ = await refused(asks.respond_to_ask(world.outsider, malformed))
    assert code is Code.INVALID_ARGUMENT
    assert await refused(asks.respond_to_ask(world.outsider, unfit)) == (
        Code.NOT_FOUND,
        "ask not found",
    )
    code, _ = await refused(asks.respond_to_ask(world.member, unfit))
    assert code is Code.PERMISSION_DENIED
    code, _ = await refused(asks.respond_to_ask(world.human, unfit))
    assert code is Code.INVALID_ARGUMENT
    fit = S.RespondToAskRequest(ask_id=ask_id, answers=[answer("db", "1")])
    row = await asks.respond_to_ask(world.human, fit)
    assert row.ask.status == S.ASK_STATUS_ANSWERED
    assert row.ask.answered_by_account_id == world.human.account_id
    assert await asks.respond_to_ask(world.human, fit) == row  # an identical retry
    code, message = await refused(asks.respond_to_ask(world.human2, fit))
    assert (code, "answered" in message) == (Code.FAILED_PRECONDITION, True)
    assert _value(metrics, "compass_ask_outcomes_total", {"status": "answered"}) == 1
    assert _value(metrics, "compass_questions_answered_total") == 1


async def test_decline_is_a_participants_and_retries_identically(service: Service) -> None:
    world = service.world
    metrics = _metrics()
    asks = Asks(service.store, service.hub, metrics=metrics)
    ask_id = await _ask_id(service, asks)
    with _unchanged(service):
        malformed = S.DeclineAskRequest(ask_id=ask_id, reason="\x00")
        code, _ = await refused(asks.decline_ask(world.human, malformed))
    assert code is Code.INVALID_ARGUMENT
    request = S.DeclineAskRequest(ask_id=ask_id, reason="not mine")
    code, message = await refused(asks.decline_ask(world.member, request))
    assert code is Code.PERMISSION_DENIED
    assert message.endswith("may decline it")
    row = await asks.decline_ask(world.human, request)
    assert row.ask.status == S.ASK_STATUS_DECLINED
    assert await asks.decline_ask(world.human, request) == row
    code, _ = await refused(asks.decline_ask(world.human2, request))
    assert code is Code.FAILED_PRECONDITION
    assert _value(metrics, "compass_ask_outcomes_total", {"status": "declined"}) == 1


async def test_close_is_the_authors_and_fits_timed_out_answers(service: Service) -> None:
    world = service.world
    ask_id = await _ask_id(service)
    with _unchanged(service):
        pending = A.CloseAskRequest(ask_id=ask_id, status=S.ASK_STATUS_PENDING)
        code, _ = await refused(service.asks.close_ask(world.agent, pending))
    assert code is Code.INVALID_ARGUMENT
    withdraw = A.CloseAskRequest(ask_id=ask_id, status=S.ASK_STATUS_WITHDRAWN, reason="done")
    assert await refused(service.asks.close_ask(world.human, withdraw)) == (
        Code.NOT_FOUND,
        "ask not found",
    )
    unfit = A.CloseAskRequest(
        ask_id=ask_id, status=S.ASK_STATUS_TIMED_OUT, answers=[answer("db", "9")]
    )
    code, _ = await refused(service.asks.close_ask(world.agent, unfit))
    assert code is Code.INVALID_ARGUMENT
    row = await service.asks.close_ask(world.agent, withdraw)
    assert (row.ask.status, row.ask.close_reason) == (S.ASK_STATUS_WITHDRAWN, "done")


async def test_report_delivery_follows_its_guards_and_counts_once(service: Service) -> None:
    world = service.world
    metrics = _metrics()
    asks = Asks(service.store, service.hub, metrics=metrics)
    ask_id = await _ask_id(service, asks)
    delivered = A.ReportDeliveryRequest(ask_id=ask_id, state=S.DELIVERY_STATE_DELIVERED)
    with _unchanged(service):
        unspecified = A.ReportDeliveryRequest(ask_id=ask_id)
        code, _ = await refused(asks.report_delivery(world.agent, unspecified))
    assert code is Code.INVALID_ARGUMENT
    code, message = await refused(asks.report_delivery(world.agent, delivered))
    assert (code, "nothing delivered yet" in message) == (Code.FAILED_PRECONDITION, True)
    await asks.respond_to_ask(
        world.human, S.RespondToAskRequest(ask_id=ask_id, answers=[answer("db", "0")])
    )
    code, _ = await refused(asks.report_delivery(world.human, delivered))
    assert code is Code.PERMISSION_DENIED  # only the asking agent
    row = await asks.report_delivery(world.agent, delivered)
    assert row.ask.delivery.state == S.DELIVERY_STATE_DELIVERED
    assert await asks.report_delivery(world.agent, delivered) == row  # an identical repeat
    assert _value(metrics, "compass_ask_deliveries_total", {"state": "delivered"}) == 1


# -- reads -------------------------------------------------------------------------------------


async def test_get_channel_checks_visibility_then_participation(service: Service) -> None:
    world = service.world
    request = A.GetChannelRequest(channel_id=world.channel.channel_id)
    with _unchanged(service):
        code, _ = await refused(service.asks.get_channel(world.agent, A.GetChannelRequest()))
    assert code is Code.INVALID_ARGUMENT
    code, _ = await refused(service.asks.get_channel(world.outsider, request))
    assert code is Code.NOT_FOUND
    assert await refused(service.asks.get_channel(world.member, request)) == (
        Code.PERMISSION_DENIED,
        "only participants of the channel may post in it",
    )
    channel = await service.asks.get_channel(world.agent, request)
    assert channel.channel_id == world.channel.channel_id


async def test_the_reads_check_first_and_count_what_people_were_shown(service: Service) -> None:
    world = service.world
    metrics = _metrics()
    asks = Asks(service.store, service.hub, metrics=metrics)
    ask_id = await _ask_id(service, asks)
    assert [c.channel_id for c in await asks.list_channels(world.agent)] == [
        world.channel.channel_id
    ]
    assert [w.workspace_id for w in await asks.list_workspaces(world.member)] == [
        world.workspace.workspace_id
    ]
    with _unchanged(service):
        bad_page = S.ListPendingAsksRequest(page_size=-1)
        assert (await refused(asks.list_pending_asks(world.human, bad_page)))[0] is (
            Code.INVALID_ARGUMENT
        )
        bad_messages = S.ListMessagesRequest(channel_id=world.channel.channel_id, page_size=-1)
        assert (await refused(asks.list_messages(world.human, bad_messages)))[0] is (
            Code.INVALID_ARGUMENT
        )
        assert (await refused(asks.get_ask(world.human, S.GetAskRequest())))[0] is (
            Code.INVALID_ARGUMENT
        )
    assert await refused(asks.get_ask(world.outsider, S.GetAskRequest(ask_id=ask_id))) == (
        Code.NOT_FOUND,
        "ask not found",
    )
    got = await asks.get_ask(world.human, S.GetAskRequest(ask_id=ask_id))
    assert (got.ask.ask_id, got.channel_id) == (ask_id, world.channel.channel_id)
    pending = await asks.list_pending_asks(world.human, S.ListPendingAsksRequest())
    assert [row.ask.ask.ask_id for row in pending.asks] == [ask_id]
    page = await asks.list_messages(
        world.human, S.ListMessagesRequest(channel_id=world.channel.channel_id)
    )
    assert [a for row in page.messages for a in row.ask_ids] == [ask_id]
    # The first of the three views is the first view: counted once.
    assert _value(metrics, "compass_ask_time_to_first_view_seconds_count") == 1


# -- watches -----------------------------------------------------------------------------------


async def _next(stream: AsyncGenerator[T], within: float = 5.0) -> T:
    async with asyncio.timeout(within):
        return await anext(stream)


async def test_watch_ask_sends_the_state_keepalives_and_ends_when_final(service: Service) -> None:
    world = service.world
    asks = Asks(service.store, service.hub, recheck_seconds=0.05)
    ask_id = await _ask_id(service, asks)
    stream = asks.watch_ask(world.agent, A.WatchAskRequest(ask_id=ask_id), token="")
    async with contextlib.aclosing(stream):
        first = await _next(stream)
        assert first is not None
        assert first.status == S.ASK_STATUS_PENDING
        assert await _next(stream) is None  # unchanged at a re-check: a keepalive
        await asks.respond_to_ask(
            world.human, S.RespondToAskRequest(ask_id=ask_id, answers=[answer("db", "1")])
        )
        final = await _next(stream)
        while final is None:  # a re-check may have fired just before the answer
            final = await _next(stream)
        assert final.status == S.ASK_STATUS_ANSWERED
        with pytest.raises(StopAsyncIteration):
            await _next(stream)


async def _opened(stream: AsyncGenerator[object]) -> AsyncGenerator[object]:
    await _next(stream)  # its first item: the stream holds its slot
    return stream


async def test_watch_ask_refuses_before_the_stream_visibility_before_the_cap(
    service: Service,
) -> None:
    world = service.world
    asks = Asks(service.store, service.hub, max_streams_per_account=1)
    ask_id = await _ask_id(service, asks)

    def watch(actor: AccountRow, ask_id: str) -> AsyncGenerator[S.Ask | None]:
        return asks.watch_ask(actor, A.WatchAskRequest(ask_id=ask_id), token="")

    with _unchanged(service):
        assert (await refused(anext(watch(world.agent, ""))))[0] is Code.INVALID_ARGUMENT
    async with contextlib.aclosing(await _opened(watch(world.agent, ask_id))):
        # The account's one slot is taken; an ask it cannot see is still NOT_FOUND.
        assert await refused(anext(watch(world.agent, "ask_missing"))) == (
            Code.NOT_FOUND,
            "ask not found",
        )
        code, message = await refused(anext(watch(world.agent, ask_id)))
        assert code is Code.RESOURCE_EXHAUSTED
        assert message.startswith("this account already has 1 open watch streams here")
        # The cap is the account's: another account still watches.
        async with contextlib.aclosing(await _opened(watch(world.human, ask_id))):
            pass
    async with contextlib.aclosing(await _opened(watch(world.agent, ask_id))):
        pass  # closing the first stream gave its slot back


async def test_one_cap_counts_both_kinds_of_watch(service: Service) -> None:
    world = service.world
    asks = Asks(service.store, service.hub, max_streams_per_account=2)
    ask_id = await _ask_id(service, asks)
    channel = S.WatchChannelRequest(channel_id=world.channel.channel_id)
    watch = A.WatchAskRequest(ask_id=ask_id)
    first = await _opened(asks.watch_channel(world.agent, channel, lambda row: row, token=""))
    async with contextlib.aclosing(first):
        second = await _opened(asks.watch_ask(world.agent, watch, token=""))
        async with contextlib.aclosing(second):
            assert (await refused(anext(asks.watch_ask(world.agent, watch, token=""))))[0] is (
                Code.RESOURCE_EXHAUSTED
            )
            third = asks.watch_channel(world.agent, channel, lambda row: row, token="")
            assert (await refused(anext(third)))[0] is Code.RESOURCE_EXHAUSTED
        async with contextlib.aclosing(await _opened(asks.watch_ask(world.agent, watch, token=""))):
            pass


async def test_a_revoked_token_ends_its_streams_only(service: Service) -> None:
    world = service.world
    valid: set[str] = {"kept"}

    async def valid_tokens(tokens: Sequence[str]) -> set[str]:
        return {t for t in tokens if t in valid}

    revocations = Revocations(valid_tokens)
    asks = Asks(service.store, service.hub, revocations=revocations)
    ask_id = await _ask_id(service, asks)
    request = A.WatchAskRequest(ask_id=ask_id)
    revoked = await _opened(asks.watch_ask(world.agent, request, token="gone"))
    kept = await _opened(asks.watch_ask(world.agent, request, token="kept"))
    untracked = await _opened(asks.watch_ask(world.agent, request, token=""))
    async with (
        contextlib.aclosing(revoked),
        contextlib.aclosing(kept),
        contextlib.aclosing(untracked),
    ):
        assert await revocations.check() == 1  # the one stream of the revoked token
        assert await refused(_next(revoked)) == (Code.UNAUTHENTICATED, REVOKED)
        for stream in (kept, untracked):  # still waiting: nothing to read
            with pytest.raises(TimeoutError):
                await _next(stream, within=0.1)


async def test_shutting_down_ends_every_watch(service: Service) -> None:
    world = service.world
    ask_id = await _ask_id(service)
    stream = await _opened(
        service.asks.watch_ask(world.agent, A.WatchAskRequest(ask_id=ask_id), token="")
    )
    async with contextlib.aclosing(stream):
        assert not service.asks.shutting_down
        service.hub.close()
        assert service.asks.shutting_down
        assert await refused(_next(stream)) == (Code.UNAVAILABLE, SHUTTING_DOWN)


async def test_watch_channel_presents_each_row_and_says_caught_up(service: Service) -> None:
    world = service.world
    asks = Asks(service.store, service.hub, recheck_seconds=0.05)
    first = await asks.append_message(world.agent, _append(world.channel.channel_id, text("1")))
    request = S.WatchChannelRequest(channel_id=world.channel.channel_id)
    with _unchanged(service):
        bad = S.WatchChannelRequest(channel_id=world.channel.channel_id, after_revision=-1)
        assert (await refused(anext(asks.watch_channel(world.agent, bad, str, token=""))))[
            0
        ] is Code.INVALID_ARGUMENT
    assert (await refused(anext(asks.watch_channel(world.outsider, request, str, token=""))))[
        0
    ] is Code.NOT_FOUND
    stream = asks.watch_channel(world.human, request, lambda row: row.message_id, token="")
    async with contextlib.aclosing(stream):
        assert await _next(stream) == first.message_id  # the replay, as `present` made it
        assert await _next(stream) is None  # caught up
        assert await _next(stream) is None  # and again at a quiet re-check
        second = await asks.append_message(
            world.agent, _append(world.channel.channel_id, text("2"))
        )
        live = await _next(stream)
        while live is None:
            live = await _next(stream)
        assert live == second.message_id


# -- the MCP tool calls' use cases ---------------------------------------------------------------


async def test_an_mcp_ask_is_checked_and_counted_as_append_message() -> None:
    store = McpMemoryStore()
    world = await seed(store)
    metrics = _metrics()
    asks = McpAsks(store, ChangeHub(), metrics=metrics, quota=PostQuota(60, burst=1))
    channel = world.channel.channel_id
    before = list(store.calls)
    code, _ = await refused(
        asks.open_mcp_ask(
            world.agent,
            _append(channel, ask(question("db", "0"), ask_id="ask_x")),
            call_key="k",
            waiter_id="w",
            seconds=1,
        )
    )
    assert (code, store.calls) == (Code.INVALID_ARGUMENT, before)  # no store call
    request = _append(channel, ask(question("db", "0", "1")))
    row, created, slot = await asks.open_mcp_ask(
        world.agent, request, call_key="k", waiter_id="w", seconds=7
    )
    slot.release()
    assert created
    assert store.waits == [("hold", row.ask.ask_id, "w", 7)]
    assert _value(metrics, "compass_asks_created_total") == 1
    before = list(store.calls)
    code, _ = await refused(  # the same post quota as AppendMessage: spent
        asks.open_mcp_ask(world.agent, request, call_key="k", waiter_id="w2", seconds=7)
    )
    assert (code, store.calls) == (Code.RESOURCE_EXHAUSTED, before)
    await asks.hold_mcp_wait(world.agent, row.ask.ask_id, "w", 3)
    await asks.release_mcp_wait(world.agent, row.ask.ask_id, "w", grace=None)
    await asks.release_mcp_wait(world.agent, row.ask.ask_id, "w", grace=2)
    assert store.waits[1:] == [
        ("hold", row.ask.ask_id, "w", 3),
        ("release", row.ask.ask_id, "w", None),
        ("release", row.ask.ask_id, "w", 2),
    ]
    store.abandoned = [row.ask.ask_id]
    assert await asks.withdraw_abandoned("agent stopped waiting") == [row.ask.ask_id]
    assert _value(metrics, "compass_ask_outcomes_total", {"status": "withdrawn"}) == 1


async def test_a_rejoined_mcp_ask_is_not_counted_again() -> None:
    store = McpMemoryStore()
    world = await seed(store)
    metrics = _metrics()
    asks = McpAsks(store, ChangeHub(), metrics=metrics)
    request = _append(world.channel.channel_id, ask(question("db", "0", "1")))
    first, created, _slot = await asks.open_mcp_ask(
        world.agent, request, call_key="k", waiter_id="w", seconds=1
    )
    again, rejoined, _slot = await asks.open_mcp_ask(
        world.agent, request, call_key="k", waiter_id="w2", seconds=1
    )
    assert (created, rejoined) == (True, False)
    assert again.ask.ask_id == first.ask.ask_id
    assert _value(metrics, "compass_asks_created_total") == 1


async def test_an_mcp_ask_takes_its_wait_s_stream_slot_before_anything_is_stored() -> None:
    """The wait that follows an MCP ask is a watch, one of the account's streams: its slot is
    taken first, so a call over the cap is refused with nothing stored and no quota spent
    (issue 33, H2); the watch handed the slot takes no second one and gives it back when it
    ends, and a slot never handed to a watch is released by its holder."""
    store = McpMemoryStore()
    world = await seed(store)
    asks = McpAsks(store, ChangeHub(), quota=PostQuota(60, burst=2), max_streams_per_account=1)
    channel = world.channel.channel_id
    row, _created, slot = await asks.open_mcp_ask(
        world.agent,
        _append(channel, ask(question("db", "0"))),
        call_key="a",
        waiter_id="w",
        seconds=1,
    )
    before = list(store.calls)
    code, message = await refused(
        asks.open_mcp_ask(
            world.agent,
            _append(channel, ask(question("db", "1"))),
            call_key="b",
            waiter_id="w2",
            seconds=1,
        )
    )
    assert (code, store.calls) == (Code.RESOURCE_EXHAUSTED, before)
    assert message.startswith("this account already has 1 open watch streams here")
    request = A.WatchAskRequest(ask_id=row.ask.ask_id)
    watch = asks.watch_ask(world.agent, request, token="", slot=slot)
    async with contextlib.aclosing(await _opened(watch)):
        assert (await refused(anext(asks.watch_ask(world.agent, request, token=""))))[0] is (
            Code.RESOURCE_EXHAUSTED
        )
    # The watch gave the slot back; the quota was not spent by the refusal (burst 2).
    _row, _created, unused = await asks.open_mcp_ask(
        world.agent,
        _append(channel, ask(question("db", "1"))),
        call_key="b",
        waiter_id="w2",
        seconds=1,
    )
    unused.release()
    unused.release()  # once only
    async with contextlib.aclosing(await _opened(asks.watch_ask(world.agent, request, token=""))):
        pass
