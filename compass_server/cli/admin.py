"""`compass admin ...`: create and list workspaces, channels and accounts; manage
participation.

Each action takes an open Store and returns a JSON-ready dict. A new account's token is in
the result of `create_account` only: it is stored as a hash and cannot be shown again.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Final

from compass_server.domain.email_address import check_address
from compass_server.domain.errors import FailedPreconditionError, InvalidArgumentError
from compass_server.domain.webhook_targets import AllowList
from compass_server.store import AccountKind
from compass_server.store.postgres import PostgresStore
from compass_server.store.postgres.webhooks import EVENT_TYPES, WebhookStore

if TYPE_CHECKING:
    from collections.abc import Callable

    from compass_server.store import EmailStore, Store


@dataclass(frozen=True, slots=True)
class Arg:
    """One required command-line option of an admin command."""

    flag: str
    help: str
    choices: tuple[str, ...] | None = None
    required: bool = True
    """Optional ones are passed as None when not given."""
    type: Callable[[str], str] | None = None
    """Checks the value as argparse reads it: a bad one is a usage error (exit 2)."""


def email_address(raw: str) -> str:
    """`--email`: a person's address (domain/email_address.check_address)."""
    try:
        return check_address(raw)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


MAX_DELIVERIES: Final = 500
SIGN_IN_LINK_MINUTES: Final = 15
MAX_SIGN_IN_LINK_MINUTES: Final = 7 * 24 * 60

#: command name -> (help, its options).
COMMANDS: Final[dict[str, tuple[str, tuple[Arg, ...]]]] = {
    "create-workspace": ("create a workspace", (Arg("--name", "workspace name"),)),
    "create-channel": (
        "create a channel in a workspace",
        (Arg("--workspace", "workspace id"), Arg("--name", "channel name")),
    ),
    "create-account": (
        "create an account and print its token (once)",
        (
            Arg("--kind", "human or agent", tuple(k.value for k in AccountKind)),
            Arg("--name", "display name"),
            Arg(
                "--email",
                "a person's email address: asks are mailed to it (docs/answering/email.md)",
                required=False,
                type=email_address,
            ),
        ),
    ),
    "set-email": (
        "set the email address asks are mailed to, for a person's account",
        (
            Arg("--account", "account id of a person"),
            Arg("--email", "the address (local@domain)", type=email_address),
        ),
    ),
    "list-accounts": (
        "list the accounts: id, kind, name, whether disabled, their channels (never a token)",
        (
            Arg(
                "--kind",
                "only people's (human) or only agents' (agent) accounts",
                tuple(k.value for k in AccountKind),
                required=False,
            ),
        ),
    ),
    "list-channels": (
        "list the channels: id, workspace, name, participants",
        (),
    ),
    "add-participant": (
        "make an account a participant of a channel (and a member of its workspace)",
        (Arg("--channel", "channel id"), Arg("--account", "account id")),
    ),
    "disable-account": (
        "disable an account: its token stops working",
        (Arg("--account", "account id"),),
    ),
    "sign-in-link": (
        "print a one-time sign-in link for a person's account (no token to paste)",
        (
            Arg("--account", "account id of a person"),
            Arg(
                "--minutes",
                f"how long the link works (default {SIGN_IN_LINK_MINUTES}, at most {MAX_SIGN_IN_LINK_MINUTES})",
                required=False,
            ),
            Arg("--url", "the server's public URL (default from the settings)", required=False),
        ),
    ),
    "revoke-sessions": (
        "sign an account out of every device signed in by link; voids its unused links",
        (Arg("--account", "account id"),),
    ),
    "add-webhook": (
        "send a workspace's ask events to a URL, signed (Standard Webhooks); prints the secret once",
        (
            Arg("--workspace", "workspace id"),
            Arg("--url", "the endpoint (http or https)"),
            Arg(
                "--events",
                f"comma-separated event types (default all: {', '.join(EVENT_TYPES)})",
                required=False,
            ),
        ),
    ),
    "list-webhooks": (
        "list a workspace's webhooks (no secrets)",
        (Arg("--workspace", "workspace id"),),
    ),
    "remove-webhook": (
        "stop a webhook (its pending deliveries and log go with it)",
        (Arg("--id", "webhook id"),),
    ),
    "webhook-deliveries": (
        "a webhook's latest deliveries, each with its attempts (the delivery log)",
        (
            Arg("--id", "webhook id"),
            Arg("--limit", f"how many (default 20, at most {MAX_DELIVERIES})", required=False),
        ),
    ),
}

