"""ReportDelivery through the handlers, on the in-memory store double: the request checks
before any store call, the store's guards and the judge, every read carrying the receipt,
a live WatchChannel seeing it, and the metrics."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from compass_server.domain import requests
from compass_server.domain.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
)
from compass_server.observe.metrics import Metrics
from compass_server.service.asks import Asks
from compass_server.service.handlers import AgentHandlers, CommsHandlers
from gen.compass.v1 import agent_pb2, comms_pb2
from tests.integration.store._seed import answer, ask, question, text
from tests.memory_push import push_use_cases
from tests.unit.server.service.conftest import CTX

if TYPE_CHECKING:
    from compass_server.store import AccountRow
    from tests.unit.server.service.conftest import Service

S = comms_pb2
DETAIL = "the form was declined by the runtime"


async def _report(
    service: Service,
    ask_id: str,
    state: int = S.DELIVERY_STATE_NOT_DELIVERED,
    detail: str = DETAIL,
    payload: str = '{"action":"decline"}',
    actor: AccountRow | None = None,
) -> comms_pb2.Ask:
    request = agent_pb2.ReportDeliveryRequest(
        ask_id=ask_id,
        state=state,  # pyright: ignore[reportArgumentType] - any int: proto3 enums are open
        detail=detail,
        payload=payload,
    )
    with service.auth.bound(actor or service.world.agent):
        return (await service.agent.report_delivery(request, CTX)).ask


async def _answered(service: Service) -> str:
    message = await service.post(text("hi"), ask(question("db", "0", "1")))
    ask_id = message.blocks[1].ask.ask_id
    await service.respond(service.world.human, ask_id, [answer("db", "1")])
    return ask_id


async def test_a_receipt_comes_back_on_every_read(service: Service) -> None:
    ask_id = await _answered(service)
    reported = await _report(service, ask_id)
    assert reported.status == S.ASK_STATUS_ANSWERED
    assert reported.delivery.state == S.DELIVERY_STATE_NOT_DELIVERED
    assert reported.delivery.detail == DETAIL
    assert reported.delivery.reported_by_account_id == service.world.agent.account_id
    assert reported.delivery.reported_by_name == "Coding Agent"
    assert reported.delivery.HasField("reported_at")
    assert await service.get_ask(service.world.human, ask_id) == reported
    (message,) = await service.messages()
    assert message.blocks[1].ask == reported
    with service.auth.bound(service.world.agent):
        stream = service.agent.watch_ask(agent_pb2.WatchAskRequest(ask_id=ask_id), CTX)
        (watched,) = [response.ask async for response in stream]  # final: one, then the end
    assert watched == reported
    assert await _report(service, ask_id) == reported  # an identical repeat


async def test_a_live_channel_watch_sees_the_receipt(service: Service) -> None:
    ask_id = await _answered(service)
    world = service.world
    request = comms_pb2.WatchChannelRequest(channel_id=world.channel.channel_id)
    stream = aiter(service.comms.watch_channel(request, CTX))
    with service.auth.bound(world.human):
        async with asyncio.timeout(5):
            replayed = await anext(stream)
            assert not replayed.message.blocks[1].ask.HasField("delivery")
            assert (await anext(stream)).caught_up
            reported = await _report(service, ask_id)
            live = await anext(stream)  # woken by the change the store told the hub of
    assert live.message.blocks[1].ask == reported
    assert live.message.revision == replayed.message.revision + 1


async def test_the_guards_of_report_delivery(service: Service) -> None:
    world = service.world
    pending = (await service.post(ask(question("db", "0")))).blocks[0].ask.ask_id
    with pytest.raises(FailedPreconditionError, match="nothing delivered yet"):
        await _report(service, pending)
    ask_id = await _answered(service)
    with pytest.raises(NotFoundError, match=r"^ask not found$"):
        await _report(service, "ask_missing")
    with pytest.raises(PermissionDeniedError):
        await _report(service, ask_id, actor=world.human)
    await _report(service, ask_id)
    with pytest.raises(FailedPreconditionError, match="already reported"):
        await _report(service, ask_id, state=S.DELIVERY_STATE_DELIVERED, detail="")


@pytest.mark.parametrize(
    ("state", "detail", "payload", "fields"),
    [
        (S.DELIVERY_STATE_UNSPECIFIED, "", "", ["state"]),
        (S.DELIVERY_STATE_NOT_DELIVERED, "", "", ["detail"]),
        (S.DELIVERY_STATE_DELIVERED_WITH_CHANGES, "   ", "", ["detail"]),
        (S.DELIVERY_STATE_DELIVERED, "d" * 1001, "", ["detail"]),
        (S.DELIVERY_STATE_DELIVERED, "", "p" * 65537, ["payload"]),
        (S.DELIVERY_STATE_DELIVERED, "a\x00", "b\x00", ["detail", "payload"]),
    ],
)
async def test_a_malformed_receipt_never_reaches_the_store(
    service: Service, state: int, detail: str, payload: str, fields: list[str]
) -> None:
    ask_id = await _answered(service)
    before = list(service.store.calls)
    with pytest.raises(InvalidArgumentError) as caught:
        await _report(service, ask_id, state, detail, payload)
    assert [v.field for v in caught.value.violations] == fields
    assert service.store.calls == before
    assert not (await service.get_ask(service.world.human, ask_id)).HasField("delivery")


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ask_id=st.sampled_from(["", "ask_x", "a" * 201, "\x00"]),
    state=st.integers(min_value=0, max_value=4),
    detail=st.sampled_from(["", " ", "why", "d" * 1001, "\x00"]),
    payload=st.sampled_from(["", "{}", "p" * 65537, "\x00"]),
)
async def test_receipts_reach_the_store_exactly_when_well_formed(
    service: Service, ask_id: str, state: int, detail: str, payload: str
) -> None:
    request = agent_pb2.ReportDeliveryRequest(
        ask_id=ask_id,
        state=state,  # pyright: ignore[reportArgumentType] - any int: proto3 enums are open
        detail=detail,
        payload=payload,
    )
    try:
        requests.check_report_delivery(request)
    except InvalidArgumentError:
        well_formed = False
    else:
        well_formed = True
    service.store.calls.clear()
    try:
        await _report(service, ask_id, state, detail, payload)
    except InvalidArgumentError:
        assert not well_formed
    except NotFoundError:  # no such ask: the store was asked
        assert well_formed
    assert ("report_delivery" in service.store.calls) == well_formed


async def test_receipts_are_counted_once_by_state(service: Service) -> None:
    metrics = Metrics(lambda: datetime.now(UTC))
    asks = Asks(service.store, service.hub, metrics=metrics)
    handlers = AgentHandlers(asks, service.auth)
    comms = CommsHandlers(asks, service.auth, push=push_use_cases(service.store, asks))
    message = await service.post(ask(question("db", "0", "1")), ask(question("x", "0")))
    answered, declined = (b.ask.ask_id for b in message.blocks)
    with service.auth.bound(service.world.human):
        await comms.respond_to_ask(
            comms_pb2.RespondToAskRequest(ask_id=answered, answers=[answer("db", "0")]), CTX
        )
        await comms.decline_ask(comms_pb2.DeclineAskRequest(ask_id=declined), CTX)
    with service.auth.bound(service.world.agent):
        for ask_id, state in (
            (answered, S.DELIVERY_STATE_DELIVERED),
            (answered, S.DELIVERY_STATE_DELIVERED),  # an identical repeat
            (declined, S.DELIVERY_STATE_NOT_DELIVERED),
        ):
            request = agent_pb2.ReportDeliveryRequest(ask_id=ask_id, state=state, detail=DETAIL)
            await handlers.report_delivery(request, CTX)

    def value(name: str, labels: dict[str, str] | None = None) -> float | None:
        return metrics.registry.get_sample_value(name, labels or {})

    assert value("compass_ask_deliveries_total", {"state": "delivered"}) == 1
    assert value("compass_ask_deliveries_total", {"state": "not_delivered"}) == 1
    assert value("compass_ask_deliveries_total", {"state": "delivered_with_changes"}) == 0
    assert value("compass_ask_answer_to_receipt_seconds_count") == 2
