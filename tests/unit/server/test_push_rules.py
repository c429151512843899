"""Web Push's rules (compass_server/domain/push.py, domain/vapid.py): which subscriptions
AddPushSubscription takes, what a push says and that it always fits, and the VAPID JWT
checked with an implementation of RFC 8292 of the test's own (cryptography only)."""

from __future__ import annotations

import base64
import json
import time

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from hypothesis import given, settings, strategies as st

from compass_server.domain import push
from compass_server.domain.errors import InvalidArgumentError
from compass_server.domain.vapid import (
    JWT_LIFETIME_SECONDS,
    VapidKey,
    check_subject,
    default_subject,
    generate_private_key,
    origin,
)
from compass_server.domain.webhook_targets import AllowList
from gen.compass.v1 import comms_pb2

NOTHING = AllowList(setting=push.PUSH_SETTING)
LOOPBACK = AllowList.parse("127.0.0.1", setting=push.PUSH_SETTING)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def subscriber_key() -> str:
    point = (
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    )
    return b64(point)


def request(**fields: str) -> comms_pb2.AddPushSubscriptionRequest:
    base = {
        "endpoint": "https://fcm.googleapis.com/fcm/send/abc",
        "p256dh": subscriber_key(),
        "auth": b64(b"a" * 16),
        "device_name": "Ada's phone",
    }
    return comms_pb2.AddPushSubscriptionRequest(**{**base, **fields})


def test_a_good_subscription_is_normalized() -> None:
    key = subscriber_key()
    checked = push.check_subscription(
        request(p256dh=key + "=", endpoint="HTTPS://x.test/p"), NOTHING
    )
    assert checked.endpoint == "https://x.test/p"
    assert checked.p256dh == key  # padding dropped
    assert checked.device_name == "Ada's phone"
    assert len(checked.p256dh) == 87  # the columns' checks
    assert len(checked.auth) == 22


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"endpoint": "http://push.example.com/x"}, "endpoint", "https://"),
        ({"endpoint": ""}, "endpoint", "http"),
        ({"endpoint": "https://10.0.0.1/x"}, "endpoint", "COMPASS_PUSH_ALLOW_HOSTS"),
        ({"endpoint": "https://localhost/x"}, "endpoint", "COMPASS_PUSH_ALLOW_HOSTS"),
        ({"endpoint": "http://127.0.0.1:9/x"}, "endpoint", "https://"),
        ({"p256dh": ""}, "p256dh", "65 bytes"),
        ({"p256dh": b64(b"\x04" + b"\x01" * 64)}, "p256dh", "P-256"),  # not on the curve
        ({"p256dh": b64(b"\x04" * 33)}, "p256dh", "P-256"),
        ({"p256dh": "not base64!"}, "p256dh", "P-256"),
        ({"auth": b64(b"a" * 15)}, "auth", "16 bytes"),
        ({"auth": "a+b/"}, "auth", "16 bytes"),
        ({"device_name": "x" * 201}, "device_name", "200"),
        ({"device_name": "a\x00b"}, "device_name", "NUL"),
    ],
)
def test_each_bad_field_is_named(fields: dict[str, str], field: str, words: str) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        push.check_subscription(request(**fields), NOTHING)
    assert [v.field for v in raised.value.violations] == [field]
    assert words in raised.value.violations[0].description
    assert field in raised.value.message


def test_every_bad_field_is_named_at_once() -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        push.check_subscription(request(endpoint="ftp://x", p256dh="", auth=""), NOTHING)
    assert [v.field for v in raised.value.violations] == ["endpoint", "p256dh", "auth"]


def test_http_only_to_an_allowed_host() -> None:
    checked = push.check_subscription(request(endpoint="http://127.0.0.1:9/push/1"), LOOPBACK)
    assert checked.endpoint == "http://127.0.0.1:9/push/1"
    with pytest.raises(InvalidArgumentError, match="https://"):
        push.check_subscription(request(endpoint="http://127.0.0.2:9/push/1"), LOOPBACK)