#: action function name -> the argparse destinations it takes.
PARAMETERS: Final[dict[str, frozenset[str]]] = {
    "create_workspace": frozenset({"name"}),
    "create_channel": frozenset({"workspace", "name"}),
    "create_account": frozenset({"kind", "name", "email"}),
    "set_email": frozenset({"account", "email"}),
    "list_accounts": frozenset({"kind"}),
    "list_channels": frozenset(),
    "add_participant": frozenset({"channel", "account"}),
    "disable_account": frozenset({"account"}),
    "sign_in_link": frozenset({"account", "minutes", "url"}),
    "revoke_sessions": frozenset({"account"}),
    "add_webhook": frozenset({"workspace", "url", "events"}),
    "list_webhooks": frozenset({"workspace"}),
    "remove_webhook": frozenset({"id"}),
    "webhook_deliveries": frozenset({"id", "limit"}),
}


async def create_workspace(store: Store, *, name: str) -> dict[str, object]:
    row = await store.create_workspace(name)
    return {"workspace_id": row.workspace_id, "name": row.name}


async def create_channel(store: Store, *, workspace: str, name: str) -> dict[str, object]:
    row = await store.create_channel(workspace, name)
    return {"channel_id": row.channel_id, "workspace_id": row.workspace_id, "name": row.name}


async def create_account(
    store: Store, *, kind: str, name: str, email: str | None = None
) -> dict[str, object]:
    """With `email` (a person's account only), asks are mailed to it."""
    if email is not None and kind != AccountKind.HUMAN.value:
        raise InvalidArgumentError("--email is for people's accounts (--kind human)")
    emails = _emails(store) if email is not None else None
    account, token = await store.create_account(AccountKind(kind), name)
    result: dict[str, object] = {
        "account_id": account.account_id,
        "kind": account.kind.value,
        "name": account.name,
        "token": token,
    }
    if emails is not None:
        row = await emails.set_email(account.account_id, email)
        result["email"] = row.email
    return result


async def set_email(store: Store, *, account: str, email: str) -> dict[str, object]:
    row = await _emails(store).set_email(account, email)
    return {"account_id": row.account_id, "email": row.email, "email_asks": row.email_asks}


def _emails(store: Store) -> EmailStore:
    emails = store.email()
    if emails is None:
        raise FailedPreconditionError("this store keeps no email addresses")
    return emails


async def list_accounts(store: Store, *, kind: str | None) -> dict[str, object]:
    """Every account (of `kind`), with the channels it takes part in: the ids the other
    commands take (`sign-in-link --account`). Tokens are never shown: only their hashes are
    stored, and this reads neither."""
    channels_of: dict[str, list[str]] = {}
    for channel, participants in await store.list_all_channels():
        for account_id in participants:
            channels_of.setdefault(account_id, []).append(channel.channel_id)
    return {
        "accounts": [
            {
                "account_id": row.account_id,
                "kind": row.kind.value,
                "name": row.name,
                "disabled": row.disabled,
                "created_at": row.created_at.isoformat(),
                "channels": channels_of.get(row.account_id, []),
            }
            for row in await store.list_accounts()
            if kind is None or row.kind.value == kind
        ]
    }


