"""Where a webhook may be sent: the one check of an endpoint URL, and which addresses a
delivery may connect to (docs/webhooks.md).

`check_url` is the only place a URL is judged: `compass admin add-webhook` stores what it
returns (the database's `webhooks_url_check`, `url ~ '^https?://'`, always holds for it) and
the delivery worker judges every stored URL again before it connects. It refuses what the
HTTP client could not use (a port out of range, a broken IPv6 literal, ...) with a message
and never an exception of its own, and a host that is an internal address by default.

Addresses: only globally routable ones (`ipaddress`' `is_global`: not loopback, private,
link-local, shared, reserved or unspecified; an IPv4 address mapped into IPv6, 6to4 or Teredo
is judged as the IPv4 one), as GitLab and the Standard Webhooks guidance advise. The cloud
metadata services (169.254.169.254, fd00:ec2::254, 100.100.100.200) are all inside those. The
worker checks the addresses a name resolves to when it connects (compass_server/webhooks/transport.py),
so DNS cannot smuggle one in. `COMPASS_WEBHOOK_ALLOW_HOSTS` names the exceptions.

Web Push endpoints are judged by the same rules (`check_url(..., https_only=True)`), with
their own allow list, `COMPASS_PUSH_ALLOW_HOSTS` (`AllowList.setting` names it in messages).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Final, TypeAlias
from urllib.parse import urlsplit, urlunsplit

import idna

from compass_server.domain.errors import InvalidArgumentError

MAX_URL_LENGTH: Final = 2048
INTERNAL_NAMES: Final = frozenset(
    {"localhost", "metadata", "metadata.google.internal", "instance-data", "kubernetes.default"}
)
"""Host names refused at registration like internal addresses (they resolve to one)."""

_DOTTED_QUAD: Final = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$")
_BRACKETED: Final = re.compile(r"^\[[0-9A-Fa-f:.]+\](:[0-9]*)?$")
Address: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
Network: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network


WEBHOOK_SETTING: Final = "COMPASS_WEBHOOK_ALLOW_HOSTS"


@dataclass(frozen=True, slots=True)
class AllowList:
    """Hosts a webhook (or a push) may reach although they are internal
    (COMPASS_WEBHOOK_ALLOW_HOSTS; COMPASS_PUSH_ALLOW_HOSTS)."""

    names: frozenset[str] = frozenset()
    """Host names, lower case, without a trailing dot: a URL naming one may go wherever it
    resolves."""
    networks: tuple[Network, ...] = ()
    """Addresses and networks: a delivery may connect inside them."""
    setting: str = WEBHOOK_SETTING
    """The environment variable that names them, for the messages that say how to allow one."""

    @classmethod
    def parse(cls, raw: str, setting: str = WEBHOOK_SETTING) -> AllowList:
        """A comma-separated list of host names, IP addresses and networks (CIDR).

        Raises:
            ValueError: an entry is none of these; the message names it.
        """
        names: set[str] = set()
        networks: list[Network] = []
        for entry in (part.strip() for part in raw.split(",")):
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            name = _name(entry)
            if not name or not _is_host_name(name):
                raise ValueError(f"{entry!r} is not a host name, an IP address or a network")
            names.add(name)
        return cls(frozenset(names), tuple(networks), setting)

    def allows_name(self, host: str) -> bool:
        return _name(host) in self.names

    def allows_address(self, address: Address) -> bool:
        return any(address in network for network in self.networks)

    def allows_host(self, host: str) -> bool:
        """Whether a URL's host is named here: its name, or the address it spells."""
        address = _address(host)
        return self.allows_name(host) if address is None else self.allows_address(address)


def refusal(address: Address, allow: AllowList) -> str | None:
    """Why a delivery may not connect to `address`, or None when it may."""
    if allow.allows_address(address):
        return None
    judged = _embedded_ipv4(address) or address
    if judged.is_global and not judged.is_multicast:
        return None
    return f"{address} is an internal address (allow it with {allow.setting})"


