"""compass_server.observe.metrics without a server: an injected clock, retries counted once, the
JSON formatter."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

from compass_server.observe.access_log import JsonFormatter
from compass_server.observe.metrics import Metrics
from compass_server.store import AskRow
from gen.compass.v1 import comms_pb2


def _value(metrics: Metrics, name: str, labels: dict[str, str] | None = None) -> float:
    value = metrics.registry.get_sample_value(name, labels or {})
    assert value is not None, name
    return value


def test_times_come_from_the_injected_clock_and_retries_count_once() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)

    def clock() -> datetime:
        return now

    metrics = Metrics(clock)
    ask = comms_pb2.Ask(
        ask_id="ask_1",
        status=comms_pb2.ASK_STATUS_PENDING,
        questions=[comms_pb2.AskQuestion(question_id="q")],
    )
    metrics.asks_seen([ask])
    metrics.asks_seen([ask])  # an idempotent AppendMessage retry
    now += timedelta(seconds=7)
    metrics.viewed(["ask_1"])
    now += timedelta(seconds=3)
    metrics.viewed(["ask_1"])
    answered = comms_pb2.Ask()
    answered.CopyFrom(ask)
    answered.status = comms_pb2.ASK_STATUS_ANSWERED
    answered.questions[0].custom_text = "free"
    row = AskRow(ask=answered, message_id="msg_1", channel_id="ch_1")
    metrics.outcome(row)
    metrics.outcome(row)  # an identical RespondToAsk retry
    assert _value(metrics, "compass_asks_created_total") == 1
    assert _value(metrics, "compass_ask_time_to_first_view_seconds_count") == 1
    assert _value(metrics, "compass_ask_time_to_first_view_seconds_sum") == 7
    assert _value(metrics, "compass_ask_time_to_answer_seconds_sum") == 10
    assert _value(metrics, "compass_ask_outcomes_total", {"status": "answered"}) == 1
    assert _value(metrics, "compass_questions_answered_other_total") == 1
    assert Metrics(clock).registry.get_sample_value("compass_asks_created_total") == 0


def test_json_formatter_writes_one_object_with_the_access_fields() -> None:
    record = logging.LogRecord("compass.access", logging.INFO, __file__, 1, "%s", ("x",), None)
    record.__dict__.update(request_id="r1", method="GetAsk", code="ok", duration_ms=1.5)
    line = JsonFormatter().format(record)
    assert "\n" not in line
    doc = json.loads(line)
    assert doc["message"] == "x"
    assert (doc["request_id"], doc["method"], doc["code"], doc["duration_ms"]) == (
        "r1",
        "GetAsk",
        "ok",
        1.5,
    )


def test_an_update_that_carries_a_final_ask_does_not_count_it_again() -> None:
    metrics = Metrics(lambda: datetime(2026, 1, 1, tzinfo=UTC))
    ask = comms_pb2.Ask(ask_id="ask_1", status=comms_pb2.ASK_STATUS_PENDING)
    metrics.asks_seen([ask])
    answered = comms_pb2.Ask(ask_id="ask_1", status=comms_pb2.ASK_STATUS_ANSWERED)
    metrics.outcome(AskRow(ask=answered, message_id="msg_1", channel_id="ch_1"))
    # The agent edits its message's text after the answer: the same (final) ask comes back.
    metrics.asks_seen([answered])
    # An ask answered through another process is final when this one first sees it.
    metrics.asks_seen([comms_pb2.Ask(ask_id="ask_2", status=comms_pb2.ASK_STATUS_DECLINED)])
    assert _value(metrics, "compass_asks_created_total") == 1


def test_what_it_remembers_about_asks_is_bounded() -> None:
    metrics = Metrics(lambda: datetime(2026, 1, 1, tzinfo=UTC), remember=100)
    for n in range(1000):
        ask = comms_pb2.Ask(ask_id=f"ask_{n}", status=comms_pb2.ASK_STATUS_PENDING)
        metrics.asks_seen([ask])
        metrics.viewed([ask.ask_id])
        if n % 2:
            ask.status = comms_pb2.ASK_STATUS_ANSWERED
            metrics.outcome(AskRow(ask=ask, message_id="m", channel_id="c"))
        metrics.swept([f"gone_{n}"])
    assert metrics.remembered() <= 3 * 100
    assert _value(metrics, "compass_asks_created_total") == 1000
    assert _value(metrics, "compass_ask_outcomes_total", {"status": "expired"}) == 1000
    assert _value(metrics, "compass_sweeps_total", {"result": "ok"}) == 1000
    metrics.swept(None)
    assert _value(metrics, "compass_sweeps_total", {"result": "failed"}) == 1


def _receipt(
    ask_id: str,
    status: comms_pb2.AskStatus,
    state: comms_pb2.DeliveryState,
    since: datetime,
    reported: datetime,
) -> AskRow:
    ask = comms_pb2.Ask(ask_id=ask_id, status=status)
    (ask.answered_at if status == comms_pb2.ASK_STATUS_ANSWERED else ask.closed_at).FromDatetime(
        since
    )
    ask.delivery.state = state
    ask.delivery.reported_at.FromDatetime(reported)
    return AskRow(ask=ask, message_id="msg_1", channel_id="ch_1")


def test_receipts_count_once_by_state_and_time_answer_to_receipt_from_stored_times() -> None:
    # The clock is far from the stored times: the histogram reads only what was stored, so
    # an ask answered through another process (or before a restart) is timed all the same.
    metrics = Metrics(lambda: datetime(2040, 1, 1, tzinfo=UTC))
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    answered = _receipt(
        "ask_1",
        comms_pb2.ASK_STATUS_ANSWERED,
        comms_pb2.DELIVERY_STATE_NOT_DELIVERED,
        t0,
        t0 + timedelta(seconds=2),
    )
    metrics.delivery(answered)
    metrics.delivery(answered)  # an identical ReportDelivery retry
    declined = _receipt(
        "ask_2",
        comms_pb2.ASK_STATUS_DECLINED,
        comms_pb2.DELIVERY_STATE_DELIVERED,
        t0,
        t0 + timedelta(milliseconds=250),
    )
    metrics.delivery(declined)
    for state, count in {
        "delivered": 1,
        "delivered_with_changes": 0,
        "not_delivered": 1,
    }.items():
        assert _value(metrics, "compass_ask_deliveries_total", {"state": state}) == count, state
    assert _value(metrics, "compass_ask_answer_to_receipt_seconds_count") == 2
    assert _value(metrics, "compass_ask_answer_to_receipt_seconds_sum") == 2.25
    assert _value(metrics, "compass_ask_answer_to_receipt_seconds_bucket", {"le": "0.25"}) == 1
    # An ask without a receipt (a bug's row) counts nothing.
    metrics.delivery(AskRow(ask=comms_pb2.Ask(ask_id="ask_3"), message_id="m", channel_id="c"))
    assert _value(metrics, "compass_ask_answer_to_receipt_seconds_count") == 2
