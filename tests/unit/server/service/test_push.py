"""The push use cases (`service/push.py`) and their CommsService handlers on the in-memory
store doubles: a person's devices, the key to subscribe with, and the answer a notification's
button sends, which goes through RespondToAsk's own use case.

Each refusal is checked as the Connect code it becomes (`transport/error_mapping`). The same
over real HTTP and PostgreSQL: tests/e2e/test_push.py.
"""

from __future__ import annotations

import base64
import dataclasses
from typing import TYPE_CHECKING

import pytest
from connectrpc.code import Code
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from compass_server.domain.errors import CompassError
from compass_server.domain.push import MAX_SUBSCRIPTIONS
from compass_server.domain.vapid import VapidKey, generate_private_key
from compass_server.service.push import UNKNOWN_TOKEN
from compass_server.transport.error_mapping import to_connect_error
from gen.compass.v1 import comms_pb2
from tests.integration.store._seed import answer, ask, question
from tests.memory_push import MemoryPushStore, push_use_cases
from tests.unit.server.service.conftest import CTX

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from compass_server.service.push import Push
    from compass_server.store import AccountRow
    from tests.unit.server.service.conftest import Service

S = comms_pb2


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def device(
    endpoint: str = "https://push.example.com/send/1", name: str = "phone"
) -> S.AddPushSubscriptionRequest:
    point = (
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    )
    return S.AddPushSubscriptionRequest(
        endpoint=endpoint, p256dh=b64(point), auth=b64(b"s" * 16), device_name=name
    )


async def refused(call: Awaitable[object]) -> tuple[Code, str]:
    with pytest.raises(CompassError) as caught:
        await call
    error = to_connect_error(caught.value, "test")
    return error.code, error.message


def _push(service: Service) -> Push:
    return push_use_cases(service.store, service.asks)


def _devices(service: Service) -> MemoryPushStore:
    return service.store.push()


async def test_the_key_to_subscribe_with_is_one_p256_point_for_good(service: Service) -> None:
    with service.auth.bound(service.world.human):
        first = await service.comms.get_push_config(S.GetPushConfigRequest(), CTX)
        again = await service.comms.get_push_config(S.GetPushConfigRequest(), CTX)
    raw = base64.urlsafe_b64decode(first.vapid_public_key + "==")
    assert len(raw) == 65
    assert raw[0] == 4
    assert "=" not in first.vapid_public_key
    assert again.vapid_public_key == first.vapid_public_key
    # Another process of the same database (another Push on the same store): the same key.
    other = await _push(service).vapid_public_key(service.world.human2)
    assert other == first.vapid_public_key
    # A configured key wins over the stored one.
    configured = generate_private_key()
    mine = push_use_cases(service.store, service.asks, configured_key=configured)
    assert await mine.vapid_public_key(service.world.human) == VapidKey.parse(configured).public_key


async def test_a_person_adds_lists_and_removes_their_devices(service: Service) -> None:
    human, comms = service.world.human, service.comms
    with service.auth.bound(human):
        added = await comms.add_push_subscription(device(name="phone"), CTX)
        renamed = await comms.add_push_subscription(device(name="my phone"), CTX)  # same endpoint
        laptop = await comms.add_push_subscription(
            device("https://push.example.com/2", "laptop"), CTX
        )
        listed = (
            await comms.list_push_subscriptions(S.ListPushSubscriptionsRequest(), CTX)
        ).subscriptions
    assert renamed.subscription_id == added.subscription_id  # the same endpoint: the same id
    assert [(s.subscription_id, s.device_name) for s in listed] == [
        (added.subscription_id, "my phone"),
        (laptop.subscription_id, "laptop"),
    ]
    assert listed[0].HasField("created_at")
    assert not listed[0].HasField("last_success_at")
    assert listed[0].last_error == ""
    # Own only: another person neither sees nor removes them.
    with service.auth.bound(service.world.human2):
        theirs = await comms.list_push_subscriptions(S.ListPushSubscriptionsRequest(), CTX)
        assert list(theirs.subscriptions) == []
        request = S.RemovePushSubscriptionRequest(subscription_id=laptop.subscription_id)
        assert await refused(comms.remove_push_subscription(request, CTX)) == (
            Code.NOT_FOUND,
            "push subscription not found",
        )
    with service.auth.bound(human):
        await comms.remove_push_subscription(request, CTX)
        left = await comms.list_push_subscriptions(S.ListPushSubscriptionsRequest(), CTX)
    assert [s.subscription_id for s in left.subscriptions] == [added.subscription_id]


