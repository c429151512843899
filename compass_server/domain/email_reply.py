"""The reply grammar: what a person's email reply to an ask means (docs/answering/email.md).

Pure: an `Ask` and the reply's new text (`mail_in.reply_text`) in, one of three results out:

- `Answered`: one `AskQuestionAnswer` per question of the ask, in question order (a skip is an
  entry with no chosen id and no text), ready for RespondToAsk: whatever `read_reply` answers
  passes `answers.check_answer_request` and `answers.validate_answers`;
- `Declined`: the person declines the ask, with a reason or "";
- `NotUnderstood`: nothing is answered; one plain sentence per problem, for the reply email.

The grammar, one question: the option's number (`2`), several numbers for a multi-select
question (`1, 3`), an option's label (case, accents' composed forms and runs of white space
do not matter), `skip`, or any other text as the person's own words. Several questions: one
line per question, `1: 2`, `2: 1, 3`, `2: <own words>`, `3: skip`; a line that names no
question continues the own words of the line above; questions not named are skipped.
A one-question reply may also use that line form ("1: 2"). Anywhere: `decline` or
`decline: <reason>` declines. A multi-select question that takes free text with its picks
takes both as `1, 3 + <own words>`. After a pick (numbers, a label, `skip`) the lines that
name no question, a sign-off ("Thanks, Ada"), are not read; after own words they are part
of the words.

A number may end with a full stop ("2."). "2 + words" on a single-select question is
refused (free text replaces a pick there). What wins when one reply could mean two things: a number is an option number (a label made
of digits is picked by its number); a label beats the words `skip` and `decline` (such an
option is picked; `decline:` with its colon still declines); a value that is neither a
number, a label nor `skip` is own words.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final

from compass_core.limits import MAX_CLOSE_REASON_LENGTH, NUL
from compass_server.domain import ask_text
from compass_server.domain.limits import MAX_CUSTOM_TEXT_LENGTH
from gen.compass.v1 import comms_pb2


@dataclass(frozen=True, slots=True, kw_only=True)
class Answered:
    """The answers to send as RespondToAsk: exactly one per question of the ask, in order; a
    skip is an entry with no chosen ids and empty custom_text."""

    answers: tuple[comms_pb2.AskQuestionAnswer, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Declined:
    """The person declines the ask; `reason` is "" when none was given."""

    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NotUnderstood:
    """Nothing is answered: one plain sentence per problem found."""

    problems: tuple[str, ...]


Reading = Answered | Declined | NotUnderstood

SKIP: Final = "skip"
_DECLINE: Final = re.compile(r"decline[.!]?(?:\s*:(?P<reason>.*))?", re.IGNORECASE)
_LINE: Final = re.compile(r"\s*(?P<number>\d+)\s*:(?P<value>.*)")
_NUMBERS: Final = re.compile(r"\d+(?:\s*,\s*\d+|\s+\d+)*\.?")
_PICKS_AND_TEXT: Final = re.compile(r"(?P<numbers>\d+(?:\s*,\s*\d+)*)\s*\+(?P<text>.*)", re.DOTALL)
_MAX_NUMBER_DIGITS: Final = 6
"""A longer number names no question or option (and `int` of thousands of digits raises)."""


def read_reply(ask: comms_pb2.Ask, text: str) -> Reading:
    """What the reply `text` (the person's new text only) means for `ask`. Never raises."""
    problem = _text_problem(text)
    if problem:
        return NotUnderstood(problems=(problem,))
    text = _bare(text.replace("\r\n", "\n").replace("\r", "\n"))
    if not text:
        return NotUnderstood(problems=("The reply is empty.",))
    if not ask.questions:
        return NotUnderstood(problems=("This ask has no question to answer.",))
    lines = [_bare(line) for line in text.split("\n") if _bare(line)]
    declined = _declined(ask, lines)
    if declined is not None:
        return declined
    if len(ask.questions) == 1:
        question = ask.questions[0]
        one = _Value(question=question, number=0, text=_one_value(question, lines, text))
        return _result(ask, {0: one})
    return _several(ask, lines)


def normalize_label(text: str) -> str:
    """A label or reply as the grammar compares them: NFKC, case-folded, white space runs as
    one space, trimmed of white space and invisible marks as replies are (`_bare`: "  POSTGRES\\n
    16\\u200b" and "postgres 16" are the same)."""
    return " ".join(_bare(unicodedata.normalize("NFKC", text)).casefold().split())


def grammar_help(ask: comms_pb2.Ask) -> str:
    """How to reply to `ask`, in plain text: the one-question or the several-questions form,
    with only the forms this ask's questions take."""
    questions = list(ask.questions)
    multi = any(q.allow_multiple and q.options for q in questions)
    own = any(ask_text.takes_free_text(q) for q in questions)
    both = any(_takes_picks_and_text(q) for q in questions)
    skippable = any(not q.answer_required for q in questions)
    required = any(q.answer_required for q in questions)
    lines = [
        "How to reply: write your answer at the top of your reply (the quoted email is ignored)."
    ]
    if len(questions) <= 1:
        question = questions[0] if questions else comms_pb2.AskQuestion()
        if question.options:
            example = min(2, len(question.options))
            lines.append(f'- the number of an option, e.g. "{example}", or the option\'s words;')
            if multi:
                lines.append('- several numbers for several options, e.g. "1, 3";')
            if both:
                lines.append('- options and your own words together, e.g. "1, 3 + and Redis";')
            if own:
                lines.append("- anything else is your answer in your own words;")
        else:
            lines.append("- your answer, in your own words;")
        if skippable:
            lines.append('- "skip" to leave it unanswered;')
        lines.append('- "decline", or "decline: <reason>", if you will not answer.')
        return "\n".join(lines)
    lines.append("One line per question: its number, a colon, your answer:")
    lines.append("    1: 2          (question 1: option 2)")
    if multi:
        lines.append("    2: 1, 3       (several options, where a question takes several)")
    if both:
        lines.append("    2: 1, 3 + and Redis   (options and your own words together)")
    if own:
        lines.append("    2: your own words   (where a question takes free text)")
    if skippable:
        lines.append("    3: skip")
        lines.append("Questions you leave out are skipped.")
    if required:
        lines.append('Questions marked "answer required" cannot be skipped.')
    lines.append('Write "decline", or "decline: <reason>", if you will not answer.')
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Value:
    question: comms_pb2.AskQuestion
    number: int
    text: str


def _text_problem(text: object) -> str:
    if not isinstance(text, str):
        return "The reply is not text."
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "The reply is not valid text."
    if NUL in text:
        return "The reply holds a NUL character, which cannot be stored."
    return ""


def _declined(ask: comms_pb2.Ask, lines: list[str]) -> Declined | NotUnderstood | None:
    """The reply declines when its first line is `decline` or `decline: <reason>` (the reason
    runs on over the following lines) and, with one question, is not an option's label."""
    match = _DECLINE.fullmatch(lines[0])
    if match is None:
        return None
    if match["reason"] is None and len(ask.questions) == 1:
        labels = {normalize_label(option.label) for option in ask.questions[0].options}
        if normalize_label(lines[0]) in labels:
            return None
    reason = "\n".join([(match["reason"] or "").strip(), *lines[1:]]).strip()
    if len(reason) > MAX_CLOSE_REASON_LENGTH:
        return NotUnderstood(
            problems=(
                f"The reason for declining is longer than {MAX_CLOSE_REASON_LENGTH} characters.",
            )
        )
    return Declined(reason=reason)


def _several(ask: comms_pb2.Ask, lines: list[str]) -> Reading:
    count = len(ask.questions)
    values: dict[int, _Value] = {}
    problems: list[str] = []
    last: int | None = None
    named: set[int] = set()
    troubled: set[int] = set()
    # Lines after the last question's line that do not go on with its own words are a
    # sign-off ("Thanks, Ada"), not read.
    tail = max((i for i, line in enumerate(lines) if _LINE.fullmatch(line)), default=-1)
    more: dict[int, list[str]] = {}  # the lines that go on with a question's own words
    for index, line in enumerate(lines):
        match = _LINE.fullmatch(line)
        if match is None:
            if last is not None:
                more[last].append(line)
                continue
            if index > tail:
                break
            problems.append(
                f'The line "{_shown(line)}" names no question: write "1: 2" for question 1, option 2.'
            )
            last = None
            continue
        last = None
        digits, value = match["number"], match["value"].strip()
        number = _number(digits)
        if number is None or not 1 <= number <= count:
            problems.append(
                f"There is no question {_shown(digits)} (this ask has questions 1-{count})."
            )
            continue
        if number in named:
            problems.append(f"Question {number} is named more than once.")
            troubled.add(number - 1)
            continue
        named.add(number)
        if not value:
            problems.append(
                f'Question {number} has no answer after its colon (write "skip" to skip it).'
            )
            troubled.add(number - 1)
            continue
        values[number - 1] = _Value(ask.questions[number - 1], number, value)
        # Only own words go on over the lines that follow (decided once, on the first line).
        last = number - 1 if _continues(values[number - 1]) else None
        more[number - 1] = []
    if not named and not problems:
        problems.append(
            f'This ask has {count} questions: answer each on a line of its own, as "1: 2".'
        )
    for at, extra_lines in more.items():
        if extra_lines and at in values:
            first = values[at]
            values[at] = _Value(first.question, first.number, "\n".join([first.text, *extra_lines]))
    result = _result(ask, values, frozenset(troubled))
    if problems:
        extra = result.problems if isinstance(result, NotUnderstood) else ()
        return NotUnderstood(problems=(*problems, *extra))
    return result


def _one_value(question: comms_pb2.AskQuestion, lines: list[str], text: str) -> str:
    """The answer of a one-question reply: its first line when that line picks (numbers, a
    label, skip; the lines after it, a sign-off, are not read), else the whole text as own
    words. A first line "1: VALUE" (the several-questions form) reads as VALUE."""
    first = lines[0]
    match = _LINE.fullmatch(first)
    if match is not None and _number(match["number"]) == 1 and _kind(question, first) != "label":
        value = _bare(match["value"])
        if value and (len(lines) == 1 or _kind(question, value) in _PICKS):
            return value
    if len(lines) > 1 and _kind(question, first) in _PICKS:
        return first
    return text


_PICKS: Final = frozenset({"numbers", "label", "skip"})
_INVISIBLE: Final = "\u200b\u200c\u200d\u200e\u200f\u2060\ufeff\u00ad"
"""Zero-width and direction marks, a byte-order mark, a soft hyphen: clients leave them at
the ends of lines; they are trimmed with the white space."""


def _bare(text: str) -> str:
    """`text` without white space or invisible marks at its ends."""
    while True:
        trimmed = text.strip().strip(_INVISIBLE)
        if trimmed == text:
            return text
        text = trimmed


def _takes_picks_and_text(question: comms_pb2.AskQuestion) -> bool:
    """Whether `question` takes picks and own words together and the agent gets both: a
    multi-select question whose free text is accepted (INSTEAD_OF_PICKS would hand the agent
    only the words; the browser warns there, an email cannot, so it is refused)."""
    return (
        bool(question.options)
        and question.allow_multiple
        and question.free_text in (comms_pb2.FREE_TEXT_UNSPECIFIED, comms_pb2.FREE_TEXT_ACCEPTED)
    )


def _continues(value: _Value) -> bool:
    """Whether a line naming no question may continue `value`: only own words do."""
    return _kind(value.question, value.text) in ("text", "picks+text")


def _result(
    ask: comms_pb2.Ask, values: dict[int, _Value], troubled: frozenset[int] = frozenset()
) -> Reading:
    """The answers for `values` (by question index), or every problem; a required question
    is said to need an answer only when it has no problem of its own (`troubled`)."""
    answers: list[comms_pb2.AskQuestionAnswer] = []
    problems: list[str] = []
    for index, question in enumerate(ask.questions):
        value = values.get(index)
        before = len(problems)
        if value is None:
            answer = comms_pb2.AskQuestionAnswer(question_id=question.question_id)
        else:
            answer = _answer(value, problems)
        if len(problems) > before or index in troubled:
            answers.append(answer)
            continue
        if question.answer_required and not answer.chosen_option_ids and not answer.custom_text:
            problems.append(f"{_name(ask, index + 1)} needs an answer; it cannot be skipped.")
        answers.append(answer)
    if problems:
        return NotUnderstood(problems=tuple(problems))
    return Answered(answers=tuple(answers))


def _kind(question: comms_pb2.AskQuestion, text: str) -> str:
    """How the grammar reads `text` for `question`: "numbers", "label", "skip",
    "picks+text" or "text"."""
    if question.options and _NUMBERS.fullmatch(text):
        return "numbers"
    norm = normalize_label(text)
    if any(normalize_label(option.label) == norm for option in question.options):
        return "label"
    if norm == SKIP:
        return "skip"
    if question.options and _PICKS_AND_TEXT.fullmatch(text):
        return "picks+text"
    return "text"


def _answer(value: _Value, problems: list[str]) -> comms_pb2.AskQuestionAnswer:
    question, text = value.question, value.text
    answer = comms_pb2.AskQuestionAnswer(question_id=question.question_id)
    name = _name_of(value)
    kind = _kind(question, text)
    if kind == "skip":
        return answer
    if kind == "numbers":
        tokens = re.split(r"[\s,]+", text.removesuffix("."))
        answer.chosen_option_ids.extend(_picks(value, tokens, problems))
        return answer
    if kind == "label":
        norm = normalize_label(text)
        matches = [i for i, o in enumerate(question.options) if normalize_label(o.label) == norm]
        if len(matches) > 1:
            numbers = ", ".join(str(i + 1) for i in matches)
            problems.append(
                f'In {_lower(name)}, "{_shown(text)}" is the label of options {numbers}: reply with the number.'
            )
            return answer
        answer.chosen_option_ids.append(question.options[matches[0]].id)
        return answer
    own = text
    if kind == "picks+text":
        match = _PICKS_AND_TEXT.fullmatch(text)
        assert match is not None  # noqa: S101 -- _kind just matched it
        own = match["text"].strip()
        if ask_text.takes_free_text(question) and not question.allow_multiple:
            problems.append(f"{name} takes one option or your own words, not both.")
            return answer
        if question.free_text == comms_pb2.FREE_TEXT_INSTEAD_OF_PICKS:
            problems.append(
                f"{name} cannot take options and your own words together: the agent would get "
                "only the words. Send one or the other."
            )
            return answer
        if ask_text.takes_free_text(question):
            answer.chosen_option_ids.extend(
                _picks(value, re.split(r"\s*,\s*", match["numbers"].strip()), problems)
            )
    if not ask_text.takes_free_text(question):
        span = f"1-{len(question.options)}"
        problems.append(f"{name} takes options only: reply with an option number ({span}).")
        return answer
    if len(own) > MAX_CUSTOM_TEXT_LENGTH:
        problems.append(
            f"The answer to {_lower(name)} is longer than {MAX_CUSTOM_TEXT_LENGTH} characters."
        )
        return answer
    if not own:
        problems.append(f'{name} has no words after its "+".')
        return answer
    answer.custom_text = own
    return answer


def _picks(value: _Value, tokens: list[str], problems: list[str]) -> list[str]:
    question = value.question
    name = _name_of(value)
    count = len(question.options)
    picked: list[str] = []
    for token in tokens:
        number = _number(token)
        if number is None or not 1 <= number <= count:
            span = "1" if count == 1 else f"1-{count}"
            problems.append(f"{name} has no option {_shown(token)} (it has {span}).")
            continue
        option_id = question.options[number - 1].id
        if option_id not in picked:
            picked.append(option_id)
    if len(picked) > 1 and not question.allow_multiple:
        problems.append(f"{name} takes one option, not {len(picked)}.")
    return picked


def _number(digits: str) -> int | None:
    digits = digits.strip()
    if not digits or len(digits) > _MAX_NUMBER_DIGITS:
        return None
    try:
        return int(digits)
    except ValueError:
        return None


def _name(ask: comms_pb2.Ask, number: int) -> str:
    return "The question" if len(ask.questions) == 1 else f"Question {number}"


def _name_of(value: _Value) -> str:
    # The one-question form calls its question "The question"; `number` is 0 only there.
    return "The question" if value.number == 0 else f"Question {value.number}"


def _lower(name: str) -> str:
    return name[0].lower() + name[1:]


def _shown(text: str, most: int = 40) -> str:
    """A piece of the reply quoted back: one line, clipped."""
    return ask_text.clip(ask_text.one_line(text), most)
