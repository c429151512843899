"""The email sender: mails the email outbox (`Store.email_outbox()`) through the configured
relay (COMPASS_SMTP_URL) with aiosmtplib (docs/answering/email.md).

Its rounds are every notifier's (background/outbox.OutboxWorker): due mails claimed once
across processes and replicas and leased, at most PER_PERSON in flight per person and
MAX_IN_FLIGHT in all, each attempt bounded by COMPASS_WEBHOOK_TIMEOUT_SECONDS (connect, every
SMTP step, and the whole), so a slow relay holds up nothing but its own attempts. An attempt:

1. reads the ask; an 'ask' mail of an ask that ended meanwhile, to a person with no address
   or with email asks off, is skipped; one younger than COMPASS_EMAIL_DELAY_SECONDS is
   deferred to the end of the delay (no attempt counted);
2. builds the mail: the words from `domain/email_text.py`, multipart text and HTML;
   `Reply-To: ask+<token>@<reply domain>` with a fresh reply token (only its hash is kept);
   the thread's Message-ID (one per ask and person, kept) or, for a reply to the person's
   mail, a new one with In-Reply-To and References; `Auto-Submitted`; `List-Unsubscribe`
   with one-click POST (RFC 8058) at `<public url>email/unsubscribe?token=...`;
3. sends it: accepted -> sent; a 5xx refusal -> failed; anything else (no connection, a
   timeout, 4xx) -> retried on the webhooks' schedule (COMPASS_WEBHOOK_BACKOFF_SECONDS), so
   a mail is never lost while the relay is down.

Nothing of a token, an address or a body is logged: the delivery id, kind and outcome.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import timedelta
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from typing import TYPE_CHECKING, Final

import aiosmtplib

from compass_server.background.outbox import Forget, OutboxWorker, retry_time, utc_now
from compass_server.domain.email_address import reply_address
from compass_server.domain.email_text import (
    ask_mail,
    ended_mail,
    how_it_ended,
    not_understood_mail,
)
from compass_server.store import DueEmail
from compass_server.webhooks.sender import BACKOFF
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime

    from compass_server.config import Settings
    from compass_server.domain.email_text import MailBody
    from compass_server.domain.smtp_relay import SmtpRelay
    from compass_server.store import EmailOutbox, Store
    from compass_server.store.email import EmailResult
    from compass_server.webhooks.sender import AskSource

__all__ = ["UNSUBSCRIBE_PATH", "EmailSender", "Relay", "from_settings"]

logger = logging.getLogger(__name__)

PER_PERSON: Final = 2
"""Mails in flight to one person at once, per process."""
TOKEN_KEEP: Final = timedelta(days=7)
"""Reply tokens of ended asks are forgotten this long after they were made (a reply to an
old mail then gets no answer rather than "already answered")."""
UNSUBSCRIBE_PATH: Final = "email/unsubscribe"


class Relay:
    """Sends one message through the configured relay, with one deadline for all of it."""

    def __init__(self, relay: SmtpRelay, *, timeout_seconds: float) -> None:
        self._relay = relay
        self._timeout = timeout_seconds

    async def send(self, message: EmailMessage) -> None:
        """Hand `message` to the relay.

        Raises:
            aiosmtplib.SMTPException, OSError, TimeoutError: not accepted.
        """
        relay = self._relay
        async with asyncio.timeout(self._timeout):
            await aiosmtplib.send(
                message,
                hostname=relay.host,
                port=relay.port,
                username=relay.username,
                password=relay.password,
                use_tls=relay.security == "tls",
                start_tls=True if relay.security == "starttls" else False,  # noqa: SIM210 - not None: never guess
                timeout=self._timeout,
            )


def from_settings(
    settings: Settings,
    store: Store,
    *,
    public_url: Callable[[], str] | None = None,
    on_outcome: Callable[[EmailResult], None] | None = None,
    on_latency: Callable[[float], None] | None = None,
    on_error: Callable[[], None] | None = None,
) -> EmailSender | None:
    """The email sender of `store`, as `settings` say (its poll, timeout and retry schedule
    are the webhooks'); None when no relay is configured or the store keeps no outbox."""
    outbox = store.email_outbox()
    relay = settings.smtp
    if outbox is None or relay is None:
        return None
    assert settings.email_from is not None  # noqa: S101 - config.py checks them together
    assert settings.email_reply_domain is not None  # noqa: S101
    return EmailSender(
        outbox,
        store,
        Relay(relay, timeout_seconds=settings.webhook_timeout_seconds),
        sender=settings.email_from,
        reply_domain=settings.email_reply_domain,
        public_url=public_url or (lambda: settings.base_url),
        delay_seconds=settings.email_delay_seconds,
        poll_seconds=settings.webhook_poll_seconds,
        timeout_seconds=settings.webhook_timeout_seconds,
        backoff=settings.webhook_backoff_seconds or BACKOFF,
        on_outcome=on_outcome,
        on_latency=on_latency,
        on_error=on_error,
    )


class EmailSender(OutboxWorker[DueEmail]):
    """Sends the email outbox of one database, until cancelled."""

    def __init__(
        self,
        outbox: EmailOutbox,
        asks: AskSource,
        relay: Relay,
        *,
        sender: str,
        reply_domain: str,
        public_url: Callable[[], str],
        delay_seconds: float = 0.0,
        poll_seconds: float = 1.0,
        timeout_seconds: float = 10.0,
        backoff: Sequence[float] = BACKOFF,
        clock: Callable[[], datetime] = utc_now,
        on_outcome: Callable[[EmailResult], None] | None = None,
        on_latency: Callable[[float], None] | None = None,
        on_error: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(
            outbox,
            name="email",
            logger=logger,
            poll_seconds=poll_seconds,
            timeout_seconds=timeout_seconds,
            per_endpoint=PER_PERSON,
            clock=clock,
            on_error=on_error,
            # Now and then, forget the reply tokens of asks that ended a while ago.
            forget=Forget(outbox.purge, TOKEN_KEEP),
        )
        self._mails = outbox
        self._asks = asks
        self._relay = relay
        self._sender = sender
        self._domain = reply_domain
        self._id_domain = sender.rpartition("@")[2].rstrip(">").strip() or reply_domain
        """The right-hand side of every Message-ID: the From address's domain."""
        self._public_url = public_url
        self._delay = timedelta(seconds=delay_seconds)
        self._backoff = tuple(backoff)
        self._on_outcome = on_outcome
        self._on_latency = on_latency

    def destination(self, delivery: DueEmail) -> str:
        return delivery.account_id

    async def attempt(self, delivery: DueEmail) -> None:
        found = await self._asks.notified_ask(delivery.ask_id)
        if found is None:
            await self._settle(delivery, "skipped", "ask not found")
            return
        row = found[0]
        ask = row.ask.ask
        if delivery.email is None:
            await self._settle(delivery, "skipped", "no address")
            return
        link = f"{self._public_url()}#/ask/{ask.ask_id}"
        message = EmailMessage()
        if delivery.event_type == "ask":
            if ask.status != comms_pb2.ASK_STATUS_PENDING:
                await self._settle(delivery, "skipped", "the ask ended before its mail left")
                return
            if not delivery.email_asks:
                await self._settle(delivery, "skipped", "email asks are off")
                return
            due = row.asked_at + self._delay
            if self._clock() < due:
                await self._mails.defer(delivery, due)
                return
            body = ask_mail(ask, asker=row.author_name, channel=row.channel_name, link=link)
            message_id = await self._mails.thread_id(
                ask.ask_id, delivery.account_id, make_msgid("ask", domain=self._id_domain)
            )
            message["Auto-Submitted"] = "auto-generated"
        else:
            said = _reply_payload(delivery.payload)
            if delivery.event_type == "ended":
                outcome, by = how_it_ended(ask)
                body = ended_mail(ask, outcome=outcome, by=by, link=link, replying_to=said.subject)
            else:
                body = not_understood_mail(ask, said.problems, link=link, replying_to=said.subject)
            message_id = make_msgid("reply", domain=self._id_domain)
            if said.in_reply_to:
                message["In-Reply-To"] = said.in_reply_to
                message["References"] = " ".join([*said.references, said.in_reply_to])
            message["Auto-Submitted"] = "auto-replied"
        if delivery.event_type != "ended":  # an ended ask takes no reply
            token = await self._mails.new_reply_token(ask.ask_id, delivery.account_id)
            message["Reply-To"] = reply_address(token, self._domain)
        unsubscribe = await self._mails.new_unsubscribe_token(delivery.account_id)
        unsubscribe_url = f"{self._public_url()}{UNSUBSCRIBE_PATH}?token={unsubscribe}"
        _compose(message, body, sender=self._sender, to=delivery.email, message_id=message_id)
        message["Date"] = format_datetime(self._clock())
        message["List-Unsubscribe"] = f"<{unsubscribe_url}>"
        message["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
        sent_at = self._clock()
        try:
            await self._relay.send(message)
        except aiosmtplib.SMTPResponseException as exc:
            result: EmailResult = "failed" if 500 <= exc.code < 600 else "retried"
            await self._settle(delivery, result, f"smtp {exc.code}", sent_at=sent_at)
            return
        except aiosmtplib.SMTPRecipientsRefused as exc:
            codes = [r.code for r in exc.recipients]
            result = "failed" if codes and all(500 <= c < 600 for c in codes) else "retried"
            await self._settle(delivery, result, "recipient refused", sent_at=sent_at)
            return
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            await self._settle(delivery, "retried", _trouble(exc), sent_at=sent_at)
            return
        if delivery.event_type == "ask" and self._on_latency is not None:
            self._on_latency(max(0.0, (self._clock() - row.asked_at).total_seconds()))
        await self._settle(delivery, "sent", "accepted")

    async def _settle(
        self,
        mail: DueEmail,
        result: EmailResult,
        outcome: str,
        *,
        sent_at: datetime | None = None,
    ) -> None:
        retry_at = None
        if result == "retried":
            retry_at = retry_time(self._backoff, mail.attempts, sent_at or self._clock())
            if retry_at is None:
                result = "failed"
        await self._mails.record(mail, result=result, outcome=outcome, retry_at=retry_at)
        if self._on_outcome is not None:
            self._on_outcome(result)
        logger.info(
            "email %s %s attempt %d: %s (%s)",
            mail.delivery_id,
            mail.event_type,
            mail.attempts + 1,
            outcome,
            result,
        )


class _Said:
    """What a reply mail answers (the outbox row's payload, written by service/email.py)."""

    def __init__(
        self, problems: Sequence[str], in_reply_to: str, references: Sequence[str], subject: str
    ) -> None:
        self.problems = tuple(problems)
        self.in_reply_to = in_reply_to
        self.references = tuple(references)
        self.subject = subject
        """The Subject of the person's mail ("Re: " it keeps the thread together)."""


def _reply_payload(payload: str | None) -> _Said:
    from compass_core.jsonvalues import is_array, is_object

    doc: object = json.loads(payload) if payload else {}
    if not is_object(doc):
        return _Said((), "", (), "")
    problems = doc.get("problems")
    references = doc.get("references")
    in_reply_to = doc.get("in_reply_to")
    subject = doc.get("subject")
    return _Said(
        [str(p) for p in problems] if is_array(problems) else [],
        in_reply_to if isinstance(in_reply_to, str) else "",
        [str(r) for r in references] if is_array(references) else [],
        subject if isinstance(subject, str) else "",
    )


def _compose(
    message: EmailMessage, body: MailBody, *, sender: str, to: str, message_id: str
) -> None:
    message["From"] = sender
    message["To"] = to
    message["Subject"] = body.subject
    message["Message-ID"] = message_id
    message.set_content(body.text)
    message.add_alternative(body.html, subtype="html")


def _trouble(exc: BaseException) -> str:
    """A failed attempt in a few words (never the exception's text: it may hold an address)."""
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, aiosmtplib.SMTPConnectError | OSError):
        return "no connection"
    return type(exc).__name__
