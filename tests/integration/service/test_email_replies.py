"""The email use cases (service/email.py) on real PostgreSQL, below the SMTP listener: DKIM
verification of replies with dkimpy and local keys (COMPASS_EMAIL_REQUIRE_DKIM), a reply
answering as the token's person, a disabled person refused, and the metric callback."""

from __future__ import annotations

import base64
from email.message import EmailMessage
from email.utils import make_msgid
from typing import TYPE_CHECKING

import dkim
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from compass_server.live.hub import ChangeHub
from compass_server.service.asks import Asks
from compass_server.service.email import Email, Reply, dkim_check
from compass_server.store.postgres import PostgresStore
from gen.compass.v1 import comms_pb2
from tests.integration.store._seed import ask, question, seed

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from tests.integration.store._seed import World

ADA = "ada@example.org"
SELECTOR = b"s1"


@pytest.fixture
async def store(database_url: str) -> AsyncGenerator[PostgresStore]:
    async with PostgresStore(database_url, pool_min=1, pool_max=4) as opened:
        yield opened


def _keys() -> tuple[bytes, bytes]:
    """(PEM private key, the DNS TXT record publishing its public half)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return pem, b"v=DKIM1; k=rsa; p=" + base64.b64encode(public)


def _reply(token: str, text: str, *, sender: str = ADA) -> bytes:
    message = EmailMessage()
    message["From"] = f"Ada <{sender}>"
    message["To"] = f"ask+{token}@reply.compass.test"
    message["Subject"] = "Re: the ask"
    message["Message-ID"] = make_msgid(domain="example.org")
    message.set_content(text)
    return bytes(message)


def _signed(raw: bytes, pem: bytes, domain: bytes = b"example.org") -> bytes:
    signature = dkim.sign(
        raw, SELECTOR, domain, pem, include_headers=[b"from", b"to", b"subject", b"message-id"]
    )
    return signature + raw


async def _mailed_ask(store: PostgresStore, world: World) -> tuple[str, str]:
    """An ask mailed to Ada: (ask id, a reply token of hers)."""
    emails = store.email()
    await emails.set_email(world.human.account_id, ADA)
    message = await world.post(store, ask(question("db", "0", "1")))
    (ask_id,) = message.ask_ids
    token = await store.email_outbox().new_reply_token(ask_id, world.human.account_id)
    return ask_id, token


async def test_with_dkim_required_only_a_valid_signature_of_the_from_domain_answers(
    store: PostgresStore,
) -> None:
    world = await seed(store)
    ask_id, token = await _mailed_ask(store, world)
    pem, record = _keys()
    other_pem, _ = _keys()
    looked_up: list[bytes] = []

    def dns(name: bytes, timeout: int = 5) -> bytes | None:
        del timeout
        looked_up.append(name)
        return record if name == b"s1._domainkey.example.org." else None

    replies: list[Reply] = []
    email = Email(
        store.email(),
        Asks(store, ChangeHub()),
        require_dkim=dkim_check(dns),
        on_reply=replies.append,
    )
    unsigned = _reply(token, "1")
    forged = _signed(_reply(token, "1"), other_pem)  # signed, by a key example.org never published
    tampered = _signed(_reply(token, "0"), pem).replace(b"\n0\n", b"\n1\n")
    elsewhere = _signed(_reply(token, "1"), pem, domain=b"example.net")
    for raw in (unsigned, forged, tampered, elsewhere):
        assert await email.receive(token, raw, mail_from=ADA) == Reply("refused", "no_dkim")
    row = await store.get_ask(world.human, ask_id)
    assert row.ask.status == comms_pb2.ASK_STATUS_PENDING
    assert looked_up
    answered = await email.receive(token, _signed(_reply(token, "2"), pem), mail_from=ADA)
    assert answered == Reply("answered")
    row = await store.get_ask(world.human, ask_id)
    assert row.ask.status == comms_pb2.ASK_STATUS_ANSWERED
    assert list(row.ask.questions[0].chosen_option_ids) == ["1"]
    assert replies[-1] == Reply("answered")
    assert [r.reason for r in replies[:4]] == ["no_dkim"] * 4


async def test_a_disabled_person_cannot_answer_by_mail_and_nothing_is_stored(
    store: PostgresStore,
) -> None:
    world = await seed(store)
    ask_id, token = await _mailed_ask(store, world)
    await store.disable_account(world.human.account_id)
    email = Email(store.email(), Asks(store, ChangeHub()))
    assert await email.receive(token, _reply(token, "1"), mail_from=ADA) == Reply(
        "refused", "not_allowed"
    )
    row = await store.get_ask(world.human2, ask_id)
    assert row.ask.status == comms_pb2.ASK_STATUS_PENDING
    found = await store.email().reply_token(token)
    assert found is not None
    assert not found.used  # the token is spent only when an answer is stored
