"""What an Ask's status means (compass_core/ask_status.py): final, outcome, still to deliver,
and the names the server's columns, the webhooks, the MCP tools and the bridge's logs use."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from compass_core.ask_status import (
    DELIVERABLE_STATUSES,
    DELIVERY_STATE_NAMES,
    OPEN_STATUSES,
    STATUS_NAMES,
    delivery_state_name,
    is_answered,
    is_final,
    outcome,
    status_name,
    to_deliver,
)
from gen.compass.v1 import comms_pb2

S = comms_pb2
WITHDRAWN = S.ASK_STATUS_WITHDRAWN
TIMED_OUT = S.ASK_STATUS_TIMED_OUT

statuses = st.sampled_from(S.AskStatus.values())
states = st.sampled_from(S.DeliveryState.values())


def _ask(status: int, *, by: bool = False, at: bool = False, receipt: int | None = None) -> S.Ask:
    ask = S.Ask(status=S.AskStatus.Name(status))
    if by:
        ask.answered_by_account_id = "acc_human"
    if at:
        ask.answered_at.GetCurrentTime()
    if receipt is not None:
        ask.delivery.CopyFrom(S.AskDelivery(state=S.DeliveryState.Name(receipt)))
    return ask


def test_an_ask_is_final_in_any_status_but_pending_or_once_answered() -> None:
    ask = comms_pb2.Ask()
    assert not is_final(ask)
    ask.status = comms_pb2.ASK_STATUS_PENDING
    assert not is_final(ask)
    for status in (
        comms_pb2.ASK_STATUS_DECLINED,
        WITHDRAWN,
        TIMED_OUT,
        comms_pb2.ASK_STATUS_EXPIRED,
    ):
        ask.status = status
        assert is_final(ask)
        assert outcome(ask) == status
    legacy = comms_pb2.Ask(answered_by_account_id="acc")  # a server without status
    assert is_final(legacy)
    assert outcome(legacy) == comms_pb2.ASK_STATUS_ANSWERED


def test_answered_means_the_server_recorded_who_answered() -> None:
    ask = comms_pb2.Ask(answered_by_account_id="acc_human")
    assert is_answered(ask)
    ask.answered_by_account_id = ""
    assert not is_answered(ask)
    ask.answered_at.GetCurrentTime()
    assert is_answered(ask)


@given(status=statuses, by=st.booleans(), at=st.booleans())
def test_the_outcome_is_the_status_but_for_an_answer_without_one(
    status: int, by: bool, at: bool
) -> None:
    ask = _ask(status, by=by, at=at)
    legacy = status in {S.ASK_STATUS_UNSPECIFIED, S.ASK_STATUS_PENDING} and (by or at)
    assert outcome(ask) == (S.ASK_STATUS_ANSWERED if legacy else status)
    assert is_final(ask) == (legacy or status not in OPEN_STATUSES)


@given(status=statuses, by=st.booleans())
def test_a_stored_ask_is_final_by_its_status_alone(status: int, by: bool) -> None:
    """The server's reading: what its store can hold (a status always written, never an
    answer on a PENDING ask: the CHECK constraints of migrations 0001 and 0002) is final
    exactly when its status is not PENDING; the legacy twist never applies there."""
    if status == S.ASK_STATUS_UNSPECIFIED or (status == S.ASK_STATUS_PENDING and by):
        return  # the store cannot hold it
    ask = _ask(status, by=by, at=by)
    assert is_final(ask) == (status != S.ASK_STATUS_PENDING)


@given(status=statuses, receipt=st.none() | states)
def test_still_to_deliver_is_pending_or_answered_or_declined_without_a_receipt(
    status: int, receipt: int | None
) -> None:
    ask = _ask(status, receipt=receipt)
    expected = status == S.ASK_STATUS_PENDING or (
        status in {S.ASK_STATUS_ANSWERED, S.ASK_STATUS_DECLINED} and receipt is None
    )
    assert to_deliver(ask) == expected


def test_the_names_are_the_ones_stored_and_sent() -> None:
    """The `asks.status` and `asks.delivery_state` columns, the webhooks' payload and the MCP
    tools' `status` spell them so: they never change."""
    assert STATUS_NAMES == {
        S.ASK_STATUS_PENDING: "pending",
        S.ASK_STATUS_ANSWERED: "answered",
        S.ASK_STATUS_DECLINED: "declined",
        S.ASK_STATUS_WITHDRAWN: "withdrawn",
        S.ASK_STATUS_TIMED_OUT: "timed_out",
        S.ASK_STATUS_EXPIRED: "expired",
    }
    assert list(STATUS_NAMES.values()) == [
        "pending",
        "answered",
        "declined",
        "withdrawn",
        "timed_out",
        "expired",
    ]  # in the enum's order (the MCP result schema lists them so)
    assert DELIVERY_STATE_NAMES == {
        S.DELIVERY_STATE_DELIVERED: "delivered",
        S.DELIVERY_STATE_DELIVERED_WITH_CHANGES: "delivered_with_changes",
        S.DELIVERY_STATE_NOT_DELIVERED: "not_delivered",
    }
    assert {S.ASK_STATUS_ANSWERED, S.ASK_STATUS_DECLINED} == DELIVERABLE_STATUSES
    assert {S.ASK_STATUS_PENDING, S.ASK_STATUS_UNSPECIFIED} == OPEN_STATUSES


@given(status=statuses)
def test_a_status_name_is_the_enum_name_without_its_prefix(status: int) -> None:
    name = status_name(status)
    assert S.AskStatus.Name(status) == "ASK_STATUS_" + name.upper()
    assert name == STATUS_NAMES.get(status, "unspecified")


@given(state=states)
def test_a_delivery_state_name_is_the_enum_name_without_its_prefix(state: int) -> None:
    name = delivery_state_name(state)
    assert S.DeliveryState.Name(state) == "DELIVERY_STATE_" + name.upper()
    assert name == DELIVERY_STATE_NAMES.get(state, "unspecified")


@given(number=st.integers(min_value=-(2**31), max_value=2**31 - 1))
def test_a_number_that_is_no_status_has_no_name(number: int) -> None:
    if number in S.AskStatus.values():
        assert status_name(number)
    else:
        with pytest.raises(ValueError, match="has no name defined"):
            status_name(number)
    if number in S.DeliveryState.values():
        assert delivery_state_name(number)
    else:
        with pytest.raises(ValueError, match="has no name defined"):
            delivery_state_name(number)