def check_url(url: str, allow: AllowList, *, https_only: bool = False) -> str:
    """The endpoint URL to store: `url` with its scheme in lower case.

    Args:
        https_only: refuse http:// unless `allow` names the host (a Web Push endpoint: the
            push services are https; a stand-in on an allowed host may be plain http).

    Raises:
        InvalidArgumentError: not an http(s) URL with a host that the client can reach, or
            its host is internal (an address, or a name such as localhost) and not allowed.
    """
    if len(url) > MAX_URL_LENGTH or any(c.isspace() or not c.isprintable() for c in url):
        raise InvalidArgumentError(
            f"the URL must be at most {MAX_URL_LENGTH} printable characters without spaces"
        )
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port  # raises ValueError out of 0-65535
    except ValueError:
        raise InvalidArgumentError(
            "not a valid URL (check the brackets of an IPv6 address and the port)"
        ) from None
    scheme = parts.scheme.lower()
    if scheme not in {"http", "https"} or not url.lower().startswith(f"{scheme}://"):
        raise InvalidArgumentError("the URL must start with http:// or https://")
    if not host:
        raise InvalidArgumentError("the URL has no host")
    hostport = parts.netloc.rpartition("@")[2]
    bracketed = hostport.startswith("[")
    if (
        "[" in host
        or "]" in host
        or "%" in host
        or (bracketed and not _BRACKETED.match(hostport))
        or (not bracketed and ("[" in hostport or "]" in hostport))
    ):
        raise InvalidArgumentError(
            "not a valid URL (check the brackets of an IPv6 address and the port)"
        )
    if port == 0:
        raise InvalidArgumentError("the URL's port must be between 1 and 65535")
    if https_only and scheme != "https" and not allow.allows_host(host):
        raise InvalidArgumentError(
            f"the URL must start with https:// (http:// only to a host named in {allow.setting})"
        )
    if _DOTTED_QUAD.match(host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:  # the client takes a.b.c.d strictly: no 256, no leading zeros
            raise InvalidArgumentError(
                f"the URL's host {host} is not a valid IPv4 address"
            ) from None
    address = _address(host)
    if address is not None:
        reason = refusal(address, allow)
        if reason is not None:
            raise InvalidArgumentError(f"the URL's host {reason}")
    elif not allow.allows_name(host):
        name = _name(host)
        if not _is_host_name(name):
            raise InvalidArgumentError(f"the URL's host {host!r} is not a valid host name")
        if name in INTERNAL_NAMES or name.endswith((".localhost", ".internal")):
            raise InvalidArgumentError(
                f"the URL's host {name} is internal (allow it with {allow.setting})"
            )
    return urlunsplit(parts._replace(scheme=scheme))


def _address(host: str) -> Address | None:
    """The address a URL host spells, in any form a resolver would read (127.1, 0x7f000001,
    2130706433, 0177.0.0.1 are all 127.0.0.1), or None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        # inet_aton's forms: up to four parts, each decimal, octal (0...) or hex (0x...).
        parts = [_inet_number(p) for p in host.split(".")]
    except ValueError:
        return None
    if not 1 <= len(parts) <= 4 or any(p < 0 for p in parts):
        return None
    *head, last = parts
    if any(p > 255 for p in head) or last >= 256 ** (4 - len(head)):
        return None
    value = 0
    for p in head:
        value = value * 256 + p
    value = value * 256 ** (4 - len(head)) + last
    return ipaddress.IPv4Address(value)


def _inet_number(part: str) -> int:
    if not part.isascii():
        raise ValueError(part)  # int() would read other scripts' digits
    if len(part) > 1 and part[0] == "0" and part[1] not in "xX":
        return int(part, 8)
    return int(part, 0)


def _embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def _name(host: str) -> str:
    return host.strip().lower().rstrip(".")


def _is_host_name(name: str) -> bool:
    """A DNS name the HTTP client (httpx: IDNA 2008) takes; not a mistyped address."""
    labels = name.split(".")
    if not all(label and _is_label(label) for label in labels) or labels[-1].isdigit():
        return False  # no top-level domain is numeric: 999.1.1.1 is a bad address
    if name.isascii():
        return True
    try:
        idna.encode(name)
    except idna.IDNAError:
        return False
    return True


def _is_label(label: str) -> bool:
    return (
        len(label) <= 63
        and label[0] != "-"
        and label[-1] != "-"
        and all(c.isalnum() or c in "-_" for c in label)
    )
