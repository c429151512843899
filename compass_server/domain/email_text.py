"""TEMPORARY stand-in for the mailrules branch's email renderer (the lead's merge replaces
this file): the mails Compass sends, as plain text and the same text escaped in HTML."""

from __future__ import annotations

import html as html_lib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from compass_server.domain import ask_text
from compass_server.domain.email_reply import grammar_help
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass(frozen=True, slots=True, kw_only=True)
class MailBody:
    subject: str
    text: str
    html: str


def _body(subject: str, lines: Sequence[str]) -> MailBody:
    text = "\n".join(lines) + "\n"
    return MailBody(subject=subject, text=text, html=f"<pre>{html_lib.escape(text)}</pre>")


def ask_mail(ask: comms_pb2.Ask, *, asker: str, channel: str, link: str) -> MailBody:
    lines = [ask_text.headline(asker, channel), ""]
    for n, question in enumerate(ask.questions, start=1):
        lines.append(f"{n}. {ask_text.question_text(question)}")
        lines.extend(f"   {line}" for line in ask_text.numbered(question))
    lines += ["", grammar_help(ask), f"Open: {link}"]
    return _body(f"[Compass] {asker}: {ask_text.first_question(ask)}", lines)


def not_understood_mail(
    ask: comms_pb2.Ask, problems: Sequence[str], *, link: str, replying_to: str = ""
) -> MailBody:
    lines = ["Your reply was not understood:", *(f"- {p}" for p in problems)]
    lines += ["", grammar_help(ask), f"Open: {link}"]
    return _body(replying_to or f"[Compass] Not understood: {ask_text.first_question(ask)}", lines)


def ended_mail(
    ask: comms_pb2.Ask, *, outcome: str, by: str, link: str, replying_to: str = ""
) -> MailBody:
    lines = [f"This ask was already {outcome}{f' by {by}' if by else ''}.", f"Open: {link}"]
    return _body(replying_to or f"[Compass] Ended: {ask_text.first_question(ask)}", lines)


def how_it_ended(ask: comms_pb2.Ask) -> tuple[str, str]:
    from compass_core import ask_status

    status = ask_status.outcome(ask)
    who = ask.answered_by_name if status == comms_pb2.ASK_STATUS_ANSWERED else ask.closed_by_name
    return ask_status.status_name(status), who
