"""Asks by email end to end (docs/answering/email.md): `compass serve` mails asks through a
loopback SMTP stand-in of the relay (tests/e2e/_mailbox.py, aiosmtpd), and replies reach its
own inbound SMTP listener over real SMTP (aiosmtplib), answering as the person the reply
address was mailed to. Every refusal stores nothing."""

from __future__ import annotations

import asyncio
import collections
import re
import socket
from email.message import EmailMessage
from email.utils import make_msgid
from typing import TYPE_CHECKING

import aiosmtplib
import httpx
import pytest

from compass_server.store.postgres import PostgresStore
from tests import _procs, _server
from tests._wait import eventually
from tests.e2e import _mailbox
from tests.e2e._asks import ask_block, ask_ids, post, question
from tests.e2e._connect import call

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Generator, Mapping

    from tests.e2e._mailbox import Mailbox

REPLY_DOMAIN = "reply.compass.test"
ADA = "Ada@Example.org"
GRACE = "grace@example.org"
ONE = ask_block(question("db", "0", "1", recommended=1))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def email_env(relay_port: int, inbound_port: int, **more: str) -> dict[str, str]:
    return {
        "COMPASS_SMTP_URL": f"smtp://127.0.0.1:{relay_port}",
        "COMPASS_EMAIL_FROM": "Compass <compass@compass.test>",
        "COMPASS_EMAIL_REPLY_DOMAIN": REPLY_DOMAIN,
        "COMPASS_INBOUND_SMTP_HOST": "127.0.0.1",
        "COMPASS_INBOUND_SMTP_PORT": str(inbound_port),
        "COMPASS_EMAIL_DELAY_SECONDS": "0",
        "COMPASS_WEBHOOK_POLL_SECONDS": "0.1",
        "COMPASS_WEBHOOK_BACKOFF_SECONDS": "0.3,0.3,0.3,0.3,0.3,0.3,0.3,0.3",
        "COMPASS_WEBHOOK_TIMEOUT_SECONDS": "3",
        "COMPASS_REMINDER_AFTER_SECONDS": "0",
        "COMPASS_METRICS_TOKEN": "metrics-token",
        **more,
    }


class Setup:
    def __init__(self, server: _server.RunningServer, world: _server.SeededWorld, inbound: int):
        self.server = server
        self.world = world
        self.inbound = inbound


@pytest.fixture
async def mailbox() -> AsyncGenerator[tuple[Mailbox, int]]:
    async with _mailbox.serving() as served:
        yield served


@pytest.fixture
def mail_server(
    database_url: str, mailbox: tuple[Mailbox, int]
) -> Generator[tuple[_server.RunningServer, int]]:
    inbound = free_port()
    with _server.serve(database_url, env=email_env(mailbox[1], inbound)) as server:
        yield server, inbound


@pytest.fixture
async def setup(mail_server: tuple[_server.RunningServer, int]) -> Setup:
    server, inbound = mail_server
    world = await _server.seed_world(server.dsn)
    await set_emails(server.dsn, {world.human.account_id: ADA, world.human2.account_id: GRACE})
    return Setup(server, world, inbound)


@pytest.fixture
async def http(mail_server: tuple[_server.RunningServer, int]) -> AsyncGenerator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=mail_server[0].url, timeout=30) as client:
        yield client


async def set_emails(dsn: str, emails: Mapping[str, str]) -> None:
    async with PostgresStore(dsn, pool_min=1, pool_max=1) as store:
        email = store.email()
        assert email is not None
        for account_id, address in emails.items():
            await email.set_email(account_id, address)


def reply(
    to: str,
    text: str,
    *,
    sender: str = ADA,
    headers: Mapping[str, str] | None = None,
    in_reply_to: EmailMessage | None = None,
) -> EmailMessage:
    message = EmailMessage()
    message["From"] = f"Ada <{sender}>"
    message["To"] = to
    message["Subject"] = "Re: the ask"
    message["Message-ID"] = make_msgid(domain="example.org")
    if in_reply_to is not None:
        message["In-Reply-To"] = str(in_reply_to["Message-ID"])
        message["References"] = str(in_reply_to["Message-ID"])
    for name, value in (headers or {}).items():
        message[name] = value
    message.set_content(text)
    return message


