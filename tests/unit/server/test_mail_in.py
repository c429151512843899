"""Reading an incoming reply (compass_server/domain/mail_in.py): the new text of replies as
Gmail, Outlook, Apple Mail and Thunderbird write them (plain, HTML-only, format=flowed), in
other charsets and transfer encodings; and which messages are automatic."""

from __future__ import annotations

import email
import email.policy
import html
from email.message import EmailMessage
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings, strategies as st

from compass_server.domain.mail_in import html_to_text, is_automatic, new_text, reply_text, unflow

if TYPE_CHECKING:
    from collections.abc import Callable

COMPASS = "Compass <ask+tok3n@compass.example.com>"
ORIGINAL = [
    "Coder asks in #general:",
    "",
    "Which database?",
    "(choose one, free text allowed)",
    "   1. Postgres (recommended)",
    "   2. SQLite",
    "",
    "-- ",
    "Compass",
]


def parse(raw: str | bytes) -> EmailMessage:
    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    message = email.message_from_bytes(data, policy=email.policy.default)
    assert isinstance(message, EmailMessage)
    return message


def plain(body: str, *, headers: str = "", params: str = "") -> EmailMessage:
    return parse(
        f"From: Ada <ada@example.com>\r\nTo: {COMPASS}\r\nSubject: Re: [Compass] Coder: Which?\r\n"
        f"{headers}MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8{params}\r\n"
        f"Content-Transfer-Encoding: 8bit\r\n\r\n{body}"
    )


def html_only(body: str) -> EmailMessage:
    return parse(
        f"From: Ada <ada@example.com>\r\nTo: {COMPASS}\r\nSubject: Re: x\r\nMIME-Version: 1.0\r\n"
        f"Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n{body}"
    )


def quoted(lines: list[str]) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in lines)


def original_html() -> str:
    return "".join(f"<div>{html.escape(line)}</div>" if line else "<br>" for line in ORIGINAL)


# ---------------------------------------------------------------------------------------------
# The clients' formats, as (reply lines) -> (plain body, params) or html body


def gmail_plain(reply: str) -> str:
    # Gmail wraps its attribution over two lines when it is long.
    return (
        f"{reply}\n\nOn Sat, Dec 5, 2026 at 12:14 AM Compass <ask+tok3n@compass.example.com>\n"
        f"wrote:\n\n{quoted(ORIGINAL)}\n"
    )


def gmail_short_plain(reply: str) -> str:
    return f"{reply}\n\nOn Sat, 5 Dec 2026 at 00:14, Compass wrote:\n\n{quoted(ORIGINAL)}\n"


def outlook_plain(reply: str) -> str:
    return (
        f"{reply}\n\n________________________________\nFrom: {COMPASS}\n"
        "Sent: Saturday, December 5, 2026 12:14 AM\nTo: Ada <ada@example.com>\n"
        "Subject: [Compass] Coder: Which database?\n\n" + "\n".join(ORIGINAL) + "\n"
    )


def outlook_original_message(reply: str) -> str:
    return (
        f"{reply}\n\n-----Original Message-----\nFrom: {COMPASS}\n"
        "Sent: Saturday, December 5, 2026 12:14 AM\nTo: Ada\nSubject: x\n\n"
        + "\n".join(ORIGINAL)
        + "\n"
    )


def apple_plain(reply: str) -> str:
    return (
        f"{reply}\n\nSent from my iPhone\n\n> On Dec 5, 2026, at 00:14, {COMPASS} wrote:\n>\n"
        f"{quoted(ORIGINAL)}\n"
    )


def thunderbird_plain(reply: str) -> str:
    return f"{reply}\n\nOn 12/5/26 00:14, Compass wrote:\n{quoted(ORIGINAL)}\n\n-- \nAda Lovelace\n"


def bottom_posted(reply: str) -> str:
    return f"On 12/5/26 00:14, Compass wrote:\n{quoted(ORIGINAL)}\n\n{reply}\n\n-- \nAda\n"


