"""An ask as plain text, for the channels that cannot show the form: a push notification's
title, body and buttons; an email's numbered form (`email_text`). Pure: an `Ask` in, strings out.

Everything here is agent text and must be shown as text, never as markup. The pieces:

- `headline`: who asks where ("Coding Agent asks in #general");
- `summary`: the first question, and how many more there are ("Which database? (+2 more)");
- `one_tap`: the options a person can pick without opening the form (the ask is ONE
  single-select question with options), the recommended one first, at most `most`;
- `numbered`: a question's options as "1. Postgres (recommended)", for a reply by number;
- `notes`: what a question takes, in words ("choose one", "free text allowed", ...);
- `one_line`: a text on one line (every line break and control character a space), for a
  subject or any other header;
- `clip`: a text cut to a number of characters or of UTF-8 bytes, with an ellipsis.

The same words are in the browser (ui/src/page.js `firstQuestion`, `moreQuestions`).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Final

from gen.compass.v1 import comms_pb2

ELLIPSIS: Final = "…"
NO_QUESTION: Final = "A question"
"""Shown for a question with neither text nor header (the store refuses such an ask, but a
renderer never fails)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    """One option of a question, as a person picks it."""

    option_id: str
    label: str
    recommended: bool


def question_text(question: comms_pb2.AskQuestion) -> str:
    """A question's words: its text, else its header."""
    return question.question or question.header or NO_QUESTION


def first_question(ask: comms_pb2.Ask) -> str:
    return question_text(ask.questions[0]) if ask.questions else NO_QUESTION


def more_questions(ask: comms_pb2.Ask) -> int:
    """How many questions follow the first."""
    return max(0, len(ask.questions) - 1)


def summary(ask: comms_pb2.Ask, *, max_chars: int | None = None) -> str:
    """The first question and "(+N more)" when there are more; the question is clipped to
    `max_chars` with the note kept whole."""
    more = more_questions(ask)
    note = f" (+{more} more)" if more else ""
    text = first_question(ask)
    if max_chars is not None:
        text = clip(text, max(1, max_chars - len(note)))
    return text + note


def headline(asker: str, channel: str) -> str:
    """Who asks where: "<asker> asks in #<channel>"."""
    return f"{asker or 'An agent'} asks in #{channel}"


def choices(question: comms_pb2.AskQuestion) -> tuple[Choice, ...]:
    """A question's options in order, each with whether the agent recommends it."""
    recommended = question.recommended if question.HasField("recommended") else -1
    return tuple(
        Choice(option_id=option.id, label=option.label, recommended=index == recommended)
        for index, option in enumerate(question.options)
    )


def one_tap(ask: comms_pb2.Ask, *, most: int) -> tuple[Choice, ...]:
    """The options a person may pick straight from a notice: only when the ask is exactly one
    single-select question with options; the recommended option first, then the others in
    order, at most `most`. Otherwise () (the form must be opened)."""
    if len(ask.questions) != 1:
        return ()
    question = ask.questions[0]
    if question.allow_multiple or not question.options:
        return ()
    ordered = sorted(choices(question), key=lambda c: not c.recommended)  # stable
    return tuple(ordered[:most])


def numbered(question: comms_pb2.AskQuestion) -> tuple[str, ...]:
    """A question's options as numbered lines, 1 first: "1. Postgres (recommended)"."""
    return tuple(
        f"{n}. {choice.label}{' (recommended)' if choice.recommended else ''}"
        for n, choice in enumerate(choices(question), start=1)
    )


CHOOSE_ONE: Final = "choose one"
CHOOSE_ANY: Final = "choose one or more"
OWN_WORDS: Final = "answer in your own words"
FREE_TEXT_ALLOWED: Final = "free text allowed"
OPTIONS_ONLY: Final = "options only"
REQUIRED: Final = "answer required"


def takes_free_text(question: comms_pb2.AskQuestion) -> bool:
    """Whether the agent can receive a person's own words for `question` (every FreeText but
    REFUSED; a question without options always can: RespondToAsk's rule, domain/answers.py)."""
    return question.free_text != comms_pb2.FREE_TEXT_REFUSED or not question.options


def notes(question: comms_pb2.AskQuestion) -> tuple[str, ...]:
    """What `question` takes, in words: ("choose one", "free text allowed") for a
    single-select question the agent takes free text for, ("choose one or more", "options
    only", "answer required"), ("answer in your own words",) for one without options."""
    if not question.options:
        words = [OWN_WORDS]
    else:
        words = [CHOOSE_ANY if question.allow_multiple else CHOOSE_ONE]
        words.append(FREE_TEXT_ALLOWED if takes_free_text(question) else OPTIONS_ONLY)
    if question.answer_required:
        words.append(REQUIRED)
    return tuple(words)


def one_line(text: str) -> str:
    """`text` on one line: every run of white space, line breaks (CR, LF, U+2028, NEL, ...)
    and control or format characters becomes one space, and the ends are trimmed. What goes
    into a mail header must be this (a CR or LF there would start a header of its own)."""
    pieces: list[str] = []
    gap = False
    for char in text:
        if char.isspace() or unicodedata.category(char) in _BREAKING:
            gap = True
            continue
        if gap and pieces:
            pieces.append(" ")
        gap = False
        pieces.append(char)
    return "".join(pieces)


_BREAKING: Final = frozenset({"Cc", "Cs", "Zl", "Zp"})
"""Categories `one_line` turns into a space: controls, unpaired surrogates, line and
paragraph separators (white space, which the rest of these are, is caught by isspace)."""


def clip(text: str, max_chars: int) -> str:
    """`text`, at most `max_chars` characters: cut with an ellipsis when longer."""
    if len(text) <= max_chars:
        return text
    return text[: max(0, max_chars - 1)].rstrip() + ELLIPSIS


def clip_bytes(text: str, max_bytes: int) -> str:
    """`text`, at most `max_bytes` bytes in UTF-8: cut on a character boundary with an
    ellipsis when longer ("" when not even the ellipsis fits)."""
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text
    room = max_bytes - len(ELLIPSIS.encode("utf-8"))
    if room < 0:
        return ""
    return encoded[:room].decode("utf-8", errors="ignore").rstrip() + ELLIPSIS
