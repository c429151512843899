"""TEMPORARY stand-in for the mailrules branch's inbound-mail reading (the lead's merge
replaces this file): a reply's own text (quotes cut), and whether a message is automatic."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import email.message


def reply_text(message: email.message.EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    content = part.get_content() if part is not None else ""
    text = content if isinstance(content, str) else ""
    kept: list[str] = []
    for line in text.splitlines():
        if line.startswith(">") or (line.startswith("On ") and line.rstrip().endswith("wrote:")):
            break
        kept.append(line)
    return "\n".join(kept).strip()


def is_automatic(message: email.message.EmailMessage, *, envelope_from: str | None = None) -> bool:
    if envelope_from is not None and envelope_from.strip() in ("", "<>"):
        return True
    auto = str(message.get("Auto-Submitted", "no")).strip().lower()
    precedence = str(message.get("Precedence", "")).strip().lower()
    return auto != "no" or precedence in {"bulk", "auto_reply", "junk", "list"}