PLAIN_CLIENTS = [
    gmail_plain,
    gmail_short_plain,
    outlook_plain,
    outlook_original_message,
    apple_plain,
    thunderbird_plain,
    bottom_posted,
]


def gmail_html(lines: list[str]) -> str:
    mine = "".join(f"<div>{html.escape(line)}</div>" for line in lines)
    return (
        f'<div dir="ltr">{mine}</div><br><div class="gmail_quote gmail_quote_container">'
        '<div dir="ltr" class="gmail_attr">On Sat, Dec 5, 2026 at 12:14 AM Compass &lt;'
        'ask+tok3n@compass.example.com&gt; wrote:<br></div><blockquote class="gmail_quote" '
        f'style="margin:0px 0px 0px 0.8ex">{original_html()}</blockquote></div>'
    )


def outlook_html(lines: list[str]) -> str:
    mine = "".join(
        f'<div style="font-family:Calibri"><span>{html.escape(line)}</span></div>' for line in lines
    )
    return (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=utf-8">'
        '<style type="text/css" style="display:none;"> P {margin-top:0;margin-bottom:0;} </style>'
        f'</head><body dir="ltr">{mine}<div id="appendonsend"></div>'
        '<hr style="display:inline-block;width:98%" tabindex="-1"><div id="divRplyFwdMsg" '
        'dir="ltr"><font face="Calibri, sans-serif" style="font-size:11pt"><b>From:</b> Compass '
        "&lt;ask+tok3n@compass.example.com&gt;<br><b>Sent:</b> Saturday, December 5, 2026 "
        "12:14 AM<br><b>To:</b> Ada &lt;ada@example.com&gt;<br><b>Subject:</b> [Compass] "
        f"Coder: Which database?</font><div>&nbsp;</div></div><div>{original_html()}</div>"
        "</body></html>"
    )


def apple_html(lines: list[str]) -> str:
    mine = "<br>".join(html.escape(line) for line in lines)
    return (
        f'<html><head></head><body dir="auto">{mine}<br><br><div dir="ltr">Sent from my iPhone'
        '</div><div dir="ltr"><br><blockquote type="cite">On Dec 5, 2026, at 00:14, Compass '
        "&lt;ask+tok3n@compass.example.com&gt; wrote:<br><br></blockquote></div><blockquote "
        f'type="cite"><div dir="ltr">{original_html()}</div></blockquote></body></html>'
    )


def thunderbird_html(lines: list[str]) -> str:
    mine = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
    return (
        '<html><head><meta http-equiv="content-type" content="text/html; charset=UTF-8"></head>'
        f'<body>{mine}<div class="moz-cite-prefix">On 12/5/26 00:14, Compass wrote:<br></div>'
        f'<blockquote type="cite" cite="mid:abc@compass.example.com">{original_html()}'
        '</blockquote><pre class="moz-signature" cols="72">-- \nAda Lovelace</pre></body></html>'
    )


HTML_CLIENTS = [gmail_html, outlook_html, apple_html, thunderbird_html]


@pytest.mark.parametrize("client", PLAIN_CLIENTS)
def test_the_new_text_of_each_clients_plain_reply(client: Callable[[str], str]) -> None:
    body = client("1: 2\n2: because it is small")
    assert reply_text(plain(body)) == "1: 2\n2: because it is small"


@pytest.mark.parametrize("client", HTML_CLIENTS)
def test_the_new_text_of_each_clients_html_only_reply(client: Callable[[list[str]], str]) -> None:
    message = html_only(client(["1: 2", "2: Fish & <chips>"]))
    assert reply_text(message) == "1: 2\n2: Fish & <chips>"


def test_an_empty_text_part_beside_html_reads_the_html() -> None:
    message = EmailMessage()
    message["From"] = "ada@example.com"
    message.set_content("\n")
    message.add_alternative("<p>2</p><blockquote>x</blockquote>", subtype="html")
    assert reply_text(parse(message.as_bytes())) == "2"