async def send(port: int, message: EmailMessage, *, sender: str = ADA) -> tuple[int, str]:
    """Hand `message` to Compass's listener; (code, text) of its answer to DATA."""
    try:
        errors, said = await aiosmtplib.send(
            message, hostname="127.0.0.1", port=port, sender=sender, timeout=20
        )
    except aiosmtplib.SMTPRecipientsRefused as exc:
        (refused,) = exc.recipients
        return refused.code, refused.message
    except aiosmtplib.SMTPResponseException as exc:
        return exc.code, exc.message
    assert not errors
    return 250, said


async def status_of(http: httpx.AsyncClient, token: str, ask_id: str) -> dict[str, object]:
    got = await call(http, "GetAsk", {"askId": ask_id}, token)
    assert got.ok, got
    ask = got.body["ask"]
    assert isinstance(ask, dict)
    return ask


async def scraped(http: httpx.AsyncClient, line: str) -> bool:
    metrics = await http.get("/metrics", headers={"authorization": "Bearer metrics-token"})
    return line in metrics.text.splitlines()


def reply_to(message: EmailMessage) -> str:
    return str(message["Reply-To"])


async def test_an_ask_is_mailed_to_each_participant_and_a_reply_answers_it(
    setup: Setup, http: httpx.AsyncClient, mailbox: tuple[Mailbox, int]
) -> None:
    box, _ = mailbox
    world = setup.world
    (ask_id,) = ask_ids(await post(http, world.agent.token, world.channel_id, ONE))
    await box.wait_for(lambda: len(box.received) == 2, "a mail to each person")
    assert sorted(r.lower() for r, _ in box.received) == sorted([ADA.lower(), GRACE])
    (mail,) = box.to(ADA)
    assert str(mail["Subject"]).startswith("[Compass] Coding Agent: What about db?")
    assert str(mail["Auto-Submitted"]) == "auto-generated"
    assert re.fullmatch(r"<[^@>]+@compass\.test>", str(mail["Message-ID"]))
    assert re.fullmatch(rf"ask\+[a-z2-7]{{32}}@{re.escape(REPLY_DOMAIN)}", reply_to(mail))
    assert reply_to(mail) != reply_to(box.to(GRACE)[0])  # one token per person
    unsubscribe = str(mail["List-Unsubscribe"])
    assert unsubscribe.startswith(f"<{setup.server.url}email/unsubscribe?token=")
    assert str(mail["List-Unsubscribe-Post"]) == "List-Unsubscribe=One-Click"
    assert mail.get_content_type() == "multipart/alternative"
    kinds = [part.get_content_type() for part in mail.iter_parts()]
    assert kinds == ["text/plain", "text/html"]
    text = mail.get_body(preferencelist=("plain",))
    assert text is not None
    assert f"{setup.server.url}#/ask/{ask_id}" in str(text.get_content())

    answer = reply(reply_to(mail), "2\n\nOn Mon, Compass wrote:\n> 1. label 0\n", in_reply_to=mail)
    assert await send(setup.inbound, answer) == (250, "2.0.0 Answered")
    ask = await status_of(http, world.human.token, ask_id)
    assert ask["status"] == "ASK_STATUS_ANSWERED"
    assert ask["answeredByAccountId"] == world.human.account_id
    questions = ask["questions"]
    assert isinstance(questions, list)
    assert questions[0]["chosenOptionIds"] == ["1"]  # pyright: ignore[reportUnknownMemberType, reportIndexIssue]

    # The same address again: spent.
    again = reply(reply_to(mail), "1")
    assert await send(setup.inbound, again) == (550, "5.1.1 Unknown or used reply address")
    # Grace replies after Ada answered: one mail back saying how it ended, threaded.
    grace_mail = box.to(GRACE)[0]
    late = reply(reply_to(grace_mail), "1", sender=GRACE, in_reply_to=grace_mail)
    assert await send(setup.inbound, late, sender=GRACE) == (
        250,
        "2.0.0 The ask had already ended; a reply says how",
    )
    await box.wait_for(lambda: len(box.to(GRACE)) == 2, "the mail saying how it ended")
    ended = box.to(GRACE)[1]
    assert str(ended["In-Reply-To"]) == str(late["Message-ID"])
    assert str(late["Message-ID"]) in str(ended["References"])
    assert str(ended["Auto-Submitted"]) == "auto-replied"
    assert str(ended["Subject"]) == "Re: the ask"  # in the person's thread
    body = ended.get_body(preferencelist=("plain",))
    assert body is not None
    assert "answered" in str(body.get_content())
    assert "Ada" in str(body.get_content())
    await eventually(
        lambda: scraped(http, 'compass_emails_total{outcome="sent"} 3.0'), "3 mails counted"
    )
    assert await scraped(http, 'compass_email_replies_total{outcome="answered",reason=""} 1.0')