async def test_the_twenty_first_device_is_refused(service: Service) -> None:
    push = _push(service)
    for n in range(MAX_SUBSCRIPTIONS):
        await push.add_subscription(service.world.human, device(f"https://p.example.com/{n}"))
    code, message = await refused(
        push.add_subscription(service.world.human, device("https://p.example.com/21"))
    )
    assert code is Code.RESOURCE_EXHAUSTED
    assert "20 devices" in message
    # An endpoint already registered is still updated.
    await push.add_subscription(service.world.human, device("https://p.example.com/3", "new"))
    assert len(await push.list_subscriptions(service.world.human)) == MAX_SUBSCRIPTIONS


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"endpoint": "http://push.example.com/1"}, "endpoint"),
        ({"endpoint": "https://192.168.0.7/1"}, "endpoint"),
        ({"p256dh": b64(b"\x04" * 65)}, "p256dh"),
        ({"auth": b64(b"x" * 17)}, "auth"),
        ({"device_name": "n" * 201}, "device_name"),
    ],
)
async def test_bad_input_is_refused_naming_the_field_and_nothing_is_stored(
    service: Service, fields: dict[str, str], field: str
) -> None:
    request = device()
    for name, value in fields.items():
        setattr(request, name, value)
    code, message = await refused(_push(service).add_subscription(service.world.human, request))
    assert code is Code.INVALID_ARGUMENT
    assert field in message
    assert _devices(service).devices == {}


async def test_an_agent_gets_no_devices(service: Service) -> None:
    code, _ = await refused(_push(service).add_subscription(service.world.agent, device()))
    assert code is Code.PERMISSION_DENIED
    assert _devices(service).devices == {}


# -- answering from a notification -----------------------------------------------------------


async def _pushed(service: Service, *questions: S.AskQuestion) -> tuple[str, str]:
    """An ask posted by the agent, and an answer token pushed to Ada's device for it."""
    message = await service.post(ask(*(questions or (question("db", "0", "1"),))))
    ask_id = message.blocks[0].ask.ask_id
    return ask_id, _devices(service).mint(ask_id, service.world.human.account_id)


async def test_a_tap_answers_as_the_person_once(service: Service) -> None:
    ask_id, token = await _pushed(service)
    push = _push(service)
    tapped = await push.answer(token, "1")
    assert (tapped.status, tapped.answered) == (S.ASK_STATUS_ANSWERED, True)
    answered = await service.get_ask(service.world.human, ask_id)
    assert answered.answered_by_account_id == service.world.human.account_id
    assert list(answered.questions[0].chosen_option_ids) == ["1"]
    assert service.store.calls.count("answer_ask") == 1  # RespondToAsk's own write
    # The token is spent: a second tap fails closed, as an unknown token does.
    assert await refused(push.answer(token, "1")) == (Code.NOT_FOUND, UNKNOWN_TOKEN)
    assert await refused(push.answer("cmpa_never-issued", "1")) == (Code.NOT_FOUND, UNKNOWN_TOKEN)
    assert await refused(push.answer("", "1")) == (Code.NOT_FOUND, UNKNOWN_TOKEN)


async def test_a_tap_on_an_ended_ask_says_how_it_ended_and_writes_nothing(service: Service) -> None:
    ask_id, token = await _pushed(service)
    await service.respond(service.world.human2, ask_id, [answer("db", "0")])
    writes = service.store.calls.count("answer_ask")
    tapped = await _push(service).answer(token, "1")
    assert (tapped.status, tapped.answered) == (S.ASK_STATUS_ANSWERED, False)
    assert service.store.calls.count("answer_ask") == writes
    assert (await service.get_ask(service.world.human, ask_id)).answered_by_account_id == (
        service.world.human2.account_id
    )
    declined_id, declined_token = await _pushed(service)
    await service.decline(service.world.human2, declined_id)
    tapped = await _push(service).answer(declined_token, "0")
    assert (tapped.status, tapped.answered) == (S.ASK_STATUS_DECLINED, False)


async def test_an_option_that_does_not_answer_is_refused_and_the_token_still_works(
    service: Service,
) -> None:
    _, token = await _pushed(service)
    push = _push(service)
    with pytest.raises(CompassError) as caught:
        await push.answer(token, "7")
    assert to_connect_error(caught.value, "test").code is Code.INVALID_ARGUMENT
    assert any("7" in v.description for v in getattr(caught.value, "violations", ()))
    assert (await push.answer(token, "0")).answered
    _, several = await _pushed(service, question("db", "0", "1"), question("cache", "0"))
    code, _ = await refused(push.answer(several, "0"))  # two questions: one tap cannot answer
    assert code is Code.INVALID_ARGUMENT


async def test_a_disabled_account_cannot_answer(service: Service) -> None:
    ask_id, token = await _pushed(service)
    human: AccountRow = service.world.human
    service.store._accounts[human.account_id] = dataclasses.replace(human, disabled=True)  # pyright: ignore[reportPrivateUsage] - the double has no disable_account
    assert await refused(_push(service).answer(token, "0")) == (
        Code.PERMISSION_DENIED,
        "this account is disabled",
    )
    assert not (await service.get_ask(service.world.human2, ask_id)).answered_by_account_id


async def test_a_token_for_someone_who_left_the_channel_is_refused(service: Service) -> None:
    message = await service.post(ask(question("db", "0", "1")))
    ask_id = message.blocks[0].ask.ask_id
    token = _devices(service).mint(
        ask_id, service.world.member.account_id
    )  # sees, not a participant
    code, _ = await refused(_push(service).answer(token, "0"))
    assert code is Code.PERMISSION_DENIED
    outsider = _devices(service).mint(ask_id, service.world.outsider.account_id)  # sees nothing
    assert await refused(_push(service).answer(outsider, "0")) == (Code.NOT_FOUND, UNKNOWN_TOKEN)
