"""What Compass sends by email, as text and HTML (docs/answering/email.md): an ask, the answer
to a reply that was not understood, and the answer to a reply to an ask that had already ended.

Pure: an `Ask` and a few names in, a `MailBody` out; the headers beyond the subject (From,
Reply-To, Message-ID, Auto-Submitted, ...) are the sender's. The words come from
`ask_text` (the numbered options, what a question takes) and the reply grammar from
`email_reply.grammar_help`, so every channel says them alike. Every agent or person string is
text: the subject is one line (no CR or LF can reach a header), and the HTML escapes each of
them and loads nothing from outside (no images, no style sheets, no scripts).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from compass_core import ask_status
from compass_server.domain import ask_text
from compass_server.domain.email_reply import grammar_help
from compass_server.domain.limits import STATUS_BY_NAME
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Sequence

SUBJECT_PREFIX: Final = "[Compass]"
MAX_SUBJECT_CHARS: Final = 140
"""A subject is clipped to this (the first question may be long; a header line is not)."""
MAX_DESCRIPTION_CHARS: Final = 300
"""An option's description is shown on one line, clipped to this."""
_INDENT: Final = "   "


@dataclass(frozen=True, slots=True, kw_only=True)
class MailBody:
    """One email's subject (one line) and its two alternatives."""

    subject: str
    text: str
    html: str


def ask_mail(ask: comms_pb2.Ask, *, asker: str, channel: str, link: str) -> MailBody:
    """The email of a pending `ask`: "[Compass] <asker>: <first question>"; the questions
    numbered (one question stands alone), each with what it takes and its numbered options,
    the recommended one marked; the deep `link`; how to reply."""
    who = ask_text.one_line(asker) or "An agent"
    subject = _subject(f"{who}: {ask_text.one_line(ask_text.first_question(ask))}")
    headline = ask_text.one_line(ask_text.headline(who, ask_text.one_line(channel))) + ":"
    text = "\n\n".join(
        [headline, _form_text(ask), f"Answer in the browser: {link}", grammar_help(ask)]
    )
    body = "".join(
        [
            _p(headline),
            _form_html(ask),
            _link_html(link),
            _pre(grammar_help(ask)),
        ]
    )
    return MailBody(subject=subject, text=text + "\n", html=_page(subject, body))


def not_understood_mail(
    ask: comms_pb2.Ask, problems: Sequence[str], *, link: str, replying_to: str = ""
) -> MailBody:
    """The answer to a reply that could not be read: what was not understood (nothing was
    answered), the questions again, and how to reply. With `replying_to`, the Subject of the
    person's reply, the subject is "Re: " and it (`reply_subject`), so that mail clients
    keep it in the ask's thread; else "[Compass] Not understood: <first question>"."""
    subject = reply_subject(replying_to) or _subject(f"Not understood: {_first(ask)}")
    opening = "Your reply could not be understood, so nothing was answered:"
    said = [f"- {ask_text.one_line(problem)}" for problem in problems] or [
        "- The reply could not be read."
    ]
    text = "\n\n".join(
        [
            opening + "\n" + "\n".join(said),
            _form_text(ask),
            f"Answer in the browser: {link}",
            grammar_help(ask),
        ]
    )
    body = "".join(
        [
            _p(opening),
            "<ul>" + "".join(f"<li>{_e(line[2:])}</li>" for line in said) + "</ul>",
            _form_html(ask),
            _link_html(link),
            _pre(grammar_help(ask)),
        ]
    )
    return MailBody(subject=subject, text=text + "\n", html=_page(subject, body))


def ended_mail(
    ask: comms_pb2.Ask, *, outcome: str, by: str, link: str, replying_to: str = ""
) -> MailBody:
    """The answer to a reply to an ask that had already ended: how it ended and by whom.

    Args:
        ask: the ask replied to.
        outcome: its status by name, as `ask_status.status_name` spells it ("answered",
            "declined", "withdrawn", "timed_out", "expired").
        by: who ended it (the answering or closing account's name); "" when nobody did.
        link: the ask's deep link.
        replying_to: the Subject of the person's reply, when known: the subject is then
            "Re: " and it (`reply_subject`); else "[Compass] Already answered: <first
            question>" and the like.
    """
    sentence = ended_sentence(outcome, by)
    title = _ENDED_TITLES.get(_status(outcome), "Closed")
    subject = reply_subject(replying_to) or _subject(f"{title}: {_first(ask)}")
    closing = "Your reply was not used."
    text = "\n\n".join([f"{sentence} {closing}", f"See it in the browser: {link}"])
    body = _p(f"{sentence} {closing}") + _link_html(link, words="See it in the browser")
    return MailBody(subject=subject, text=text + "\n", html=_page(subject, body))


def reply_subject(subject: str) -> str:
    """The subject of Compass's answer to a message with `subject`: "Re: " and it, on one line
    and clipped ("" when `subject` is blank; an existing "Re:" is not doubled)."""
    line = ask_text.one_line(subject)
    if not line:
        return ""
    if not _RE.match(line):
        line = f"Re: {line}"
    return ask_text.clip(line, MAX_SUBJECT_CHARS)


_RE: Final = re.compile(r"(?:re|aw|sv|antw)\s*:", re.IGNORECASE)