def test_an_empty_reply_above_an_unquoted_original_is_empty() -> None:
    # Outlook quotes the original without "> ": none of it is the person's.
    assert reply_text(plain(outlook_plain(""))) == ""
    assert reply_text(plain(outlook_original_message(""))) == ""
    assert reply_text(html_only(outlook_html([]))) == ""


def test_a_byte_order_mark_is_dropped() -> None:
    message = parse(
        b"From: a@b.c\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"Content-Transfer-Encoding: 8bit\r\n\r\n\xef\xbb\xbf2"
    )
    assert reply_text(message) == "2"


def test_text_plain_is_preferred_to_html() -> None:
    message = EmailMessage()
    message["From"] = "ada@example.com"
    message.set_content("2\n\n" + quoted(ORIGINAL))
    message.add_alternative("<p>something else</p>", subtype="html")
    assert reply_text(parse(message.as_bytes())) == "2"


def test_thunderbird_format_flowed() -> None:
    body = (
        "I would rather use the database we already run, which is \r\n"
        "Postgres, than add another one.\r\n"
        "\r\n"
        "On 12/5/26 00:14, Compass wrote:\r\n"
        "> Which database? This is a long question that the client \r\n"
        "> wrapped.\r\n"
    )
    message = plain(body, params="; format=flowed")
    assert reply_text(message) == (
        "I would rather use the database we already run, which is Postgres, than add another one."
    )
    delsp = plain("one \r\ntwo\r\n", params="; format=flowed; delsp=yes")
    assert reply_text(delsp) == "onetwo"


def test_unflow_keeps_the_signature_line_and_quote_depths() -> None:
    assert unflow("a \nb\n-- \nsig") == "ab\n-- \nsig".replace("ab", "a b")
    assert unflow("> a \n> b\nc") == "> a b\nc"
    assert unflow(" From here") == "From here"  # space-stuffing undone


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2\n\n-- \nAda\nhttps://ada.example", "2"),
        ("2\n--\nAda", "2"),
        ("2\n\nSent from my iPhone", "2"),
        ("2\n\nGet Outlook for iOS", "2"),
        ("> quoted only\n\n2", "2"),
        ("> q1\n1: 2\n> q2\n2: 3", "1: 2\n2: 3"),  # answered between the quoted lines
        ("use the - old - one\n- really", "use the - old - one\n- really"),  # not signatures
        ("Warning: this drops a table\nThanks, Ada", "Warning: this drops a table\nThanks, Ada"),
        (
            "decline: busy\n\nLe sam. 5 déc. 2026 à 00:14, Compass <a@b.c> a écrit :\n> x",
            "decline: busy",
        ),
        ("2\n\nAm Sa., 5. Dez. 2026 um 00:14 Uhr schrieb Compass <a@b.c>:\n> x", "2"),
        ("2\n\n-------- Original Message --------\nSubject: x", "2"),
        ("2\n\nFrom: Compass <a@b.c>\nDate: Sat, 5 Dec 2026\nTo: Ada", "2"),
        ("2\r\n\r\nOn Sat, Ada wrote:\r\n> x", "2"),
        ("2\n\nOp 5 dec. 2026 om 00:14 heeft Compass <a@b.c> het volgende geschreven:\n> x", "2"),
        ("2\n\nDen 5 dec. 2026 kl. 00:14 skrev Compass <a@b.c>:\n> x", "2"),
        ("2\n\nEm sáb., 5 de dez. de 2026 às 00:14, Compass <a@b.c> escreveu:\n> x", "2"),
        ("2\n\n5 dec. 2026, 00:14, Compass <a@b.c>:\n\n> x", "2"),  # Gmail in many languages
        ("mail me at <a@b.c>:\nthanks", "mail me at <a@b.c>:\nthanks"),  # no quote follows
        ("2\n\n-------- Message transféré --------\nSujet : x\nDe : Compass", "2"),
        ("2\n\nDébut du message réexpédié :\n\nDe: Compass <a@b.c>", "2"),
        ("2\n\nFrån: Compass <a@b.c>\nSkickat: den 5 december 2026\nTill: Ada\nÄmne: x", "2"),
        ("From: Monday\nTo: Friday", "From: Monday\nTo: Friday"),  # own words, no header block
        ("2\nsent from the office, as agreed", "2\nsent from the office, as agreed"),
        ("Von: Compass <a@b.c>\nGesendet: Samstag\nAn: Ada\nBetreff: x\n\nfrage", ""),
    ],
)
def test_quotes_and_signatures_are_cut(text: str, expected: str) -> None:
    assert new_text(text) == expected