@given(
    endpoint=st.text(max_size=80),
    p256dh=st.text(max_size=100),
    auth=st.text(max_size=30),
    name=st.text(max_size=250),
)
@settings(max_examples=200)
def test_any_input_is_refused_with_fields_or_accepted_as_storable(
    endpoint: str, p256dh: str, auth: str, name: str
) -> None:
    request = comms_pb2.AddPushSubscriptionRequest(
        endpoint=endpoint, p256dh=p256dh, auth=auth, device_name=name
    )
    with pytest.raises(InvalidArgumentError) as raised:  # random text is never a P-256 point
        push.check_subscription(request, NOTHING)
    fields = [v.field for v in raised.value.violations]
    assert "p256dh" in fields
    assert set(fields) <= {"endpoint", "p256dh", "auth", "device_name"}


# -- what a push says --------------------------------------------------------------------------


def _ask(*questions: comms_pb2.AskQuestion, **fields: object) -> comms_pb2.Ask:
    return comms_pb2.Ask(ask_id="ask_abc", questions=questions, **fields)  # pyright: ignore[reportArgumentType]


def _question(text: str, *labels: str, multiple: bool = False) -> comms_pb2.AskQuestion:
    return comms_pb2.AskQuestion(
        question_id="q",
        question=text,
        allow_multiple=multiple,
        options=[comms_pb2.AskOption(id=str(i), label=label) for i, label in enumerate(labels)],
    )


def _payload(
    ask: comms_pb2.Ask, asker: str = "Coding Agent", channel: str = "general"
) -> dict[str, object]:
    data = push.ask_payload(
        ask, asker=asker, channel=channel, public_url="https://c.test/", answer_token="cmpa_t"
    )
    assert len(data) <= push.MAX_PAYLOAD_BYTES
    decoded: dict[str, object] = json.loads(data)
    return decoded


def test_an_ask_push_says_who_asks_what_and_offers_one_tap() -> None:
    payload = _payload(_ask(_question("Which database?", "Postgres", "SQLite")))
    assert payload == {
        "type": "ask",
        "ask_id": "ask_abc",
        "tag": "ask_abc",
        "title": "Coding Agent asks in #general",
        "body": "Which database?",
        "url": "https://c.test/#/ask/ask_abc",
        "actions": [{"action": "0", "title": "Postgres"}, {"action": "1", "title": "SQLite"}],
        "answer_url": "https://c.test/push/answer",
        "answer_token": "cmpa_t",
    }


def test_more_options_than_buttons_are_named_and_a_form_gets_none() -> None:
    four = _payload(_ask(_question("Which?", "A", "B", "C", "D")))
    assert four["body"] == "Which?\n+2 more options in Compass"
    assert len(four["actions"]) == 2  # pyright: ignore[reportArgumentType]
    several = _payload(_ask(_question("Which?", "A", "B"), _question("And?", "C")))
    assert several["actions"] == []
    assert several["body"] == "Which? (+1 more)"
    multi = _payload(_ask(_question("Which?", "A", "B", multiple=True)))
    assert multi["actions"] == []


def test_a_closed_push_says_the_status_and_who_ended_it() -> None:
    answered = _ask(status=comms_pb2.ASK_STATUS_ANSWERED, answered_by_name="Ada")
    assert json.loads(push.closed_payload(answered)) == {
        "type": "ask_closed",
        "ask_id": "ask_abc",
        "tag": "ask_abc",
        "status": "ASK_STATUS_ANSWERED",
        "by": "Ada",
    }
    withdrawn = _ask(status=comms_pb2.ASK_STATUS_WITHDRAWN, closed_by_name="Coding Agent")
    assert json.loads(push.closed_payload(withdrawn))["by"] == "Coding Agent"
    expired = _ask(status=comms_pb2.ASK_STATUS_EXPIRED)
    assert json.loads(push.closed_payload(expired))["by"] == ""


long_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=3000
)