def how_it_ended(ask: comms_pb2.Ask) -> tuple[str, str]:
    """`ended_mail`'s `outcome` and `by` for a stored `ask`: its status by name
    (`ask_status`) and who answered or closed it ("" for the server's expiry)."""
    status = ask_status.outcome(ask)
    who = ask.answered_by_name if status == comms_pb2.ASK_STATUS_ANSWERED else ask.closed_by_name
    return ask_status.status_name(status), who


def ended_sentence(outcome: str, by: str) -> str:
    """ "This ask was already answered by Ada." and the like, for `outcome` (a status name)."""
    who = ask_text.one_line(by)
    status = _status(outcome)
    if status == comms_pb2.ASK_STATUS_ANSWERED:
        return (
            f"This ask was already answered by {who}." if who else "This ask was already answered."
        )
    if status == comms_pb2.ASK_STATUS_DECLINED:
        return f"This ask was declined by {who}." if who else "This ask was declined."
    if status == comms_pb2.ASK_STATUS_WITHDRAWN:
        return f"This ask was withdrawn by {who or 'the agent'}: it stopped waiting for an answer."
    if status == comms_pb2.ASK_STATUS_TIMED_OUT:
        return "This ask timed out: the agent went on without an answer."
    if status == comms_pb2.ASK_STATUS_EXPIRED:
        return "This ask expired before anyone answered it."
    return "This ask is no longer open."


_ENDED_TITLES: Final[dict[int, str]] = {
    comms_pb2.ASK_STATUS_ANSWERED: "Already answered",
    comms_pb2.ASK_STATUS_DECLINED: "Declined",
    comms_pb2.ASK_STATUS_WITHDRAWN: "Withdrawn",
    comms_pb2.ASK_STATUS_TIMED_OUT: "Timed out",
    comms_pb2.ASK_STATUS_EXPIRED: "Expired",
}


# ---------------------------------------------------------------------------------------------
# The form


def _form_text(ask: comms_pb2.Ask) -> str:
    """The questions as plain text: numbered when there are several."""
    several = len(ask.questions) > 1
    blocks: list[str] = []
    for number, question in enumerate(ask.questions, start=1):
        words = _question_lines(question)
        lines = [f"{number}. {words[0]}" if several else words[0]]
        lines.extend((_INDENT if several else "") + line for line in words[1:])
        pad = _INDENT if several else ""
        lines.append(f"{pad}({', '.join(ask_text.notes(question))})")
        for option, line in zip(question.options, _options(question), strict=True):
            lines.append(pad + _INDENT + line)
            description = _description(option)
            if description:
                lines.append(pad + _INDENT * 2 + description)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) or ask_text.NO_QUESTION


def _form_html(ask: comms_pb2.Ask) -> str:
    several = len(ask.questions) > 1
    parts: list[str] = []
    for number, question in enumerate(ask.questions, start=1):
        words = "<br>".join(_e(line) for line in _question_lines(question))
        title = f"{number}. {words}" if several else words
        parts.append(f'<p style="margin:1em 0 0.25em"><strong>{title}</strong><br>')
        parts.append(f"<small>({_e(', '.join(ask_text.notes(question)))})</small></p>")
        if question.options:
            parts.append('<p style="margin:0 0 0 1.5em">')
            rows: list[str] = []
            for option, line in zip(question.options, _options(question), strict=True):
                row = _e(line)
                description = _description(option)
                if description:
                    row += f'<br><small style="color:#555">{_e(description)}</small>'
                rows.append(row)
            parts.append("<br>".join(rows) + "</p>")
    return "".join(parts) or _p(ask_text.NO_QUESTION)


def _question_lines(question: comms_pb2.AskQuestion) -> list[str]:
    """A question's words, line by line (blank lines dropped, each line on one line)."""
    lines = [ask_text.one_line(line) for line in ask_text.question_text(question).splitlines()]
    return [line for line in lines if line] or [ask_text.NO_QUESTION]


def _options(question: comms_pb2.AskQuestion) -> list[str]:
    """The numbered option lines (`ask_text.numbered`), each on one line."""
    return [ask_text.one_line(line) for line in ask_text.numbered(question)]


def _description(option: comms_pb2.AskOption) -> str:
    return ask_text.clip(ask_text.one_line(option.description), MAX_DESCRIPTION_CHARS)


# ---------------------------------------------------------------------------------------------
# Pieces


def _subject(rest: str) -> str:
    return ask_text.clip(ask_text.one_line(f"{SUBJECT_PREFIX} {rest}"), MAX_SUBJECT_CHARS)


def _first(ask: comms_pb2.Ask) -> str:
    return ask_text.one_line(ask_text.first_question(ask))


def _status(outcome: str) -> int:
    return STATUS_BY_NAME.get(outcome.strip().lower(), comms_pb2.ASK_STATUS_UNSPECIFIED)


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _p(text: str) -> str:
    return f"<p>{_e(text)}</p>"


def _pre(text: str) -> str:
    return f'<pre style="font-family:monospace;white-space:pre-wrap">{_e(text)}</pre>'


def _link_html(link: str, *, words: str = "Answer in the browser") -> str:
    """The deep link: a link only when it is http(s); else shown as text."""
    if link.lower().startswith(("https://", "http://")):
        return f'<p><a href="{_e(link)}">{_e(words)}</a><br><small>{_e(link)}</small></p>'
    return _p(f"{words}: {link}")


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title></head>\n"
        f'<body style="font-family:sans-serif;line-height:1.4">\n{body}\n</body></html>\n'
    )
