"""A loopback stand-in for a browser vendor's push service (FCM, Mozilla autopush, Apple's):
what Compass POSTs a Web Push to. Only the vendor's cloud is stood in for; the encryption
and the signing are real and checked here with the test's own code:

- RFC 8292: `Authorization: vapid t=<JWT>, k=<key>`: `k` must be the application server key
  the browser subscribed with (GetPushConfig's), the JWT an ES256 signature by it (verified
  here with `cryptography`, not with the library the server signs with) whose `aud` is this
  service's origin, `exp` in the future and at most 24 hours ahead, `sub` a mailto: or https:
  contact;
- RFC 8291: the body `aes128gcm`, decrypted with the subscriber's private key and auth
  secret (`http_ece`, as a browser does), must be JSON;
- RFC 8030: `TTL` present; `Urgency` and `Topic` kept for the test to read.

A push that passes is answered 201 (or as the endpoint's `script` says: another status, or
no answer at all until the service closes); one that fails a check is answered 400 and its
reason kept in `rejected`. Subscribers are made by `subscribe`: a P-256 key pair and a
16-byte auth secret, as `PushManager.subscribe()` makes them.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import http_ece
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from tests import _server
from tests.e2e._connect import call

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable

    import httpx
    from starlette.requests import Request

HANG = -1
"""A `script` entry: never answer (until the service closes)."""


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Refused(Exception):  # noqa: N818 - a verdict
    pass


def verify_vapid(header: str, key: str, audience: str, now: float) -> dict[str, object]:
    """The claims of a VAPID `Authorization` header, or Refused: the test's own RFC 8292."""
    scheme, _, params = header.partition(" ")
    if scheme.lower() != "vapid":
        raise Refused(f"scheme {scheme!r}, not vapid")
    fields = dict(part.strip().split("=", 1) for part in params.split(",") if "=" in part)
    if fields.get("k") != key:
        raise Refused("k is not the key the browser subscribed with")
    try:
        head, claims, signature = fields["t"].split(".")
    except (KeyError, ValueError):
        raise Refused("t is not a JWT") from None
    raw = unb64(signature)
    if len(raw) != 64:
        raise Refused("an ES256 signature is 64 bytes")
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64(key))
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    try:
        public.verify(der, f"{head}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise Refused("the JWT's signature does not verify") from None
    if json.loads(unb64(head)).get("alg") != "ES256":
        raise Refused("alg is not ES256")
    decoded: dict[str, object] = json.loads(unb64(claims))
    exp, sub = decoded.get("exp"), decoded.get("sub")
    if decoded.get("aud") != audience:
        raise Refused(f"aud {decoded.get('aud')!r}, not {audience!r}")
    if not isinstance(exp, int) or not now < exp <= now + 24 * 3600:
        raise Refused("exp is not within the next 24 hours")
    if not isinstance(sub, str) or not sub.startswith(("mailto:", "https:")):
        raise Refused("sub is not a mailto: or https: contact")
    return decoded


@dataclass
class Subscriber:
    """A device's half of a subscription (what the browser keeps)."""

    private: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    auth: bytes = field(default_factory=lambda: secrets.token_bytes(16))

    @property
    def p256dh(self) -> str:
        return b64(
            self.private.public_key().public_bytes(
                serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
            )
        )

    def decrypt(self, body: bytes) -> bytes:
        return http_ece.decrypt(
            body, private_key=self.private, auth_secret=self.auth, version="aes128gcm"
        )


@dataclass
class Received:
    """One push the service took."""

    channel: str
    """The endpoint's id (its URL's last part)."""
    payload: dict[str, object]
    headers: dict[str, str]
    claims: dict[str, object]
    at: float
    """time.monotonic() when it arrived."""
    sender: object = None
    """Who sent it, as `PushService.who` tells from the connection's port."""
    hangs_ended: int = 0
    """How many held pushes (to any endpoint) had ended when this one arrived: their sender
    gave up on them, or the service closed."""

    @property
    def type(self) -> object:
        return self.payload.get("type")


@dataclass
class PushService:
    """The stand-in (`serving` runs it on loopback)."""

    key: str = ""
    """The VAPID public key pushes must be signed with (set it from GetPushConfig)."""
    url: str = ""
    subscribers: dict[str, Subscriber] = field(default_factory=dict[str, Subscriber])
    scripts: dict[str, list[int]] = field(default_factory=dict[str, list[int]])
    """Endpoint id -> the statuses to answer its next pushes with (then 201)."""
    received: list[Received] = field(default_factory=list[Received])
    rejected: list[str] = field(default_factory=list[str])
    attempts: dict[str, int] = field(default_factory=dict[str, int])
    """Endpoint id -> pushes that reached it (answered or not)."""
    hanging: int = 0
    """Pushes held unanswered now whose sender has not given up."""
    hangs_ended: int = 0
    """Held pushes that have ended."""
    who: Callable[[int, int], object] | None = None
    """(the sender's port, this service's port) -> who sent a push (e.g. which worker)."""
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _closing: asyncio.Event = field(default_factory=asyncio.Event)

    def subscribe(self, *script: int) -> tuple[str, Subscriber]:
        """A new endpoint and its subscriber; its pushes are answered with `script`, then 201."""
        channel = f"sub{next(self._ids)}"
        self.subscribers[channel] = Subscriber()
        self.scripts[channel] = list(script)
        return f"{self.url}wpush/{channel}", self.subscribers[channel]

    async def learn_key(self, http: httpx.AsyncClient, token: str) -> None:
        """Take the server's VAPID public key (GetPushConfig, as a browser does)."""
        reply = await call(http, "GetPushConfig", {}, token)
        assert reply.ok, reply
        self.key = str(reply.body["vapidPublicKey"])

    async def add_device(
        self, http: httpx.AsyncClient, token: str, *script: int, name: str = "phone"
    ) -> tuple[str, str, Subscriber]:
        """A device of the token's person on this service, registered with the server
        (AddPushSubscription, as the page does after subscribe()): (its id, its endpoint,
        its keys); its pushes are answered with `script`, then 201."""
        endpoint, subscriber = self.subscribe(*script)
        reply = await call(
            http,
            "AddPushSubscription",
            {
                "endpoint": endpoint,
                "p256dh": subscriber.p256dh,
                "auth": b64(subscriber.auth),
                "deviceName": name,
            },
            token,
        )
        assert reply.ok, reply
        return str(reply.body["subscriptionId"]), endpoint, subscriber

    def of(self, channel_or_endpoint: str) -> list[Received]:
        channel = channel_or_endpoint.rsplit("/", 1)[-1]
        return [r for r in self.received if r.channel == channel]

    async def wait_for(self, done: Callable[[], bool], what: str, *, within: float = 20.0) -> None:
        deadline = time.monotonic() + within
        while not done():
            self._changed.clear()
            left = deadline - time.monotonic()
            assert left > 0, (
                f"{what}: not within {within} s (got {len(self.received)} pushes; rejected: {self.rejected})"
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)

    async def _push(self, request: Request) -> Response:
        channel = request.path_params["channel"]
        body = await request.body()
        self.attempts[channel] = self.attempts.get(channel, 0) + 1
        self._changed.set()
        script = self.scripts.get(channel)
        if script and script[0] == HANG:
            script.pop(0)
            self.hanging += 1
            try:  # until the sender gives up (its timeout) or the service closes
                while not self._closing.is_set() and not await request.is_disconnected():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._closing.wait(), 0.05)
            finally:
                self.hanging -= 1
                self.hangs_ended += 1
                self._changed.set()
            return Response(status_code=503)
        subscriber = self.subscribers.get(channel)
        try:
            if subscriber is None:
                raise Refused("no such subscription")
            claims = verify_vapid(
                request.headers.get("authorization", ""),
                self.key,
                self.url.rstrip("/"),
                time.time(),
            )
            if request.headers.get("content-encoding") != "aes128gcm":
                raise Refused("content-encoding is not aes128gcm")
            if not request.headers.get("ttl", "").isdigit():
                raise Refused("no TTL")
            payload = json.loads(subscriber.decrypt(body))
        except (Refused, ValueError, http_ece.ECEException) as exc:
            self.rejected.append(f"{channel}: {exc}")
            return Response(str(exc), status_code=400)
        status = script.pop(0) if script else 201
        if 200 <= status < 300:
            sender = None
            if self.who is not None and request.client is not None:
                sender = self.who(request.client.port, int(request.url.port or 0))
            self.received.append(
                Received(
                    channel,
                    payload,
                    dict(request.headers),
                    claims,
                    time.monotonic(),
                    sender,
                    self.hangs_ended,
                )
            )
            self._changed.set()
        return Response(status_code=status, headers={"location": f"{self.url}msg/{channel}"})

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/wpush/{channel}", self._push, methods=["POST"])])


@contextlib.asynccontextmanager
async def serving() -> AsyncGenerator[PushService]:
    """The stand-in on a free loopback port, for the block's length."""
    service = PushService()
    async with _server.in_process(service.app()) as url:
        service.url = url
        try:
            yield service
        finally:  # a hanging answer ends, so the server can stop
            service._closing.set()  # pyright: ignore[reportPrivateUsage] - its own module
