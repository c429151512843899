"""RespondToAsk: the request's shape and how answers must fit the ask (docs/spec.md §4)."""

from __future__ import annotations

from typing import TYPE_CHECKING

# The block limits live with the agent side, whose mapper must refuse exactly what this
# module refuses; they are re-exported here for the server's own callers.
from compass_core.limits import (
    MAX_ID_LENGTH,
)
from compass_server.domain.errors import (
    FieldViolation,
    InvalidArgumentError,
)
from compass_server.domain.limits import (
    MAX_ANSWERS,
    MAX_CHOSEN_PER_ANSWER,
    MAX_CUSTOM_TEXT_LENGTH,
    nul,
    question_label,
    quote,
    too_long,
)
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

# ---------------------------------------------------------------------------------------------
# RespondToAsk


def check_answer_request(ask_id: str, answers: Sequence[comms_pb2.AskQuestionAnswer]) -> None:
    """docs/spec.md §4 step 2: reject a malformed or oversize RespondToAsk before any lookup.

    Only the request's own shape is checked here (it needs no ask); `validate_answers` checks
    it against the ask (step 6).

    Raises:
        InvalidArgumentError: empty or oversize ask_id, too many answers, too many chosen ids
            in one answer, an oversize id or custom_text, or text holding NUL; with every
            violation found.
    """
    violations: list[FieldViolation] = []
    if not ask_id:
        violations.append(FieldViolation(field="ask_id", description="ask_id is empty"))
    elif len(ask_id) > MAX_ID_LENGTH:
        violations.append(too_long("ask_id", "ask_id", MAX_ID_LENGTH))
    violations.extend(nul("ask_id", ask_id))
    if len(answers) > MAX_ANSWERS:
        violations.append(
            FieldViolation(
                field="answers",
                description=f"at most {MAX_ANSWERS} answers per request, got {len(answers)}",
            )
        )
    for index, answer in enumerate(answers[: MAX_ANSWERS + 1]):
        path = f"answers[{index}]"
        qid = answer.question_id
        if len(qid) > MAX_ID_LENGTH:
            violations.append(too_long(f"{path}.question_id", "question_id", MAX_ID_LENGTH))
            qid = ""  # do not echo an oversize id into every other message
        violations.extend(nul(f"{path}.question_id", answer.question_id))
        if len(answer.chosen_option_ids) > MAX_CHOSEN_PER_ANSWER:
            violations.append(
                FieldViolation(
                    field=f"{path}.chosen_option_ids",
                    description=f"at most {MAX_CHOSEN_PER_ANSWER} chosen ids per answer, got {len(answer.chosen_option_ids)}",
                    question_id=qid,
                )
            )
        for pick_index, option_id in enumerate(
            answer.chosen_option_ids[: MAX_CHOSEN_PER_ANSWER + 1]
        ):
            pick_path = f"{path}.chosen_option_ids[{pick_index}]"
            if len(option_id) > MAX_ID_LENGTH:
                violations.append(too_long(pick_path, "option id", MAX_ID_LENGTH, qid))
            violations.extend(nul(pick_path, option_id, qid))
        if len(answer.custom_text) > MAX_CUSTOM_TEXT_LENGTH:
            violations.append(
                too_long(f"{path}.custom_text", "custom_text", MAX_CUSTOM_TEXT_LENGTH, qid)
            )
        violations.extend(nul(f"{path}.custom_text", answer.custom_text, qid))
    if violations:
        raise InvalidArgumentError("malformed RespondToAsk request", violations)


def validate_answers(
    ask: comms_pb2.Ask, answers: Sequence[comms_pb2.AskQuestionAnswer]
) -> list[FieldViolation]:
    """docs/spec.md §4 step 6: every way `answers` fails to answer `ask`.

    Rules: the answers' question ids are exactly the ask's (none missing, repeated or
    unknown); chosen ids are offered options of their question, without repeats; at most one
    chosen id unless the question allows multiple; on a single-select question a chosen id
    and custom_text exclude each other; custom_text is refused on a question whose `free_text`
    is REFUSED (the agent could not receive it). An entry with no chosen id and empty
    custom_text is an accepted skip, except on an `answer_required` question (the agent
    cannot receive it unanswered); a question without options is answered by custom_text
    alone.

    Args:
        ask: the ask being answered (its questions; answer state is ignored).
        answers: the request's entries, in request order.

    Returns:
        One violation per problem, each naming its question (`question "db": ...` in the
        description and `question_id` set); `field` is the request path. Empty means valid.
    """
    questions = {question.question_id: question for question in ask.questions}
    violations: list[FieldViolation] = []
    first_entry: dict[str, int] = {}
    for index, answer in enumerate(answers):
        path = f"answers[{index}]"
        qid = answer.question_id
        question = questions.get(qid)
        if not qid:
            violations.append(
                FieldViolation(
                    field=f"{path}.question_id",
                    description=f"{path}: question_id is empty; name the question this answers",
                )
            )
            continue
        if question is None:
            violations.append(
                FieldViolation(
                    field=f"{path}.question_id",
                    description=f"{question_label(qid)}: not a question of this ask",
                    question_id=qid,
                )
            )
            continue
        if qid in first_entry:
            violations.append(
                FieldViolation(
                    field=f"{path}.question_id",
                    description=f"{question_label(qid)}: answered more than once (also answers[{first_entry[qid]}])",
                    question_id=qid,
                )
            )
        else:
            first_entry[qid] = index
        violations.extend(answer_violations(question, answer, path))
    violations.extend(
        FieldViolation(
            field="answers",
            description=f"{question_label(qid)}: no answer given (send an empty entry to skip it)",
            question_id=qid,
        )
        for qid in questions
        if qid not in first_entry
    )
    return violations


