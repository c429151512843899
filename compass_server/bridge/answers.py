"""An answered `compass.v1.Ask` -> the runtime's label-keyed ask reply (pure, SPEC §2.3).

The runtime's native ask result is keyed by option *label*, while Compass stores the chosen
option *ids*. The mapper minted those ids as the zero-based option index ("0", "1", ...), so
the label of a chosen id is `options[int(id)].label`. This module does that translation and
builds the reply frame the runtime's RPC mode reads on its stdin:

    {"type": "extension_ui_response", "id": <request id>,
     "answers": [{"id": <question id>, "selectedOptions": [<labels>], "customInput": <text>}]}

one answer per question, in question order; `customInput` only when the participant typed
something; a skipped question answers `selectedOptions: []`.

Nothing here raises on odd input: a chosen id that is not an index of the question's options,
or that repeats a label already chosen, is left out and reported in `problems`, because the
runtime rejects the whole reply for an unknown or repeated label.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gen.compass.v1 import comms_pb2

__all__ = ["RuntimeAnswers", "ask_reply", "build_answers", "cancelled_reply", "is_answered"]

# The ids the mapper mints: a canonical decimal index. `int()` alone would also accept " 1",
# "+1", "1_0" and non-ASCII digits, none of which the mapper ever produces.
_INDEX: Final = re.compile(r"0|[1-9][0-9]{0,8}")

RESPONSE_TYPE: Final = "extension_ui_response"


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeAnswers:
    """The `answers` list of an ask reply, and what had to be left out of it."""

    answers: tuple[dict[str, object], ...]
    """One JSON object per question, in order: `{"id", "selectedOptions", "customInput"?}`."""
    problems: tuple[str, ...] = ()
    """Why something was left out (e.g. `question 'db': chosen id '7' is not an option`)."""


def is_answered(ask: comms_pb2.Ask) -> bool:
    """Whether `ask` carries a participant's answer (the server writes who answered)."""
    return bool(ask.answered_by_account_id) or ask.HasField("answered_at")


def build_answers(ask: comms_pb2.Ask, order: Sequence[str] | None = None) -> RuntimeAnswers:
    """Translate an answered Ask into the runtime's answers.

    Args:
        ask: The answered Ask (as WatchAsk sends it).
        order: The question ids of the runtime's request, when they should decide the order
            (and the set) of the answers; default: the Ask's own questions in order. A
            requested id the Ask lacks is answered as skipped and reported.

    Returns:
        The answers, one per question, and the problems met on the way.
    """
    by_id = {question.question_id: question for question in ask.questions}
    ids = [question.question_id for question in ask.questions] if order is None else list(order)
    answers: list[dict[str, object]] = []
    problems: list[str] = []
    for question_id in ids:
        question = by_id.get(question_id)
        if question is None:
            problems.append(f"question {question_id!r} is not in the ask; answered as skipped")
            answers.append({"id": question_id, "selectedOptions": []})
            continue
        answers.append(_answer(question, problems))
    return RuntimeAnswers(answers=tuple(answers), problems=tuple(problems))


def _answer(question: comms_pb2.AskQuestion, problems: list[str]) -> dict[str, object]:
    options = question.options
    labels: list[str] = []
    for option_id in question.chosen_option_ids:
        index = int(option_id) if _INDEX.fullmatch(option_id) else -1
        if not 0 <= index < len(options):
            problems.append(
                f"question {question.question_id!r}: chosen id {option_id!r} is not an option index"
            )
            continue
        label = options[index].label
        if label in labels:
            problems.append(
                f"question {question.question_id!r}: chosen id {option_id!r} repeats label {label!r}"
            )
            continue
        labels.append(label)
    answer: dict[str, object] = {"id": question.question_id, "selectedOptions": labels}
    if question.custom_text:
        answer["customInput"] = question.custom_text
    return answer


def ask_reply(request_id: str, answers: RuntimeAnswers) -> dict[str, object]:
    """The reply frame answering the runtime's `extension_ui_request` (method `ask`)."""
    return {"type": RESPONSE_TYPE, "id": request_id, "answers": list(answers.answers)}


def cancelled_reply(request_id: str) -> dict[str, object]:
    """The reply frame that tells the runtime a dialog will not be answered."""
    return {"type": RESPONSE_TYPE, "id": request_id, "cancelled": True}
