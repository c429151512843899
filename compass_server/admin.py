"""`compass admin ...`: create workspaces, channels and accounts; manage participation.

Each action takes an open Store and returns a JSON-ready dict. A new account's token is in
the result of `create_account` only: it is stored as a hash and cannot be shown again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from compass_server.store import AccountKind

if TYPE_CHECKING:
    from compass_server.store import Store


@dataclass(frozen=True, slots=True)
class Arg:
    """One required command-line option of an admin command."""

    flag: str
    help: str
    choices: tuple[str, ...] | None = None


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
        ),
    ),
    "add-participant": (
        "make an account a participant of a channel (and a member of its workspace)",
        (Arg("--channel", "channel id"), Arg("--account", "account id")),
    ),
    "disable-account": (
        "disable an account: its token stops working",
        (Arg("--account", "account id"),),
    ),
}

#: action function name -> the argparse destinations it takes.
PARAMETERS: Final[dict[str, frozenset[str]]] = {
    "create_workspace": frozenset({"name"}),
    "create_channel": frozenset({"workspace", "name"}),
    "create_account": frozenset({"kind", "name"}),
    "add_participant": frozenset({"channel", "account"}),
    "disable_account": frozenset({"account"}),
}


async def create_workspace(store: Store, *, name: str) -> dict[str, object]:
    row = await store.create_workspace(name)
    return {"workspace_id": row.workspace_id, "name": row.name}


async def create_channel(store: Store, *, workspace: str, name: str) -> dict[str, object]:
    row = await store.create_channel(workspace, name)
    return {"channel_id": row.channel_id, "workspace_id": row.workspace_id, "name": row.name}


async def create_account(store: Store, *, kind: str, name: str) -> dict[str, object]:
    account, token = await store.create_account(AccountKind(kind), name)
    return {
        "account_id": account.account_id,
        "kind": account.kind.value,
        "name": account.name,
        "token": token,
    }


async def add_participant(store: Store, *, channel: str, account: str) -> dict[str, object]:
    await store.add_participant(channel, account)
    return {"channel_id": channel, "account_id": account}


async def disable_account(store: Store, *, account: str) -> dict[str, object]:
    row = await store.disable_account(account)
    return {"account_id": row.account_id, "disabled": row.disabled}