async def test_every_refusal_stores_nothing_and_the_address_still_answers_after(
    setup: Setup, http: httpx.AsyncClient, mailbox: tuple[Mailbox, int]
) -> None:
    box, _ = mailbox
    world = setup.world
    strict = question("db", "0", "1")
    strict["freeText"] = "FREE_TEXT_REFUSED"
    (ask_id,) = ask_ids(await post(http, world.agent.token, world.channel_id, ask_block(strict)))
    await box.wait_for(lambda: len(box.to(ADA)) == 1, "the mail")
    (mail,) = box.to(ADA)
    address = reply_to(mail)
    token = address.split("@")[0].removeprefix("ask+")
    refusals: list[tuple[EmailMessage, str, tuple[int, str]]] = [
        (
            reply(address, "1", sender="mallory@example.org"),
            "mallory@example.org",
            (550, "5.7.1 Not from the person this address was mailed to"),
        ),
        (
            reply(address, "1", sender=GRACE),
            GRACE,
            (550, "5.7.1 Not from the person this address was mailed to"),
        ),
        (
            reply(address, "I am out of office", headers={"Auto-Submitted": "auto-replied"}),
            ADA,
            (250, "2.0.0 Automatic message ignored"),
        ),
        (
            reply(address, "away", headers={"Precedence": "bulk"}),
            ADA,
            (250, "2.0.0 Automatic message ignored"),
        ),
        (reply(address, "bounce"), "", (250, "2.0.0 Automatic message ignored")),
        (
            reply(f"ask+{'a' * 32}@{REPLY_DOMAIN}", "1"),
            ADA,
            (550, "5.1.1 Unknown or used reply address"),
        ),
        (reply(f"ask+{token}@elsewhere.test", "1"), ADA, (550, "5.1.1 No such recipient here")),
        (reply(f"someone@{REPLY_DOMAIN}", "1"), ADA, (550, "5.1.1 No such recipient here")),
    ]
    for message, sender, expected in refusals:
        assert await send(setup.inbound, message, sender=sender) == expected, message["To"]
    # Over 1 MiB: refused at the SMTP level.
    huge = reply(address, "1\n" + "x" * 80 + "\n")
    huge.set_content("1\n" + ("x" * 76 + "\n") * 14_000)
    code, _ = await send(setup.inbound, huge)
    assert code == 552
    # Two recipients in one message: the second waits for a message of its own.
    async with aiosmtplib.SMTP(hostname="127.0.0.1", port=setup.inbound, timeout=20) as smtp:
        await smtp.mail(ADA)
        await smtp.rcpt(address)
        with pytest.raises(aiosmtplib.SMTPRecipientRefused) as second:
            await smtp.rcpt(reply_to(box.to(GRACE)[0]) if box.to(GRACE) else address)
        assert second.value.code == 452
    # Not understood (an option that does not exist; free text this question refuses):
    # nothing stored, one mail back each, threaded under the reply, with the grammar.
    for text in ("7", "something else entirely"):
        sent = reply(address, text, in_reply_to=mail)
        assert await send(setup.inbound, sent) == (250, "2.0.0 Not understood; a reply says why")
    await box.wait_for(lambda: len(box.to(ADA)) == 3, "the two mails saying why")
    for back in box.to(ADA)[1:]:
        assert str(back["Auto-Submitted"]) == "auto-replied"
        assert str(back["In-Reply-To"]).startswith("<")
        assert re.fullmatch(rf"ask\+[a-z2-7]{{32}}@{re.escape(REPLY_DOMAIN)}", reply_to(back))
    ask = await status_of(http, world.human.token, ask_id)
    assert ask["status"] == "ASK_STATUS_PENDING"
    # The mail's address still answers; so would the one in the mail saying why.
    assert await send(setup.inbound, reply(address, "decline: not mine")) == (250, "2.0.0 Declined")
    ask = await status_of(http, world.human.token, ask_id)
    assert (ask["status"], ask["closeReason"]) == ("ASK_STATUS_DECLINED", "not mine")
    metrics = await http.get("/metrics", headers={"authorization": "Bearer metrics-token"})
    assert (
        'compass_email_replies_total{outcome="refused",reason="wrong_sender"} 2.0' in metrics.text
    )
    assert 'compass_email_replies_total{outcome="refused",reason="automatic"} 3.0' in metrics.text
    assert 'compass_email_replies_total{outcome="not_understood",reason=""} 2.0' in metrics.text
    assert 'compass_email_replies_total{outcome="declined",reason=""} 1.0' in metrics.text


