"""The whole way through the email rules: the ask's email as rendered (email_text), a reply
the grammar describes written above it in each mail client's format, the reply's new text
(mail_in) and its reading (email_reply) give back exactly the intended answers."""

from __future__ import annotations

import html
import re
from email.message import EmailMessage

from hypothesis import assume, given, settings, strategies as st

from compass_server.domain.email_reply import Answered, read_reply
from compass_server.domain.email_text import ask_mail
from compass_server.domain.mail_in import new_text, reply_text
from gen.compass.v1 import comms_pb2
from tests.unit.server._strategies import email_asks, email_replies


def _quoting(original: str) -> dict[str, str]:
    """What each client puts below the reply, around the rendered email's text."""
    quoted = "\n".join(f"> {line}" if line else ">" for line in original.split("\n"))
    return {
        "gmail": f"On Sat, Dec 5, 2026 at 12:14 AM Compass <ask+t@c.example>\nwrote:\n\n{quoted}",
        "apple": f"Sent from my iPhone\n\n> On Dec 5, 2026, at 00:14, Compass wrote:\n>\n{quoted}",
        "outlook": "________________________________\nFrom: Compass <ask+t@c.example>\n"
        f"Sent: Saturday, December 5, 2026 12:14 AM\nTo: Ada\nSubject: x\n\n{original}",
        "thunderbird": f"On 12/5/26 00:14, Compass wrote:\n{quoted}\n\n-- \nAda",
    }


@settings(max_examples=200)
@given(data=st.data(), client=st.sampled_from(["gmail", "apple", "outlook", "thunderbird"]))
def test_a_reply_above_the_rendered_email_reads_back_as_intended(
    data: st.DataObject, client: str
) -> None:
    the_ask = data.draw(email_asks())
    mail = ask_mail(the_ask, asker="Coder", channel="general", link="https://c.example/#/ask/1")
    reply, expected = data.draw(email_replies(the_ask))
    assume(reply.strip() and new_text(reply) == reply)  # a label like "> x" reads as a quote
    message = EmailMessage()
    message["From"] = "Ada <ada@example.com>"
    message.set_content(f"{reply}\n\n{_quoting(mail.text)[client]}\n", cte="quoted-printable")
    text = reply_text(message)
    assert read_reply(the_ask, text) == Answered(answers=tuple(expected))


def _collapsed(text: str) -> str:
    """Own words as HTML shows them: runs of spaces (and no-break spaces) as one space."""
    return "\n".join(re.sub(r"[ \t\f\xa0]+", " ", line).strip() for line in text.split("\n"))


@settings(max_examples=100)
@given(data=st.data(), client=st.sampled_from(["gmail", "apple", "thunderbird"]))
def test_an_html_reply_above_the_rendered_email_reads_back_as_intended(
    data: st.DataObject, client: str
) -> None:
    the_ask = data.draw(email_asks())
    mail = ask_mail(the_ask, asker="Coder", channel="general", link="https://c.example/#/ask/1")
    reply, expected = data.draw(email_replies(the_ask))
    assume(reply.strip() and new_text(reply) == reply)
    mine = "".join(f"<div>{html.escape(line)}</div>" for line in reply.split("\n"))
    body = mail.html.split("<body", 1)[1].split(">", 1)[1].rsplit("</body>", 1)[0]
    quote = {
        "gmail": f'<div class="gmail_quote"><div class="gmail_attr">On Sat, Compass wrote:</div>'
        f'<blockquote class="gmail_quote">{body}</blockquote></div>',
        "apple": f'<div><br><blockquote type="cite">On Dec 5, Compass wrote:<br>{body}</blockquote>',
        "thunderbird": '<div class="moz-cite-prefix">On 12/5/26, Compass wrote:<br></div>'
        f'<blockquote type="cite">{body}</blockquote>',
    }[client]
    message = EmailMessage()
    message["From"] = "Ada <ada@example.com>"
    message.set_content(f"<html><body>{mine}{quote}</body></html>", subtype="html")
    for answer in expected:
        answer.custom_text = _collapsed(answer.custom_text)
    assert read_reply(the_ask, reply_text(message)) == Answered(answers=tuple(expected))


def test_a_reply_of_a_mebibyte_is_read() -> None:
    """The listener refuses more than 1 MiB; up to that, a reply is read (that the reading is
    linear in the size is bench.mail_reading's question: a quadratic one took minutes)."""
    ask = comms_pb2.Ask(
        questions=[
            comms_pb2.AskQuestion(
                question_id=f"q{i}", options=[comms_pb2.AskOption(id="0", label="a")]
            )
            for i in range(3)
        ]
    )
    body = "3: words\n" + "more words on a line\n" * 50_000 + "> quoted\n" * 5_000
    message = EmailMessage()
    message["From"] = "ada@example.com"
    message.set_content(body, cte="quoted-printable")
    reading = read_reply(ask, reply_text(message))
    assert not isinstance(reading, Answered)  # the words are over the limit
