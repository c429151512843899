"""The rules a store runs under its lock, handed to it by the service as pure functions.

A request that passed `domain.requests` can still be refused by what is stored: an ask may
be final, answers may not fit its questions, an update may not carry the stored ask ids.
Those rules must be judged on the state the store holds under its channel lock, so the store
calls them there, but it does not own them: the service builds a judge per request and
passes it in (`Store.answer_ask(actor, ask_id, judge_answer(...))`). A judge reads the ask as
stored and returns what to write, or None for an identical retry (the store then returns the
ask as it is and writes nothing), or raises the domain error that refuses the request.

Guard order (docs/spec.md §4): the store checks visibility (step 3) and participation or
authorship (step 4) itself, because they are facts about accounts; a judge then applies
"already final" (step 5) before "the answers fit the ask" (step 6).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from compass_core.ask_status import is_final
from compass_server.domain.answers import answered_questions, is_identical_answer, validate_answers
from compass_server.domain.blocks import check_ask_update, with_minted_ask_ids
from compass_server.domain.deliveries import (
    is_identical_delivery,
    reported_message,
    undeliverable_message,
)
from compass_server.domain.errors import FailedPreconditionError, InvalidArgumentError
from compass_server.domain.outcomes import (
    is_identical_close,
    is_identical_decline,
    outcome_message,
)
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

AnswerState: TypeAlias = list[tuple[str, list[str], str]]
"""Answers to store: (question_id, chosen option ids, custom_text), one per question in
question order (`answers.answered_questions`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """What a store writes to a PENDING ask: its new status, the reason, and the answers
    (ANSWERED, or TIMED_OUT with the runtime's picks; None otherwise)."""

    status: comms_pb2.AskStatus
    reason: str = ""
    answers: AnswerState | None = None


Judge: TypeAlias = "Callable[[comms_pb2.Ask], Outcome | None]"
"""Judges an ask as stored: the outcome to write, None for an identical retry, or raises
(`FailedPreconditionError`: final; `InvalidArgumentError`: answers that do not fit)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """What a store writes as an ANSWERED or DECLINED ask's delivery receipt (the reporting
    account and the time are the store's: who calls, and when it writes)."""

    state: comms_pb2.DeliveryState
    detail: str
    payload: str


DeliveryJudge: TypeAlias = "Callable[[comms_pb2.Ask], Delivery | None]"
"""Judges an ask as stored for a receipt: the receipt to write, None for an identical repeat
of the stored one, or raises `FailedPreconditionError` (nothing to deliver, or another
receipt is stored)."""

UpdateRule: TypeAlias = "Callable[[Sequence[comms_pb2.Ask], Sequence[comms_pb2.MessageBlock]], list[comms_pb2.MessageBlock]]"
"""Judges an UpdateMessage's blocks against the message's stored asks: raises if they do not
fit, else returns the blocks to store (copies)."""


def fit_update(
    stored: Sequence[comms_pb2.Ask], blocks: Sequence[comms_pb2.MessageBlock]
) -> list[comms_pb2.MessageBlock]:
    """The positional rule for a message's asks (`blocks.ask_update_violations`), run by the
    store under the channel lock; the blocks it accepts come back as copies in which an
    unminted retry of a stored ask carries that ask's id (`blocks.with_minted_ask_ids`)."""
    check_ask_update(stored, blocks)
    return with_minted_ask_ids(stored, blocks)


def _fitting(ask: comms_pb2.Ask, answers: Sequence[comms_pb2.AskQuestionAnswer]) -> AnswerState:
    violations = validate_answers(ask, answers)
    if violations:
        raise InvalidArgumentError("the answers do not fit the ask", violations)
    return answered_questions(ask, answers)


def judge_answer(account_id: str, answers: Sequence[comms_pb2.AskQuestionAnswer]) -> Judge:
    """RespondToAsk steps 5-6 for `answers` from `account_id`."""

    def judge(ask: comms_pb2.Ask) -> Outcome | None:
        if is_final(ask):  # step 5: only an identical answer by the same account passes
            if ask.status == comms_pb2.ASK_STATUS_ANSWERED and is_identical_answer(
                ask, account_id, answers
            ):
                return None
            raise FailedPreconditionError(outcome_message(ask))
        return Outcome(status=comms_pb2.ASK_STATUS_ANSWERED, answers=_fitting(ask, answers))

    return judge


def judge_decline(account_id: str, reason: str) -> Judge:
    """DeclineAsk: a pending ask becomes DECLINED; an identical retry passes."""

    def judge(ask: comms_pb2.Ask) -> Outcome | None:
        if is_final(ask):
            if is_identical_decline(ask, account_id, reason):
                return None
            raise FailedPreconditionError(outcome_message(ask))
        return Outcome(status=comms_pb2.ASK_STATUS_DECLINED, reason=reason)

    return judge


def judge_close(
    account_id: str,
    status: comms_pb2.AskStatus,
    reason: str,
    answers: Sequence[comms_pb2.AskQuestionAnswer],
) -> Judge:
    """CloseAsk: WITHDRAWN, or TIMED_OUT with answers that must fit the ask; an identical
    retry passes."""

    def judge(ask: comms_pb2.Ask) -> Outcome | None:
        if is_final(ask):
            if is_identical_close(ask, account_id, status, reason, answers):
                return None
            raise FailedPreconditionError(outcome_message(ask))
        fitted = _fitting(ask, answers) if status == comms_pb2.ASK_STATUS_TIMED_OUT else None
        return Outcome(status=status, reason=reason, answers=fitted)

    return judge


def judge_delivery(
    account_id: str, state: comms_pb2.DeliveryState, detail: str, payload: str
) -> DeliveryJudge:
    """ReportDelivery: the first receipt of an ANSWERED or DECLINED ask is written; an
    identical repeat (same state, detail, payload, account) passes; anything else is
    FAILED_PRECONDITION."""

    def judge(ask: comms_pb2.Ask) -> Delivery | None:
        if ask.HasField("delivery"):
            if is_identical_delivery(ask, account_id, state, detail, payload):
                return None
            raise FailedPreconditionError(reported_message(ask))
        refusal = undeliverable_message(ask)
        if refusal is not None:
            raise FailedPreconditionError(refusal)
        return Delivery(state=state, detail=detail, payload=payload)

    return judge
