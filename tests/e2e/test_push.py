"""Web Push end to end: `compass serve` pushes asks to devices through a loopback stand-in of
a push service (tests/e2e/_push_service.py), which checks each push's VAPID JWT and decrypts
it with the subscriber's key as a browser would; a notification's button answers through
POST /push/answer.

Devices are registered with the real RPCs (AddPushSubscription with a person's token), asks
posted by the agent (AppendMessage), answers given by people (RespondToAsk) or by a tap.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING

import httpx
import pytest

from compass_server.store.postgres import PostgresStore
from tests import _procs, _server
from tests._wait import eventually
from tests.e2e import _push_service
from tests.e2e._asks import answer, ask_block, ask_ids, post, question, respond
from tests.e2e._connect import call, open_stream

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Generator

    from tests.e2e._push_service import PushService

PUSH_ENV = {
    "COMPASS_WEBHOOK_POLL_SECONDS": "0.1",
    "COMPASS_WEBHOOK_BACKOFF_SECONDS": "0.3,0.3",
    "COMPASS_WEBHOOK_TIMEOUT_SECONDS": "4",
    "COMPASS_REMINDER_AFTER_SECONDS": "0",
    "COMPASS_PUSH_ALLOW_HOSTS": "127.0.0.1",  # the stand-in is on loopback
    "COMPASS_VAPID_SUBJECT": "mailto:ops@compass.test",
}
ONE_TAP = ask_block(question("db", "0", "1"))
"""One single-select question with two options: answerable from the notification."""


@pytest.fixture
def push_server(database_url: str) -> Generator[_server.RunningServer]:
    with _server.serve(database_url, env=PUSH_ENV) as server:
        yield server


@pytest.fixture
async def world(push_server: _server.RunningServer) -> _server.SeededWorld:
    return await _server.seed_world(push_server.dsn)


@pytest.fixture
async def http(push_server: _server.RunningServer) -> AsyncGenerator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=push_server.url, timeout=30) as client:
        yield client


@pytest.fixture
async def pushes(
    http: httpx.AsyncClient, world: _server.SeededWorld
) -> AsyncGenerator[PushService]:
    async with _push_service.serving() as service:
        await service.learn_key(http, world.human.token)
        yield service


async def tap(http: httpx.AsyncClient, url: str, token: object, option_id: str) -> httpx.Response:
    """What the service worker sends when a notification's button is clicked."""
    return await http.post(
        url,
        json={"answer_token": token, "option_id": option_id},
        headers={"content-type": "application/json"},
    )


