"""Reading an incoming reply (docs/answering/email.md): the person's new text, and whether the
message was sent by a machine (an auto-reply or a bounce, never to be answered).

Pure: an `email.message.EmailMessage` (parsed with `email.policy.default`) in, a string or a
bool out. Nothing here raises for a message that parsed, however broken its parts.

The new text: the text/plain part (when it has any), else the text/html part turned into text (stdlib
`html.parser`; `<blockquote>` and the clients' quote containers become "> " lines); decoded
from its declared charset (an unknown or wrong one decodes as UTF-8 with replacement
characters); format=flowed joined; then cut before the quoted message and the signature.

Written here rather than taken from `mail-parser-reply` 1.36 or `email-reply-parser` 0.5.12
(both read): both cut text on guesses that lose a person's own words, and a lost word changes
an answer. mail-parser-reply drops any sentence starting "Warning:", "CAUTION:" or
"Disclaimer:" as a disclaimer, everything after a line starting "- word" or "Thanks," as a
signature, and passes `re.MULTILINE` as re.sub's count; email-reply-parser treats any
paragraph ending in a line starting "-x" as a signature and rewrites every "On ... wrote:"
span it finds, across lines, with the first one's text. Neither reads HTML or
bottom-posted replies. The rules below cut only at what mail clients write: an attribution
line ("On ... wrote:", in a few languages, also wrapped over two lines), "-----Original
Message-----" and its kin, an Outlook header block (From: with Sent:/Date:/To:/Subject:), the
"-- " signature line, and a closing "Sent from my ..." line; and they drop "> " lines.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import email.message

# ---------------------------------------------------------------------------------------------
# Automatic messages

_PRECEDENCE_AUTOMATIC: Final = frozenset({"bulk", "junk", "list", "auto_reply"})
_DAEMONS: Final = frozenset({"mailer-daemon", "postmaster"})
_AUTO_SUBJECTS: Final = re.compile(
    r"\s*(?:auto:|automatic reply|out of office|autoreply|auto-reply|undeliverable:"
    r"|undelivered mail returned to sender|delivery status notification)",
    re.IGNORECASE,
)


def is_automatic(message: email.message.EmailMessage, *, envelope_from: str | None = None) -> bool:
    """Whether `message` was sent by a machine and must never be answered: Auto-Submitted
    other than "no" (RFC 3834); Precedence bulk, junk, list or auto_reply; X-Autoreply or
    X-Autorespond (other than "no"); X-Auto-Response-Suppress All or OOF (Exchange's
    out-of-office); an empty or "<>" Return-Path (a bounce); From MAILER-DAEMON or
    postmaster; a multipart/report (a delivery or disposition report); a subject starting
    "Auto:", "Automatic reply", "Out of Office" (and the kin bounces use).

    `envelope_from` is the SMTP MAIL FROM when the caller has it (an SMTP listener does; a
    relayed message carries no Return-Path yet): "" or "<>", a bounce's null sender, is
    automatic too."""
    if envelope_from is not None and envelope_from.strip() in ("", "<>"):
        return True
    auto_submitted = _header(message, "Auto-Submitted")
    if auto_submitted is not None and _first_word(auto_submitted) != "no":
        return True
    if _first_word(_header(message, "Precedence") or "") in _PRECEDENCE_AUTOMATIC:
        return True
    for name in ("X-Autoreply", "X-Autorespond"):
        value = _header(message, name)
        if value is not None and _first_word(value) != "no":
            return True
    suppress = _header(message, "X-Auto-Response-Suppress") or ""
    if {token.strip().lower() for token in suppress.split(",")} & {"all", "oof"}:
        return True
    return_path = _header(message, "Return-Path")
    if return_path is not None and return_path.strip() in ("", "<>"):
        return True
    if _from_daemon(message):
        return True
    if _content_type(message) == "multipart/report":
        return True
    return bool(_AUTO_SUBJECTS.match(_header(message, "Subject") or ""))


def _header(message: email.message.EmailMessage, name: str) -> str | None:
    """A header's value as text, None when absent (a header that fails to parse counts as
    present with its raw text)."""
    try:
        value = message.get(name)
    except Exception:  # noqa: BLE001 -- a malformed header must not make a bounce answerable
        return ""
    return None if value is None else str(value)


def _first_word(value: str) -> str:
    words = value.replace(";", " ").split()
    return words[0].lower() if words else ""


def _from_daemon(message: email.message.EmailMessage) -> bool:
    """From MAILER-DAEMON or postmaster: the local part of an address, or a bare name
    ("MAILER-DAEMON (Mail Delivery System)", as Postfix writes it)."""
    sender = _header(message, "From") or ""
    names = re.findall(r"([^\s<>\"@,;:()]+)@", sender) or sender.replace("<", " ").split()[:1]
    return any(name.strip("<>").lower() in _DAEMONS for name in names)


def _content_type(message: email.message.EmailMessage) -> str:
    try:
        return message.get_content_type()
    except Exception:  # noqa: BLE001 -- an unreadable Content-Type is text/plain (RFC 2045)
        return "text/plain"


# ---------------------------------------------------------------------------------------------
# The new text


def reply_text(message: email.message.EmailMessage) -> str:
    """The person's new text in `message`: no quoted message, no signature, no markup."""
    plain, markup = _bodies(message)
    if plain is not None:
        text = _decoded(plain)
        if _is_flowed(plain):
            text = unflow(text, delsp=_param(plain, "delsp").lower() == "yes")
        found = new_text(text)
        if found or markup is None:
            return found
    # No text/plain part, or an empty one beside the HTML (some clients send one).
    return new_text(html_to_text(_decoded(markup))) if markup is not None else ""