def answer_violations(
    question: comms_pb2.AskQuestion, answer: comms_pb2.AskQuestionAnswer, path: str
) -> list[FieldViolation]:
    qid = question.question_id
    offered = {option.id for option in question.options}
    violations: list[FieldViolation] = []
    picked: set[str] = set()
    for index, option_id in enumerate(answer.chosen_option_ids):
        field = f"{path}.chosen_option_ids[{index}]"
        if option_id not in offered:
            violations.append(
                FieldViolation(
                    field=field,
                    description=f"{question_label(qid)}: {quote(option_id)} is not an option of this question",
                    question_id=qid,
                )
            )
        elif option_id in picked:
            violations.append(
                FieldViolation(
                    field=field,
                    description=f"{question_label(qid)}: option {quote(option_id)} is chosen more than once",
                    question_id=qid,
                )
            )
        picked.add(option_id)
    if question.answer_required and not answer.chosen_option_ids and not answer.custom_text:
        violations.append(
            FieldViolation(
                field=path,
                description=f"{question_label(qid)}: the agent needs an answer to this question; it cannot be skipped",
                question_id=qid,
            )
        )
    refused = question.free_text == comms_pb2.FREE_TEXT_REFUSED and bool(answer.custom_text)
    if refused:
        violations.append(
            FieldViolation(
                field=f"{path}.custom_text",
                description=f"{question_label(qid)}: the agent cannot receive free text for this question; choose an option, or send it empty to skip the question",
                question_id=qid,
            )
        )
    if not question.allow_multiple:
        if len(answer.chosen_option_ids) > 1:
            violations.append(
                FieldViolation(
                    field=f"{path}.chosen_option_ids",
                    description=f"{question_label(qid)}: only one option may be chosen, got {len(answer.chosen_option_ids)}",
                    question_id=qid,
                )
            )
        if answer.chosen_option_ids and answer.custom_text and not refused:
            violations.append(
                FieldViolation(
                    field=f"{path}.custom_text",
                    description=f"{question_label(qid)}: on a single-select question free text replaces a pick; send a chosen option or custom_text, not both",
                    question_id=qid,
                )
            )
    return violations


def is_identical_answer(
    ask: comms_pb2.Ask, account_id: str, answers: Sequence[comms_pb2.AskQuestionAnswer]
) -> bool:
    """Whether `answers` from `account_id` repeat the answer already stored in `ask` exactly.

    Identical means: the same account answered, and the request has one entry per stored
    question with the same chosen ids (compared as sets, no repeats) and the same custom_text.
    Such a repeat is a safe retry (docs/spec.md §4 step 5) and succeeds without a write.
    """
    if not ask.answered_by_account_id or ask.answered_by_account_id != account_id:
        return False
    stored = {
        question.question_id: (sorted(question.chosen_option_ids), question.custom_text)
        for question in ask.questions
    }
    sent = {
        answer.question_id: (sorted(answer.chosen_option_ids), answer.custom_text)
        for answer in answers
    }
    # Equal dicts from a list with a repeated question_id would hide the repeat; compare sizes.
    return len(answers) == len(stored) and sent == stored


def answered_questions(
    ask: comms_pb2.Ask, answers: Iterable[comms_pb2.AskQuestionAnswer]
) -> list[tuple[str, list[str], str]]:
    """The answer state to store for a validated `answers`: (question_id, chosen, custom_text).

    One entry per question of `ask`, in question order; chosen ids keep the request's order.
    Call only after `validate_answers` returned no violation.
    """
    by_question = {answer.question_id: answer for answer in answers}
    result: list[tuple[str, list[str], str]] = []
    for question in ask.questions:
        answer = by_question[question.question_id]
        result.append((question.question_id, list(answer.chosen_option_ids), answer.custom_text))
    return result