def _admin(dsn: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "compass_server.cli", "admin", *args],
        env={**os.environ, "COMPASS_DATABASE_URL": dsn},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_an_ask_is_pushed_encrypted_and_signed_and_a_tap_answers_it(
    push_server: _server.RunningServer,
    http: httpx.AsyncClient,
    world: _server.SeededWorld,
    pushes: PushService,
) -> None:
    _, ada_phone, _ = await pushes.add_device(http, world.human.token)
    _, grace_phone, _ = await pushes.add_device(http, world.human2.token)
    await pushes.add_device(http, world.outsider.token)  # another workspace: never told
    (ask_id,) = ask_ids(await post(http, world.agent.token, world.channel_id, ONE_TAP))
    await pushes.wait_for(
        lambda: len(pushes.of(ada_phone)) == len(pushes.of(grace_phone)) == 1, "the pushes"
    )
    assert pushes.rejected == []
    (pushed,) = pushes.of(ada_phone)
    payload = pushed.payload
    assert payload["type"] == "ask"
    assert payload["ask_id"] == payload["tag"] == ask_id
    assert payload["title"] == "Coding Agent asks in #general"
    assert payload["body"] == "What about db?"
    assert payload["url"] == f"{push_server.url}#/ask/{ask_id}"
    assert payload["actions"] == [
        {"action": "0", "title": "label 0"},
        {"action": "1", "title": "label 1"},
    ]
    assert payload["answer_url"] == f"{push_server.url}push/answer"
    token = payload["answer_token"]
    assert isinstance(token, str)
    assert pushed.headers["urgency"] == "high"
    assert 0 < int(pushed.headers["ttl"]) <= 24 * 3600
    assert len(pushed.headers["topic"]) <= 32
    assert pushed.claims["sub"] == "mailto:ops@compass.test"
    assert token not in push_server.log()  # nor is the payload logged
    assert pushes.of(grace_phone)[0].payload["answer_token"] != token  # one per device

    async with open_stream(http, "WatchAsk", {"askId": ask_id}, world.agent.token) as watch:
        assert _status(await watch.message(within=10)) == "ASK_STATUS_PENDING"
        answered = await tap(http, str(payload["answer_url"]), token, "1")
        assert (answered.status_code, answered.json()) == (200, {"status": "ASK_STATUS_ANSWERED"})
        assert answered.headers["cache-control"] == "no-store"
        # The agent gets the answer as it gets any.
        seen = await watch.message(within=10)
    assert _status(seen) == "ASK_STATUS_ANSWERED"
    asked = seen["ask"]
    assert isinstance(asked, dict)
    assert asked["answeredByAccountId"] == world.human.account_id
    assert asked["questions"][0]["chosenOptionIds"] == ["1"]  # pyright: ignore[reportIndexIssue, reportUnknownVariableType]
    # Spent: a second tap fails closed, as an unknown token does.
    again = await tap(http, str(payload["answer_url"]), token, "1")
    unknown = await tap(http, str(payload["answer_url"]), "cmpa_" + "x" * 43, "1")
    assert again.status_code == unknown.status_code == 404
    assert again.json() == unknown.json() == {"error": "unknown or used answer token"}
    # Every device that was told is told it ended, by whom.
    await pushes.wait_for(
        lambda: [r.type for r in pushes.of(grace_phone)] == ["ask", "ask_closed"], "the closing"
    )
    closed = pushes.of(grace_phone)[1]
    assert closed.payload == {
        "type": "ask_closed",
        "ask_id": ask_id,
        "tag": ask_id,
        "status": "ASK_STATUS_ANSWERED",
        "by": "Ada",
    }
    assert closed.headers["urgency"] == "normal"
    assert closed.headers["topic"] == pushed.headers["topic"]  # replaces a waiting notice
    # Grace's tap on her (stale) notice: the ask is final, nothing is written.
    late = await tap(
        http, str(payload["answer_url"]), pushes.of(grace_phone)[0].payload["answer_token"], "0"
    )
    assert (late.status_code, late.json()) == (409, {"status": "ASK_STATUS_ANSWERED"})
    listed = await call(http, "ListPushSubscriptions", {}, world.human.token)
    (device,) = listed.body["subscriptions"]  # pyright: ignore[reportGeneralTypeIssues]
    assert device["deviceName"] == "phone"  # pyright: ignore[reportIndexIssue, reportCallIssue, reportArgumentType]
    assert "lastSuccessAt" in device  # pyright: ignore[reportOperatorIssue]
    assert "endpoint" not in json.dumps(listed.body)


def _status(watched: dict[str, object]) -> object:
    asked = watched.get("ask")
    return asked.get("status") if isinstance(asked, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType] - JSON


