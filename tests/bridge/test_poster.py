"""The Poster's guarantees when responses get lost: every ask joins its own message once,
the bridge learns every minted id, and nothing is posted twice (against the in-process
AgentService peer, which keeps the server's positional update rule, retries included)."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from compass_bridge.bridge_core import BridgeCore
from compass_bridge.client import MAX_BOUNDED_RETRIES, RpcError
from compass_core import ConversationUpdated, EventMapper
from tests.bridge import _events as ev
from tests.bridge._fake_service import content
from tests.bridge._inproc import (
    GALLERY_ANSWER,
    GALLERY_REPLY,
    Q1,
    Q2,
    ask_ids,
    blocks_kinds,
    harness,
)


def _outcomes(h: Any) -> list[tuple[str, bool]]:
    return [(c.method, c.ok) for c in h.service.calls]


async def test_a_lost_update_response_that_added_an_ask_is_simply_retried() -> None:
    async with harness() as h:
        h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", Q1)]))
        await h.settle()
        h.service.lose_responses["UpdateMessage"] = 1
        h.feed(ev.ask_start("c1", Q1), ev.ask_request("req-1", Q1))
        await h.settle()
        assert _outcomes(h) == [
            ("AppendMessage", True),
            ("UpdateMessage", False),  # stored, the response lost
            ("UpdateMessage", True),  # the same frame again: the ask it added, as stored
        ]
        lost, retried = h.updates()
        assert retried.frame == lost.frame
        assert ask_ids(retried.frame) == [""]
        (stored,) = h.service.messages.values()
        (ask_id,) = ask_ids(stored)
        assert h.service.minted == 1
        assert h.bridge.poster.ask_id("m1", 0).result() == ask_id
        assert h.bridge.poster.dropped == 0
        h.service.answer(ask_id, GALLERY_ANSWER)
        (reply,) = await h.replies(1)
        assert reply == {"type": "extension_ui_response", "id": "req-1", "answers": GALLERY_REPLY}


async def test_a_newer_snapshot_that_replaced_a_lost_update_keeps_its_ask() -> None:
    async with harness() as h:
        h.feed(*ev.assistant_message("m1", "One.", asks=[("c1", Q1)]))
        await h.settle()
        # The update adding the ask lands but its response is lost; the server is then
        # unreachable for a while, and the runtime settles the message again meanwhile.
        h.service.plan = ["lost", *["down"] * 40]
        h.feed(ev.ask_start("c1", Q1))
        async with asyncio.timeout(5):
            while len(h.updates()) < 3:  # noqa: ASYNC110 - the peer records calls, no event
                await asyncio.sleep(0.001)
        h.feed(ev.assistant_message("m1", "Two.", asks=[("c1", Q1)])[-1])
        await h.settle()
        (stored,) = h.service.messages.values()
        assert blocks_kinds(stored) == ["text:Two.", "ask:db"]
        (ask_id,) = ask_ids(stored)
        assert h.service.minted == 1
        assert len(h.appends()) == 1
        # The newer snapshot still had the ask unminted: the server took it for the stored one.
        last = h.updates()[-1]
        assert (last.ok, blocks_kinds(last.frame)[0], ask_ids(last.frame)) == (
            True,
            "text:Two.",
            [""],
        )
        assert h.bridge.poster.ask_id("m1", 0).result() == ask_id
        assert h.bridge.poster.dropped == 0


async def test_second_ask_after_a_lost_update_gets_its_own_id() -> None:
    async with harness() as h:
        h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", Q1), ("c2", Q2)]))
        h.feed(ev.ask_start("c1", Q1))
        await h.settle()
        (first,) = h.service.ask_ids()
        h.service.lose_responses["UpdateMessage"] = 1
        h.feed(ev.ask_start("c2", Q2), ev.ask_request("req-2", Q2))
        await h.settle()
        (stored,) = h.service.messages.values()
        assert blocks_kinds(stored) == ["text:Hi.", "ask:db", "ask:region"]
        assert ask_ids(stored)[0] == first
        second = ask_ids(stored)[1]
        assert h.service.minted == 2
        h.service.answer(second, {"region": (["1"], ""), "name": ([], "api")})
        (reply,) = await h.replies(1)
        assert reply["id"] == "req-2"


async def test_an_update_refused_for_its_own_reasons_is_dropped() -> None:
    async with harness() as h:
        h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", Q1)]))
        await h.settle()
        h.service.failures["UpdateMessage"] = [RpcError("invalid_argument", "too big")]
        h.feed(ev.ask_start("c1", Q1), ev.ask_request("req-1", Q1))
        (reply,) = await h.replies(1)
        assert reply == {"type": "extension_ui_response", "id": "req-1", "cancelled": True}
        await h.settle()
        assert len(h.appends()) == 1
        assert h.bridge.poster.dropped == 1


async def test_a_request_that_comes_after_its_ask_was_dropped_is_answered_cancelled() -> None:
    async with harness() as h:
        h.service.failures["AppendMessage"] = [RpcError("invalid_argument", "too big")]
        h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", Q1)]), ev.ask_start("c1", Q1))
        await h.settle()
        assert h.bridge.poster.dropped == 1
        h.feed(ev.ask_request("req-1", Q1))  # later than the drop: must not hang
        (reply,) = await h.replies(1)
        assert reply == {"type": "extension_ui_response", "id": "req-1", "cancelled": True}


async def test_an_append_given_up_on_that_had_landed_is_found_by_the_next_snapshot() -> None:
    async with harness() as h:
        # Every attempt is stored (or found) and then answered with INTERNAL: the bridge
        # gives up on the frame although the message exists.
        h.service.lost_error = RpcError("internal", "internal error")
        h.service.lose_responses["AppendMessage"] = MAX_BOUNDED_RETRIES + 1
        h.feed(*ev.assistant_message("m1", "One."))
        await h.settle()
        assert h.bridge.poster.dropped == 1
        h.feed(ev.assistant_message("m1", "Two.")[-1])
        await h.settle()
        (stored,) = h.service.messages.values()
        assert blocks_kinds(stored) == ["text:Two."]
        # The next append repeated the given-up blocks, which found the message, and the new
        # snapshot went out as an update.
        assert [(blocks_kinds(c.frame)[0], c.ok) for c in h.appends()[-2:]] == [
            ("text:One.", False),  # the last given-up attempt
            ("text:One.", True),
        ]
        (update,) = h.updates()
        assert update.ok
        assert blocks_kinds(update.frame) == ["text:Two."]
        assert h.bridge.poster.dropped == 1


async def test_an_append_refused_for_its_own_reasons_is_not_repeated() -> None:
    async with harness() as h:
        h.service.failures["AppendMessage"] = [RpcError("invalid_argument", "too big")]
        h.feed(*ev.assistant_message("m1", "One."))
        await h.settle()
        h.feed(ev.assistant_message("m1", "Two.")[-1])
        await h.settle()
        (stored,) = h.service.messages.values()
        assert blocks_kinds(stored) == ["text:Two."]
        assert [(blocks_kinds(c.frame)[0], c.ok) for c in h.appends()] == [
            ("text:One.", False),
            ("text:Two.", True),
        ]


# -- property: whatever gets lost, the channel ends up as the runtime's last snapshots -------

_step = st.one_of(
    st.just(("end",)),
    st.tuples(st.just("ask"), st.sampled_from(["q1", "q2"])),
    st.tuples(st.just("pause"), st.integers(min_value=1, max_value=30)),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    messages=st.lists(st.lists(_step, min_size=1, max_size=6), min_size=1, max_size=2),
    plan=st.lists(st.sampled_from(["ok", "down", "lost"]), max_size=14),
)
def test_lost_responses_never_lose_or_duplicate_a_message_or_an_ask(
    messages: list[list[tuple[Any, ...]]], plan: list[str]
) -> None:
    events: list[tuple[str, dict[str, Any]] | int] = []
    calls = 0
    for index, steps in enumerate(messages):
        key = f"m{index + 1}"
        events.append(("event", ev.assistant_message(key, "")[0]))  # message_start
        version = 0
        for step in steps:
            if step[0] == "end":
                version += 1
                events.append(("event", ev.assistant_message(key, f"{key} v{version}")[-1]))
            elif step[0] == "ask":
                calls += 1
                events.append(("event", ev.ask_start(f"c{calls}", Q1 if step[1] == "q1" else Q2)))
            else:
                events.append(step[1])

    # What the runtime's last snapshot of each message is (the mapper is deterministic), as
    # the bridge posts it (marked with the free text oh-my-pi can receive).
    mapper = EventMapper(session="run")
    last: dict[str, Any] = {}
    for item in events:
        if not isinstance(item, int):
            for output in mapper.map(item[1]):
                if isinstance(output, ConversationUpdated):
                    BridgeCore.mark_native_asks(output.value)
                    last[output.value.client_message_id] = output.value
    expected = {key: frame for key, frame in last.items() if len(frame.blocks)}

    async def scenario() -> None:
        async with harness() as h:
            h.service.plan = list(plan)
            for item in events:
                if isinstance(item, int):
                    for _ in range(item):
                        await asyncio.sleep(0)
                else:
                    h.feed(item[1])
            await h.settle()
            poster = h.bridge.poster
            stored = list(h.service.messages.values())
            assert [m.client_message_id for m in stored] == [f"run:{k}" for k in expected]
            total_asks = 0
            for message, (key, frame) in zip(stored, expected.items(), strict=True):
                assert content(message.blocks) == content(frame.blocks)
                ids = ask_ids(message)
                assert all(ids)
                total_asks += len(ids)
                for ordinal, ask_id in enumerate(ids):
                    assert poster.ask_id(key, ordinal).result() == ask_id
            assert h.service.minted == total_asks  # no ask was ever minted twice
            assert poster.dropped == 0

    asyncio.run(scenario())