def new_text(text: str) -> str:
    """`text` without the quoted message and the signature: the lines above the first
    attribution, original-message line or Outlook header block (or, when nothing but quotes
    stands above it, the unquoted lines below: a bottom-posted reply), less "> " lines, cut
    at a "-- " line and less a closing "Sent from my ..." line."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    cut, header = _quote_start(lines)
    kept = _unquoted(lines[:cut])
    if header and not any(line.strip() for line in kept):
        # Only an attribution says the quote is the "> " lines below it: what else stands
        # there is the person's. Below an Outlook block or "Original Message" the original
        # follows unquoted, and is never read.
        kept = _unquoted(lines[cut + header :])
    kept = _before_signature(kept)
    while kept and (not kept[-1].strip() or _MOBILE.fullmatch(kept[-1].strip())):
        kept.pop()
    return "\n".join(line.rstrip() for line in kept).strip()


_ATTRIBUTION: Final = re.compile(
    r"\s*(?:"
    r"on\b.{0,200}\bwrote\s*:"  # Gmail, Apple Mail, Thunderbird, most others
    r"|le\b.{0,200}\ba\s+écrit\s*:"  # French
    r"|am\b.{0,200}\bschrieb\b.{0,100}:"  # German
    r"|el\b.{0,200}\bescribió\s*:"  # Spanish
    r"|em\b.{0,200}\bescreveu\s*:"  # Portuguese
    r"|il\b.{0,200}\bha\s+scritto\s*:"  # Italian
    r"|op\b.{0,200}\b(?:schreef\b.{0,100}|geschreven\s*):"  # Dutch
    r"|den\b.{0,200}\bskrev\b.{0,100}:"  # Swedish, Danish, Norwegian
    r"|.{1,200}\s<[^<>\s]+@[^<>\s]+>\s+(?:wrote|schrieb|a\s+écrit|escribió)\s*:"  # "Ada <a@b> wrote:"
    r")\s*",
    re.IGNORECASE,
)
_ADDRESS_COLON: Final = re.compile(r".{1,200}<[^<>\s]+@[^<>\s]+>\s*:\s*")
"""Gmail's attribution in many languages: "<date>, <name> <address>:" (then the quote)."""
_ATTRIBUTION_START: Final = re.compile(r"\s*(?:on|le|am|el|em|il|op|den)\s", re.IGNORECASE)
_ORIGINALS: Final = (
    "original message|forwarded message|begin forwarded message|ursprüngliche nachricht"
    "|weitergeleitete nachricht|anfang der weitergeleiteten e-mail|message d'origine"
    "|message transféré|début du message réexpédié|mensaje original|mensaje reenviado"
    "|inicio del mensaje reenviado|messaggio originale|messaggio inoltrato"
    "|oorspronkelijk bericht|origineel bericht|doorgestuurd bericht|begin doorgestuurd bericht"
    "|vidarebefordrat meddelande|ursprungligt meddelande"
)
_ORIGINAL: Final = re.compile(
    rf"\s*(?:-{{2,}}\s*(?:{_ORIGINALS})\s*-{{2,}}|(?:{_ORIGINALS})\s*:)\s*", re.IGNORECASE
)
_OUTLOOK_FROM: Final = re.compile(
    r"\s*\*?(?:from|von|de|da|van|från|fra)\s*:\*?\s*\S", re.IGNORECASE
)
_OUTLOOK_SENT: Final = re.compile(
    r"\s*\*?(?:sent|date|gesendet|datum|envoyé|date d'envoi|enviado(?: el)?|fecha|inviato|data"
    r"|verzonden|skickat|sendt)\s*:",
    re.IGNORECASE,
)
_OUTLOOK_TO: Final = re.compile(
    r"\s*\*?(?:to|subject|cc|an|betreff|à|pour|objet|sujet|para|asunto|a|oggetto|aan|onderwerp"
    r"|till|ämne|til|emne)\s*:",
    re.IGNORECASE,
)
_RULE: Final = re.compile(r"\s*_{10,}\s*")
_SIGNATURE: Final = re.compile(r"--[ \t]?")
_MOBILE: Final = re.compile(
    r"(?:sent from my|sent from (?:mail|outlook|yahoo mail|proton mail|samsung)|get outlook for"
    r"|envoyé de mon|von meinem|enviado desde mi|inviato da)\b.{0,60}",
    re.IGNORECASE,
)