async def test_a_gone_device_is_removed_and_a_failing_one_is_retried(
    push_server: _server.RunningServer,
    http: httpx.AsyncClient,
    world: _server.SeededWorld,
    pushes: PushService,
) -> None:
    _, gone, _ = await pushes.add_device(http, world.human.token, 410)
    _, flaky, _ = await pushes.add_device(http, world.human2.token, 500, 429)
    await post(http, world.agent.token, world.channel_id, ONE_TAP)
    await pushes.wait_for(lambda: len(pushes.of(flaky)) == 1, "the retried push")
    assert pushes.attempts[flaky.rsplit("/", 1)[-1]] == 3  # 500, 429, then 201

    def removed() -> bool:
        return pushes.attempts.get(gone.rsplit("/", 1)[-1]) == 1

    await eventually(removed, "the gone device's push")

    async def unlisted() -> bool:
        reply = await call(http, "ListPushSubscriptions", {}, world.human.token)
        return "subscriptions" not in reply.body

    await eventually(unlisted, "the gone device removed")
    # Never pushed again.
    await post(http, world.agent.token, world.channel_id, ONE_TAP)
    await pushes.wait_for(lambda: len(pushes.of(flaky)) == 2, "the next ask")
    assert pushes.attempts[gone.rsplit("/", 1)[-1]] == 1


async def test_a_hanging_push_service_delays_no_other_device(
    http: httpx.AsyncClient, world: _server.SeededWorld, pushes: PushService
) -> None:
    """One device's push service takes a push and never answers (until Compass gives up after
    COMPASS_WEBHOOK_TIMEOUT_SECONDS): the other device's push arrives while it still hangs."""
    _, hanging, _ = await pushes.add_device(http, world.human.token, _push_service.HANG)
    _, fine, _ = await pushes.add_device(http, world.human2.token)
    await post(http, world.agent.token, world.channel_id, ONE_TAP)
    await pushes.wait_for(lambda: len(pushes.of(fine)) == 1, "the healthy device's push")
    # It did not wait for the hanging one: that push had not ended (given up) when this one
    # arrived (whichever of the two was sent first), and it was not tried again meanwhile.
    assert pushes.of(fine)[0].hangs_ended == 0
    assert pushes.attempts.get(hanging.rsplit("/", 1)[-1], 0) <= 1
    # The hanging push is given up (timeout) and retried: then it arrives.
    await pushes.wait_for(lambda: len(pushes.of(hanging)) == 1, "the retried push", within=30)
    assert pushes.attempts[hanging.rsplit("/", 1)[-1]] == 2


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"endpoint": "http://push.example.com/x"}, "endpoint"),
        ({"endpoint": "https://10.1.2.3/x"}, "endpoint"),
        ({"endpoint": "https://localhost/x"}, "endpoint"),
        ({"endpoint": "not a url"}, "endpoint"),
        ({"p256dh": _push_service.b64(b"\x04" * 65)}, "p256dh"),
        ({"p256dh": ""}, "p256dh"),
        ({"auth": _push_service.b64(b"a" * 8)}, "auth"),
        ({"deviceName": "d" * 201}, "deviceName"),
    ],
)
async def test_bad_input_is_refused_naming_the_field_with_nothing_stored(
    http: httpx.AsyncClient,
    world: _server.SeededWorld,
    pushes: PushService,
    change: dict[str, str],
    field: str,
) -> None:
    endpoint, subscriber = pushes.subscribe()
    body = {
        "endpoint": endpoint,
        "p256dh": subscriber.p256dh,
        "auth": _push_service.b64(subscriber.auth),
        "deviceName": "phone",
        **change,
    }
    reply = await call(http, "AddPushSubscription", body, world.human.token)
    assert reply.code == "invalid_argument", reply
    wire_field = {"deviceName": "device_name"}.get(field, field)
    assert [v.field for v in reply.violations()] == [wire_field]
    assert wire_field in reply.message
    listed = await call(http, "ListPushSubscriptions", {}, world.human.token)
    assert listed.body == {}


