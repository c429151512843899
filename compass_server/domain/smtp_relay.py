"""COMPASS_SMTP_URL read into the relay Compass sends mail through (docs/answering/email.md).
Pure. The password is kept out of every message and repr."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias
from urllib.parse import parse_qsl, unquote, urlsplit

from compass_server.domain.email_address import check_domain

Security: TypeAlias = Literal["plain", "starttls", "tls"]
SHAPE: Final = "smtp://[user:pass@]host:port (smtps:// for implicit TLS, ?starttls=1)"


@dataclass(frozen=True, slots=True, kw_only=True)
class SmtpRelay:
    """Where mail goes out: host, port, how it is secured, and an optional login."""

    host: str
    port: int
    security: Security
    """"tls": implicit TLS (smtps://); "starttls": upgrade after connecting; "plain"."""
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, raw: str) -> SmtpRelay:
        """The relay a URL names.

        Raises:
            ValueError: saying what is wrong, never quoting the URL (it may hold a password).
        """
        try:
            parts = urlsplit(raw.strip())
            port = parts.port
        except ValueError:
            raise ValueError(f"is not a URL of the form {SHAPE}") from None
        scheme = parts.scheme.lower()
        if scheme not in {"smtp", "smtps"}:
            raise ValueError(f"must start smtp:// or smtps://, as {SHAPE}")
        if not parts.hostname:
            raise ValueError(f"names no host: {SHAPE}")
        if parts.path not in {"", "/"} or parts.fragment:
            raise ValueError(f"must have no path: {SHAPE}")
        starttls = False
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            if key != "starttls" or value not in {"0", "1"}:
                raise ValueError("takes one query setting, starttls=1 or starttls=0")
            starttls = value == "1"
        if scheme == "smtps" and starttls:
            raise ValueError("smtps:// is implicit TLS from the start; starttls=1 is for smtp://")
        host = parts.hostname
        if not _is_ip(host):
            try:
                host = check_domain(host)
            except ValueError:
                raise ValueError(f"names a host that is not a host name: {SHAPE}") from None
        security: Security = "tls" if scheme == "smtps" else ("starttls" if starttls else "plain")
        username = unquote(parts.username) if parts.username else None
        password = unquote(parts.password) if parts.password is not None else None
        if password is not None and username is None:
            raise ValueError("has a password but no user name")
        return cls(
            host=host,
            port=port or (465 if scheme == "smtps" else 25),
            security=security,
            username=username,
            password=password,
        )


def _is_ip(host: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