@given(
    question=long_text,
    labels=st.lists(long_text, min_size=0, max_size=4),
    asker=long_text,
    channel=long_text,
    more=st.integers(min_value=0, max_value=3),
)
@settings(max_examples=150, deadline=None)
def test_every_push_fits_and_keeps_its_fixed_fields(
    question: str, labels: list[str], asker: str, channel: str, more: int
) -> None:
    ask = _ask(_question(question, *labels), *[_question("more?") for _ in range(more)])
    payload = _payload(ask, asker=asker, channel=channel)  # <= MAX_PAYLOAD_BYTES, JSON
    assert payload["tag"] == payload["ask_id"] == "ask_abc"
    assert payload["answer_token"] == "cmpa_t"
    actions = payload["actions"]
    assert isinstance(actions, list)
    assert len(actions) <= push.MAX_ACTIONS  # pyright: ignore[reportUnknownArgumentType]
    title, body = payload["title"], payload["body"]
    assert isinstance(title, str)
    assert isinstance(body, str)
    full = push.ask_payload(
        ask, asker=asker, channel=channel, public_url="https://c.test/", answer_token="cmpa_t"
    )
    assert len(full) <= push.MAX_PAYLOAD_BYTES


# -- VAPID ------------------------------------------------------------------------------------


def verify_jwt(token: str, public_key: str) -> dict[str, object]:
    """RFC 8292 / RFC 7515 ES256, by hand: the test's own reading of the token."""
    header, claims, signature = token.split(".")
    raw = unb64(signature)
    assert len(raw) == 64
    key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64(public_key))
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    key.verify(der, f"{header}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))
    assert json.loads(unb64(header)) == {"typ": "JWT", "alg": "ES256"}
    decoded: dict[str, object] = json.loads(unb64(claims))
    return decoded


def test_the_authorization_header_is_a_vapid_jwt_for_the_endpoint_origin() -> None:
    key = VapidKey.parse(generate_private_key())
    now = time.time()
    header = key.authorization("https://push.example.net:8443/wpush/v2/abc", "mailto:a@b.test", now)
    scheme, _, rest = header.partition(" ")
    assert scheme == "vapid"
    parts = dict(part.strip().split("=", 1) for part in rest.split(","))
    assert parts["k"] == key.public_key
    assert len(unb64(parts["k"])) == 65
    claims = verify_jwt(parts["t"], parts["k"])
    assert claims["aud"] == "https://push.example.net:8443"
    assert claims["sub"] == "mailto:a@b.test"
    exp = claims["exp"]
    assert isinstance(exp, int)
    assert now < exp <= now + 24 * 3600
    assert exp == int(now) + JWT_LIFETIME_SECONDS


def test_a_key_reads_back_from_its_text_and_from_pem() -> None:
    text = generate_private_key()
    key = VapidKey.parse(text)
    assert VapidKey.parse(text).public_key == key.public_key
    pem = key.private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    assert VapidKey.parse(pem).public_key == key.public_key
    for bad in (
        "",
        "abc",
        b64(b"x" * 31),
        "-----BEGIN PRIVATE KEY-----\nAAA\n-----END PRIVATE KEY-----",
    ):
        with pytest.raises(ValueError, match=r"base64url|PEM|32 bytes|P-256") as raised:
            VapidKey.parse(bad)
        assert text not in str(raised.value)


def test_origins_and_subjects() -> None:
    assert origin("https://FCM.googleapis.com/fcm/send/x") == "https://fcm.googleapis.com"
    assert origin("https://h.test:443/x") == "https://h.test"
    assert origin("http://127.0.0.1:8080/p") == "http://127.0.0.1:8080"
    assert origin("https://[::1]:9/p") == "https://[::1]:9"
    assert default_subject("https://compass.example.com/team/") == "https://compass.example.com"
    assert check_subject("mailto:ops@example.com") == "mailto:ops@example.com"
    assert check_subject("https://example.com/contact") == "https://example.com/contact"
    for bad in ("ops@example.com", "http://example.com", "mailto:", "https://", "mailto:a b@c"):
        with pytest.raises(ValueError, match=r"mailto: or https:"):
            check_subject(bad)