async def test_an_agent_may_not_subscribe_and_twenty_devices_at_most(
    http: httpx.AsyncClient, world: _server.SeededWorld, pushes: PushService
) -> None:
    endpoint, subscriber = pushes.subscribe()
    body = {
        "endpoint": endpoint,
        "p256dh": subscriber.p256dh,
        "auth": _push_service.b64(subscriber.auth),
    }
    refused = await call(http, "AddPushSubscription", body, world.agent.token)
    assert refused.code == "permission_denied", refused
    for _ in range(20):
        await pushes.add_device(http, world.human.token)
    endpoint, subscriber = pushes.subscribe()
    body = {**body, "endpoint": endpoint}
    full = await call(http, "AddPushSubscription", body, world.human.token)
    assert full.code == "resource_exhausted", full
    listed = await call(http, "ListPushSubscriptions", {}, world.human.token)
    assert len(listed.body["subscriptions"]) == 20  # pyright: ignore[reportArgumentType]
    agent_list = await call(http, "ListPushSubscriptions", {}, world.agent.token)
    assert agent_list.code == "permission_denied"


async def test_answer_tokens_of_a_revoked_or_disabled_person_are_refused(
    push_server: _server.RunningServer,
    http: httpx.AsyncClient,
    world: _server.SeededWorld,
    pushes: PushService,
) -> None:
    _, ada, _ = await pushes.add_device(http, world.human.token)
    _, grace, _ = await pushes.add_device(http, world.human2.token)
    await post(http, world.agent.token, world.channel_id, ONE_TAP)
    await pushes.wait_for(lambda: len(pushes.of(ada)) == len(pushes.of(grace)) == 1, "the pushes")
    ada_push, grace_push = pushes.of(ada)[0].payload, pushes.of(grace)[0].payload
    url = str(ada_push["answer_url"])
    _admin(push_server.dsn, "revoke-sessions", "--account", world.human.account_id)
    revoked = await tap(http, url, ada_push["answer_token"], "0")
    assert (revoked.status_code, revoked.json()) == (404, {"error": "unknown or used answer token"})
    listed = await call(http, "ListPushSubscriptions", {}, world.human.token)
    assert listed.body == {}  # revoke-sessions ended the devices too
    _admin(push_server.dsn, "disable-account", "--account", world.human2.account_id)
    disabled = await tap(http, url, grace_push["answer_token"], "0")
    assert (disabled.status_code, disabled.json()) == (403, {"error": "this account is disabled"})
    async with open_stream(
        http, "WatchAsk", {"askId": ada_push["ask_id"]}, world.agent.token
    ) as watch:
        assert _status(await watch.message(within=10)) == "ASK_STATUS_PENDING"  # untouched


@pytest.mark.parametrize(
    ("content", "headers", "status"),
    [
        (b"{", {"content-type": "application/json"}, 400),
        (b'{"answer_token": 1, "option_id": "0"}', {"content-type": "application/json"}, 400),
        (b"[]", {"content-type": "application/json"}, 400),
        (b'{"answer_token": "t", "option_id": "0"}', {"content-type": "text/plain"}, 415),
        (b'{"answer_token": "' + b"t" * 5000 + b'"}', {"content-type": "application/json"}, 413),
        (
            b'{"answer_token": "cmpa_nope", "option_id": "0"}',
            {"content-type": "application/json"},
            404,
        ),
    ],
)
async def test_the_answer_door_refuses_what_it_cannot_use_without_saying_more(
    push_server: _server.RunningServer,
    http: httpx.AsyncClient,
    content: bytes,
    headers: dict[str, str],
    status: int,
) -> None:
    response = await http.post("/push/answer", content=content, headers=headers)
    assert response.status_code == status
    assert set(response.json()) == {"error"}
    assert "Traceback" not in response.text
    assert "Error" not in response.text  # no exception class names
    assert (await http.get("/push/answer")).status_code == 404  # POST only


async def test_an_unknown_option_is_refused_and_the_token_still_answers(
    http: httpx.AsyncClient, world: _server.SeededWorld, pushes: PushService
) -> None:
    _, ada, _ = await pushes.add_device(http, world.human.token)
    await post(http, world.agent.token, world.channel_id, ONE_TAP)
    await pushes.wait_for(lambda: len(pushes.of(ada)) == 1, "the push")
    payload = pushes.of(ada)[0].payload
    url, token = str(payload["answer_url"]), payload["answer_token"]
    wrong = await tap(http, url, token, "9")
    assert wrong.status_code == 400
    assert "9" in wrong.json()["error"]
    right = await tap(http, url, token, "0")
    assert (right.status_code, right.json()) == (200, {"status": "ASK_STATUS_ANSWERED"})


