"""Pure rules of delivery receipts (ReportDelivery): the request check and the judge."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from compass_server.domain import requests
from compass_server.domain.errors import FailedPreconditionError, InvalidArgumentError
from compass_server.domain.verdicts import Delivery, judge_delivery
from gen.compass.v1 import agent_pb2, comms_pb2

S = comms_pb2
AGENT = "acct_agent"


def _request(
    ask_id: str = "ask_1",
    state: int = S.DELIVERY_STATE_DELIVERED,
    detail: str = "",
    payload: str = "",
) -> agent_pb2.ReportDeliveryRequest:
    return agent_pb2.ReportDeliveryRequest(
        ask_id=ask_id,
        state=state,  # pyright: ignore[reportArgumentType] - any int: proto3 enums are open, a client can send an undefined state
        detail=detail,
        payload=payload,
    )


def _fields(request: agent_pb2.ReportDeliveryRequest) -> list[str]:
    try:
        requests.check_report_delivery(request)
    except InvalidArgumentError as exc:
        message, fields = exc.message, [v.field for v in exc.violations]
    else:
        return []
    assert message == "malformed ReportDelivery request"
    return fields


@pytest.mark.parametrize(
    ("request_", "fields"),
    [
        pytest.param(_request(), [], id="delivered"),
        pytest.param(_request(detail="all of it", payload='{"a":1}'), [], id="delivered-detail"),
        pytest.param(
            _request(state=S.DELIVERY_STATE_DELIVERED_WITH_CHANGES, detail="skip sent as ''"),
            [],
            id="with-changes",
        ),
        pytest.param(
            _request(state=S.DELIVERY_STATE_NOT_DELIVERED, detail="form cancelled"),
            [],
            id="not-delivered",
        ),
        pytest.param(_request(detail="d" * 1000, payload="p" * 65536), [], id="at-the-limits"),
        pytest.param(_request(ask_id=""), ["ask_id"], id="no-ask-id"),
        pytest.param(_request(ask_id="a" * 201), ["ask_id"], id="long-ask-id"),
        pytest.param(_request(ask_id="ask\x00"), ["ask_id"], id="nul-ask-id"),
        pytest.param(_request(state=S.DELIVERY_STATE_UNSPECIFIED), ["state"], id="no-state"),
        pytest.param(_request(state=9), ["state"], id="undefined-state"),
        pytest.param(
            _request(state=S.DELIVERY_STATE_NOT_DELIVERED), ["detail"], id="not-delivered-no-why"
        ),
        pytest.param(
            _request(state=S.DELIVERY_STATE_DELIVERED_WITH_CHANGES, detail=" \n\t"),
            ["detail"],
            id="with-changes-blank-why",
        ),
        pytest.param(_request(detail="d" * 1001), ["detail"], id="long-detail"),
        pytest.param(_request(detail="a\x00"), ["detail"], id="nul-detail"),
        pytest.param(_request(payload="p" * 65537), ["payload"], id="long-payload"),
        pytest.param(_request(payload="{\x00}"), ["payload"], id="nul-payload"),
        pytest.param(
            _request(ask_id="", state=S.DELIVERY_STATE_NOT_DELIVERED, payload="\x00"),
            ["ask_id", "detail", "payload"],
            id="every-problem-at-once",
        ),
    ],
)
def test_report_delivery_request_checks(
    request_: agent_pb2.ReportDeliveryRequest, fields: list[str]
) -> None:
    assert _fields(request_) == fields


_texts = st.one_of(
    st.text(max_size=5),
    st.sampled_from(
        ["", " ", "\x00", "d" * 1000, "d" * 1001, " " * 1001, "p" * 65536, "p" * 65537]
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    ask_id=st.sampled_from(["", "ask_1", "a" * 200, "a" * 201, "\x00"]),
    state=st.integers(min_value=-1, max_value=5),
    detail=_texts,
    payload=_texts,
)
def test_the_request_check_matches_an_independent_statement_of_the_rules(
    ask_id: str, state: int, detail: str, payload: str
) -> None:
    expected: list[str] = []
    if not ask_id or len(ask_id) > 200 or "\x00" in ask_id:
        expected.append("ask_id")
    if state not in (1, 2, 3):
        expected.append("state")
    # One violation per problem: a detail can be both too long and blank, say.
    expected += ["detail"] * ("\x00" in detail)
    expected += ["detail"] * (len(detail) > 1000)
    expected += ["detail"] * (state in (2, 3) and not detail.strip())
    expected += ["payload"] * ("\x00" in payload)
    expected += ["payload"] * (len(payload) > 65536)
    assert _fields(_request(ask_id, state, detail, payload)) == expected


# -- the judge ---------------------------------------------------------------------------------


def _ask(
    status: comms_pb2.AskStatus, delivery: comms_pb2.AskDelivery | None = None
) -> comms_pb2.Ask:
    ask = comms_pb2.Ask(ask_id="ask_1", status=status, closed_by_name="Ada")
    if delivery is not None:
        ask.delivery.CopyFrom(delivery)
    return ask


@pytest.mark.parametrize("status", [S.ASK_STATUS_ANSWERED, S.ASK_STATUS_DECLINED])
def test_a_final_answer_or_decline_takes_its_first_receipt(status: comms_pb2.AskStatus) -> None:
    delivery = judge_delivery(AGENT, S.DELIVERY_STATE_NOT_DELIVERED, "cancelled", "{}")(
        _ask(status)
    )
    assert delivery == Delivery(
        state=S.DELIVERY_STATE_NOT_DELIVERED, detail="cancelled", payload="{}"
    )


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (S.ASK_STATUS_UNSPECIFIED, "the ask is still pending: nothing delivered yet"),
        (S.ASK_STATUS_PENDING, "the ask is still pending: nothing delivered yet"),
        (
            S.ASK_STATUS_WITHDRAWN,
            "the ask was withdrawn by the agent: there is no answer to deliver",
        ),
        (S.ASK_STATUS_TIMED_OUT, "the ask timed out: there is no answer to deliver"),
        (S.ASK_STATUS_EXPIRED, "the ask expired: there is no answer to deliver"),
    ],
)
def test_only_an_answered_or_declined_ask_has_something_to_deliver(
    status: comms_pb2.AskStatus, message: str
) -> None:
    judge = judge_delivery(AGENT, S.DELIVERY_STATE_DELIVERED, "", "")
    with pytest.raises(FailedPreconditionError) as raised:
        judge(_ask(status))
    assert raised.value.message == message


STORED = comms_pb2.AskDelivery(
    state=S.DELIVERY_STATE_DELIVERED_WITH_CHANGES,
    detail="the skip went as empty text",
    payload='{"db":""}',
    reported_by_account_id=AGENT,
    reported_by_name="Coding Agent",
)


def test_an_identical_repeat_of_the_stored_receipt_writes_nothing() -> None:
    judge = judge_delivery(
        AGENT, S.DELIVERY_STATE_DELIVERED_WITH_CHANGES, "the skip went as empty text", '{"db":""}'
    )
    assert judge(_ask(S.ASK_STATUS_ANSWERED, STORED)) is None


@pytest.mark.parametrize(
    ("account", "state", "detail", "payload"),
    [
        (AGENT, S.DELIVERY_STATE_DELIVERED, "the skip went as empty text", '{"db":""}'),
        (AGENT, S.DELIVERY_STATE_DELIVERED_WITH_CHANGES, "other words", '{"db":""}'),
        (AGENT, S.DELIVERY_STATE_DELIVERED_WITH_CHANGES, "the skip went as empty text", "{}"),
        (
            "acct_other",
            S.DELIVERY_STATE_DELIVERED_WITH_CHANGES,
            "the skip went as empty text",
            '{"db":""}',
        ),
    ],
)
def test_a_different_receipt_cannot_replace_the_stored_one(
    account: str, state: comms_pb2.DeliveryState, detail: str, payload: str
) -> None:
    judge = judge_delivery(account, state, detail, payload)
    with pytest.raises(FailedPreconditionError) as raised:
        judge(_ask(S.ASK_STATUS_ANSWERED, STORED))
    assert raised.value.message == (
        "the ask's delivery was already reported (delivered with changes); "
        "a receipt cannot be changed"
    )


def test_a_stored_receipt_is_judged_before_anything_else() -> None:
    # A receipt exists only on an answered or declined ask; the stored one decides.
    judge = judge_delivery(AGENT, S.DELIVERY_STATE_NOT_DELIVERED, "gone", "")
    with pytest.raises(FailedPreconditionError, match="already reported"):
        judge(_ask(S.ASK_STATUS_DECLINED, STORED))
