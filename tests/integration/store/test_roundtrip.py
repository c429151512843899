"""Property: any valid block set survives append and every read path unchanged."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hypothesis import HealthCheck, given, settings

from tests.integration.store._seed import World, with_ask_ids
from tests.unit.server._strategies import block_sets

if TYPE_CHECKING:
    from compass_server.store.postgres import PostgresStore
    from gen.compass.v1 import comms_pb2


@settings(
    max_examples=30,
    deadline=None,
    # One database for all examples is the point: each example appends a new message.
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(blocks=block_sets(minted=False))
async def test_blocks_round_trip_through_postgres(
    store: PostgresStore, world: World, blocks: list[comms_pb2.MessageBlock]
) -> None:
    message = await world.post(store, *blocks)
    assert list(message.blocks) == with_ask_ids(blocks, message.ask_ids)
    (replayed,) = await store.messages_after(
        world.human, world.channel.channel_id, message.revision - 1
    )
    assert replayed == message
    for block, ask_id in zip(
        (b for b in message.blocks if b.HasField("ask")), message.ask_ids, strict=True
    ):
        assert (await store.get_ask(world.human, ask_id)).ask == block.ask