async def list_channels(store: Store) -> dict[str, object]:
    """Every channel, with who takes part in it (the ids `agent-bridge --channel` takes)."""
    accounts = {row.account_id: row for row in await store.list_accounts()}
    return {
        "channels": [
            {
                "channel_id": channel.channel_id,
                "workspace_id": channel.workspace_id,
                "name": channel.name,
                "created_at": channel.created_at.isoformat(),
                "participants": [
                    {
                        "account_id": account_id,
                        "kind": accounts[account_id].kind.value,
                        "name": accounts[account_id].name,
                    }
                    for account_id in participants
                    if account_id in accounts
                ],
            }
            for channel, participants in await store.list_all_channels()
        ]
    }


async def add_participant(store: Store, *, channel: str, account: str) -> dict[str, object]:
    await store.add_participant(channel, account)
    return {"channel_id": channel, "account_id": account}


async def disable_account(store: Store, *, account: str) -> dict[str, object]:
    row = await store.disable_account(account)
    return {"account_id": row.account_id, "disabled": row.disabled}


async def sign_in_link(
    store: Store, *, account: str, minutes: str | None, url: str | None
) -> dict[str, object]:
    """The link is `<url>#/sign-in/<code>`: the code sits in the fragment, which browsers never
    send to a server (so no access log or proxy sees it); the page exchanges it once by POST."""
    lifetime = SIGN_IN_LINK_MINUTES
    if minutes is not None:
        if not minutes.isdigit() or not 1 <= int(minutes) <= MAX_SIGN_IN_LINK_MINUTES:
            raise InvalidArgumentError(
                f"--minutes must be a whole number from 1 to {MAX_SIGN_IN_LINK_MINUTES}"
            )
        lifetime = int(minutes)
    code, expires_at = await store.create_sign_in_link(account, timedelta(minutes=lifetime))
    base = (url or "").rstrip("/") + "/"
    return {
        "account_id": account,
        "url": f"{base}#/sign-in/{code}",
        "expires_at": expires_at.isoformat(),
    }


async def revoke_sessions(store: Store, *, account: str) -> dict[str, object]:
    sessions, links = await store.revoke_sessions(account)
    return {"account_id": account, "sessions_ended": sessions, "links_voided": links}


def _webhooks(store: Store) -> WebhookStore:
    if not isinstance(store, PostgresStore):
        raise TypeError("webhooks live in PostgreSQL")
    return WebhookStore(store)


async def add_webhook(
    store: Store,
    *,
    workspace: str,
    url: str,
    events: str | None,
    allow: AllowList | None = None,
) -> dict[str, object]:
    """The secret is in this result only (shown once); keep it where the receiver runs.
    `allow`: the internal hosts the URL may name (COMPASS_WEBHOOK_ALLOW_HOSTS)."""
    chosen = [e.strip() for e in events.split(",") if e.strip()] if events else []
    row, secret = await _webhooks(store).add(workspace, url, chosen, allow=allow or AllowList())
    return {**row.to_json(), "secret": secret}


async def list_webhooks(store: Store, *, workspace: str) -> dict[str, object]:
    rows = await _webhooks(store).list(workspace)
    return {"workspace_id": workspace, "webhooks": [r.to_json() for r in rows]}


async def remove_webhook(store: Store, *, id: str) -> dict[str, object]:
    await _webhooks(store).remove(id)
    return {"webhook_id": id, "removed": True}


async def webhook_deliveries(store: Store, *, id: str, limit: str | None) -> dict[str, object]:
    count = 20
    if limit is not None:
        if not limit.isdigit() or not 1 <= int(limit) <= MAX_DELIVERIES:
            raise InvalidArgumentError(f"--limit must be a whole number from 1 to {MAX_DELIVERIES}")
        count = int(limit)
    logs = await _webhooks(store).deliveries(id, count)
    return {"webhook_id": id, "deliveries": [d.to_json() for d in logs]}
