"""Signed webhooks end to end: `compass serve` delivers ask events to a receiver on loopback,
which verifies every signature with its own implementation of Standard Webhooks (not the
library the server signs with), fails the first delivery and sees the retry.

Set-up through the real CLI (`compass admin add-webhook`, `webhook-deliveries`), events from
real RPCs (AppendMessage by the agent, RespondToAsk by a person).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import httpx
import pytest
from hypothesis import given, strategies as st
from standardwebhooks.webhooks import Webhook, WebhookVerificationError
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from tests import _server
from tests._wait import eventually
from tests.e2e._asks import answer, post_ask, respond
from tests.e2e._connect import call

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Generator

    from starlette.requests import Request

TOLERANCE_SECONDS = 5 * 60


# -- an independent verifier (the receiver's side of https://www.standardwebhooks.com) -------


class Rejected(Exception):  # noqa: N818 - a verdict, as receivers name it
    pass


def verify(secret: str, headers: dict[str, str], body: bytes, now: float) -> None:
    """Raise Rejected unless `body` was signed with `secret` within the tolerance of `now`."""
    msg_id, stamp, signatures = (
        headers.get("webhook-id"),
        headers.get("webhook-timestamp"),
        headers.get("webhook-signature"),
    )
    if not (msg_id and stamp and signatures and stamp.isdigit()):
        raise Rejected("missing or malformed headers")
    if abs(now - int(stamp)) > TOLERANCE_SECONDS:
        raise Rejected("timestamp outside the tolerance: a replay or a skewed clock")
    key = base64.b64decode(secret.removeprefix("whsec_"))
    expected = base64.b64encode(
        hmac.new(key, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest()
    ).decode()
    for candidate in signatures.split(" "):
        version, _, value = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return
    raise Rejected("no matching signature")


@given(body=st.binary(max_size=300), msg_id=st.text(alphabet="abcdef0123456789_", min_size=1))
def test_the_independent_verifier_agrees_with_the_library(body: bytes, msg_id: str) -> None:
    secret = "whsec_" + base64.b64encode(b"k" * 32).decode()
    now = time.time()
    from datetime import UTC, datetime

    signature = Webhook(secret).sign(msg_id, datetime.fromtimestamp(now, UTC), body)
    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(now)),
        "webhook-signature": signature,
    }
    verify(secret, headers, body, now)  # ours accepts the library's signature
    with pytest.raises(Rejected):
        verify(secret, headers, body + b"x", now)  # and refuses a changed body


# -- the receiver ----------------------------------------------------------------------------


@dataclass
class Receiver:
    secret: str = ""
    fail_first: int = 1
    seen: list[tuple[dict[str, str], bytes, float]] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def hook(self, request: Request) -> Response:
        body = await request.body()
        headers = {k.lower(): v for k, v in request.headers.items()}
        now = time.time()
        self.seen.append((headers, body, now))
        try:
            verify(self.secret, headers, body, now)
            self.verdicts.append("ok")
        except Rejected as exc:
            self.verdicts.append(str(exc))
        self.arrived.set()
        if self.fail_first > 0:
            self.fail_first -= 1
            return Response("down for a moment", status_code=500)
        return Response(status_code=204)

    async def wait_for(self, count: int, seconds: float = 20) -> None:
        deadline = time.monotonic() + seconds
        while len(self.seen) < count:
            self.arrived.clear()
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{len(self.seen)} deliveries arrived, wanted {count}"
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.arrived.wait(), remaining)


LOOPBACK_ALLOWED = {"COMPASS_WEBHOOK_ALLOW_HOSTS": "127.0.0.1"}
"""The receivers here run on loopback, which webhooks may not reach unless allowed."""


def _admin_run(
    dsn: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compass_server.cli", "admin", *args],
        env={**os.environ, "COMPASS_DATABASE_URL": dsn, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _admin(dsn: str, *args: str) -> dict[str, object]:
    env = {**os.environ, "COMPASS_DATABASE_URL": dsn, **LOOPBACK_ALLOWED}
    done = subprocess.run(
        [sys.executable, "-m", "compass_server.cli", "admin", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.fixture
def webhook_server(database_url: str) -> Generator[_server.RunningServer]:
    env = {
        "COMPASS_WEBHOOK_POLL_SECONDS": "0.1",
        "COMPASS_WEBHOOK_BACKOFF_SECONDS": "0.5,0.5",
        "COMPASS_REMINDER_AFTER_SECONDS": "0",
        "COMPASS_LOG_FORMAT": "json",
        **LOOPBACK_ALLOWED,
    }
    with _server.serve(database_url, env=env) as server:
        yield server


@dataclass
class Subscribed:
    """A seeded world whose workspace has a webhook pointing at `receiver`, and a client of
    the server."""

    world: _server.SeededWorld
    receiver: Receiver
    webhook_id: str
    http: httpx.AsyncClient


class Subscribe(Protocol):
    async def __call__(self, receiver: Receiver, *events: str) -> Subscribed: ...


@pytest.fixture
async def subscribe(webhook_server: _server.RunningServer) -> AsyncGenerator[Subscribe]:
    """`await subscribe(receiver, *events)`: seeds a world, serves `receiver` on loopback (until
    the test ends) and adds a webhook to it with the real CLI (every event when none is named)."""
    async with contextlib.AsyncExitStack() as stack:

        async def subscribe_(receiver: Receiver, *events: str) -> Subscribed:
            world = await _server.seed_world(webhook_server.dsn)
            app = Starlette(routes=[Route("/hook", receiver.hook, methods=["POST"])])
            receiver_url = await stack.enter_async_context(_server.in_process(app))
            only = ("--events", ",".join(events)) if events else ()
            added = _admin(
                webhook_server.dsn,
                "add-webhook",
                *("--workspace", world.workspace_id, "--url", f"{receiver_url}hook", *only),
            )
            receiver.secret = str(added["secret"])
            http = await stack.enter_async_context(
                httpx.AsyncClient(base_url=webhook_server.url, timeout=30)
            )
            return Subscribed(world, receiver, str(added["webhook_id"]), http)

        yield subscribe_


async def test_signed_events_arrive_and_a_failed_delivery_is_retried(
    webhook_server: _server.RunningServer, subscribe: Subscribe
) -> None:
    hooked = await subscribe(Receiver(), "ask.created", "ask.answered")
    world, receiver = hooked.world, hooked.receiver
    ask_id = await post_ask(hooked.http, world.agent.token, world.channel_id)
    await receiver.wait_for(2)  # ask.created: refused once, then the retry
    reply = await call(
        hooked.http,
        "RespondToAsk",
        respond(ask_id, answer("db", "1"), answer("features", "0", custom_text="SSO!")),
        world.human.token,
    )
    assert reply.ok, reply
    await receiver.wait_for(3)

    assert receiver.verdicts == ["ok", "ok", "ok"], receiver.verdicts
    (first, _, _), (retry, retry_body, _), (answered, answered_body, _) = receiver.seen
    assert retry["webhook-id"] == first["webhook-id"]  # the same message, for deduplication
    assert answered["webhook-id"] != first["webhook-id"]
    created = json.loads(retry_body)
    assert created["type"] == "ask.created"
    assert created["data"]["ask_id"] == ask_id
    assert created["data"]["status"] == "pending"
    assert created["data"]["asked_by"]["name"] == "Coding Agent"
    assert [q["question_id"] for q in created["data"]["questions"]] == ["db", "features"]
    assert created["data"]["link"].endswith(f"#/ask/{ask_id}")
    done = json.loads(answered_body)
    assert (done["type"], done["data"]["status"]) == ("ask.answered", "answered")
    assert done["data"]["answered_by"]["name"] == "Ada"
    assert b"SSO!" not in answered_body  # answers' content never leaves in a webhook

    # Replay protection: the captured delivery, sent again later, is refused by the receiver;
    # so is a tampered one.
    headers, body, at = receiver.seen[1]
    with pytest.raises(Rejected, match="tolerance"):
        verify(receiver.secret, headers, body, at + TOLERANCE_SECONDS + 60)
    with pytest.raises(Rejected, match="signature"):
        verify(receiver.secret, headers, body.replace(b"pending", b"answered"), at)
    with pytest.raises(WebhookVerificationError):  # the library agrees on the replay
        Webhook(receiver.secret).verify(
            body, {**headers, "webhook-timestamp": str(int(at) - TOLERANCE_SECONDS - 60)}
        )

    # The delivery log.
    log = _admin(webhook_server.dsn, "webhook-deliveries", "--id", hooked.webhook_id)
    deliveries = log["deliveries"]
    assert isinstance(deliveries, list)
    by_type = {d["event_type"]: d for d in deliveries}  # pyright: ignore[reportUnknownVariableType]
    assert by_type["ask.created"]["state"] == "delivered"
    outcomes = [a["outcome"] for a in by_type["ask.created"]["attempts"]]  # pyright: ignore[reportUnknownVariableType]
    assert outcomes == ["http 500", "http 204"]
    assert by_type["ask.answered"]["state"] == "delivered"

    # The secret (and any signature) never reaches the log.
    server_log = webhook_server.log()
    assert receiver.secret not in server_log
    for headers, _, _ in receiver.seen:
        assert headers["webhook-signature"].split(",", 1)[1] not in server_log
    listed = _admin(webhook_server.dsn, "list-webhooks", "--workspace", world.workspace_id)
    assert receiver.secret not in json.dumps(listed)


async def test_an_endpoint_that_keeps_failing_is_given_up_on(
    webhook_server: _server.RunningServer, subscribe: Subscribe
) -> None:
    hooked = await subscribe(Receiver(fail_first=100))
    world, receiver = hooked.world, hooked.receiver
    await post_ask(hooked.http, world.agent.token, world.channel_id)
    await receiver.wait_for(3)  # the first attempt and two retries (the backoff list)

    def settled() -> dict[str, object] | None:
        log = _admin(webhook_server.dsn, "webhook-deliveries", "--id", hooked.webhook_id)
        (delivery,) = log["deliveries"]  # pyright: ignore[reportGeneralTypeIssues]
        return None if delivery["state"] == "pending" else delivery  # pyright: ignore[reportIndexIssue, reportUnknownMemberType, reportUnknownVariableType]

    delivery = await eventually(settled, "the delivery given up on", within=10, every=0.2)
    assert delivery["state"] == "failed"  # pyright: ignore[reportIndexIssue, reportUnknownMemberType]
    assert len(receiver.seen) == 3
    assert receiver.verdicts == ["ok"] * 3


async def test_a_not_delivered_receipt_is_told_without_its_detail_or_payload(
    webhook_server: _server.RunningServer, subscribe: Subscribe
) -> None:
    hooked = await subscribe(Receiver(fail_first=0), "ask.not_delivered")
    world, receiver = hooked.world, hooked.receiver
    lost = await post_ask(hooked.http, world.agent.token, world.channel_id)
    fine = await post_ask(hooked.http, world.agent.token, world.channel_id)
    for ask_id in (fine, lost):
        reply = await call(
            hooked.http,
            "RespondToAsk",
            respond(ask_id, answer("db", "1"), answer("features", custom_text="my own words")),
            world.human.token,
        )
        assert reply.ok, reply
    delivered = {"askId": fine, "state": "DELIVERY_STATE_DELIVERED", "payload": "{}"}
    reply = await call(hooked.http, "ReportDelivery", delivered, world.agent.token)
    assert reply.ok, reply
    not_delivered = {
        "askId": lost,
        "state": "DELIVERY_STATE_NOT_DELIVERED",
        "detail": 'the runtime dropped "my own words"',
        "payload": '{"features":"my own words"}',
    }
    reply = await call(hooked.http, "ReportDelivery", not_delivered, world.agent.token)
    assert reply.ok, reply
    await receiver.wait_for(1)

    assert receiver.verdicts == ["ok"]
    ((_, body, _),) = receiver.seen  # only the receipt that says "not delivered"
    event = json.loads(body)
    assert event["type"] == "ask.not_delivered"
    data = event["data"]
    assert (data["ask_id"], data["status"]) == (lost, "answered")
    assert data["delivery"]["state"] == "not_delivered"
    assert data["delivery"]["reported_by"]["name"] == "Coding Agent"
    assert data["link"].endswith(f"#/ask/{lost}")
    assert [q["question_id"] for q in data["questions"]] == ["db", "features"]
    assert b"my own words" not in body  # neither the detail nor the payload leaves
    assert b"detail" not in body
    assert b"payload" not in body
    # The outbox holds that one event for this endpoint: none for the delivered receipt.
    log = _admin(webhook_server.dsn, "webhook-deliveries", "--id", hooked.webhook_id)
    deliveries = log["deliveries"]
    assert isinstance(deliveries, list)
    assert [(d["event_type"], d["ask_id"]) for d in deliveries] == [("ask.not_delivered", lost)]  # pyright: ignore[reportUnknownVariableType] - JSON