def _quote_start(lines: list[str]) -> tuple[int, int]:
    """Where the quoted message starts (len(lines) when it does not) and, when an attribution
    starts it, how many lines that takes (two when wrapped); 0 for anything else."""
    for index, line in enumerate(lines):
        if line.lstrip().startswith(">"):
            continue
        if _ATTRIBUTION.fullmatch(line):
            return index, 1
        if _wrapped_attribution(lines, index):
            return index, 2
        if _ADDRESS_COLON.fullmatch(line) and _quote_follows(lines, index + 1):
            return index, 1
        if _ORIGINAL.fullmatch(line) or _outlook_block(lines, index):
            return index, 0
        if _RULE.fullmatch(line) and _outlook_block(lines, _next_text(lines, index + 1)):
            return index, 0
    return len(lines), 0


def _wrapped_attribution(lines: list[str], index: int) -> bool:
    """ "On Sat, Dec 5, 2026 at 12:14 AM Compass <ask+x@example.com>" / "wrote:" (Gmail wraps
    its attribution over two lines in plain text)."""
    if not _ATTRIBUTION_START.match(lines[index]) or index + 1 >= len(lines):
        return False
    joined = f"{lines[index].rstrip()} {lines[index + 1].strip()}"
    return bool(_ATTRIBUTION.fullmatch(joined))


def _outlook_block(lines: list[str], index: int) -> bool:
    """A "From: ..." line followed, within five lines, by a Sent: (or Date:) line and a To:
    (or Subject:, Cc:) line: Outlook's header of the message replied to."""
    if index >= len(lines) or not _OUTLOOK_FROM.match(lines[index]):
        return False
    block = lines[index + 1 : index + 6]
    return any(_OUTLOOK_SENT.match(line) for line in block) and any(
        _OUTLOOK_TO.match(line) for line in block
    )