def test_html_to_text_leaves_no_markup() -> None:
    markup = (
        "<html><head><title>t</title><style>p{}</style><script>alert(1)</script></head>"
        "<body><p>1: 2</p><p>2: a&nbsp;&amp;&nbsp;b &lt;i&gt;</p><ul><li>one</li><li>two</li></ul>"
        '<table><tr><td>x</td><td>y</td></tr></table><img src="http://e.example/t.gif">'
        '<pre>  kept\n  lines</pre><div class="gmail_signature">Ada\'s signature</div></body></html>'
    )
    assert html_to_text(markup).split("\n") == [
        "1: 2",
        "2: a & b <i>",
        "one",
        "two",
        "xy",
        "  kept",
        "  lines",
    ]


def test_broken_html_still_reads() -> None:
    assert html_to_text("<p>2<![foo bar]><p>3") == "2\n3"
    assert html_to_text("<div>unclosed <b>bold") == "unclosed bold"
    assert html_to_text("</div></p>2") == "2"


# ---------------------------------------------------------------------------------------------
# Charsets and transfer encodings


@pytest.mark.parametrize(
    ("charset", "cte", "text"),
    [
        ("iso-8859-1", "quoted-printable", "2: café à la crème"),
        ("iso-8859-1", "8bit", "2: façade"),
        ("windows-1252", "quoted-printable", "2: “smart” quotes \u2013 and €"),
        ("windows-1252", "base64", "2: naïve \u2013 €"),
        ("shift_jis", "base64", "2: ポストグレス"),
        ("utf-8", "base64", "2: 数据库 🐘"),
        ("utf-8", "quoted-printable", "2: Ünïcödé"),
    ],
)
def test_charsets_and_transfer_encodings(charset: str, cte: str, text: str) -> None:
    message = EmailMessage()
    message["From"] = "ada@example.com"
    message.set_content(text + "\n\n" + quoted(ORIGINAL), charset=charset, cte=cte)
    raw = message.as_bytes()
    assert text.encode("utf-8") not in raw or (charset == "utf-8" and cte == "8bit")
    assert reply_text(parse(raw)) == text


def test_an_html_part_in_another_charset() -> None:
    message = EmailMessage()
    message["From"] = "ada@example.com"
    message.set_content("<p>2: crème</p><blockquote>x</blockquote>", subtype="html",
                        charset="iso-8859-1", cte="quoted-printable")  # fmt: skip
    assert reply_text(parse(message.as_bytes())) == "2: crème"


def test_an_unknown_or_wrong_charset_decodes_with_replacement() -> None:
    unknown = parse(
        b"From: a@b.c\r\nContent-Type: text/plain; charset=x-no-such-charset\r\n"
        b"Content-Transfer-Encoding: 8bit\r\n\r\n2: caf\xc3\xa9"
    )
    assert reply_text(unknown) == "2: café"
    wrong = parse(
        b"From: a@b.c\r\nContent-Type: text/plain; charset=us-ascii\r\n"
        b"Content-Transfer-Encoding: 8bit\r\n\r\n2: caf\xe9"
    )
    assert reply_text(wrong) == "2: caf\ufffd"
    undeclared = parse(b"From: a@b.c\r\n\r\n2")
    assert reply_text(undeclared) == "2"


