"""`/mcp`'s backend (compass_server.mcp.backend.ServerBackend) on the application API over the
in-memory store double: the tool calls reach the same use cases as AgentService, as the
token's account, with no Connect request in between; domain errors become the tool errors
the model reads."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

import pytest

from compass_mcp import tools
from compass_mcp.calls import AskTools, CallContext, Interrupted, ToolError
from compass_server.domain.errors import ResourceExhaustedError
from compass_server.live.hub import ChangeHub
from compass_server.live.revocation import Revocations
from compass_server.mcp.backend import ServerBackend
from compass_server.service.asks import McpAsks
from compass_server.service.handlers import AgentHandlers
from compass_server.service.streams import REVOKED
from compass_server.transport.auth import AuthContext
from gen.compass.v1 import agent_pb2, comms_pb2
from tests.integration.store._seed import World, answer, ask, question, seed, text
from tests.unit.server.service._mcp_store import McpMemoryStore

if TYPE_CHECKING:
    from collections.abc import Sequence

    from compass_server.store import AccountRow

S = comms_pb2
GRACE = 5.0


async def _world(max_streams: int = 64) -> tuple[McpMemoryStore, World, McpAsks]:
    store = McpMemoryStore()
    hub = ChangeHub()
    store.on_change = hub.publish
    world = await seed(store)
    return store, world, McpAsks(store, hub, max_streams_per_account=max_streams)


def _backend(asks: McpAsks, actor: AccountRow, token: str = "") -> ServerBackend:
    return ServerBackend(
        actor=actor, token=token, asks=asks, grace_seconds=GRACE, public_url="http://c/"
    )


async def _ask(backend: ServerBackend, world: World, key: str = "k") -> S.Ask:
    blocks = [text("which?"), ask(question("db", "0", "1"))]
    # The tools send only the ask block; the text shows a whole frame passes the same checks.
    return await backend.open_ask(world.channel.channel_id, blocks, key, "w", 2.0)


async def _first(states: AsyncGenerator[S.Ask]) -> S.Ask:
    async with asyncio.timeout(5):
        return await anext(states)


async def test_the_calls_reach_the_api_as_the_tokens_account() -> None:
    store, world, asks = await _world()
    backend = _backend(asks, world.agent)
    assert [c.channel_id for c in await backend.channels()] == [world.channel.channel_id]
    opened = await _ask(backend, world)
    assert opened.status == S.ASK_STATUS_PENDING
    await backend.hold(opened.ask_id, "w", 2.0)
    await backend.release(opened.ask_id, "w", left=True)
    await backend.release(opened.ask_id, "w", left=False)
    # The backend's grace is added to every hold and given to a call that left.
    assert store.waits == [
        ("hold", opened.ask_id, "w", 2.0 + GRACE),
        ("hold", opened.ask_id, "w", 2.0 + GRACE),
        ("release", opened.ask_id, "w", GRACE),
        ("release", opened.ask_id, "w", None),
    ]
    await asks.respond_to_ask(
        world.human, S.RespondToAskRequest(ask_id=opened.ask_id, answers=[answer("db", "1")])
    )
    async with contextlib.aclosing(backend.states(opened.ask_id)) as states:
        answered = await _first(states)
    assert answered.status == S.ASK_STATUS_ANSWERED
    await backend.report_delivery(answered, '{"content": []}')
    got = await asks.get_ask(world.human, S.GetAskRequest(ask_id=opened.ask_id))
    assert got.ask.delivery.state == S.DELIVERY_STATE_DELIVERED
    assert got.ask.delivery.payload == '{"content": []}'
    assert got.ask.delivery.reported_by_account_id == world.agent.account_id
    assert backend.link(opened.ask_id) == f"http://c/#/ask/{opened.ask_id}"


async def test_domain_errors_are_the_tool_errors_the_model_reads() -> None:
    store, world, asks = await _world()
    backend = _backend(asks, world.agent)
    before = list(store.calls)
    with pytest.raises(ToolError, match=r"^malformed CloseAsk request: "):
        await backend.close_ask("ask_x", S.ASK_STATUS_PENDING, "")
    with pytest.raises(ToolError, match=r"^ask not found$"):
        await backend.close_ask("ask_missing", S.ASK_STATUS_WITHDRAWN, "")
    with pytest.raises(ToolError, match=r"^ask not found$"):
        await _first(backend.states("ask_missing"))
    assert store.calls == [*before, "close_ask", "get_ask"]  # the malformed one: no call
    outsider = _backend(asks, world.outsider)
    with pytest.raises(ToolError, match=r"^channel not found$"):
        await _ask(outsider, world)
    opened = await _ask(backend, world)
    closed = await backend.close_ask(opened.ask_id, S.ASK_STATUS_WITHDRAWN, "gone")
    assert closed.status == S.ASK_STATUS_WITHDRAWN


async def test_a_wait_over_mcp_counts_against_the_connect_streams_cap() -> None:
    """One cap for both doors. An MCP ask takes its wait's slot when it is opened (before it
    is stored), and its first watch waits on that slot; a Connect watch holding the slot
    makes the next MCP ask a tool error that stored nothing."""
    store, world, asks = await _world(max_streams=1)
    backend = _backend(asks, world.agent)
    opened = await _ask(backend, world)
    auth: AuthContext[AccountRow] = AuthContext()
    handlers = AgentHandlers(asks, auth)
    request = agent_pb2.WatchAskRequest(ask_id=opened.ask_id)

    def connect_watch() -> AsyncGenerator[agent_pb2.WatchAskResponse]:
        watch = handlers.watch_ask(request, None)  # pyright: ignore[reportArgumentType] - the handler never reads ctx
        assert isinstance(watch, AsyncGenerator)
        return watch  # run under auth.bound: the caller is read at its first step

    async with contextlib.aclosing(backend.states(opened.ask_id)) as states:
        assert (await _first(states)).ask_id == opened.ask_id  # on the slot of the open
        with auth.bound(world.agent):
            refused = connect_watch()
            with pytest.raises(ResourceExhaustedError, match=r"already has 1 open watch"):
                await anext(refused)
    async with contextlib.aclosing(connect_watch()) as connect:
        with auth.bound(world.agent):
            async with asyncio.timeout(5):
                assert (await anext(connect)).ask.ask_id == opened.ask_id  # the slot came back
        before = list(store.calls)
        with pytest.raises(ToolError, match=r"^this account already has 1 open watch"):
            await _ask(_backend(asks, world.agent), world, key="other")
        assert store.calls == before  # nothing stored
    # A slot taken by an open whose watch never started is let go by the release.
    unwatched = _backend(asks, world.agent)
    left = await _ask(unwatched, world, key="third")
    await unwatched.release(left.ask_id, "w", left=True)
    async with contextlib.aclosing(backend.states(opened.ask_id)) as states:
        await _first(states)


async def test_a_revoked_token_ends_the_wait_and_a_shutdown_interrupts_it() -> None:
    async def valid_tokens(tokens: Sequence[str]) -> set[str]:
        del tokens
        return set()

    revocations = Revocations(valid_tokens)
    store = McpMemoryStore()
    hub = ChangeHub()
    world = await seed(store)
    asks = McpAsks(store, hub, revocations=revocations)
    backend = _backend(asks, world.agent, token="the-token")
    opened = await _ask(backend, world)
    async with contextlib.aclosing(backend.states(opened.ask_id)) as states:
        await _first(states)
        assert await revocations.check() == 1
        with pytest.raises(ToolError, match=f"^{REVOKED}$"):
            await _first(states)
    async with contextlib.aclosing(backend.states(opened.ask_id)) as states:
        await _first(states)
        hub.close()
        with pytest.raises(Interrupted):
            await _first(states)


async def test_a_wait_longer_than_a_recheck_still_names_its_ask() -> None:
    """A WatchAsk keepalive (the ask unchanged at a re-check, every 30 s in `compass serve`)
    is nothing new for a tool call: it once reached the tools as an empty Ask, and a wait
    longer than a re-check ended at once with `pending` for ask "" (the model could not
    resume it with ask_wait)."""
    store = McpMemoryStore()
    hub = ChangeHub()
    store.on_change = hub.publish
    world = await seed(store)
    asks = McpAsks(store, hub, recheck_seconds=0.05)
    backend = _backend(asks, world.agent)
    opened = await _ask(backend, world)
    async with contextlib.aclosing(backend.states(opened.ask_id)) as states:
        assert (await _first(states)).ask_id == opened.ask_id
        with pytest.raises(TimeoutError):  # re-checks pass: nothing to read
            async with asyncio.timeout(0.3):
                await anext(states)

    ask_tools = AskTools(progress_seconds=0.1)
    ctx = CallContext(backend=backend, progress=_no_progress, on_delivered=lambda _r: None)
    loop = asyncio.get_running_loop()
    started = loop.time()
    # Time is under test here: the hold (0.4 s) outlasts several re-checks (0.05 s).
    result = await ask_tools.call(
        tools.ASK_WAIT, {"ask_id": opened.ask_id, "wait_seconds": 0.4}, ctx
    )
    assert loop.time() - started >= 0.4
    assert result.structured is not None
    assert (result.structured["status"], result.structured["ask_id"]) == (
        "pending",
        opened.ask_id,
    )
    await ask_tools.settle()


async def _no_progress(_seconds: float, _message: str) -> None:
    pass