def _quote_follows(lines: list[str], index: int) -> bool:
    after = _next_text(lines, index)
    return after < len(lines) and lines[after].lstrip().startswith(">")


def _next_text(lines: list[str], index: int) -> int:
    while index < len(lines) and not lines[index].strip():
        index += 1
    return index


def _unquoted(lines: list[str]) -> list[str]:
    return [line for line in lines if not line.lstrip().startswith(">")]


def _before_signature(lines: list[str]) -> list[str]:
    for index, line in enumerate(lines):
        if _SIGNATURE.fullmatch(line):
            return lines[:index]
    return lines


# ---------------------------------------------------------------------------------------------
# Parts and charsets


def _bodies(
    message: email.message.EmailMessage,
) -> tuple[email.message.MIMEPart | None, email.message.MIMEPart | None]:
    """The text/plain and the text/html body parts (attachments aside), each None if none."""
    try:
        return message.get_body(preferencelist=("plain",)), message.get_body(
            preferencelist=("html",)
        )
    except Exception:  # noqa: BLE001 -- a broken MIME tree reads as having no body
        return None, None


def _decoded(part: email.message.MIMEPart) -> str:
    """The part's text: its declared charset, else UTF-8; undecodable bytes replaced."""
    try:
        payload = part.get_payload(decode=True)
    except Exception:  # noqa: BLE001 -- a broken transfer encoding reads as its raw text
        payload = None
    if not isinstance(payload, bytes):
        raw = part.get_payload()
        return raw if isinstance(raw, str) else ""
    charset = _charset(part)
    try:
        text = payload.decode(charset, errors="replace")
    except (LookupError, ValueError):
        text = payload.decode("utf-8", errors="replace")
    return text.removeprefix("\ufeff")


def _charset(part: email.message.MIMEPart) -> str:
    charset = _param(part, "charset").strip().strip('"') or "utf-8"
    if charset.lower() in ("us-ascii", "ascii", "unknown-8bit", "x-unknown"):
        # Many clients label 8-bit text as ASCII; UTF-8 reads ASCII and more.
        return "utf-8"
    return charset


def _param(part: email.message.MIMEPart, name: str) -> str:
    try:
        value = part.get_param(name, header="content-type")
    except Exception:  # noqa: BLE001 -- an unreadable parameter is absent
        return ""
    return value if isinstance(value, str) else ""


def _is_flowed(part: email.message.MIMEPart) -> bool:
    return _param(part, "format").lower() == "flowed"


def unflow(text: str, *, delsp: bool = False) -> str:
    """RFC 3676 format=flowed text as its paragraphs: a line ending in a space joins the next
    line of the same quote depth; space-stuffing is undone; "-- " stays a signature line."""
    out: list[str] = []
    pending: str | None = None
    pending_depth = 0
    for raw in text.replace("\r\n", "\n").split("\n"):
        depth = len(raw) - len(raw.lstrip(">"))
        body = raw[depth:]
        if body.startswith(" "):
            body = body[1:]
        if pending is not None and depth != pending_depth:
            out.append(_requote(pending_depth, pending))
            pending = None
        flowed = body.endswith(" ") and body != "-- "
        piece = body[:-1] if flowed and delsp else body
        pending = piece if pending is None else pending + piece
        pending_depth = depth
        if not flowed:
            out.append(_requote(depth, pending))
            pending = None
    if pending is not None:
        out.append(_requote(pending_depth, pending))
    return "\n".join(out)


def _requote(depth: int, text: str) -> str:
    return ("> " * depth + text) if depth else text


# ---------------------------------------------------------------------------------------------
# HTML