async def test_a_form_is_pushed_without_buttons_and_its_closing_for_each_ending(
    http: httpx.AsyncClient, world: _server.SeededWorld, pushes: PushService
) -> None:
    _, ada, _ = await pushes.add_device(http, world.human.token)
    form = ask_block(question("db", "0", "1"), question("features", "0", "1", multi=True))
    await post(http, world.agent.token, world.channel_id, form)
    await pushes.wait_for(lambda: len(pushes.of(ada)) == 1, "the form's push")
    payload = pushes.of(ada)[0].payload
    assert payload["actions"] == []
    assert payload["body"] == "What about db? (+1 more)"
    declined = await call(http, "DeclineAsk", {"askId": payload["ask_id"]}, world.human2.token)
    assert declined.ok, declined
    await pushes.wait_for(lambda: len(pushes.of(ada)) == 2, "the closing")
    closing = pushes.of(ada)[1].payload
    assert (closing["status"], closing["by"]) == ("ASK_STATUS_DECLINED", "Grace")


async def test_two_workers_push_each_event_to_each_device_exactly_once(database_url: str) -> None:
    """`compass serve --workers 2`: both workers claim from the push outbox, and every (device,
    ask, event) arrives once; which worker sent each is read from /proc (tests/_procs.py)."""
    env = {**PUSH_ENV, "COMPASS_WORKERS": "2"}
    with _server.serve(database_url, env=env, timeout=60) as server:
        workers = _procs.children(server.process.pid)
        assert len(workers) == 2, workers
        world = await _server.seed_world(database_url)
        async with (
            httpx.AsyncClient(base_url=server.url, timeout=30) as http,
            _push_service.serving() as pushes,
        ):
            pushes.who = lambda sender_port, own_port: _procs.serving_pid(
                workers, sender_port, own_port
            )
            await pushes.learn_key(http, world.human.token)
            devices = [
                (await pushes.add_device(http, token))[1]
                for token in (world.human.token, world.human.token, world.human2.token)
            ]
            asked = [
                ask_ids(await post(http, world.agent.token, world.channel_id, ONE_TAP))[0]
                for _ in range(12)
            ]
            total = len(asked) * len(devices)
            await pushes.wait_for(lambda: len(pushes.received) >= total, "every ask's pushes")
            for ask_id in asked:
                done = await call(
                    http, "RespondToAsk", respond(ask_id, answer("db", "0")), world.human2.token
                )
                assert done.ok, done
            await pushes.wait_for(lambda: len(pushes.received) >= 2 * total, "every closing")
            await _more_rounds(database_url)  # both workers keep claiming: nothing repeats
    assert pushes.rejected == []
    seen = collections.Counter((r.channel, r.payload["ask_id"], r.type) for r in pushes.received)
    assert len(seen) == 2 * total
    assert set(seen.values()) == {1}, seen.most_common(3)
    assert {r.sender for r in pushes.received} == set(workers)  # both workers pushed


async def _more_rounds(dsn: str) -> None:
    """Wait until the database has committed many more transactions (both workers' claim
    rounds and sweeps, every 0.1 s)."""
    async with PostgresStore(dsn, pool_min=1, pool_max=1) as store, store.connection() as conn:
        query = "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        start = int(await conn.fetchval(query))

        async def advanced() -> bool:
            await conn.execute("SELECT pg_stat_clear_snapshot()")
            return int(await conn.fetchval(query)) >= start + 40

        await eventually(advanced, "more claim rounds", within=30, every=0.2)
