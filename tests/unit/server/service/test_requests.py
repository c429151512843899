"""Every check that needs no stored state runs in the handler, before any store call.

A malformed request is refused with INVALID_ARGUMENT naming its fields, and the store (the
in-memory double, which logs each call) is never touched: nothing is read, nothing written.
These checks moved here from the PostgreSQL store tests when the handlers took them over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from compass_server.domain import MAX_ASKS_PER_MESSAGE, requests
from compass_server.domain.errors import InvalidArgumentError
from gen.compass.v1 import agent_pb2, comms_pb2
from tests.integration.store._seed import (
    answer,
    ask,
    question,
    text,
    with_answer_state,
    with_ask_ids,
)
from tests.unit.server.service.conftest import CTX

if TYPE_CHECKING:
    from tests.unit.server.service.conftest import Service

S = comms_pb2


def _untouched(service: Service, before: list[str]) -> None:
    assert service.store.calls == before, "a malformed request reached the store"


@pytest.mark.parametrize(
    ("blocks", "field"),
    [
        pytest.param([text("a"), comms_pb2.MessageBlock()], "blocks[1]", id="no-kind"),
        pytest.param([ask()], "blocks[0].ask.questions", id="zero-questions"),
        pytest.param(
            [ask(question("", "0"))],
            "blocks[0].ask.questions[0].question_id",
            id="empty-question-id",
        ),
        pytest.param(
            [ask(question("db", "0"), question("db", "1"))],
            "blocks[0].ask.questions[1].question_id",
            id="duplicate-question-id",
        ),
        pytest.param(
            [ask(question("db", "0", ""))],
            "blocks[0].ask.questions[0].options[1].id",
            id="empty-option-id",
        ),
        pytest.param(
            [ask(question("db", "0", "0"))],
            "blocks[0].ask.questions[0].options[1].id",
            id="duplicate-option-id",
        ),
        pytest.param(
            [ask(question("db", "0"), ask_id="ask_mine")], "blocks[0].ask.ask_id", id="agent-ask-id"
        ),
        pytest.param(
            [with_answer_state(chosen=1)],
            "blocks[0].ask.questions[0].chosen_option_ids",
            id="chosen",
        ),
        pytest.param(
            [with_answer_state(custom_text=1)],
            "blocks[0].ask.questions[0].custom_text",
            id="custom-text",
        ),
        pytest.param(
            [with_answer_state(timed_out=1)], "blocks[0].ask.questions[0].timed_out", id="timed-out"
        ),
        pytest.param(
            [with_answer_state(by=1)], "blocks[0].ask.answered_by_account_id", id="answered-by"
        ),
        pytest.param([with_answer_state(at=1)], "blocks[0].ask.answered_at", id="answered-at"),
        pytest.param(
            [with_answer_state(name=1)], "blocks[0].ask.answered_by_name", id="answered-by-name"
        ),
        pytest.param([text("nul \x00 here")], "blocks[0].text.text", id="nul"),
    ],
)
async def test_append_refuses_invalid_blocks_before_the_store(
    service: Service, blocks: list[comms_pb2.MessageBlock], field: str
) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        await service.post(*blocks)
    assert [v.field for v in caught.value.violations] == [field]
    _untouched(service, [])
    assert await service.messages() == []


@pytest.mark.parametrize(
    ("client_message_id", "field"),
    # (A surrogate cannot reach a handler: protobuf strings refuse it.)
    [("nul \x00", "client_message_id"), ("k" * 201, "client_message_id")],
)
async def test_append_refuses_a_bad_client_message_id(
    service: Service, client_message_id: str, field: str
) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        await service.post(text("x"), client_message_id=client_message_id)
    assert [v.field for v in caught.value.violations] == [field]
    _untouched(service, [])


async def test_append_refuses_a_frame_that_names_its_message(service: Service) -> None:
    with pytest.raises(InvalidArgumentError, match=r"^frame\.message_id must be empty"):
        await service.post(text("x"), message_id="msg_mine")
    _untouched(service, [])


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("status", S.ASK_STATUS_ANSWERED),
        ("status", S.ASK_STATUS_DECLINED),
        ("status", S.ASK_STATUS_EXPIRED),
        ("closed_by_account_id", "acct_x"),
        ("closed_by_name", "Ada"),
        ("close_reason", "because"),
        ("on_timeout", 7),
    ],
)
async def test_an_agent_cannot_write_server_state_on_append_or_a_new_ask(
    service: Service, field: str, value: object
) -> None:
    block = ask(question("db", "0", "1"))
    setattr(block.ask, field, value)
    with pytest.raises(InvalidArgumentError) as raised:
        await service.post(block)
    assert any(v.field == f"blocks[0].ask.{field}" for v in raised.value.violations)
    message = await service.post(text("x"))
    # Whether an ask block is NEW depends on the stored asks: the store's fit rule refuses it.
    with pytest.raises(InvalidArgumentError):
        await service.update(message.message_id, [text("x"), block])


async def test_closed_at_is_refused_and_pending_is_accepted_on_append(service: Service) -> None:
    block = ask(question("db", "0", "1"))
    block.ask.closed_at.GetCurrentTime()
    with pytest.raises(InvalidArgumentError):
        await service.post(block)
    block = ask(question("db", "0", "1"))
    block.ask.status = S.ASK_STATUS_PENDING
    assert (await service.post(block)).blocks[0].ask.status == S.ASK_STATUS_PENDING


async def test_update_runs_the_block_invariants_before_the_store(service: Service) -> None:
    original = [text("t"), ask(question("db", "0", "1"))]
    message = await service.post(*original)
    ids = tuple(b.ask.ask_id for b in message.blocks if b.HasField("ask"))
    before = list(service.store.calls)

    blocks = with_ask_ids(original, ids)
    blocks[1].ask.questions.append(question("db", "9"))
    with pytest.raises(InvalidArgumentError) as caught:
        await service.update(message.message_id, blocks)
    assert [v.field for v in caught.value.violations] == ["blocks[1].ask.questions[1].question_id"]

    new = [*with_ask_ids(original, ids), ask(question("a", "0"), question("a", "1"))]
    with pytest.raises(InvalidArgumentError) as caught:
        await service.update(message.message_id, new)
    assert [v.field for v in caught.value.violations] == ["blocks[2].ask.questions[1].question_id"]
    new[2] = ask()
    with pytest.raises(InvalidArgumentError) as caught:
        await service.update(message.message_id, new)
    assert [v.field for v in caught.value.violations] == ["blocks[2].ask.questions"]
    _untouched(service, before)


async def test_new_asks_count_towards_the_ask_limit(service: Service) -> None:
    full = [ask(question("q", "0")) for _ in range(MAX_ASKS_PER_MESSAGE)]
    message = await service.post(*full)
    ids = tuple(b.ask.ask_id for b in message.blocks)
    before = list(service.store.calls)
    blocks = [*with_ask_ids(full, ids), ask(question("one-too-many", "0"))]
    with pytest.raises(InvalidArgumentError) as caught:
        await service.update(message.message_id, blocks)
    assert [v.field for v in caught.value.violations] == ["blocks"]
    _untouched(service, before)


async def test_respond_refuses_a_malformed_request_before_any_lookup(service: Service) -> None:
    outsider = service.world.outsider
    with pytest.raises(InvalidArgumentError) as caught:
        await service.respond(outsider, "", [answer("db", "0")])
    assert [v.field for v in caught.value.violations] == ["ask_id"]
    with pytest.raises(InvalidArgumentError) as caught:
        await service.respond(outsider, "ask_nope", [answer("db", custom_text="x" * 10_001)])
    assert [v.field for v in caught.value.violations] == ["answers[0].custom_text"]
    _untouched(service, [])


@pytest.mark.parametrize(
    ("ask_id", "reason", "field"),
    [("ask_x", "x" * 501, "reason"), ("ask_x", "nul\x00", "reason"), ("", "", "ask_id")],
)
async def test_decline_refuses_a_malformed_request_before_any_lookup(
    service: Service, ask_id: str, reason: str, field: str
) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        await service.decline(service.world.human, ask_id, reason)
    assert [v.field for v in caught.value.violations] == [field]
    _untouched(service, [])


@pytest.mark.parametrize(
    ("status", "answers", "reason", "field"),
    [
        (S.ASK_STATUS_UNSPECIFIED, (), "", "status"),
        (S.ASK_STATUS_PENDING, (), "", "status"),
        (S.ASK_STATUS_ANSWERED, (answer("db", "0"),), "", "status"),
        (S.ASK_STATUS_DECLINED, (), "", "status"),
        (S.ASK_STATUS_EXPIRED, (), "", "status"),
        (S.ASK_STATUS_WITHDRAWN, (answer("db", "0"),), "", "answers"),
        (S.ASK_STATUS_WITHDRAWN, (), "r" * 501, "reason"),
        (S.ASK_STATUS_WITHDRAWN, (), "a\x00", "reason"),
    ],
)
async def test_close_refuses_a_malformed_request_before_any_lookup(
    service: Service,
    status: comms_pb2.AskStatus,
    answers: tuple[comms_pb2.AskQuestionAnswer, ...],
    reason: str,
    field: str,
) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        await service.close("ask_missing", status, reason, answers)
    assert field in {v.field for v in raised.value.violations}
    _untouched(service, [])


async def test_list_and_watch_refuse_negative_sizes_and_revisions(service: Service) -> None:
    human = service.world.human
    channel_id = service.world.channel.channel_id
    with service.auth.bound(human):
        with pytest.raises(InvalidArgumentError) as caught:
            await service.comms.list_messages(
                comms_pb2.ListMessagesRequest(channel_id=channel_id, page_size=-1), CTX
            )
        assert [v.field for v in caught.value.violations] == ["page_size"]
        with pytest.raises(InvalidArgumentError) as caught:
            await service.comms.list_pending_asks(
                comms_pb2.ListPendingAsksRequest(page_size=-1), CTX
            )
        assert [v.field for v in caught.value.violations] == ["page_size"]
        stream = service.comms.watch_channel(
            comms_pb2.WatchChannelRequest(channel_id=channel_id, after_revision=-1), CTX
        )
        with pytest.raises(InvalidArgumentError) as caught:
            await anext(aiter(stream))
        assert [v.field for v in caught.value.violations] == ["after_revision"]
    _untouched(service, [])


# -- property: the handler's verdict on a request is exactly `domain.requests`' ----------------

_ids = st.one_of(
    st.just(""),
    st.text(max_size=8),
    st.text(min_size=199, max_size=202, alphabet="k"),
    st.sampled_from(["nul\x00", "surrogate\udc80"]),
)
_answers = st.lists(
    st.builds(
        comms_pb2.AskQuestionAnswer,
        question_id=st.sampled_from(["db", "x", "", "q" * 201]),
        chosen_option_ids=st.lists(st.sampled_from(["0", "1", "", "\x00"]), max_size=3),
        custom_text=st.sampled_from(["", "typed", "x" * 10_001, "n\x00"]),
    ),
    max_size=3,
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ask_id=_ids, answers=_answers, reason=st.sampled_from(["", "why", "r" * 501, "\x00"]))
async def test_answers_reach_the_store_exactly_when_the_request_is_well_formed(
    service: Service,
    ask_id: str,
    answers: list[comms_pb2.AskQuestionAnswer],
    reason: str,
) -> None:
    human = service.world.human
    for rpc, check, call in (
        (
            "answer_ask",
            lambda: requests.check_respond_to_ask(
                comms_pb2.RespondToAskRequest(ask_id=ask_id, answers=answers)
            ),
            lambda: service.respond(human, ask_id, answers),
        ),
        (
            "decline_ask",
            lambda: requests.check_decline_ask(
                comms_pb2.DeclineAskRequest(ask_id=ask_id, reason=reason)
            ),
            lambda: service.decline(human, ask_id, reason),
        ),
        (
            "close_ask",
            lambda: requests.check_close_ask(
                agent_pb2.CloseAskRequest(
                    ask_id=ask_id, status=S.ASK_STATUS_TIMED_OUT, reason=reason, answers=answers
                )
            ),
            lambda: service.close(ask_id, S.ASK_STATUS_TIMED_OUT, reason, answers),
        ),
    ):
        try:
            check()
        except InvalidArgumentError:
            well_formed = False
        except ValueError:  # protobuf refuses the surrogate itself: no request to send
            continue
        else:
            well_formed = True
        service.store.calls.clear()
        refused_as_malformed = False
        try:
            await call()
        except InvalidArgumentError:
            refused_as_malformed = True
        except Exception:  # noqa: BLE001, S110 - NOT_FOUND etc.: the store was asked
            pass
        # No ask exists, so only a malformed request can be INVALID_ARGUMENT here.
        assert refused_as_malformed == (not well_formed), rpc
        assert (rpc in service.store.calls) == well_formed, rpc
