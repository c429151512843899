"""Email latency: how soon an ask reaches the relay as a mail, against the same message sent
by a bare aiosmtplib client, and how soon a reply reaches the agent, against a browser's
answer (docs/answering/email.md).

Run from the repository root:

    .venv/bin/python -m bench.email                  # 100 asks
    .venv/bin/python -m bench.email --asks 20

Where the database comes from: as in bench/respond.py (`COMPASS_BENCH_DATABASE_URL`, else
`COMPASS_TEST_DATABASE_URL`, an admin DSN where a database of its own is created and dropped,
else a temporary local cluster).

Set-up: one `compass serve` on a fresh database, its email sender polling every 0.1 s
(COMPASS_WEBHOOK_POLL_SECONDS), COMPASS_EMAIL_DELAY_SECONDS=0, mailing through an aiosmtpd
relay stand-in in this process (tests/e2e/_mailbox.py: it parses each message and answers
250), its inbound SMTP listener on loopback; a seeded world where only Ada has an address.

Per ask, one after the other, each after a random pause of up to --think seconds (0.25: asks
arrive out of step with the 0.1 s polls), all times time.monotonic() in this process:

1. t0: the agent's AppendMessage of a one-question, two-option ask returned (the ask is
   stored). Subject: the relay stand-in accepted its mail (end of DATA). Floor: the same
   message (its bytes as received) sent again to the stand-in by a bare aiosmtplib client,
   from the connect to the end of DATA.
2. The agent's WatchAsk is opened on the ask and its first (PENDING) state read, and a task
   waits on it. t1: Ada's reply ("2" above the quoted mail) is handed to Compass's listener
   by aiosmtplib (connect, EHLO, MAIL, RCPT, DATA; its 250 is checked). Subject: the waiting
   task sees WatchAsk yield ANSWERED. Floor: the same on a second ask of the round, in the
   other workspace, answered by a browser (RespondToAsk, sent at t1).

Reported: p50, p99 and max of each, and the ratios subject/floor at p50 and p99 (p99 of 100
samples is interpolated between the two slowest).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import sys
import time
from email.message import EmailMessage
from typing import TYPE_CHECKING

import aiosmtplib
import httpx

from bench._timing import latency_table, notifier_bench_main, percentile
from bench.respond import bench_database
from compass_server.store.postgres import PostgresStore
from tests import _server
from tests.e2e import _mailbox
from tests.e2e._asks import answer, ask_block, ask_ids, post, question, respond
from tests.e2e._connect import call, open_stream

if TYPE_CHECKING:
    import argparse

    from tests.e2e._connect import Stream
    from tests.e2e._mailbox import Mailbox

ADA = "ada@example.org"
REPLY_DOMAIN = "reply.compass.test"
ASK = ask_block(question("db", "0", "1"))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _env(relay: int, inbound: int) -> dict[str, str]:
    return {
        "COMPASS_SMTP_URL": f"smtp://127.0.0.1:{relay}",
        "COMPASS_EMAIL_FROM": "Compass <compass@compass.test>",
        "COMPASS_EMAIL_REPLY_DOMAIN": REPLY_DOMAIN,
        "COMPASS_INBOUND_SMTP_HOST": "127.0.0.1",
        "COMPASS_INBOUND_SMTP_PORT": str(inbound),
        "COMPASS_EMAIL_DELAY_SECONDS": "0",
        "COMPASS_WEBHOOK_POLL_SECONDS": "0.1",
        "COMPASS_REMINDER_AFTER_SECONDS": "0",
        "COMPASS_LOG_FORMAT": "json",
    }


async def _answered(watch: Stream) -> float:
    """The time WatchAsk yields the ask ANSWERED."""
    while True:
        message = await watch.message(within=30)
        ask = message.get("ask")
        if isinstance(ask, dict) and ask.get("status") == "ASK_STATUS_ANSWERED":  # pyright: ignore[reportUnknownMemberType]
            return time.monotonic()


def _reply(mail: EmailMessage) -> EmailMessage:
    body = mail.get_body(preferencelist=("plain",))
    quoted = "\n".join(f"> {line}" for line in str(body.get_content() if body else "").splitlines())
    message = EmailMessage()
    message["From"] = f"Ada <{ADA}>"
    message["To"] = str(mail["Reply-To"])
    message["Subject"] = f"Re: {mail['Subject']}"
    message["In-Reply-To"] = str(mail["Message-ID"])
    message.set_content(f"2\n\nOn Friday, Compass wrote:\n{quoted}\n")
    return message


async def _round(
    http: httpx.AsyncClient,
    world: _server.SeededWorld,
    box: Mailbox,
    relay: int,
    inbound: int,
    think: float,
) -> tuple[float, float, float, float]:
    """(mail latency, bare send, reply -> ANSWERED, RespondToAsk -> ANSWERED)."""
    await asyncio.sleep(random.uniform(0, think))  # noqa: S311 - spread, not secrecy
    before = len(box.received)
    (ask_id,) = ask_ids(await post(http, world.agent.token, world.channel_id, ASK))
    stored = time.monotonic()
    await box.wait_for(lambda: len(box.received) > before, "the ask's mail", within=30)
    mailed_at = box.at[before]
    _, mail = box.received[before]
    # The floor: the same message, by a bare client, to the same stand-in.
    floor_start = time.monotonic()
    await aiosmtplib.send(
        mail, hostname="127.0.0.1", port=relay, sender="compass@compass.test", recipients=[ADA]
    )
    floor_sent = box.at[-1] - floor_start
    async with open_stream(http, "WatchAsk", {"askId": ask_id}, world.agent.token) as watch:
        await watch.message(within=30)  # PENDING
        seen = asyncio.create_task(_answered(watch))
        reply_at = time.monotonic()
        _, said = await aiosmtplib.send(
            _reply(mail), hostname="127.0.0.1", port=inbound, sender=ADA, timeout=30
        )
        assert said == "2.0.0 Answered", said
        reply_seen = await seen
    floor_post = await post(http, world.other_agent.token, world.other_channel_id, ASK)
    (floor_id,) = ask_ids(floor_post)
    async with open_stream(http, "WatchAsk", {"askId": floor_id}, world.other_agent.token) as watch:
        await watch.message(within=30)
        seen = asyncio.create_task(_answered(watch))
        respond_at = time.monotonic()
        done = await call(
            http, "RespondToAsk", respond(floor_id, answer("db", "1")), world.outsider.token
        )
        assert done.ok, done
        respond_seen = await seen
    return mailed_at - stored, floor_sent, reply_seen - reply_at, respond_seen - respond_at


async def measure(admin: str, where: str, args: argparse.Namespace) -> int:
    print(f"database: {where}")
    async with bench_database(admin) as dsn, _mailbox.serving() as (box, relay):
        inbound = _free_port()
        with _server.serve(dsn, env=_env(relay, inbound), timeout=120) as server:
            world = await _server.seed_world(dsn)
            async with PostgresStore(dsn, pool_min=1, pool_max=1) as store:
                emails = store.email()
                assert emails is not None
                await emails.set_email(world.human.account_id, ADA)
            async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
                for _ in range(args.warmup):
                    await _round(http, world, box, relay, inbound, args.think)
                rows = [
                    await _round(http, world, box, relay, inbound, args.think)
                    for _ in range(args.asks)
                ]
    mail, bare, reply, browser = (list(column) for column in zip(*rows, strict=True))
    print(f"ask stored -> its mail accepted by the relay, {args.asks} asks:")
    for line in latency_table(
        ("email (relay 250)", mail),
        ("bare aiosmtplib send (floor)", bare),
        ratio="email / bare send",
    ):
        print(line)
    print(f"reply received -> the agent's WatchAsk sees ANSWERED, {args.asks} asks:")
    for line in latency_table(
        ("reply (SMTP to the listener)", reply),
        ("RespondToAsk (floor)", browser),
        ratio="reply / RespondToAsk",
    ):
        print(line)
    print(
        f"summary: email p50 {percentile(mail, 0.5) * 1e3:.1f} ms, p99 "
        f"{percentile(mail, 0.99) * 1e3:.1f} ms; bare send p50 {percentile(bare, 0.5) * 1e3:.1f} "
        f"ms; reply -> ANSWERED p50 {percentile(reply, 0.5) * 1e3:.1f} ms, p99 "
        f"{percentile(reply, 0.99) * 1e3:.1f} ms; RespondToAsk p50 "
        f"{percentile(browser, 0.5) * 1e3:.1f} ms"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    return notifier_bench_main(argv, __doc__, measure)


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
