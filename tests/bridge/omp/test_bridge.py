"""The bridge's core against an in-process AgentService peer: posting order, ask-id
reconciliation, retries, correlation and answer delivery."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from compass_bridge.client import MAX_BOUNDED_RETRIES, FatalServerError, RpcError
from tests._wait import eventually
from tests.bridge import _events as ev
from tests.bridge._inproc import (
    GALLERY_ANSWER,
    GALLERY_REPLY,
    Q1,
    Q2,
    ask_ids,
    blocks_kinds,
    harness,
)

# -- posting --------------------------------------------------------------------------------


async def test_the_text_is_appended_and_a_later_ask_joins_it_by_an_update() -> None:
    async with harness() as h:
        h.feed(*ev.assistant_message("m1", "Two decisions first.", asks=[("c1", Q1)]))
        await h.settle()  # the runtime settles the text before the ask tool starts
        (append,) = h.appends()
        assert blocks_kinds(append.frame) == ["text:Two decisions first."]
        assert append.frame.client_message_id == "run:m1"
        h.feed(ev.ask_start("c1", Q1))
        await h.settle()
        (update,) = h.updates()
        assert update.ok
        assert update.frame.message_id == next(iter(h.service.messages))
        assert blocks_kinds(update.frame) == ["text:Two decisions first.", "ask:db"]
        assert ask_ids(update.frame) == [""]  # a new ask: the server mints its id
        (stored,) = h.service.messages.values()
        (minted,) = ask_ids(stored)
        assert minted
        assert h.bridge.poster.ask_id("m1", 0).result() == minted


async def test_snapshots_queued_before_the_first_post_coalesce_into_one_append() -> None:
    async with harness() as h:
        h.feed(*ev.assistant_message("m1", "Two decisions first.", asks=[("c1", Q1)]))
        h.feed(ev.ask_start("c1", Q1))
        await h.settle()
        (append,) = h.appends()
        assert blocks_kinds(append.frame) == ["text:Two decisions first.", "ask:db"]
        assert h.updates() == []


async def test_later_snapshots_carry_the_minted_ask_ids_in_order() -> None:
    async with harness() as h:
        h.feed(*ev.assistant_message("m1", "First.", asks=[("c1", Q1), ("c2", Q2)]))
        h.feed(ev.ask_start("c1", Q1), ev.ask_start("c2", Q2))
        await h.settle()
        (append,) = h.appends()
        minted = h.service.ask_ids()
        assert len(minted) == 2
        # The runtime settles the same message again with other text: an update, which must
        # name the message and carry each ask's own id.
        h.feed({**ev.assistant_message("m1", "Second.")[-1]})
        await h.settle()
        (update,) = h.updates()
        assert update.ok
        assert update.frame.message_id == next(iter(h.service.messages))
        assert blocks_kinds(update.frame) == ["text:Second.", "ask:db", "ask:region"]
        assert [b.ask.ask_id for b in update.frame.blocks if b.HasField("ask")] == minted
        assert append.frame.client_message_id == update.frame.client_message_id


async def test_a_second_ask_after_the_first_was_answered_joins_the_same_message() -> None:
    async with harness() as h:
        h.feed(*ev.assistant_message("m1", "Let me check.", asks=[("c1", Q1), ("c2", Q2)]))
        h.feed(ev.ask_start("c1", Q1), ev.ask_request("req-1", Q1))
        await h.settle()
        (first,) = h.service.ask_ids()
        h.service.answer(first, GALLERY_ANSWER)
        (reply,) = await h.replies(1)
        assert reply["id"] == "req-1"
        # The runtime runs the second ask only now, after the first one's result.
        h.feed(*ev.ask_end("c1", ev.reply("req-1", *GALLERY_REPLY), Q1))
        h.feed(ev.ask_start("c2", Q2), ev.ask_request("req-2", Q2))
        await h.settle()
        update = h.updates()[-1]
        assert update.ok
        assert blocks_kinds(update.frame) == ["text:Let me check.", "ask:db", "ask:region"]
        assert ask_ids(update.frame) == [first, ""]
        (stored,) = h.service.messages.values()
        assert blocks_kinds(stored) == ["text:Let me check.", "ask:db", "ask:region"]
        assert ask_ids(stored)[0] == first
        assert stored.blocks[1].ask.answered_by_account_id  # the answer stays
        h.service.answer(ask_ids(stored)[1], {"region": (["0"], ""), "name": ([], "api")})
        _, reply = await h.replies(2)
        assert reply["id"] == "req-2"
        assert reply["answers"][0] == {"id": "region", "selectedOptions": ["eu-west-1"]}
        assert len(h.appends()) == 1
        assert h.bridge.delivered == 2


async def test_a_lost_append_response_is_retried_without_a_duplicate() -> None:
    async with harness() as h:
        h.service.lose_responses["AppendMessage"] = 2
        h.feed(*ev.assistant_message("m1", "Hello.", asks=[("c1", Q1)]), ev.ask_start("c1", Q1))
        await h.settle()
        appends = h.appends()
        assert len(appends) == 3
        assert len({a.frame.SerializeToString(deterministic=True) for a in appends}) == 1
        assert len(h.service.messages) == 1


async def test_while_the_append_is_retried_newer_snapshots_wait_and_coalesce() -> None:
    async with harness() as h:
        down = [RpcError("unavailable", "connection refused") for _ in range(30)]
        h.service.failures["AppendMessage"] = down
        h.feed(*ev.assistant_message("m1", "One.", asks=[("c1", Q1)]), ev.ask_start("c1", Q1))
        await eventually(lambda: len(h.appends()) >= 3, "the append being retried")
        h.feed(ev.assistant_message("m1", "Two.")[-1])
        h.feed(ev.assistant_message("m1", "Three.")[-1])
        await h.settle()
        calls = h.service.calls
        # Every append attempt repeats the first snapshot; the only update comes after the
        # append succeeded and carries the newest text.
        first_ok = next(i for i, c in enumerate(calls) if c.ok)
        assert all(c.method == "AppendMessage" for c in calls[: first_ok + 1])
        assert {blocks_kinds(c.frame)[0] for c in calls[: first_ok + 1]} == {"text:One."}
        assert [blocks_kinds(c.frame) for c in calls[first_ok + 1 :]] == [["text:Three.", "ask:db"]]


async def test_an_update_being_retried_is_replaced_by_a_newer_snapshot() -> None:
    async with harness() as h:
        h.feed(*ev.assistant_message("m1", "One."))
        await h.settle()
        h.service.failures["UpdateMessage"] = [RpcError("unavailable", "down")] * 20
        h.feed(ev.assistant_message("m1", "Two.")[-1])
        await eventually(lambda: len(h.updates()) >= 2, "the update being retried")
        h.feed(ev.assistant_message("m1", "Three.")[-1])
        await h.settle()
        ok = [c for c in h.updates() if c.ok]
        assert [blocks_kinds(c.frame) for c in ok] == [["text:Three."]]
        (stored,) = h.service.messages.values()
        assert stored.blocks[0].text.text == "Three."


async def test_messages_are_posted_in_the_order_they_started() -> None:
    async with harness() as h:
        h.service.failures["AppendMessage"] = [RpcError("unavailable", "down")] * 5
        h.feed(*ev.assistant_message("m1", "First."))
        h.feed(*ev.assistant_message("m2", "Second."))
        await h.settle()
        stored = [m.client_message_id for m in h.service.messages.values()]
        assert stored == ["run:m1", "run:m2"]


async def test_internal_errors_are_retried_a_bounded_number_of_times() -> None:
    async with harness() as h:
        h.service.failures["AppendMessage"] = [RpcError("internal", "internal error")] * 50
        h.feed(*ev.assistant_message("m1", "Hello."))
        await h.settle()
        assert len(h.appends()) == MAX_BOUNDED_RETRIES + 1
        assert h.bridge.poster.dropped == 1
        assert h.service.messages == {}


@pytest.mark.parametrize("code", ["unauthenticated", "permission_denied", "not_found"])
async def test_a_refused_bridge_stops_with_a_fatal_error(code: str) -> None:
    async with harness() as h:
        h.service.failures["AppendMessage"] = [RpcError(code, "no")]
        h.feed(*ev.assistant_message("m1", "Hello."))
        async with asyncio.timeout(5):
            failure = await h.bridge.failure
        assert isinstance(failure, FatalServerError)
        assert code in str(failure)


# -- correlation and answers -------------------------------------------------------------


async def test_an_answer_reaches_the_request_that_waits_for_it() -> None:
    async with harness() as h:
        h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", Q1)]), ev.ask_start("c1", Q1))
        h.feed(ev.ask_request("req-1", Q1))
        await h.settle()
        (ask_id,) = h.service.ask_ids()
        await eventually(lambda: ask_id in h.service.watching, "the wait on WatchAsk")
        assert h.sink.lines == []  # nobody answered yet
        h.service.answer(ask_id, GALLERY_ANSWER)
        (reply,) = await h.replies(1)
        assert reply == {"type": "extension_ui_response", "id": "req-1", "answers": GALLERY_REPLY}
        assert h.bridge.delivered == 1


async def test_two_asks_of_one_turn_wait_together_and_answer_their_own_requests() -> None:
    async with harness() as h:
        h.feed(*ev.assistant_message("m1", "Two.", asks=[("c1", Q1), ("c2", Q2)]))
        h.feed(ev.ask_start("c1", Q1), ev.ask_start("c2", Q2))
        h.feed(ev.ask_request("req-a", Q1), ev.ask_request("req-b", Q2))
        await h.settle()
        first, second = h.service.ask_ids()
        assert h.bridge.waiting == 2
        h.service.answer(second, {"region": (["1"], ""), "name": ([], "accounts")})
        (reply_b,) = await h.replies(1)
        assert reply_b["id"] == "req-b"
        assert reply_b["answers"] == [
            {"id": "region", "selectedOptions": ["us-east-1"]},
            {"id": "name", "selectedOptions": [], "customInput": "accounts"},
        ]
        h.service.answer(first, GALLERY_ANSWER)
        _, reply_a = await h.replies(2)
        assert reply_a == {"type": "extension_ui_response", "id": "req-a", "answers": GALLERY_REPLY}


async def test_asks_with_equal_questions_are_matched_oldest_first() -> None:
    async with harness() as h:
        h.feed(*ev.assistant_message("m1", "Again.", asks=[("c1", Q1), ("c2", Q1)]))
        h.feed(ev.ask_start("c1", Q1), ev.ask_start("c2", Q1))
        h.feed(ev.ask_request("req-1", Q1), ev.ask_request("req-2", Q1))
        await h.settle()
        first, second = h.service.ask_ids()
        h.service.answer(second, {"db": (["2"], "")})
        (reply,) = await h.replies(1)
        assert reply["id"] == "req-2"
        assert reply["answers"][0] == {"id": "db", "selectedOptions": ["MongoDB"]}
        h.service.answer(first, {"db": (["1"], "")})
        _, reply = await h.replies(2)
        assert reply["id"] == "req-1"


async def test_a_tool_call_id_in_the_request_decides_the_match() -> None:
    async with harness() as h:
        h.feed(*ev.assistant_message("m1", "Again.", asks=[("c1", Q1), ("c2", Q1)]))
        h.feed(ev.ask_start("c1", Q1), ev.ask_start("c2", Q1))
        h.feed({**ev.ask_request("req-2", Q1), "toolCallId": "c2"})
        await h.settle()
        first, second = h.service.ask_ids()
        h.service.answer(first, {"db": (["1"], "")})
        h.service.answer(second, {"db": (["0"], "")})
        (reply,) = await h.replies(1)
        # req-2 waited for the second ask only: one reply, with the second ask's answer.
        assert reply["id"] == "req-2"
        assert reply["answers"][0] == {"id": "db", "selectedOptions": ["Postgres"]}


async def test_a_request_made_while_the_append_is_retried_waits_for_the_ask_id() -> None:
    async with harness() as h:
        h.service.failures["AppendMessage"] = [RpcError("unavailable", "down")] * 10
        h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", Q1)]), ev.ask_start("c1", Q1))
        h.feed(ev.ask_request("req-1", Q1))
        await h.settle()
        (ask_id,) = h.service.ask_ids()
        h.service.answer(ask_id, GALLERY_ANSWER)
        (reply,) = await h.replies(1)
        assert reply["id"] == "req-1"


async def test_watch_ask_reconnects_after_failures() -> None:
    async with harness() as h:
        h.service.failures["WatchAsk"] = [
            RpcError("unavailable", "down"),
            RpcError("deadline_exceeded", "slow"),
        ]
        h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", Q1)]), ev.ask_start("c1", Q1))
        h.feed(ev.ask_request("req-1", Q1))
        await h.settle()
        h.service.answer(h.service.ask_ids()[0], GALLERY_ANSWER)
        (reply,) = await h.replies(1)
        assert reply["answers"] == GALLERY_REPLY


@pytest.mark.parametrize(
    "stop",
    [
        {"type": "extension_ui_request", "id": "c-9", "method": "cancel", "targetId": "req-1"},
        {"type": "extension_ui_cancel", "id": "req-1"},
        {
            "type": "tool_execution_end",
            "toolCallId": "c1",
            "toolName": "ask",
            "isError": False,
            "result": {"content": [{"type": "text", "text": "timed out"}]},
        },
    ],
    ids=["cancel", "extension_ui_cancel", "tool-end"],
)
async def test_the_runtime_can_stop_the_wait(stop: dict[str, Any]) -> None:
    async with harness() as h:
        h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", Q1)]), ev.ask_start("c1", Q1))
        h.feed(ev.ask_request("req-1", Q1))
        await h.settle()
        assert h.bridge.waiting == 1
        h.feed(stop)
        await eventually(lambda: h.bridge.waiting == 0, "the wait stopped")
        h.service.answer(h.service.ask_ids()[0], GALLERY_ANSWER)
        await h.bridge.stop_waiting()  # flushes every reply the bridge was still writing
        assert h.sink.lines == []


async def test_a_request_no_ask_matches_is_answered_cancelled() -> None:
    bad = [{"id": "", "question": "?", "options": []}]  # the mapper refuses an empty id
    async with harness() as h:
        h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", bad)]), ev.ask_start("c1", bad))
        h.feed(ev.ask_request("req-1", bad))
        (reply,) = await h.replies(1)
        assert reply == {"type": "extension_ui_response", "id": "req-1", "cancelled": True}
        counts = h.bridge.unmapped_counts()
        assert counts == {"tool_execution_start:ask": 1, "extension_ui_request:ask": 1}


async def test_an_ask_whose_message_the_server_refuses_is_answered_cancelled() -> None:
    async with harness() as h:
        h.service.failures["AppendMessage"] = [RpcError("invalid_argument", "too big")]
        h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", Q1)]), ev.ask_start("c1", Q1))
        h.feed(ev.ask_request("req-1", Q1))
        (reply,) = await h.replies(1)
        assert reply == {"type": "extension_ui_response", "id": "req-1", "cancelled": True}
        assert h.bridge.poster.dropped == 1


async def test_a_dialog_no_ask_call_claims_is_an_ask_of_its_own() -> None:
    """Another extension's select (no "Other (type your own)": not omp's ask) is asked in
    Compass at once, as one question; notices need nothing. (More: test_lone.py.)"""
    async with harness() as h:
        h.feed(
            {
                "type": "extension_ui_request",
                "id": "s1",
                "method": "select",
                "title": "Pick",
                "options": ["a"],
            },
            {"type": "extension_ui_request", "id": "n1", "method": "notify", "message": "hi"},
        )
        await h.settle()
        (ask_id,) = h.service.ask_ids()
        assert [o.label for o in h.service.ask(ask_id).questions[0].options] == ["a"]
        h.service.answer(ask_id, {"select": (["0"], "")})
        (reply,) = await h.replies(1)
        assert reply == {"type": "extension_ui_response", "id": "s1", "value": "a"}
        assert h.bridge.unmapped_counts() == {}


async def test_a_closed_runtime_input_does_not_stop_the_bridge() -> None:
    async with harness() as h:
        h.sink.closed = True
        h.feed(*ev.assistant_message("m1", "Hi.", asks=[("c1", Q1)]), ev.ask_start("c1", Q1))
        h.feed(ev.ask_request("req-1", Q1))
        await h.settle()
        h.service.answer(h.service.ask_ids()[0], GALLERY_ANSWER)
        await eventually(lambda: not h.bridge.waiting, "the answered wait ending")
        assert not h.bridge.failure.done()


async def test_lines_that_are_not_events_are_counted_by_reason() -> None:
    async with harness() as h:
        for line in [b"\xff\xfe", b"{nope", b"[1, 2]", b"[" * 100_000 + b"]" * 100_000, b"  "]:
            h.bridge.feed(line)
        h.feed(*ev.assistant_message("m1", "Still here."))
        await h.settle()
        assert [blocks_kinds(c.frame) for c in h.appends()] == [["text:Still here."]]
        assert h.bridge.unmapped_counts() == {"line": 4}


lines = st.one_of(
    st.binary(max_size=40),
    st.text(max_size=40).map(str.encode),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=4),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "type",
                        "id",
                        "method",
                        "message",
                        "toolName",
                        "args",
                        "questions",
                        "role",
                        "content",
                        "targetId",
                    ]
                ),
                inner,
                max_size=4,
            )
        ),
        max_leaves=12,
    ).map(lambda value: json.dumps(value).encode()),
)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(lines, max_size=8))
def test_no_runtime_output_makes_the_bridge_raise(chunk: list[bytes]) -> None:
    async def scenario() -> None:
        async with harness() as h:
            for line in chunk:
                h.bridge.feed(line)
            h.feed(*ev.assistant_message("m1", "Still fine."))
            await h.settle()
            assert any(blocks_kinds(c.frame) == ["text:Still fine."] for c in h.appends() if c.ok)

    asyncio.run(scenario())