async def test_the_switch_and_the_one_click_unsubscribe_turn_email_asks_off(
    setup: Setup, http: httpx.AsyncClient, mailbox: tuple[Mailbox, int]
) -> None:
    box, _ = mailbox
    world = setup.world
    got = await call(http, "GetEmailSettings", {}, world.human.token)
    assert got.ok, got
    assert got.body["settings"] == {"email": ADA, "emailAsks": True, "serverSends": True}
    ask_ids(await post(http, world.agent.token, world.channel_id, ONE))
    await box.wait_for(lambda: len(box.to(ADA)) == 1, "the first mail")
    link = str(box.to(ADA)[0]["List-Unsubscribe"]).strip("<>")
    page = await http.get(link)
    assert page.status_code == 200
    assert "Turn email asks off" in page.text
    still = await call(http, "GetEmailSettings", {}, world.human.token)
    assert still.body["settings"]["emailAsks"] is True  # pyright: ignore[reportIndexIssue, reportOptionalSubscript] - a GET changes nothing
    done = await http.post(
        link,
        content=b"List-Unsubscribe=One-Click",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert done.status_code == 200
    assert (await http.post(link.replace("token=", "token=x"))).status_code == 404
    off = await call(http, "GetEmailSettings", {}, world.human.token)
    assert off.body["settings"] == {"email": ADA, "serverSends": True}  # false is omitted
    (second,) = ask_ids(await post(http, world.agent.token, world.channel_id, ONE))
    await box.wait_for(lambda: len(box.to(GRACE)) == 2, "Grace's second mail")
    assert len(box.to(ADA)) == 1  # off: not mailed
    on = await call(http, "SetEmailAsks", {"on": True}, world.human.token)
    assert on.ok, on
    assert on.body["settings"]["emailAsks"] is True  # pyright: ignore[reportIndexIssue, reportOptionalSubscript]
    agent = await call(http, "GetEmailSettings", {}, world.agent.token)
    assert agent.code == "permission_denied"
    del second


async def test_an_ask_answered_within_the_delay_is_never_mailed(
    database_url: str, mailbox: tuple[Mailbox, int]
) -> None:
    box, relay = mailbox
    env = email_env(relay, free_port(), COMPASS_EMAIL_DELAY_SECONDS="1")
    with _server.serve(database_url, env=env) as server:
        world = await _server.seed_world(database_url)
        await set_emails(database_url, {world.human.account_id: ADA})
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            (quick,) = ask_ids(await post(http, world.agent.token, world.channel_id, ONE))
            answered = await call(
                http,
                "RespondToAsk",
                {"askId": quick, "answers": [{"questionId": "db", "chosenOptionIds": ["0"]}]},
                world.human2.token,
            )
            assert answered.ok, answered
            (slow,) = ask_ids(await post(http, world.agent.token, world.channel_id, ONE))
            await box.wait_for(lambda: len(box.received) >= 1, "the unanswered ask's mail")
            await asyncio.sleep(1.0)  # time under test: the quick ask's delay has passed too
    subjects = [(r, str(m["Subject"])) for r, m in box.received]
    assert len(subjects) == 1, subjects
    links = str(box.received[0][1].get_body(preferencelist=("plain",)).get_content())  # pyright: ignore[reportOptionalMemberAccess]
    assert slow in links
    assert quick not in links


async def test_with_the_relay_down_the_mail_waits_and_goes_once_when_it_is_up(
    database_url: str,
) -> None:
    relay = free_port()
    with _server.serve(database_url, env=email_env(relay, free_port())) as server:
        world = await _server.seed_world(database_url)
        await set_emails(database_url, {world.human.account_id: ADA})
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            ask_ids(await post(http, world.agent.token, world.channel_id, ONE))
            async with PostgresStore(database_url, pool_min=1, pool_max=1) as store:

                async def retried() -> bool:
                    async with store.connection() as conn:
                        return (
                            int(
                                await conn.fetchval(
                                    "SELECT COALESCE(max(attempts), 0) FROM email_deliveries"
                                )
                            )
                            >= 2
                        )

                await eventually(retried, "two attempts while the relay is down", within=20)
                async with _mailbox.serving(port=relay) as (box, _):
                    await box.wait_for(lambda: len(box.received) == 1, "the mail, once up")

                    async def delivered() -> bool:
                        async with store.connection() as conn:
                            state = await conn.fetchval("SELECT state FROM email_deliveries")
                        return state == "delivered"

                    await eventually(delivered, "the mail recorded as delivered", within=10)
                    await asyncio.sleep(1.0)  # time under test: ten more rounds send nothing
                    assert len(box.received) == 1


async def test_a_relay_holding_one_mail_holds_up_no_other(
    database_url: str,
) -> None:
    release = asyncio.Event()
    held: list[str] = []

    def hold(message: EmailMessage) -> asyncio.Event | None:
        if str(message["To"]).lower() == ADA.lower():
            held.append(str(message["To"]))
            return release
        return None

    async with _mailbox.serving(_mailbox.Mailbox(hold=hold)) as (box, relay):
        with _server.serve(database_url, env=email_env(relay, free_port())) as server:
            world = await _server.seed_world(database_url)
            await set_emails(
                database_url, {world.human.account_id: ADA, world.human2.account_id: GRACE}
            )
            async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
                ask_ids(await post(http, world.agent.token, world.channel_id, ONE))
                await box.wait_for(
                    lambda: bool(held) and len(box.to(GRACE)) == 1,
                    "Grace's mail, while Ada's is held",
                )
                assert box.to(ADA) == []
                release.set()
                await box.wait_for(
                    lambda: len(box.to(ADA)) >= 1, "Ada's mail after its timeout's retry"
                )


async def test_two_workers_mail_each_ask_to_each_person_exactly_once(
    database_url: str, mailbox: tuple[Mailbox, int]
) -> None:
    box, relay = mailbox
    env = {**email_env(relay, free_port()), "COMPASS_WORKERS": "2"}
    with _server.serve(database_url, env=env, timeout=60) as server:
        assert len(_procs.children(server.process.pid)) == 2
        world = await _server.seed_world(database_url)
        await set_emails(
            database_url, {world.human.account_id: ADA, world.human2.account_id: GRACE}
        )
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            asked = [
                ask_ids(await post(http, world.agent.token, world.channel_id, ONE))[0]
                for _ in range(12)
            ]
            await box.wait_for(lambda: len(box.received) >= 2 * len(asked), "every mail", 40)
            await asyncio.sleep(1.0)  # time under test: more rounds of both workers repeat none
    seen = collections.Counter((rcpt.lower(), str(m["Message-ID"])) for rcpt, m in box.received)
    assert len(seen) == 2 * len(asked)
    assert set(seen.values()) == {1}