def html_to_text(markup: str) -> str:
    """HTML as plain text: block elements on lines of their own, `<br>` a line break, no
    markup, entities decoded, scripts, styles and the head dropped; the text inside a
    `<blockquote>` or a client's quote container (Gmail's gmail_quote, Thunderbird's
    moz-cite-prefix, Yahoo's yahoo_quoted) as "> " lines, and a signature container
    (gmail_signature, moz-signature) dropped. (Outlook quotes nothing: its "From:/Sent:"
    block is found in the text, as in its plain text.)"""
    reader = _TextReader()
    try:
        reader.feed(markup)
        reader.close()
    except AssertionError:
        # html.parser refuses an unknown "<![keyword" section (_markupbase); read it again
        # without such sections rather than lose what follows.
        reader = _TextReader()
        reader.feed(re.sub(r"<!\[[^>]*>?", "", markup))
        reader.close()
    return reader.text()


_BLOCKS: Final = frozenset(
    {
        "address", "article", "aside", "blockquote", "dd", "div", "dl", "dt", "fieldset",
        "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
        "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "table", "tr", "ul",
    }
)  # fmt: skip
_HIDDEN: Final = frozenset({"script", "style", "head", "title", "template", "noscript"})
_VOID: Final = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)
_QUOTE_CLASSES: Final = frozenset({"gmail_quote", "moz-cite-prefix", "yahoo_quoted"})
_SIGNATURE_CLASSES: Final = frozenset({"gmail_signature", "moz-signature"})


class _TextReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._lines: list[str] = []
        self._line: list[str] = []
        self._line_depth = 0
        self._stack: list[tuple[str, str]] = []  # (tag, "quote" | "hide" | "pre" | "")
        self._open: dict[str, int] = {}  # how many of each tag the stack holds
        self._depth = 0
        self._hidden = 0
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCKS:
            self._break()
        if tag == "br":
            self._break(force=True)
        if tag in _VOID:
            return
        role = self._role(tag, dict(attrs))
        self._stack.append((tag, role))
        self._open[tag] = self._open.get(tag, 0) + 1
        self._enter(role, 1)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCKS:
            self._break()
        if tag == "br":
            self._break(force=True)

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        # Close up to the nearest open `tag`; an end tag that opened nothing is ignored
        # (counted, so that a run of stray end tags costs no walk down the stack).
        if self._open.get(tag, 0):
            for index in range(len(self._stack) - 1, -1, -1):
                if self._stack[index][0] == tag:
                    for closed, role in self._stack[index:]:
                        self._enter(role, -1)
                        self._open[closed] -= 1
                    del self._stack[index:]
                    break
        if tag in _BLOCKS:
            self._break()

    def handle_data(self, data: str) -> None:
        if self._hidden:
            return
        if self._pre:
            for index, piece in enumerate(data.split("\n")):
                if index:
                    self._break(force=True)
                self._add(piece)
            return
        self._add(re.sub(r"[ \t\r\n\f\xa0]+", " ", data))

    def text(self) -> str:
        self._break()
        return "\n".join(self._lines)

    def _role(self, tag: str, attrs: dict[str, str | None]) -> str:
        classes = set((attrs.get("class") or "").lower().split())
        if tag in _HIDDEN or classes & _SIGNATURE_CLASSES:
            return "hide"
        if tag == "blockquote" or classes & _QUOTE_CLASSES:
            return "quote"
        return "pre" if tag == "pre" else ""

    def _enter(self, role: str, step: int) -> None:
        if role == "quote":
            self._break()
            self._depth += step
        elif role == "hide":
            self._hidden += step
        elif role == "pre":
            self._pre += step

    def _add(self, piece: str) -> None:
        if not self._line:
            if not self._pre:
                piece = piece.lstrip()
            if not piece:
                return
            self._line_depth = self._depth
        self._line.append(piece)

    def _break(self, *, force: bool = False) -> None:
        if self._line or force:
            text = "".join(self._line).rstrip()
            depth = self._line_depth if self._line else self._depth
            self._lines.append(("> " * depth + text) if depth else text)
        self._line = []