def test_no_text_part_is_no_text() -> None:
    message = EmailMessage()
    message["From"] = "ada@example.com"
    message.set_content(b"\x89PNG", maintype="image", subtype="png")
    assert reply_text(parse(message.as_bytes())) == ""


# ---------------------------------------------------------------------------------------------
# Properties

_WORD = st.text(
    st.characters(whitelist_categories=("Lu", "Ll", "Lo", "Nd"), whitelist_characters=":,.+!?'"),
    min_size=1,
    max_size=8,
)
_LINE = st.lists(_WORD, min_size=1, max_size=6).map(" ".join)
replies = st.lists(_LINE, min_size=1, max_size=4)


@settings(max_examples=150)
@given(lines=replies, client=st.sampled_from(PLAIN_CLIENTS))
def test_any_reply_in_any_plain_client_format_comes_back(
    lines: list[str], client: Callable[[str], str]
) -> None:
    reply = "\n".join(lines)
    body = client(reply)
    assert reply_text(plain(body)) == reply


@settings(max_examples=150)
@given(lines=replies, client=st.sampled_from(HTML_CLIENTS))
def test_any_reply_in_any_html_client_format_comes_back(
    lines: list[str], client: Callable[[list[str]], str]
) -> None:
    markup = client(lines)
    assert reply_text(html_only(markup)) == "\n".join(lines)


_CHARSETS = {
    "iso-8859-1": st.characters(
        min_codepoint=0x20, max_codepoint=0xFF, blacklist_categories=("Cc",)
    ),
    "windows-1252": st.sampled_from("abcxyz éèàüß€“”\u2013—"),
    "shift_jis": st.sampled_from("あいうえおアイウエオ漢字日本語 abc123"),
    "utf-8": st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")),
}


@settings(max_examples=150)
@given(
    data=st.data(),
    charset=st.sampled_from(sorted(_CHARSETS)),
    cte=st.sampled_from(["quoted-printable", "base64", "8bit"]),
)
def test_any_text_in_any_charset_and_encoding_comes_back(
    data: st.DataObject, charset: str, cte: str
) -> None:
    text = data.draw(st.text(_CHARSETS[charset], min_size=1, max_size=40)).strip()
    if not text or text.startswith((">", "--")) or new_text(text) != text:
        return  # text that reads as a quote or signature is not new text
    message = EmailMessage()
    message["From"] = "ada@example.com"
    message.set_content(text + "\n\n" + quoted(ORIGINAL), charset=charset, cte=cte)
    assert reply_text(parse(message.as_bytes())) == text


@given(data=st.binary(max_size=400))
def test_reading_any_bytes_never_raises(data: bytes) -> None:
    message = parse(b"From: a@b.c\r\nContent-Type: text/plain\r\n\r\n" + data)
    assert isinstance(reply_text(message), str)
    assert isinstance(is_automatic(message), bool)
    assert isinstance(reply_text(parse(data)), str)
    assert isinstance(is_automatic(parse(data)), bool)


_TAGS = st.sampled_from(
    ["<p>", "</p>", "<div class=x>", "</div>", "<br>", "<br/>", "<b>", "</b>", "<span>",
     "</span>", "<table><tr><td>", "</td></tr></table>", "<ul><li>", "</li></ul>", "<hr>",
     '<a href="https://e.example/">', "</a>", "<!-- note -->", "<h1>", "</h1>", "<pre>", "</pre>",
     "<![if !supportLists]>", "<![endif]>", '<img src="x.png">', "<o:p>", "</o:p>", "&nbsp;"]
)  # fmt: skip


@given(pieces=st.lists(st.one_of(_TAGS, _WORD), max_size=30))
def test_html_to_text_leaves_no_markup_and_every_word(pieces: list[str]) -> None:
    text = html_to_text("".join(pieces))
    assert "<" not in text
    assert ">" not in text.replace("> ", "")
    for piece in pieces:
        if not piece.startswith(("<", "&")):
            assert piece in text.replace("\n", "").replace(" ", "")


