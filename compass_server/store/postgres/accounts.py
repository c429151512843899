"""Workspaces, channels, accounts, tokens, sign-in links and participation."""

from __future__ import annotations

import hmac
import secrets
from typing import TYPE_CHECKING

from compass_server import domain
from compass_server.domain.errors import (
    FailedPreconditionError,
    NotFoundError,
)
from compass_server.domain.limits import MAX_TOKEN_LENGTH
from compass_server.store import (
    ACCOUNTS_CHANNEL,
    AccountKind,
    AccountRow,
    ChannelRow,
    WorkspaceRow,
)
from compass_server.store.postgres.base import (
    MAX_SIGN_IN_CODE,
    SIGN_IN_CODE_PREFIX,
    TOKEN_PREFIX,
    PostgresBase,
    token_hash,
)
from compass_server.store.postgres.rows import account_row, channel_row, row_count, visible_channel
from compass_server.store.postgres.sql import (
    ANY_ACCOUNT,
    DELETE_PUSH_SUBSCRIPTIONS,
    DELETE_SESSIONS,
    DISABLE_ACCOUNT,
    INSERT_ACCOUNT,
    INSERT_CHANNEL,
    INSERT_MEMBER,
    INSERT_MEMBER_OF_CHANNEL,
    INSERT_PARTICIPANT,
    INSERT_SESSION_TOKEN,
    INSERT_SIGN_IN_LINK,
    INSERT_TOKEN,
    INSERT_WORKSPACE,
    NOTIFY,
    SELECT_ACCOUNT,
    SELECT_ACCOUNT_BY_TOKEN,
    SELECT_ACCOUNTS,
    SELECT_CHANNELS_WITH_PARTICIPANTS,
    SELECT_MEMBER_WORKSPACES,
    SELECT_PARTICIPATING_CHANNELS,
    SELECT_VALID_TOKEN_HASHES,
    USE_SIGN_IN_LINK,
    VOID_ANSWER_TOKENS,
    VOID_REPLY_TOKENS,
    VOID_SIGN_IN_LINKS,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime, timedelta
    from typing import TypeAlias

    import asyncpg
    from asyncpg.pool import PoolConnectionProxy

    _Conn: TypeAlias = PoolConnectionProxy[asyncpg.Record]


class AccountsMixin(PostgresBase):
    """The account side of PostgresStore."""

    # -- accounts, workspaces, channels -------------------------------------------------------

    async def create_workspace(self, name: str) -> WorkspaceRow:
        domain.check_name(name)
        async with self._connection() as conn:
            row = await self._insert_minted(conn, "ws", INSERT_WORKSPACE, name)
        return WorkspaceRow(
            workspace_id=row["workspace_id"], name=row["name"], created_at=row["created_at"]
        )

    async def create_channel(self, workspace_id: str, name: str) -> ChannelRow:
        domain.check_name(name)
        async with self._connection() as conn:
            row = await self._insert_minted(conn, "ch", INSERT_CHANNEL, workspace_id, name)
        return channel_row(row)

    async def create_account(self, kind: AccountKind, name: str) -> tuple[AccountRow, str]:
        domain.check_name(name)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        async with self._write() as conn:
            row = await self._insert_minted(conn, "acct", INSERT_ACCOUNT, kind.value, name)
            await conn.execute(INSERT_TOKEN, token_hash(token), row["account_id"])
        return account_row(row), token

    async def get_account(self, account_id: str) -> AccountRow:
        async with self._connection() as conn:
            row = await conn.fetchrow(SELECT_ACCOUNT, account_id)
        if row is None:
            raise NotFoundError("account not found")
        return account_row(row)

    async def valid_tokens(self, tokens: Sequence[str]) -> set[str]:
        by_hash = {token_hash(token): token for token in tokens}
        async with self._connection() as conn:
            rows = await conn.fetch(SELECT_VALID_TOKEN_HASHES, list(by_hash))
        return {by_hash[bytes(row["token_hash"])] for row in rows}

    async def create_sign_in_link(self, account_id: str, ttl: timedelta) -> tuple[str, datetime]:
        account = await self.get_account(account_id)
        if account.disabled or account.kind is not AccountKind.HUMAN:
            raise FailedPreconditionError("sign-in links are for enabled accounts of people")
        code = SIGN_IN_CODE_PREFIX + secrets.token_urlsafe(32)
        async with self._connection() as conn:
            expires_at = await conn.fetchval(INSERT_SIGN_IN_LINK, token_hash(code), account_id, ttl)
        return code, expires_at

    async def exchange_sign_in_link(self, code: str) -> tuple[AccountRow, str] | None:
        if not code.startswith(SIGN_IN_CODE_PREFIX) or len(code) > MAX_SIGN_IN_CODE:
            return None
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        async with self._write() as conn:
            row = await conn.fetchrow(USE_SIGN_IN_LINK, token_hash(code))
            if row is None:
                return None
            account = account_row(row)
            if account.disabled or account.kind is not AccountKind.HUMAN:
                return None  # the code stays used: it was spent on an account that may not sign in
            await conn.execute(INSERT_SESSION_TOKEN, token_hash(token), account.account_id)
        return account, token

    async def revoke_sessions(self, account_id: str) -> tuple[int, int]:
        async with self._write() as conn:
            if await conn.fetchrow(SELECT_ACCOUNT, account_id) is None:
                raise NotFoundError("account not found")
            sessions = await conn.execute(DELETE_SESSIONS, account_id)
            links = await conn.execute(VOID_SIGN_IN_LINKS, account_id)
            await conn.execute(DELETE_PUSH_SUBSCRIPTIONS, account_id)
            await conn.execute(VOID_ANSWER_TOKENS, account_id)
            await conn.execute(VOID_REPLY_TOKENS, account_id)
            # At commit: every process's token cache forgets this account's tokens.
            await conn.execute(NOTIFY, ACCOUNTS_CHANNEL, account_id)
        return row_count(sessions), row_count(links)

    async def disable_account(self, account_id: str) -> AccountRow:
        async with self._write() as conn:
            row = await conn.fetchrow(DISABLE_ACCOUNT, account_id)
            if row is None:
                raise NotFoundError("account not found")
            # At commit: every process's token cache forgets this account's tokens.
            await conn.execute(NOTIFY, ACCOUNTS_CHANNEL, account_id)
        return account_row(row)

    async def add_workspace_member(self, workspace_id: str, account_id: str) -> None:
        async with self._connection() as conn:
            await conn.execute(INSERT_MEMBER, workspace_id, account_id)

    async def add_participant(self, channel_id: str, account_id: str) -> None:
        async with self._write() as conn:
            await conn.execute(INSERT_MEMBER_OF_CHANNEL, channel_id, account_id)
            await conn.execute(INSERT_PARTICIPANT, channel_id, account_id)

    async def has_accounts(self) -> bool:
        async with self._connection() as conn:
            return bool(await conn.fetchval(ANY_ACCOUNT))

    async def list_accounts(self) -> Sequence[AccountRow]:
        async with self._connection() as conn:
            rows = await conn.fetch(SELECT_ACCOUNTS)
        return [account_row(row) for row in rows]

    async def list_all_channels(self) -> Sequence[tuple[ChannelRow, Sequence[str]]]:
        async with self._connection() as conn:
            rows = await conn.fetch(SELECT_CHANNELS_WITH_PARTICIPANTS)
        return [(channel_row(row), list(row["participants"])) for row in rows]

    async def authenticate(self, token: str) -> AccountRow | None:
        if not token.startswith(TOKEN_PREFIX) or len(token) > MAX_TOKEN_LENGTH:
            return None
        digest = token_hash(token)
        async with self._connection() as conn:
            row = await conn.fetchrow(SELECT_ACCOUNT_BY_TOKEN, digest)
        # The lookup is by hash, so timing reveals nothing about the token; the explicit
        # constant-time comparison keeps it that way should the lookup ever change.
        if row is None or not hmac.compare_digest(bytes(row["token_hash"]), digest):
            return None
        account = account_row(row)
        return None if account.disabled else account

    # -- reads -------------------------------------------------------------------------------

    async def list_channels(self, actor: AccountRow) -> Sequence[ChannelRow]:
        async with self._connection() as conn:
            rows = await conn.fetch(SELECT_PARTICIPATING_CHANNELS, actor.account_id)
        return [channel_row(row) for row in rows]

    async def list_workspaces(self, actor: AccountRow) -> Sequence[WorkspaceRow]:
        async with self._connection() as conn:
            rows = await conn.fetch(SELECT_MEMBER_WORKSPACES, actor.account_id)
        return [
            WorkspaceRow(workspace_id=r["workspace_id"], name=r["name"], created_at=r["created_at"])
            for r in rows
        ]

    async def get_channel(self, actor: AccountRow, channel_id: str) -> ChannelRow:
        async with self._connection() as conn:
            return await visible_channel(conn, actor, channel_id)
