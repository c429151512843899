"""Accounts, tokens, workspaces, channels, membership and what each account can see."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import asyncpg
import pytest

from compass_server.domain.errors import AlreadyExistsError, InvalidArgumentError, NotFoundError
from compass_server.store import AccountKind

if TYPE_CHECKING:
    from compass_server.store.postgres import PostgresStore
    from tests.integration.store._seed import World


async def test_tokens_authenticate_and_only_their_hash_is_stored(
    store: PostgresStore, database_url: str
) -> None:
    account, token = await store.create_account(AccountKind.AGENT, "Agent Smith")
    assert account.account_id.startswith("acct_")
    assert (account.kind, account.name, account.disabled) == (
        AccountKind.AGENT,
        "Agent Smith",
        False,
    )
    assert token.startswith("cmp_")
    assert len(token) >= 40
    assert await store.authenticate(token) == account
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch("SELECT token_hash, account_id FROM api_tokens")
        dump = await conn.fetchval("SELECT string_agg(t::text, ' ') FROM api_tokens t")
    finally:
        await conn.close()
    assert [(bytes(r["token_hash"]), r["account_id"]) for r in rows] == [
        (hashlib.sha256(token.encode()).digest(), account.account_id)
    ]
    assert token not in dump
    assert token[4:] not in dump


async def test_every_account_gets_its_own_token(store: PostgresStore) -> None:
    made = [await store.create_account(AccountKind.HUMAN, f"h{i}") for i in range(5)]
    assert len({token for _, token in made}) == 5
    for account, token in made:
        assert await store.authenticate(token) == account


@pytest.mark.parametrize(
    "token", ["", "cmp_", "cmp_unknown", "Bearer cmp_x", "nope", "cmp_" + "x" * 500]
)
async def test_unknown_tokens_do_not_authenticate(store: PostgresStore, token: str) -> None:
    await store.create_account(AccountKind.HUMAN, "someone")
    assert await store.authenticate(token) is None


async def test_a_disabled_account_no_longer_authenticates(store: PostgresStore) -> None:
    account, token = await store.create_account(AccountKind.HUMAN, "Leaver")
    disabled = await store.disable_account(account.account_id)
    assert disabled.disabled
    assert await store.authenticate(token) is None
    assert (await store.get_account(account.account_id)).disabled
    assert (await store.disable_account(account.account_id)).disabled  # idempotent


async def test_unknown_accounts_are_not_found(store: PostgresStore) -> None:
    with pytest.raises(NotFoundError, match="account not found"):
        await store.get_account("acct_nope")
    with pytest.raises(NotFoundError, match="account not found"):
        await store.disable_account("acct_nope")


async def test_names_are_checked(store: PostgresStore) -> None:
    for bad in ("", "x" * 201, "nul\x00"):
        with pytest.raises(InvalidArgumentError):
            await store.create_workspace(bad)
        with pytest.raises(InvalidArgumentError):
            await store.create_account(AccountKind.HUMAN, bad)


async def test_workspace_and_channel_names_are_unique_where_they_must_be(
    store: PostgresStore,
) -> None:
    workspace = await store.create_workspace("acme")
    assert workspace.workspace_id.startswith("ws_")
    with pytest.raises(AlreadyExistsError, match="workspace with this name"):
        await store.create_workspace("acme")
    channel = await store.create_channel(workspace.workspace_id, "general")
    assert channel.channel_id.startswith("ch_")
    assert channel.revision == 0
    with pytest.raises(AlreadyExistsError, match="channel with this name"):
        await store.create_channel(workspace.workspace_id, "general")
    other = await store.create_workspace("globex")
    await store.create_channel(other.workspace_id, "general")  # per workspace


async def test_references_to_missing_things_are_not_found(
    store: PostgresStore, world: World
) -> None:
    with pytest.raises(NotFoundError, match="workspace not found"):
        await store.create_channel("ws_nope", "x")
    with pytest.raises(NotFoundError, match="channel not found"):
        await store.add_participant("ch_nope", world.human.account_id)
    with pytest.raises(NotFoundError, match="account not found"):
        await store.add_participant(world.channel.channel_id, "acct_nope")
    with pytest.raises(NotFoundError, match="workspace not found"):
        await store.add_workspace_member("ws_nope", world.human.account_id)
    with pytest.raises(NotFoundError, match="account not found"):
        await store.add_workspace_member(world.workspace.workspace_id, "acct_nope")


async def test_list_channels_shows_only_participation(store: PostgresStore, world: World) -> None:
    assert [c.channel_id for c in await store.list_channels(world.human)] == [
        world.channel.channel_id
    ]
    assert await store.list_channels(world.member) == []
    assert [c.channel_id for c in await store.list_channels(world.outsider)] == [
        world.other_channel.channel_id
    ]
    second = await store.create_channel(world.workspace.workspace_id, "random")
    await store.add_participant(second.channel_id, world.human.account_id)
    await store.add_participant(second.channel_id, world.human.account_id)  # idempotent
    assert [c.name for c in await store.list_channels(world.human)] == ["general", "random"]


async def test_channels_are_visible_to_workspace_members_only(
    store: PostgresStore, world: World
) -> None:
    channel_id = world.channel.channel_id
    for account in (world.human, world.agent, world.member):
        assert (await store.get_channel(account, channel_id)).name == "general"
    with pytest.raises(NotFoundError, match=r"^channel not found$"):
        await store.get_channel(world.outsider, channel_id)
    with pytest.raises(NotFoundError, match=r"^channel not found$"):
        await store.list_messages(world.outsider, channel_id)
    with pytest.raises(NotFoundError, match=r"^channel not found$"):
        await store.messages_after(world.outsider, channel_id, 0)
    with pytest.raises(NotFoundError, match=r"^channel not found$"):
        await store.get_channel(world.human, "ch_nope")


async def test_add_participant_makes_the_account_a_workspace_member(
    store: PostgresStore, world: World
) -> None:
    newcomer, _ = await store.create_account(AccountKind.HUMAN, "Newcomer")
    with pytest.raises(NotFoundError):
        await store.get_channel(newcomer, world.channel.channel_id)
    await store.add_participant(world.channel.channel_id, newcomer.account_id)
    assert (
        await store.get_channel(newcomer, world.channel.channel_id)
    ).channel_id == world.channel.channel_id
    message = await store.append_message(newcomer, world.channel.channel_id, [])
    assert message.blocks == ()


async def test_ping(store: PostgresStore) -> None:
    await store.ping()


async def test_has_accounts(store: PostgresStore) -> None:
    assert not await store.has_accounts()
    await store.create_account(AccountKind.HUMAN, "First")
    assert await store.has_accounts()


async def test_text_the_database_cannot_store_is_invalid_argument_on_reads_too(
    store: PostgresStore, world: World
) -> None:
    # Protobuf strings may hold NUL; PostgreSQL text may not. The translation keeps it a
    # client error instead of an unmapped exception.
    with pytest.raises(InvalidArgumentError):
        await store.get_channel(world.human, "ch_\x00")
    with pytest.raises(InvalidArgumentError):
        await store.get_ask(world.human, "ask_\x00")
