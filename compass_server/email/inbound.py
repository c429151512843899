"""Compass's own SMTP listener for replies (aiosmtpd): the front door an email reply answers
through (docs/answering/email.md). On when COMPASS_INBOUND_SMTP_HOST/PORT are set; `compass
serve` binds it in every worker process (SO_REUSEPORT).

It takes only what a reply needs and hands the rest to the email use cases
(`service/email.Email`):

- RCPT: only `ask+<token>@<reply domain>` with a live token, one per message (others 550;
  a second recipient 452, so the relay sends it as a message of its own);
- DATA: at most MAX_MESSAGE_BYTES (over it: 552, refused by aiosmtpd before anything is
  read into a message; SIZE is announced); then `Email.receive` as the token's person;
- at most MAX_SESSIONS sessions at once per process (more: 421, try later), each closed
  after IDLE_TIMEOUT_SECONDS of silence.

Every outcome is an SMTP code and a short text (REPLIES): an automatic message (auto-reply,
bounce) is accepted and dropped, so no relay bounces it back and nothing loops; a refusal of
the sender is 550; a database that cannot be reached is 451 (the relay tries again: nothing
is lost). No exception's text ever reaches the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import TYPE_CHECKING, Any, Final

from aiosmtpd.smtp import SMTP

from compass_server.domain.email_address import reply_token
from compass_server.domain.errors import UnavailableError

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from aiosmtpd.smtp import Envelope, Session

    from compass_server.service.email import Email, Reply

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES: Final = 1 << 20
MAX_SESSIONS: Final = 100
"""SMTP sessions one process holds open at once; more are answered 421 and closed."""
IDLE_TIMEOUT_SECONDS: Final = 60.0
IDENT: Final = "Compass"
TRY_LATER: Final = "451 4.3.0 Cannot take replies right now; try again later"
REPLIES: Final[dict[tuple[str, str | None], str]] = {
    ("answered", None): "250 2.0.0 Answered",
    ("declined", None): "250 2.0.0 Declined",
    ("not_understood", None): "250 2.0.0 Not understood; a reply says why",
    ("ended", None): "250 2.0.0 The ask had already ended; a reply says how",
    ("refused", "automatic"): "250 2.0.0 Automatic message ignored",
    ("refused", "unknown_token"): "550 5.1.1 Unknown or used reply address",
    ("refused", "wrong_sender"): "550 5.7.1 Not from the person this address was mailed to",
    ("refused", "no_dkim"): "550 5.7.20 No valid DKIM signature of the sender's domain",
    ("refused", "not_allowed"): "550 5.7.1 This account may not answer this ask",
}


def smtp_reply(reply: Reply) -> str:
    """The SMTP answer to a message that did `reply`."""
    return REPLIES.get((reply.outcome, reply.reason), TRY_LATER)


class ReplyHandler:
    """aiosmtpd's handler: RCPT and DATA as the module says."""

    def __init__(self, email: Email, *, reply_domain: str) -> None:
        self._email = email
        self._domain = reply_domain

    async def handle_RCPT(  # noqa: N802 - aiosmtpd's hook name
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        address: str,
        rcpt_options: list[str],
    ) -> str:
        del server, session, rcpt_options
        token = reply_token(address, self._domain)
        if token is None:
            return "550 5.1.1 No such recipient here"
        if envelope.rcpt_tos:
            return "452 4.5.3 One recipient per message, please"
        try:
            live = await self._email.recipient_live(token)
        except UnavailableError:
            return TRY_LATER
        except Exception:
            logger.exception("a reply's recipient could not be checked")
            return TRY_LATER
        if not live:
            return REPLIES["refused", "unknown_token"]
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(  # noqa: N802 - aiosmtpd's hook name
        self, server: SMTP, session: Session, envelope: Envelope
    ) -> str:
        del server, session
        token = reply_token(envelope.rcpt_tos[0], self._domain) if envelope.rcpt_tos else None
        raw = envelope.original_content or b""
        if token is None or not raw:
            return "554 5.5.1 No valid recipient"
        try:
            reply = await self._email.receive(token, raw, mail_from=envelope.mail_from or "")
        except UnavailableError:
            return TRY_LATER
        except Exception:
            logger.exception("a reply could not be taken")
            return TRY_LATER
        logger.info(
            "email reply: %s%s", reply.outcome, f" ({reply.reason})" if reply.reason else ""
        )
        return smtp_reply(reply)


class _Sessions:
    """The sessions open now, and the cap."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.open = 0


class _CountedSMTP(SMTP):
    """aiosmtpd's session, counted while its connection is open (no STARTTLS here: one
    connection_made and one connection_lost each)."""

    def __init__(self, handler: ReplyHandler, sessions: _Sessions, **settings: Any) -> None:
        super().__init__(handler, **settings)
        self._sessions = sessions

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._sessions.open += 1
        super().connection_made(transport)

    def connection_lost(self, error: Exception | None) -> None:
        self._sessions.open -= 1
        super().connection_lost(error)


class _Busy(asyncio.Protocol):
    """A connection past the cap: 421 (the sender tries again later), closed."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)  # noqa: S101 - a TCP transport
        transport.write(b"421 4.3.2 Too many connections; try again later\r\n")
        transport.close()


@contextlib.asynccontextmanager
async def listening(
    email: Email, *, host: str, port: int, reply_domain: str, most: int = MAX_SESSIONS
) -> AsyncGenerator[int]:
    """The listener on host:port while the context is open; yields the port it bound (for
    port 0). Several processes may bind the same port (SO_REUSEPORT): the kernel spreads the
    connections."""
    handler = ReplyHandler(email, reply_domain=reply_domain)
    loop = asyncio.get_running_loop()
    sessions = _Sessions(most)

    def session() -> asyncio.Protocol:
        if sessions.open >= sessions.most:
            return _Busy()
        return _CountedSMTP(
            handler,
            sessions,
            data_size_limit=MAX_MESSAGE_BYTES,
            hostname=reply_domain,
            ident=IDENT,
            timeout=IDLE_TIMEOUT_SECONDS,
            loop=loop,
        )

    server = await loop.create_server(
        session,
        host,
        port,
        reuse_port=hasattr(socket, "SO_REUSEPORT"),
    )
    bound = int(server.sockets[0].getsockname()[1])
    logger.info("listening for email replies on %s:%d", host, bound)
    try:
        yield bound
    finally:
        server.close()
        await server.wait_closed()
