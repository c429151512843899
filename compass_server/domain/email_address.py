"""Email addresses as Compass keeps and reads them (docs/answering/email.md). Pure.

- `check_address`: a person's address as `compass admin` takes it: a plain `local@domain`
  (ASCII, no display name, no comments, at most 254 characters), kept as given; compared
  case-insensitively (`same_address`);
- `reply_address` / `reply_token`: the reply address of one (ask, person) thread,
  `ask+<token>@<reply domain>`, and the token read back from a recipient;
- `check_domain`: a mail domain (the reply domain, a Message-ID's right-hand side).
"""

from __future__ import annotations

import re
from typing import Final

MAX_ADDRESS: Final = 254
REPLY_LOCAL_PREFIX: Final = "ask+"
_LOCAL: Final = re.compile(r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]{1,64}$")
_LABEL: Final = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")
_TOKEN: Final = re.compile(r"^[a-z2-7]{16,64}$")


def check_domain(raw: str) -> str:
    """A mail domain, lower-cased: dot-separated labels of letters, digits and hyphens.

    Raises:
        ValueError: saying what is wrong.
    """
    domain = raw.strip().rstrip(".").lower()
    if not domain or len(domain) > 253:
        raise ValueError(f"{raw!r} is not a mail domain")
    if not all(_LABEL.match(label) for label in domain.split(".")):
        raise ValueError(f"{raw!r} is not a mail domain (letters, digits, hyphens and dots)")
    return domain


def check_address(raw: str) -> str:
    """A person's address: `local@domain`, as given but trimmed.

    Raises:
        ValueError: saying what is wrong (never more than the input).
    """
    address = raw.strip()
    if not address or len(address) > MAX_ADDRESS or address.count("@") != 1:
        raise ValueError(f"{raw!r} is not an email address (local@domain)")
    local, _, domain = address.partition("@")
    if not _LOCAL.match(local) or local.startswith(".") or local.endswith(".") or ".." in local:
        raise ValueError(f"{raw!r} is not an email address (its part before @)")
    try:
        check_domain(domain)
    except ValueError:
        raise ValueError(f"{raw!r} is not an email address (its domain)") from None
    if "." not in domain.strip("."):
        raise ValueError(f"{raw!r} is not an email address (its domain has no dot)")
    return address


def same_address(a: str, b: str) -> bool:
    """Whether two addresses name the same mailbox (compared case-insensitively)."""
    return a.strip().lower() == b.strip().lower()


def reply_address(token: str, domain: str) -> str:
    """The reply address of a thread: `ask+<token>@<domain>`."""
    return f"{REPLY_LOCAL_PREFIX}{token}@{domain}"


def reply_token(recipient: str, domain: str) -> str | None:
    """The token of `recipient` when it is a reply address of `domain` (case-insensitive;
    angle brackets allowed), else None."""
    address = recipient.strip()
    if address.startswith("<") and address.endswith(">"):
        address = address[1:-1]
    local, at, at_domain = address.rpartition("@")
    if not at or at_domain.rstrip(".").lower() != domain.lower():
        return None
    local = local.lower()
    if not local.startswith(REPLY_LOCAL_PREFIX):
        return None
    token = local[len(REPLY_LOCAL_PREFIX) :]
    return token if _TOKEN.match(token) else None
