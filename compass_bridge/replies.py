"""An answered `compass.v1.Ask` -> the runtime's label-keyed answers (pure, docs/spec.md §2.3).

The runtime's native ask result is keyed by option *label*, while Compass stores the chosen
option *ids*. The mapper minted those ids as the zero-based option index ("0", "1", ...), so
the label of a chosen id is `options[int(id)].label`. This module does that translation for
the two ways oh-my-pi's RPC mode asks.

A runtime that accepted `set_ask_dialog` sends one `method: "ask"` request per ask call,
answered at once (omp/frames.ask_reply):

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

from compass_core.jsonvalues import is_array, is_object
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "RuntimeAnswers",
    "RuntimeTimeout",
    "build_answers",
    "chosen_indexes",
    "runtime_timeout",
]

# The ids the mapper mints: a canonical decimal index. `int()` alone would also accept " 1",
# "+1", "1_0" and non-ASCII digits, none of which the mapper ever produces.
_INDEX: Final = re.compile(r"0|[1-9][0-9]{0,8}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeAnswers:
    """The `answers` list of an ask reply, and what had to be left out of it."""

    answers: tuple[dict[str, object], ...]
    """One JSON object per question, in order: `{"id", "selectedOptions", "customInput"?}`."""
    problems: tuple[str, ...] = ()
    """Why something was left out (e.g. `question 'db': chosen id '7' is not an option`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeTimeout:
    """What the runtime handed the model when its own `ask.timeout` answered an ask."""

    answers: tuple[comms_pb2.AskQuestionAnswer, ...]
    """One per question of the Ask, in its order: the auto-picks as option ids."""
    problems: tuple[str, ...] = ()


def runtime_timeout(ask: comms_pb2.Ask, result: object) -> RuntimeTimeout | None:
    """The runtime's timeout answers in an ask tool call's result, or None when its own
    timeout did not answer it.

    oh-my-pi's ask tool (src/tools/ask.ts) returns `{content, details}`; `details` is
    `{results: [{id, selectedOptions, customInput?, timedOut?}, ...]}` for several questions,
    the flat `{selectedOptions, customInput?, timedOut?}` for one. The labels are mapped back
    to the Ask's option ids (the first unused option with that label).
    """
    details = result.get("details") if is_object(result) else None
    if not is_object(details):
        return None
    entries: list[dict[str, object]] = []
    raw_results = details.get("results")
    if is_array(raw_results):
        entries = [e for e in raw_results if is_object(e)]
    elif len(ask.questions) == 1 and "selectedOptions" in details:
        entries = [{**details, "id": ask.questions[0].question_id}]
    if not any(entry.get("timedOut") is True for entry in entries):
        return None
    by_id = {entry.get("id"): entry for entry in entries}
    answers: list[comms_pb2.AskQuestionAnswer] = []
    problems: list[str] = []
    for question in ask.questions:
        entry = by_id.get(question.question_id)
        answer = comms_pb2.AskQuestionAnswer(question_id=question.question_id)
        if entry is None:
            problems.append(f"question {question.question_id!r}: not in the runtime's result")
            answers.append(answer)
            continue
        labels = entry.get("selectedOptions")
        for label in labels if is_array(labels) else []:
            index = next(
                (
                    i
                    for i, option in enumerate(question.options)
                    if option.label == label and str(i) not in answer.chosen_option_ids
                ),
                None,
            )
            if index is None:
                problems.append(
                    f"question {question.question_id!r}: {label!r} is not one of its options"
                )
                continue
            answer.chosen_option_ids.append(str(index))
        custom = entry.get("customInput")
        if isinstance(custom, str) and custom:
            answer.custom_text = custom
        answers.append(answer)
    return RuntimeTimeout(answers=tuple(answers), problems=tuple(problems))


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
    labels = [question.options[index].label for index in chosen_indexes(question, problems)]
    answer: dict[str, object] = {"id": question.question_id, "selectedOptions": labels}
    if question.custom_text:
        answer["customInput"] = question.custom_text
    return answer


def chosen_indexes(question: comms_pb2.AskQuestion, problems: list[str]) -> list[int]:
    """The option indexes of the chosen ids, in the participant's order; each bad or
    label-repeating id is left out and reported."""
    options = question.options
    indexes: list[int] = []
    labels: set[str] = set()
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
        labels.add(label)
        indexes.append(index)
    return indexes
