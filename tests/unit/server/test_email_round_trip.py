"""The whole way through the email rules: the ask's email as rendered (email_text), a reply
the grammar describes written above it in each mail client's format, the reply's new text
(mail_in) and its reading (email_reply) give back exactly the intended answers."""

from __future__ import annotations

from email.message import EmailMessage

from hypothesis import assume, given, settings, strategies as st

from compass_server.domain.email_reply import Answered, read_reply
from compass_server.domain.email_text import ask_mail
from compass_server.domain.mail_in import new_text, reply_text
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