@given(markup=st.text(max_size=300))
def test_html_to_text_never_raises(markup: str) -> None:
    assert isinstance(html_to_text(markup), str)


# ---------------------------------------------------------------------------------------------
# Automatic messages


@pytest.mark.parametrize(
    "headers",
    [
        "Auto-Submitted: auto-replied\r\n",
        "Auto-Submitted: auto-generated\r\n",
        "Auto-Submitted: auto-notified; owner-email=x@y.z\r\n",
        "Precedence: bulk\r\n",
        "Precedence: junk\r\n",
        "Precedence: list\r\n",
        "Precedence: auto_reply\r\n",
        "X-Autoreply: yes\r\n",
        "X-Autorespond: Out of office\r\n",
        "X-Auto-Response-Suppress: All\r\n",
        "X-Auto-Response-Suppress: DR, RN, NRN, OOF, AutoReply\r\n",
        "Return-Path: <>\r\n",
        "Return-Path: \r\n",
    ],
)
def test_automatic_by_header(headers: str) -> None:
    assert is_automatic(plain("2", headers=headers))


@pytest.mark.parametrize(
    "raw",
    [
        "From: MAILER-DAEMON@mx.example.com (Mail Delivery System)\r\nSubject: x\r\n\r\nx",
        "From: Mail Delivery Subsystem <mailer-daemon@googlemail.com>\r\n\r\nx",
        "From: postmaster@example.com\r\n\r\nx",
        "From: MAILER-DAEMON (Mail Delivery System)\r\n\r\nx",
        "From: a@b.c\r\nSubject: Auto: I am away\r\n\r\nx",
        "From: a@b.c\r\nSubject: Automatic reply: [Compass] Coder: Which?\r\n\r\nx",
        "From: a@b.c\r\nSubject: Out of Office: back Monday\r\n\r\nx",
        "From: a@b.c\r\nSubject: Undelivered Mail Returned to Sender\r\n\r\nx",
        (
            "From: a@b.c\r\nMIME-Version: 1.0\r\nContent-Type: multipart/report; "
            'report-type=delivery-status; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain'
            "\r\n\r\nx\r\n--b--\r\n"
        ),
    ],
)
def test_automatic_by_sender_subject_or_type(raw: str) -> None:
    assert is_automatic(parse(raw))


@pytest.mark.parametrize(
    "headers",
    [
        "",
        "Auto-Submitted: no\r\n",
        "Auto-Submitted: No (a person)\r\n",
        "Precedence: first-class\r\n",
        "X-Auto-Response-Suppress: DR, RN\r\n",
        "Return-Path: <ada@example.com>\r\n",
        "X-Autoreply: no\r\n",
    ],
)
def test_a_persons_reply_is_not_automatic(headers: str) -> None:
    message = plain("2", headers=headers)
    assert not is_automatic(message)
    assert reply_text(message) == "2"


def test_a_null_envelope_sender_is_a_bounce() -> None:
    message = plain("2")
    assert is_automatic(message, envelope_from="")
    assert is_automatic(message, envelope_from="<>")
    assert not is_automatic(message, envelope_from="ada@example.com")
    assert not is_automatic(message)


def test_a_subject_mentioning_auto_later_is_a_person() -> None:
    assert not is_automatic(parse("From: a@b.c\r\nSubject: Re: Auto: scaling question\r\n\r\n2"))
    assert not is_automatic(parse("From: Postmaster General <pmg@example.com>\r\n\r\n2"))


def test_html_of_a_mebibyte_reads_whole() -> None:
    """Stray end tags and deep nesting read as their text (that this stays linear in the
    size is bench.mail_reading's question: an earlier walk per tag took minutes)."""
    markup = "<span>x" * 60_000 + "</div>" * 60_000 + "<b>" + "<i>y" * 30_000 + "</b>" * 30_000
    text = reply_text(html_only(markup))
    assert text.startswith("xxx")
