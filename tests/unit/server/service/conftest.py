"""Handler tests on the in-memory store double: no database, no HTTP.

`service` is the two Connect services' handlers over the application API (`Asks`) over a
`MemoryStore` with a seeded world (the same `World` as the PostgreSQL store tests); its helpers
call a handler as one of the world's accounts. The API itself is tested in test_asks.py. The RPCs over real HTTP and PostgreSQL are tested in tests/e2e.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from compass_server.live.hub import ChangeHub
from compass_server.service.asks import Asks
from compass_server.service.handlers import AgentHandlers, CommsHandlers
from compass_server.store import AccountRow
from compass_server.transport.auth import AuthContext
from gen.compass.v1 import agent_pb2, comms_pb2
from tests.integration.store._seed import World, seed
from tests.memory_push import push_use_cases
from tests.memory_store import MemoryStore

if TYPE_CHECKING:
    from collections.abc import Sequence

# The handlers never read their RequestContext (the gate did the header work).
CTX: Any = None


@dataclass(slots=True)
class Service:
    store: MemoryStore
    world: World
    hub: ChangeHub = field(default_factory=ChangeHub)
    auth: AuthContext[AccountRow] = field(default_factory=AuthContext[AccountRow])
    asks: Asks = field(init=False)
    comms: CommsHandlers = field(init=False)
    agent: AgentHandlers = field(init=False)

    def __post_init__(self) -> None:
        self.store.on_change = self.hub.publish
        self.asks = Asks(self.store, self.hub)
        self.comms = CommsHandlers(self.asks, self.auth, push=push_use_cases(self.store, self.asks))
        self.agent = AgentHandlers(self.asks, self.auth)

    async def post(
        self,
        *blocks: comms_pb2.MessageBlock,
        client_message_id: str = "",
        channel_id: str = "",
        message_id: str = "",
    ) -> comms_pb2.Message:
        """AppendMessage as the world's agent (to its channel unless told otherwise)."""
        request = agent_pb2.AppendMessageRequest(
            channel_id=channel_id or self.world.channel.channel_id,
            frame=comms_pb2.MessageUpdated(
                message_id=message_id, client_message_id=client_message_id, blocks=blocks
            ),
        )
        with self.auth.bound(self.world.agent):
            return (await self.agent.append_message(request, CTX)).message

    async def update(
        self, message_id: str, blocks: Sequence[comms_pb2.MessageBlock]
    ) -> comms_pb2.Message:
        request = agent_pb2.UpdateMessageRequest(
            frame=comms_pb2.MessageUpdated(message_id=message_id, blocks=blocks)
        )
        with self.auth.bound(self.world.agent):
            return (await self.agent.update_message(request, CTX)).message

    async def respond(
        self, actor: AccountRow, ask_id: str, answers: Sequence[comms_pb2.AskQuestionAnswer]
    ) -> None:
        request = comms_pb2.RespondToAskRequest(ask_id=ask_id, answers=answers)
        with self.auth.bound(actor):
            await self.comms.respond_to_ask(request, CTX)

    async def decline(self, actor: AccountRow, ask_id: str, reason: str = "") -> None:
        request = comms_pb2.DeclineAskRequest(ask_id=ask_id, reason=reason)
        with self.auth.bound(actor):
            await self.comms.decline_ask(request, CTX)

    async def close(
        self,
        ask_id: str,
        status: comms_pb2.AskStatus,
        reason: str = "",
        answers: Sequence[comms_pb2.AskQuestionAnswer] = (),
    ) -> comms_pb2.Ask:
        request = agent_pb2.CloseAskRequest(
            ask_id=ask_id, status=status, reason=reason, answers=answers
        )
        with self.auth.bound(self.world.agent):
            return (await self.agent.close_ask(request, CTX)).ask

    async def get_ask(self, actor: AccountRow, ask_id: str) -> comms_pb2.Ask:
        with self.auth.bound(actor):
            return (await self.comms.get_ask(comms_pb2.GetAskRequest(ask_id=ask_id), CTX)).ask

    async def messages(self, actor: AccountRow | None = None) -> list[comms_pb2.Message]:
        request = comms_pb2.ListMessagesRequest(channel_id=self.world.channel.channel_id)
        with self.auth.bound(actor or self.world.human):
            return list((await self.comms.list_messages(request, CTX)).messages)


@pytest.fixture
async def service() -> Service:
    store = MemoryStore()
    world = await seed(store)
    return Service(store=store, world=world)
