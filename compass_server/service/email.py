"""The email use cases (docs/answering/email.md): a person's switch for asks by email, the
one-click unsubscribe, and a reply to an ask's mail, one method each, for any front door.

CommsService's handlers call the switch as the signed-in person; the unsubscribe endpoint
(`email/unsubscribe.py`) calls `unsubscribe` with the link's token alone; the inbound SMTP
listener (`email/inbound.py`) calls `recipient_live` for each RCPT and `receive` for each
message, with nothing but the reply address's token and the message. As in
`service/push.py`, none knows SMTP or HTTP.

`receive` answers or declines through the application's use cases (`Asks.respond_to_ask`,
`Asks.decline_ask`) as the person the token was mailed to, so a reply is held to every rule a
browser's answer is. In order: the token must be live (else refused "unknown_token"); an
automatic message (an auto-reply, a bounce) is dropped ("automatic": nothing stored, no mail
back, no loop); the From must be that person's address ("wrong_sender"); with
COMPASS_EMAIL_REQUIRE_DKIM, a valid DKIM signature of the From's domain ("no_dkim"). Then the
ask: already final -> one mail back saying how it ended ("ended"); the reply read
(`domain/email_reply.read_reply`): answered or declined (the thread's tokens are then spent),
or not understood -> one mail back saying why, with the grammar ("not_understood"), nothing
stored. Mails back go through the email outbox, never from inside the SMTP session.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import json
from dataclasses import dataclass
from email.utils import getaddresses
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from compass_server.domain import ask_text
from compass_server.domain.email_address import same_address
from compass_server.domain.email_reply import Answered, Declined, read_reply
from compass_server.domain.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
)
from compass_server.domain.mail_in import is_automatic, reply_text
from compass_server.store import AccountKind
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence
    from email.message import EmailMessage

    from compass_server.service.asks import Asks
    from compass_server.store import AccountRow, EmailSettingsRow, EmailStore, ReplyTokenRow

ReplyOutcome: TypeAlias = Literal["answered", "declined", "not_understood", "ended", "refused"]
RefusedReason: TypeAlias = Literal[
    "unknown_token", "automatic", "wrong_sender", "no_dkim", "not_allowed"
]
MAX_DECLINE_REASON: Final = 500
MAX_REFERENCES: Final = 20
MAX_MAILS_BACK: Final = 5
"""Mails back (not understood, ended) per ask and person at most: a sender that keeps
replying gets no more (no mail loop with an auto-responder that does not say it is one)."""

DkimCheck: TypeAlias = "Callable[[bytes, str], Awaitable[bool]]"
"""Whether a raw message carries a valid DKIM signature of the given domain."""


@dataclass(frozen=True, slots=True)
class Reply:
    """What a reply did."""

    outcome: ReplyOutcome
    reason: RefusedReason | None = None
    """Why it was refused (outcome "refused")."""


def dkim_check(dnsfunc: Callable[..., bytes | None] | None = None) -> DkimCheck:
    """The DKIM check with dkimpy: some signature verifies and its d= is the From's domain
    or a parent of it. `dnsfunc` answers its TXT lookups (tests); else DNS."""
    import dkim

    def verify(raw: bytes, domain: str) -> bool:
        checker = dkim.DKIM(raw)
        for index in range(len(_signatures(raw))):
            try:
                ok = (
                    checker.verify(idx=index, dnsfunc=dnsfunc)
                    if dnsfunc
                    else checker.verify(idx=index)
                )
            except dkim.DKIMException:
                continue
            signer = (checker.domain or b"").decode("ascii", "replace").lower()
            if ok and (domain == signer or domain.endswith("." + signer)):
                return True
        return False

    async def check(raw: bytes, domain: str) -> bool:
        return await asyncio.to_thread(verify, raw, domain.lower())

    return check


def _signatures(raw: bytes) -> list[str]:
    parsed = email.message_from_bytes(raw)
    return parsed.get_all("DKIM-Signature") or []


class Email:
    """The email use cases on the store's `EmailStore` port."""

    def __init__(
        self,
        store: EmailStore,
        asks: Asks,
        *,
        sends: bool = False,
        require_dkim: DkimCheck | None = None,
        on_reply: Callable[[Reply], None] | None = None,
    ) -> None:
        """
        Args:
            store: addresses, tokens, the reply mails' queue.
            asks: the application API the answers go through.
            sends: whether this server mails asks (a relay is configured).
            require_dkim: the DKIM check replies must pass (COMPASS_EMAIL_REQUIRE_DKIM).
            on_reply: told of each reply's outcome (a metric).
        """
        self._store = store
        self._asks = asks
        self.sends = sends
        self._dkim = require_dkim
        self._on_reply = on_reply

    # -- the switch ----------------------------------------------------------------------------

    async def settings(self, actor: AccountRow) -> EmailSettingsRow:
        """GetEmailSettings: `actor`'s address (set by an operator) and switch."""
        self._person(actor)
        return await self._store.email_settings(actor.account_id)

    async def set_email_asks(self, actor: AccountRow, on: bool) -> EmailSettingsRow:
        """SetEmailAsks: turn asks by email on or off for `actor`."""
        self._person(actor)
        return await self._store.set_email_asks(actor, on)

    async def unsubscribe(self, token: str) -> bool:
        """A mail's one-click unsubscribe: email asks off for the person it was sent to.
        False when the token is unknown."""
        return bool(token) and await self._store.unsubscribe(token) is not None

    @staticmethod
    def _person(actor: AccountRow) -> None:
        if actor.kind is not AccountKind.HUMAN:
            raise PermissionDeniedError("only people's accounts take asks by email")

    # -- a reply -------------------------------------------------------------------------------

    async def recipient_live(self, token: str) -> bool:
        """Whether a reply address's token is known and not spent (an SMTP RCPT)."""
        found = await self._store.reply_token(token)
        live = found is not None and not found.used
        if not live and self._on_reply is not None:
            self._on_reply(Reply("refused", "unknown_token"))
        return live

    async def receive(self, token: str, raw: bytes, *, mail_from: str) -> Reply:
        """One message to `ask+<token>@`: see the module. `mail_from` is the envelope sender
        ("" for a bounce).

        Raises:
            UnavailableError: the database cannot be reached (try again later).
        """
        reply = await self._receive(token, raw, mail_from)
        if self._on_reply is not None:
            self._on_reply(reply)
        return reply

    async def _receive(self, token: str, raw: bytes, mail_from: str) -> Reply:
        found = await self._store.reply_token(token)
        if found is None or found.used:
            return Reply("refused", "unknown_token")
        message: EmailMessage = email.message_from_bytes(raw, policy=email.policy.default)
        if is_automatic(message, envelope_from=mail_from):
            return Reply("refused", "automatic")
        senders = [address for _, address in getaddresses(message.get_all("From") or [])]
        if len(senders) != 1 or found.email is None or not same_address(senders[0], found.email):
            return Reply("refused", "wrong_sender")
        if self._dkim is not None and not await self._dkim(raw, senders[0].rpartition("@")[2]):
            return Reply("refused", "no_dkim")
        account = found.account
        if account.disabled:
            return Reply("refused", "not_allowed")
        try:
            row = await self._asks.get_ask(account, comms_pb2.GetAskRequest(ask_id=found.ask_id))
        except NotFoundError:
            return Reply("refused", "unknown_token")
        if row.final:
            await self._mail_back(found, message, "ended", ())
            return Reply("ended")
        read = read_reply(row.ask, reply_text(message))
        try:
            if isinstance(read, Answered):
                await self._asks.respond_to_ask(
                    account,
                    comms_pb2.RespondToAskRequest(ask_id=found.ask_id, answers=read.answers),
                )
                outcome: ReplyOutcome = "answered"
            elif isinstance(read, Declined):
                reason = ask_text.clip(read.reason, MAX_DECLINE_REASON)
                await self._asks.decline_ask(
                    account, comms_pb2.DeclineAskRequest(ask_id=found.ask_id, reason=reason)
                )
                outcome = "declined"
            else:
                await self._mail_back(found, message, "not_understood", read.problems)
                return Reply("not_understood")
        except InvalidArgumentError as exc:  # the judge's refusal: say which, store nothing
            problems = [v.description for v in exc.violations] or [exc.message]
            await self._mail_back(found, message, "not_understood", problems)
            return Reply("not_understood")
        except FailedPreconditionError:  # ended meanwhile (answered elsewhere, closed)
            await self._mail_back(found, message, "ended", ())
            return Reply("ended")
        except (PermissionDeniedError, NotFoundError):  # no longer takes part
            return Reply("refused", "not_allowed")
        await self._store.spend_reply_tokens(found.ask_id, account.account_id)
        return Reply(outcome)

    async def _mail_back(
        self,
        found: ReplyTokenRow,
        message: EmailMessage,
        kind: Literal["not_understood", "ended"],
        problems: Sequence[str],
    ) -> None:
        """Queue the one mail answering `message` (threaded under it)."""
        incoming = str(message.get("Message-ID", "")).strip()
        references = str(message.get("References", "")).split()
        if not references and found.thread_id:
            references = [found.thread_id]
        payload = {
            "subject": str(message.get("Subject", "")),
            "problems": list(problems),
            "in_reply_to": incoming,
            "references": references[-MAX_REFERENCES:],
        }
        await self._store.queue_reply(
            found.ask_id, found.account.account_id, kind, json.dumps(payload), most=MAX_MAILS_BACK
        )
