"""A loopback SMTP server (aiosmtpd) standing in for the relay and the person's mailbox of
the email tests: it keeps every message it accepts, and can hold a DATA until told."""

from __future__ import annotations

import asyncio
import contextlib
import email
import email.policy
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aiosmtpd.smtp import SMTP

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable
    from email.message import EmailMessage

    from aiosmtpd.smtp import Envelope, Session


@dataclass
class Mailbox:
    """What the stand-in received."""

    received: list[tuple[str, EmailMessage]] = field(
        default_factory=list[tuple[str, "EmailMessage"]]
    )
    """(recipient, message), in order of acceptance."""
    at: list[float] = field(default_factory=list[float])
    """time.monotonic() when each of `received` was accepted."""
    hold: Callable[[EmailMessage], asyncio.Event | None] = lambda _m: None
    """A DATA whose message this returns an event for waits until it is set."""
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle_DATA(  # noqa: N802 - aiosmtpd's hook
        self, server: SMTP, session: Session, envelope: Envelope
    ) -> str:
        raw = envelope.original_content or b""
        message: EmailMessage = email.message_from_bytes(raw, policy=email.policy.default)
        event = self.hold(message)
        if event is not None:
            await event.wait()
        for rcpt in envelope.rcpt_tos:
            self.received.append((rcpt, message))
            self.at.append(time.monotonic())
        self.changed.set()
        return "250 2.0.0 Queued"

    def to(self, address: str) -> list[EmailMessage]:
        return [m for rcpt, m in self.received if rcpt.lower() == address.lower()]

    async def wait_for(self, done: Callable[[], bool], what: str, within: float = 20.0) -> None:
        try:
            async with asyncio.timeout(within):
                while not done():
                    self.changed.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.changed.wait(), 0.5)
        except TimeoutError:
            raise AssertionError(
                f"{what}: not within {within} s ({len(self.received)} received)"
            ) from None


@contextlib.asynccontextmanager
async def serving(
    mailbox: Mailbox | None = None, port: int = 0
) -> AsyncGenerator[tuple[Mailbox, int]]:
    """The stand-in on 127.0.0.1 (`port`, default a free one) while open."""
    box = mailbox or Mailbox()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SMTP(box, loop=loop), "127.0.0.1", port)
    bound = int(server.sockets[0].getsockname()[1])
    try:
        yield box, bound
    finally:
        server.close()
        await server.wait_closed()
