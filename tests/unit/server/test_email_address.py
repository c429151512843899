"""domain/email_address.py and domain/smtp_relay.py: addresses as `compass admin` takes them,
reply addresses read back whatever a mail server did to their case, and the relay URL."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import pytest
from hypothesis import given, settings, strategies as st

from compass_server.domain.email_address import (
    check_address,
    check_domain,
    reply_address,
    reply_token,
    same_address,
)
from compass_server.domain.smtp_relay import SmtpRelay
from compass_server.store.postgres.email import new_token

if TYPE_CHECKING:
    from collections.abc import Callable

DOMAIN = "reply.compass.test"
T = TypeVar("T")


def _attempt(parse: Callable[[str], T], raw: str) -> tuple[T | None, str]:
    """(what `parse` made of `raw`, "") or (None, what its ValueError said)."""
    try:
        return parse(raw), ""
    except ValueError as exc:
        return None, str(exc)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_an_address_or_a_value_error_naming_it(raw: str) -> None:
    address, said = _attempt(check_address, raw)
    if address is None:
        assert "email address" in said
        return
    assert address == raw.strip()
    local, _, domain = address.partition("@")
    assert local
    assert "." in domain
    assert check_domain(domain) == domain.lower().rstrip(".")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=120), st.text(max_size=40))
def test_any_recipient_is_read_as_a_token_or_none_without_error(
    recipient: str, domain: str
) -> None:
    token = reply_token(recipient, domain)
    assert token is None or token.isalnum()


@settings(max_examples=50, deadline=None)
@given(st.sampled_from([str.upper, str.lower, str.title, lambda s: s]))
def test_a_reply_address_reads_back_its_token_whatever_its_case(case: object) -> None:
    token = new_token()
    address = reply_address(token, DOMAIN)
    assert callable(case)
    assert reply_token(str(case(address)), DOMAIN) == token
    assert reply_token(f"<{address}>", DOMAIN) == token
    assert reply_token(address, "elsewhere.test") is None
    assert reply_token(f"other+{token}@{DOMAIN}", DOMAIN) is None
    assert reply_token(f"ask+{token}x!@{DOMAIN}", DOMAIN) is None


def test_addresses_compare_without_case() -> None:
    assert same_address("Ada@Example.org", " ada@example.ORG ")
    assert not same_address("ada@example.org", "ada@example.com")


@pytest.mark.parametrize(
    "bad",
    ["", "ada", "ada@", "@example.org", "a@@b.org", "a b@example.org", "ada@localhost", ".a@b.org"],
)
def test_not_addresses(bad: str) -> None:
    with pytest.raises(ValueError, match="not an email address"):
        check_address(bad)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="@"), max_size=80))
def test_any_relay_url_parses_or_says_why_without_quoting_it(raw: str) -> None:
    secret = "Zq9secretZq9"
    url = f"smtp://u:{secret}@{raw}"
    relay, said = _attempt(SmtpRelay.parse, url)
    if relay is None:
        assert secret not in said
        return
    assert relay.password == secret
    assert secret not in repr(relay)
    assert 0 < relay.port < 65536
