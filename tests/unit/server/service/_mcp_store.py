"""`McpMemoryStore`: the in-memory store double with `McpStore`'s calls, as far as the
application API's own part of them needs (the store's part is held to PostgreSQL by
tests/integration/store/test_mcp_store.py and the /mcp tests)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.memory_store import MemoryStore

if TYPE_CHECKING:
    from collections.abc import Sequence

    from compass_server.store import AccountRow, AskRow
    from gen.compass.v1 import comms_pb2


class McpMemoryStore(MemoryStore):
    """The double with `McpStore`'s calls as far as the API's own part needs them: an ask
    per call key (a new message of the blocks otherwise), the holds and releases it is told,
    and the asks a leave sweep would withdraw."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: dict[tuple[str, str], AskRow] = {}
        self.waits: list[tuple[str, str, str, float | None]] = []
        self.abandoned: list[str] = []

    async def open_mcp_ask(
        self,
        actor: AccountRow,
        channel_id: str,
        blocks: Sequence[comms_pb2.MessageBlock],
        *,
        call_key: str,
        waiter_id: str,
        seconds: float,
    ) -> tuple[AskRow, bool]:
        self.calls.append("open_mcp_ask")
        known = self.keys.get((channel_id, call_key))
        if known is not None:
            self.waits.append(("hold", known.ask.ask_id, waiter_id, seconds))
            return await self.get_ask(actor, known.ask.ask_id), False
        message = await self.append_message(actor, channel_id, blocks)
        row = await self.get_ask(actor, message.ask_ids[0])
        self.keys[channel_id, call_key] = row
        self.waits.append(("hold", row.ask.ask_id, waiter_id, seconds))
        return row, True

    async def hold_mcp_wait(
        self, actor: AccountRow, ask_id: str, waiter_id: str, seconds: float
    ) -> None:
        self.waits.append(("hold", ask_id, waiter_id, seconds))

    async def release_mcp_wait(
        self, actor: AccountRow, ask_id: str, waiter_id: str, *, grace: float | None
    ) -> None:
        self.waits.append(("release", ask_id, waiter_id, grace))

    async def withdraw_abandoned(self, reason: str, *, limit: int = 100) -> Sequence[str]:
        withdrawn, self.abandoned = self.abandoned, []
        return withdrawn
