"""Messages and asks: reads, pages, replays, AppendMessage and UpdateMessage."""

from __future__ import annotations

from typing import TYPE_CHECKING

from compass_server import domain
from compass_server.domain.errors import (
    AlreadyExistsError,
    NotFoundError,
    PermissionDeniedError,
)
from compass_server.store import (
    MAX_REPLAY_LIMIT,
    AccountKind,
    AccountRow,
    AskRow,
    MessagePage,
    MessageRow,
    PendingAskPage,
    PendingAskRow,
    ReplayBatch,
    clamped_page_size,
)
from compass_server.store.blocks import (
    decode_blocks,
    encode_blocks,
    same_content,
)
from compass_server.store.postgres.base import MINT_ATTEMPTS, UNIQUE_MESSAGES, PostgresBase
from compass_server.store.postgres.rows import (
    EPOCH,
    ask_row,
    copy_ask_state,
    copy_block,
    deadline_value,
    decode_inbox_token,
    decode_page_token,
    encode_inbox_token,
    encode_page_token,
    fitting,
    message_rows,
    notify,
    set_new_ask_state,
    visible_channel,
)
from compass_server.store.postgres.sql import (
    BUMP_REVISION,
    INSERT_ASKS,
    INSERT_MESSAGE,
    LOCK_CHANNEL,
    LOCK_CHANNEL_FOR_ACTOR,
    REPLACE_MESSAGE,
    SELECT_ASK,
    SELECT_MESSAGE,
    SELECT_MESSAGE_BY_CLIENT_ID,
    SELECT_MESSAGE_FOR_ACTOR,
    SELECT_MESSAGE_PAGE,
    SELECT_MESSAGES_AFTER,
    SELECT_NOTIFIED_ASK,
    SELECT_PAGE_SIZES,
    SELECT_PENDING_ASKS,
    SELECT_REPLAY_SIZES,
    UPDATE_MESSAGE_BLOCKS,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import TypeAlias

    import asyncpg
    from asyncpg.pool import PoolConnectionProxy

    from compass_server.domain.verdicts import UpdateRule
    from gen.compass.v1 import comms_pb2

    _Conn: TypeAlias = PoolConnectionProxy[asyncpg.Record]


async def idempotent_repeat(
    conn: _Conn,
    existing: asyncpg.Record,
    actor: AccountRow,
    blocks: Sequence[comms_pb2.MessageBlock],
) -> MessageRow:
    (stored,) = await message_rows(conn, [existing])
    same = stored.author_account_id == actor.account_id and same_content(blocks, stored.blocks)
    if not same:
        raise AlreadyExistsError(UNIQUE_MESSAGES["messages_client_message_id_key"])
    return stored


async def lock_channel_to_post(conn: _Conn, actor: AccountRow, channel_id: str) -> None:
    """Lock a channel for a new message by `actor` (in a transaction), who must take part.

    Raises:
        NotFoundError: no such channel, or not visible to `actor`.
        PermissionDeniedError: `actor` sees the channel but is not a participant.
    """
    lock = await conn.fetchrow(LOCK_CHANNEL_FOR_ACTOR, channel_id, actor.account_id)
    if lock is None or not lock["member"]:
        raise NotFoundError("channel not found")
    if not lock["participant"]:
        raise PermissionDeniedError("only participants of the channel may post in it")


class MessagesMixin(PostgresBase):
    """The message side of PostgresStore."""

    async def list_pending_asks(
        self, actor: AccountRow, *, page_size: int = 0, page_token: str = ""
    ) -> PendingAskPage:
        size = clamped_page_size(page_size)
        after = decode_inbox_token(page_token) if page_token else (EPOCH, "")
        async with self._connection() as conn:
            rows = await conn.fetch(SELECT_PENDING_ASKS, actor.account_id, *after, size + 1)
        asks = tuple(
            PendingAskRow(
                ask=ask_row(row),
                channel_name=row["channel_name"],
                author_account_id=row["author_account_id"],
                author_name=row["author_name"],
                asked_at=row["asked_at"],
            )
            for row in rows[:size]
        )
        next_token = (
            encode_inbox_token(asks[-1].asked_at, asks[-1].ask.ask.ask_id)
            if len(rows) > size
            else ""
        )
        return PendingAskPage(asks=asks, next_page_token=next_token)

    async def notified_ask(self, ask_id: str) -> tuple[PendingAskRow, str, AccountKind] | None:
        """An ask as webhooks tell of it, whoever may see it: (the ask with its channel and
        author, the workspace id, the author's kind); None when there is no such ask."""
        async with self._connection() as conn:
            row = await conn.fetchrow(SELECT_NOTIFIED_ASK, ask_id)
        if row is None:
            return None
        pending = PendingAskRow(
            ask=ask_row(row),
            channel_name=row["channel_name"],
            author_account_id=row["author_account_id"],
            author_name=row["author_name"],
            asked_at=row["asked_at"],
        )
        return pending, str(row["workspace_id"]), AccountKind(row["author_kind"])

    async def list_messages(
        self, actor: AccountRow, channel_id: str, *, page_size: int = 0, page_token: str = ""
    ) -> MessagePage:
        size = clamped_page_size(page_size)
        after = decode_page_token(page_token, channel_id) if page_token else 0
        async with self._snapshot() as conn:
            await visible_channel(conn, actor, channel_id)
            sizes = await conn.fetch(SELECT_PAGE_SIZES, channel_id, after, size + 1)
            last = fitting(sizes, size, self._page_bytes)
            if last is None:
                return MessagePage(messages=(), next_page_token="")
            rows = await conn.fetch(SELECT_MESSAGE_PAGE, channel_id, after, last)
            messages = await message_rows(conn, rows)
        more = len(sizes) > len(messages)
        next_token = encode_page_token(channel_id, last) if more else ""
        return MessagePage(messages=tuple(messages), next_page_token=next_token)

    async def messages_after(
        self, actor: AccountRow, channel_id: str, after_revision: int, *, limit: int = 100
    ) -> ReplayBatch:
        if after_revision < 0 or not 1 <= limit <= MAX_REPLAY_LIMIT:
            raise ValueError(f"messages_after({after_revision}, limit={limit}): out of range")
        async with self._snapshot() as conn:
            await visible_channel(conn, actor, channel_id)
            sizes = await conn.fetch(SELECT_REPLAY_SIZES, channel_id, after_revision, limit + 1)
            last = fitting(sizes, limit, self._replay_bytes)
            if last is None:
                return ReplayBatch()
            rows = await conn.fetch(SELECT_MESSAGES_AFTER, channel_id, after_revision, last)
            batch = ReplayBatch(await message_rows(conn, rows))
        batch.more = len(sizes) > len(batch)
        return batch

    async def get_ask(self, actor: AccountRow, ask_id: str) -> AskRow:
        async with self._connection() as conn:
            row = await conn.fetchrow(SELECT_ASK, ask_id, actor.account_id)
        # An agent sees only the asks of channels it takes part in (its WatchAsk): being in
        # the workspace is not enough to follow another agent's questions and answers.
        if row is None or (actor.kind is AccountKind.AGENT and not row["participant"]):
            raise NotFoundError("ask not found")
        return ask_row(row)

    # -- writes ------------------------------------------------------------------------------

    async def append_message(
        self,
        actor: AccountRow,
        channel_id: str,
        blocks: Sequence[comms_pb2.MessageBlock],
        *,
        client_message_id: str = "",
    ) -> MessageRow:
        async with self._write() as conn:
            await lock_channel_to_post(conn, actor, channel_id)
            if client_message_id:
                existing = await conn.fetchrow(
                    SELECT_MESSAGE_BY_CLIENT_ID, channel_id, client_message_id
                )
                if existing is not None:
                    return await idempotent_repeat(conn, existing, actor, blocks)
            return await self._append_locked(conn, actor, channel_id, blocks, client_message_id)

    async def _append_locked(
        self,
        conn: _Conn,
        actor: AccountRow,
        channel_id: str,
        blocks: Sequence[comms_pb2.MessageBlock],
        client_message_id: str,
    ) -> MessageRow:
        """Store a new message in a transaction that holds the channel's lock (its author a
        participant), minting its ask ids."""
        minted = [copy_block(block) for block in blocks]
        asks = [block.ask for block in minted if block.HasField("ask")]
        for ask in asks:
            ask.ask_id = self._new_id("ask")
        revision = int(await conn.fetchval(BUMP_REVISION, channel_id))
        row = await self._insert_minted(
            conn,
            "msg",
            INSERT_MESSAGE,
            channel_id,
            actor.account_id,
            client_message_id or None,
            encode_blocks(minted),
            revision,
        )
        message_id = str(row["message_id"])
        if asks:
            await self._insert_asks(conn, message_id, channel_id, minted, asks)
        ask_ids = tuple(ask.ask_id for ask in asks)
        await notify(conn, channel_id, revision, message_id, ask_ids)
        # Decoded from what was stored, so the caller sees exactly what a read returns.
        stored_blocks = decode_blocks(encode_blocks(minted), message_id=message_id)
        sent = {ask.ask_id: ask for ask in asks}
        for block in stored_blocks:
            if block.HasField("ask"):
                set_new_ask_state(block.ask, sent[block.ask.ask_id])
        return MessageRow(
            message_id=message_id,
            channel_id=channel_id,
            author_account_id=actor.account_id,
            author_name=actor.name,
            author_kind=actor.kind,
            client_message_id=client_message_id,
            blocks=tuple(stored_blocks),
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            revision=revision,
        )

    async def _insert_asks(
        self,
        conn: _Conn,
        message_id: str,
        channel_id: str,
        blocks: list[comms_pb2.MessageBlock],
        asks: list[comms_pb2.Ask],
    ) -> None:
        # `asks` are the ask messages inside `blocks`, already carrying fresh ids.
        pending = list(asks)
        for _ in range(MINT_ATTEMPTS):
            inserted = {
                str(row["ask_id"])
                for row in await conn.fetch(
                    INSERT_ASKS,
                    [ask.ask_id for ask in pending],
                    message_id,
                    channel_id,
                    [deadline_value(ask) for ask in pending],
                    [domain.TIMEOUT_POLICY_NAMES[ask.on_timeout] for ask in pending],
                )
            }
            pending = [ask for ask in pending if ask.ask_id not in inserted]
            if not pending:
                return
            # Astronomically unlikely: an id collided with an existing ask. Mint again and
            # rewrite the stored blocks to carry the new ids.
            for ask in pending:
                ask.ask_id = self._new_id("ask")
            await conn.execute(UPDATE_MESSAGE_BLOCKS, message_id, encode_blocks(blocks))
        raise RuntimeError(f"could not mint unique ask ids in {MINT_ATTEMPTS} attempts")

    async def update_message(
        self,
        actor: AccountRow,
        message_id: str,
        blocks: Sequence[comms_pb2.MessageBlock],
        fit: UpdateRule,
    ) -> MessageRow:
        async with self._write() as conn:
            found = await conn.fetchrow(SELECT_MESSAGE_FOR_ACTOR, message_id, actor.account_id)
            if found is None:
                raise NotFoundError("message not found")
            if found["author_account_id"] != actor.account_id:
                raise PermissionDeniedError("only the author of a message may update it")
            channel_id = str(found["channel_id"])
            await conn.fetchval(LOCK_CHANNEL, channel_id)
            # Re-read under the channel lock: a concurrent update may have added asks since
            # the lookup above, and the frame must then carry their ids or repeat them as
            # they were sent (or be refused).
            stored_row = await conn.fetchrow(SELECT_MESSAGE, message_id)
            if stored_row is None:  # pragma: no cover - messages are never deleted
                raise NotFoundError("message not found")
            (stored,) = await message_rows(conn, [stored_row])
            stored_asks = [block.ask for block in stored.blocks if block.HasField("ask")]
            # The rule the service handed in: raises if the blocks do not fit the stored asks;
            # else copies to store, an unminted retry of a stored ask carrying its id.
            replaced = fit(stored_asks, blocks)
            added = [block.ask for block in replaced if block.HasField("ask")][len(stored_asks) :]
            if not added and encode_blocks(replaced) == encode_blocks(stored.blocks):
                return stored  # nothing changed: no new revision, no notification
            for ask in added:
                ask.ask_id = self._new_id("ask")
            revision = int(await conn.fetchval(BUMP_REVISION, channel_id))
            row = await conn.fetchrow(
                REPLACE_MESSAGE, message_id, encode_blocks(replaced), revision
            )
            if row is None:  # pragma: no cover - the row is locked through its channel
                raise NotFoundError("message not found")
            if added:
                # Re-mints (and rewrites the stored blocks) on the rare id collision.
                await self._insert_asks(conn, message_id, channel_id, replaced, added)
            updated = MessageRow(
                message_id=message_id,
                channel_id=channel_id,
                author_account_id=stored.author_account_id,
                author_name=stored.author_name,
                author_kind=stored.author_kind,
                client_message_id=stored.client_message_id,
                # Decoded from what was stored, so the caller sees exactly what a read returns.
                blocks=tuple(decode_blocks(encode_blocks(replaced), message_id=message_id)),
                created_at=row["created_at"],
                updated_at=row["updated_at"],
                revision=revision,
            )
            copy_ask_state(stored, updated, added)
            await notify(conn, channel_id, revision, message_id, updated.ask_ids)
        return updated
