"""Email's half of the Store port (docs/answering/email.md): people's addresses and their
on/off switch, the reply tokens, unsubscribe links, and the reply mails the email use cases
queue (`EmailStore`, for `service/email.py`); the outbox the sender sends (`EmailOutbox`).

`compass_server.store` re-exports them: import them from there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias

from compass_server.store.outboxes import Claims
from compass_server.store.rows import DueEmail

if TYPE_CHECKING:
    from datetime import datetime

    from compass_server.store.rows import AccountRow, EmailSettingsRow, ReplyTokenRow

EmailResult: TypeAlias = Literal["sent", "skipped", "retried", "failed"]
"""How one mail attempt ended (also the label of `compass_emails_total`)."""
ReplyKind: TypeAlias = Literal["not_understood", "ended"]


class EmailStore(Protocol):
    """What the email use cases and `compass admin` need of storage."""

    async def set_email(self, account_id: str, email: str | None) -> EmailSettingsRow:
        """Set (or, None, remove) a person's address; checked before (domain/email_address).

        Raises:
            NotFoundError: no such account.
            FailedPreconditionError: an agent's account (agents are not mailed).
        """
        ...

    async def email_settings(self, account_id: str) -> EmailSettingsRow:
        """A person's address and switch.

        Raises:
            NotFoundError: no such account.
        """
        ...

    async def set_email_asks(self, account: AccountRow, on: bool) -> EmailSettingsRow:
        """Turn email asks on or off for `account` (asks already mailed stay answerable)."""
        ...

    async def unsubscribe(self, token: str) -> str | None:
        """An unsubscribe link used: email asks off for its person. Returns the account id;
        None when the token is unknown. Using it again changes nothing."""
        ...

    async def reply_token(self, token: str) -> ReplyTokenRow | None:
        """What a reply token stands for (by its SHA-256); None when unknown."""
        ...

    async def spend_reply_tokens(self, ask_id: str, account_id: str) -> bool:
        """Spend every reply token of the (ask, person) thread (an answer or decline of theirs
        was stored); False when none was live (a racing reply spent them)."""
        ...

    async def queue_reply(
        self, ask_id: str, account_id: str, kind: ReplyKind, payload: str, *, most: int
    ) -> str | None:
        """Queue a mail answering a person's reply, for the sender, unless `most` such mails
        of the (ask, person) thread were queued already (None then: a sender that keeps
        replying, e.g. an auto-responder that does not say so, gets no more: no mail loop).
        Returns its delivery id."""
        ...


class EmailOutbox(Claims[DueEmail], Protocol):
    """What the email sender needs: the due mails, leased to one process at a time
    (store/postgres/outbox.py), tokens and thread ids for them, the record of each attempt."""

    async def new_reply_token(self, ask_id: str, account_id: str) -> str:
        """A new reply token for the (ask, person) thread (only its hash is kept)."""
        ...

    async def new_unsubscribe_token(self, account_id: str) -> str:
        """A new unsubscribe token of a person (only its hash is kept)."""
        ...

    async def thread_id(self, ask_id: str, account_id: str, candidate: str) -> str:
        """The Message-ID of the ask's mail to that person: the one kept, else `candidate`,
        kept now."""
        ...

    async def defer(self, mail: DueEmail, until: datetime) -> None:
        """Not yet (the ask has not waited the delay): due again at `until`, no attempt
        counted."""
        ...

    async def record(
        self, mail: DueEmail, *, result: EmailResult, outcome: str, retry_at: datetime | None
    ) -> None:
        """Settle one attempt: "sent", "skipped" (nothing to send any more: the ask ended, the
        address is gone, email asks are off), "retried" (due again at `retry_at`), "failed"
        (given up); `outcome` is kept on the row."""
        ...

    async def purge(self, before: datetime) -> int:
        """Forget the reply tokens of asks that ended, made before `before`. Returns how
        many."""
        ...
