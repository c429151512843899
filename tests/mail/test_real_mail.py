"""Asks by email through real mail servers (docs/answering/email.md): Compass sends through
Debian's Postfix, the person's mailbox is Debian's Dovecot (read over IMAP with imaplib), the
person's reply goes back through Postfix, which relays the reply domain to Compass's inbound
listener by the transport map of the docs' Postfix example (tests/mail/_servers.py).

A missing Postfix or Dovecot fails the test rather than skipping it (scripts/test installs
them with scripts/ensure-mail)."""

from __future__ import annotations

import asyncio
import email
import email.policy
import imaplib
import smtplib
from email.message import EmailMessage
from email.utils import make_msgid
from typing import TYPE_CHECKING

import httpx
import pytest

from compass_server.store.postgres import PostgresStore
from tests import _server
from tests._wait import eventually
from tests.e2e._asks import ask_block, ask_ids, post, question
from tests.e2e._connect import call
from tests.mail import _servers

if TYPE_CHECKING:
    from collections.abc import Generator

REPLY_DOMAIN = "reply.compass.test"
ADA = "ada@example.org"


@pytest.fixture
def mail() -> Generator[tuple[_servers.MailServers, int]]:
    why = _servers.available()
    if why is not None:
        pytest.fail(why)
    compass_port = _servers.free_port()
    with _servers.running(reply_domain=REPLY_DOMAIN, compass_port=compass_port) as servers:
        yield servers, compass_port


def inbox(servers: _servers.MailServers) -> list[EmailMessage]:
    """Every message in Ada's INBOX, oldest first (IMAP)."""
    imap = imaplib.IMAP4("127.0.0.1", servers.imap_port)
    try:
        imap.login(ADA, _servers.PASSWORD)
        imap.select("INBOX", readonly=True)
        _, found = imap.search(None, "ALL")
        messages: list[EmailMessage] = []
        for number in found[0].split():
            _, data = imap.fetch(number.decode(), "(RFC822)")
            raw = data[0]
            assert isinstance(raw, tuple)
            messages.append(email.message_from_bytes(raw[1], policy=email.policy.default))
        return messages
    finally:
        imap.logout()


def reply_to(servers: _servers.MailServers, mail: EmailMessage, text: str) -> EmailMessage:
    """What Ada's mail client sends: her text above the quoted mail, through Postfix."""
    body = mail.get_body(preferencelist=("plain",))
    assert body is not None
    quoted = "\n".join(f"> {line}" for line in str(body.get_content()).splitlines())
    answer = EmailMessage()
    answer["From"] = f"Ada <{ADA}>"
    answer["To"] = str(mail["Reply-To"])
    answer["Subject"] = f"Re: {mail['Subject']}"
    answer["Message-ID"] = make_msgid(domain="example.org")
    answer["In-Reply-To"] = str(mail["Message-ID"])
    answer["References"] = str(mail["Message-ID"])
    answer.set_content(f"{text}\n\nOn Friday, Compass wrote:\n{quoted}\n")
    with smtplib.SMTP("127.0.0.1", servers.smtp_port, timeout=20) as smtp:
        smtp.send_message(answer)
    return answer


async def test_an_ask_goes_through_postfix_to_dovecot_and_the_reply_comes_back_through_postfix(
    database_url: str, mail: tuple[_servers.MailServers, int]
) -> None:
    servers, compass_port = mail
    env = {
        "COMPASS_SMTP_URL": f"smtp://127.0.0.1:{servers.smtp_port}",
        "COMPASS_EMAIL_FROM": "Compass <compass@compass.test>",
        "COMPASS_EMAIL_REPLY_DOMAIN": REPLY_DOMAIN,
        "COMPASS_INBOUND_SMTP_HOST": "127.0.0.1",
        "COMPASS_INBOUND_SMTP_PORT": str(compass_port),
        "COMPASS_EMAIL_DELAY_SECONDS": "0",
        "COMPASS_WEBHOOK_POLL_SECONDS": "0.1",
        "COMPASS_REMINDER_AFTER_SECONDS": "0",
    }
    with _server.serve(database_url, env=env) as server:
        world = await _server.seed_world(database_url)
        async with PostgresStore(database_url, pool_min=1, pool_max=1) as store:
            emails = store.email()
            assert emails is not None
            await emails.set_email(world.human.account_id, ADA)
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            asked = ask_block(question("db", "0", "1", recommended=1))
            (ask_id,) = ask_ids(await post(http, world.agent.token, world.channel_id, asked))

            def mails(count: int) -> list[EmailMessage] | None:
                got = inbox(servers)
                return got if len(got) >= count else None

            async def delivered(count: int, what: str) -> list[EmailMessage]:
                found: list[EmailMessage] = []

                async def check() -> bool:
                    got = await asyncio.to_thread(mails, count)
                    found[:] = got or []
                    return got is not None

                await eventually(check, what, within=30)
                return found

            try:
                (mail_in,) = await delivered(1, "the ask in Ada's mailbox")
            except AssertionError:
                raise AssertionError(servers.log() + server.log()) from None
            assert str(mail_in["Subject"]).startswith("[Compass] Coding Agent: What about db?")
            assert str(mail_in["Reply-To"]).endswith(f"@{REPLY_DOMAIN}")
            assert str(mail_in["Auto-Submitted"]) == "auto-generated"
            assert str(mail_in["Message-ID"]).endswith("@compass.test>")
            assert "List-Unsubscribe" in mail_in

            # Not understood: nothing stored, one mail back through Postfix, threaded.
            wrong = await asyncio.to_thread(reply_to, servers, mail_in, "9")
            got = await delivered(2, "the mail saying why")
            assert str(got[1]["In-Reply-To"]) == str(wrong["Message-ID"])
            pending = await call(http, "GetAsk", {"askId": ask_id}, world.human.token)
            assert pending.body["ask"]["status"] == "ASK_STATUS_PENDING"  # pyright: ignore[reportIndexIssue, reportOptionalSubscript]

            # The answer, with the quoted mail below it.
            await asyncio.to_thread(reply_to, servers, mail_in, "1")

            async def answered() -> dict[str, object] | None:
                got = await call(http, "GetAsk", {"askId": ask_id}, world.human.token)
                ask = got.body["ask"]
                assert isinstance(ask, dict)
                return ask if ask["status"] == "ASK_STATUS_ANSWERED" else None  # pyright: ignore[reportUnknownVariableType]

            try:
                ask = await eventually(answered, "the reply answering the ask", within=30)
            except AssertionError:
                raise AssertionError(servers.log() + server.log()) from None
            assert ask["answeredByAccountId"] == world.human.account_id
            questions = ask["questions"]
            assert isinstance(questions, list)
            assert questions[0]["chosenOptionIds"] == ["0"]  # pyright: ignore[reportIndexIssue, reportUnknownMemberType]
