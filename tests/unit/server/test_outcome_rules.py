"""Pure rules of ask outcomes: request checks, outcome messages, identical repeats."""

from __future__ import annotations

import pytest

from compass_server import domain
from compass_server.domain.errors import InvalidArgumentError
from gen.compass.v1 import comms_pb2

S = comms_pb2


def _ask(**fields: object) -> comms_pb2.Ask:
    ask = comms_pb2.Ask(
        ask_id="ask_1",
        questions=[comms_pb2.AskQuestion(question_id="db", options=[comms_pb2.AskOption(id="0")])],
    )
    for name, value in fields.items():
        setattr(ask, name, value)
    return ask


def _pick(option: str = "0") -> comms_pb2.AskQuestionAnswer:
    return comms_pb2.AskQuestionAnswer(question_id="db", chosen_option_ids=[option])


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (S.ASK_STATUS_ANSWERED, "the ask is already answered"),
        (S.ASK_STATUS_DECLINED, "the ask was declined by Ada"),
        (S.ASK_STATUS_WITHDRAWN, "the ask was withdrawn by the agent"),
        (S.ASK_STATUS_TIMED_OUT, "the ask timed out"),
        (S.ASK_STATUS_EXPIRED, "the ask expired"),
    ],
)
def test_outcome_messages_name_the_outcome(status: int, message: str) -> None:
    ask = _ask(status=status, closed_by_name="Ada")
    assert domain.is_final(ask)
    assert domain.outcome_message(ask) == message


def test_pending_and_unspecified_are_not_final() -> None:
    assert not domain.is_final(_ask(status=S.ASK_STATUS_PENDING))
    assert not domain.is_final(_ask())


@pytest.mark.parametrize(
    ("status", "reason", "answers", "fields"),
    [
        (S.ASK_STATUS_UNSPECIFIED, "", (), {"status"}),
        (S.ASK_STATUS_PENDING, "", (), {"status"}),
        (S.ASK_STATUS_ANSWERED, "", (), {"status"}),
        (S.ASK_STATUS_DECLINED, "", (), {"status"}),
        (S.ASK_STATUS_EXPIRED, "", (), {"status"}),
        (S.ASK_STATUS_WITHDRAWN, "", (_pick(),), {"answers"}),
        (S.ASK_STATUS_WITHDRAWN, "x" * 501, (), {"reason"}),
        (S.ASK_STATUS_WITHDRAWN, "\x00", (), {"reason"}),
        (
            S.ASK_STATUS_TIMED_OUT,
            "",
            (comms_pb2.AskQuestionAnswer(question_id="db", custom_text="t" * 10_001),),
            {"answers[0].custom_text"},
        ),
    ],
)
def test_malformed_close_requests(
    status: int, reason: str, answers: tuple[comms_pb2.AskQuestionAnswer, ...], fields: set[str]
) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        domain.check_close_request("ask_1", status, reason, answers)
    assert {v.field for v in raised.value.violations} == fields


def test_well_formed_close_and_decline_requests_pass() -> None:
    domain.check_close_request("ask_1", S.ASK_STATUS_WITHDRAWN, "x" * 500, ())
    domain.check_close_request("ask_1", S.ASK_STATUS_TIMED_OUT, "", (_pick(),))
    domain.check_decline_request("ask_1", "x" * 500)
    with pytest.raises(InvalidArgumentError):
        domain.check_decline_request("", "")
    with pytest.raises(InvalidArgumentError):
        domain.check_close_request("", S.ASK_STATUS_WITHDRAWN, "", ())


def test_identical_repeats() -> None:
    declined = _ask(status=S.ASK_STATUS_DECLINED, closed_by_account_id="acct_a", close_reason="no")
    assert domain.is_identical_decline(declined, "acct_a", "no")
    assert not domain.is_identical_decline(declined, "acct_b", "no")
    assert not domain.is_identical_decline(declined, "acct_a", "")
    withdrawn = _ask(status=S.ASK_STATUS_WITHDRAWN, closed_by_account_id="acct_g", close_reason="r")
    assert domain.is_identical_close(withdrawn, "acct_g", S.ASK_STATUS_WITHDRAWN, "r", ())
    assert not domain.is_identical_close(withdrawn, "acct_g", S.ASK_STATUS_TIMED_OUT, "r", ())
    assert not domain.is_identical_close(withdrawn, "acct_h", S.ASK_STATUS_WITHDRAWN, "r", ())
    timed_out = _ask(
        status=S.ASK_STATUS_TIMED_OUT,
        closed_by_account_id="acct_g",
        answered_by_account_id="acct_g",
    )
    timed_out.questions[0].chosen_option_ids.append("0")
    timed_out.questions[0].timed_out = True
    assert domain.is_identical_close(timed_out, "acct_g", S.ASK_STATUS_TIMED_OUT, "", [_pick()])
    assert not domain.is_identical_close(
        timed_out, "acct_g", S.ASK_STATUS_TIMED_OUT, "", [_pick("1")]
    )


@pytest.mark.parametrize(
    "field",
    ["status", "closed_by_account_id", "closed_by_name", "close_reason", "closed_at", "on_timeout"],
)
def test_a_new_ask_may_not_carry_server_written_lifecycle_fields(field: str) -> None:
    block = comms_pb2.MessageBlock(ask=_ask(ask_id=""))
    if field == "closed_at":
        block.ask.closed_at.seconds = 1
    elif field == "status":
        block.ask.status = S.ASK_STATUS_EXPIRED
    elif field == "on_timeout":
        block.ask.on_timeout = 9  # pyright: ignore[reportAttributeAccessIssue] - an unknown enum number
    else:
        setattr(block.ask, field, "x")
    assert {v.field for v in domain.block_violations([block], minted=False)} == {
        f"blocks[0].ask.{field}"
    }


def test_a_new_ask_may_carry_a_deadline_and_a_policy() -> None:
    block = comms_pb2.MessageBlock(ask=_ask(ask_id=""))
    block.ask.deadline.seconds = 1_900_000_000
    block.ask.on_timeout = S.ASK_TIMEOUT_POLICY_PICK_RECOMMENDED
    block.ask.status = S.ASK_STATUS_PENDING
    assert domain.block_violations([block], minted=False) == []
    block.ask.deadline.seconds = 253_402_300_800  # after 9999-12-31
    assert {v.field for v in domain.block_violations([block], minted=False)} == {
        "blocks[0].ask.deadline"
    }
