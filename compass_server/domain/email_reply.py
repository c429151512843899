"""TEMPORARY stand-in for the mailrules branch's reply grammar (the lead's merge replaces
this file): a two-rule grammar, `decline[: reason]` and, per question, an option number or
free text."""

from __future__ import annotations

from dataclasses import dataclass

from gen.compass.v1 import comms_pb2


@dataclass(frozen=True, slots=True)
class Answered:
    answers: tuple[comms_pb2.AskQuestionAnswer, ...]


@dataclass(frozen=True, slots=True)
class Declined:
    reason: str


@dataclass(frozen=True, slots=True)
class NotUnderstood:
    problems: tuple[str, ...]


def grammar_help(ask: comms_pb2.Ask) -> str:
    del ask
    return "Reply with an option's number, or your own words; or 'decline: <reason>'."


def read_reply(ask: comms_pb2.Ask, text: str) -> Answered | Declined | NotUnderstood:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if not first:
        return NotUnderstood(("the reply is empty",))
    if first.lower() == "decline" or first.lower().startswith("decline:"):
        return Declined(first.partition(":")[2].strip())
    if not ask.questions:
        return NotUnderstood(("the ask has no questions",))
    question = ask.questions[0]
    if first.isdigit():
        number = int(first)
        if not 1 <= number <= len(question.options):
            return NotUnderstood((f"there is no option {number}",))
        option = question.options[number - 1]
        answer = comms_pb2.AskQuestionAnswer(
            question_id=question.question_id, chosen_option_ids=[option.id]
        )
        return Answered((answer,))
    answer = comms_pb2.AskQuestionAnswer(question_id=question.question_id, custom_text=first)
    return Answered((answer,))
