"""The one check of a webhook URL and of the addresses a delivery may reach (issue 24,
G2/G6/G9; compass_server/domain/webhook_targets.py)."""

from __future__ import annotations

import ipaddress
import re

import httpx
import pytest
from hypothesis import given, strategies as st

from compass_server.domain.errors import InvalidArgumentError
from compass_server.domain.webhook_targets import AllowList, check_url, refusal

NOTHING = AllowList()
DATABASE_RULE = re.compile(r"^https?://")  # webhooks_url_check in migrations/0005_webhooks.sql

INTERNAL = [
    "http://169.254.169.254/latest/meta-data/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://metadata/",
    "http://10.0.0.7/hook",
    "http://192.168.1.20/hook",
    "http://172.16.0.1/hook",
    "http://[fe80::1]/hook",
    "http://[fd00:ec2::254]/",
    "http://100.100.100.200/",
    "http://instance-data/",
    "http://svc.cluster.internal/",
]
LOOPBACK = [
    "http://127.0.0.1:8000/",
    "http://127.1/",
    "http://0x7f000001/",
    "http://2130706433/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://0.0.0.0/",
    "http://localhost:8000/",
    "http://LOCALHOST./",
    "http://app.localhost/",
    "http://[2002:7f00:1::]/",  # 6to4 around 127.0.0.1
]


@pytest.mark.parametrize("url", INTERNAL + LOOPBACK)
def test_internal_targets_are_refused_by_default(url: str) -> None:
    with pytest.raises(InvalidArgumentError, match=r"internal.*COMPASS_WEBHOOK_ALLOW_HOSTS"):
        check_url(url, NOTHING)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://example.com:99999/", "port"),
        ("http://example.com:0/", "port"),
        ("http://[::1/x", "IPv6"),
        ("ftp://example.com/", "http:// or https://"),
        ("mailto:x@example.com", "http:// or https://"),
        ("http:/example.com", "http:// or https://"),
        ("https://", "no host"),
        ("http://exa mple.com/", "printable"),
        ("http://ex\x00ample.com/", "printable"),
        ("http://exa_mple-.com/", "not a valid host name"),
        ("http://999.1.1.1/", "not a valid IPv4 address"),
        ("http://0177.0.0.1/", "not a valid IPv4 address"),
        ("http://127.000.000.001/", "not a valid IPv4 address"),
        ("http://[::]]/", "IPv6"),
        ("http://\u0660/", "not a valid host name"),
        ("http://ünicode--.com/", "not a valid host name"),
        ("http://" + "a" * 2100 + ".com/", "2048"),
    ],
)
def test_unusable_urls_are_refused_with_a_reason(url: str, why: str) -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(why)):
        check_url(url, NOTHING)


def test_the_scheme_is_stored_in_lower_case() -> None:
    assert (
        check_url("HTTPS://Hooks.Example.com/A?b=C", NOTHING) == "https://Hooks.Example.com/A?b=C"
    )
    assert check_url("Http://example.com", NOTHING) == "http://example.com"


def test_an_allow_list_names_hosts_addresses_and_networks() -> None:
    allow = AllowList.parse(" 127.0.0.1 , hooks.corp.internal., 10.0.0.0/8, [::1]")
    assert check_url("http://127.0.0.1:9000/h", allow) == "http://127.0.0.1:9000/h"
    assert check_url("http://HOOKS.corp.internal/h", allow) == "http://HOOKS.corp.internal/h"
    assert check_url("http://10.9.8.7/h", allow) == "http://10.9.8.7/h"
    assert check_url("http://[::1]:80/h", allow) == "http://[::1]:80/h"
    with pytest.raises(InvalidArgumentError):
        check_url("http://192.168.0.1/", allow)
    assert refusal(ipaddress.ip_address("10.1.1.1"), allow) is None
    assert refusal(ipaddress.ip_address("127.0.0.2"), allow) is not None


@pytest.mark.parametrize("raw", ["not a host!", "10.0.0.0/33x", "-bad.example"])
def test_a_bad_allow_list_entry_is_named(raw: str) -> None:
    with pytest.raises(ValueError, match=re.escape(raw)):
        AllowList.parse(raw)


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "93.184.215.14"])
def test_public_addresses_pass(address: str) -> None:
    assert refusal(ipaddress.ip_address(address), NOTHING) is None


@given(
    url=st.text(max_size=80)
    | st.from_regex(r"[hH][tT]{2}[pP][sS]?://[^/]{0,30}(/.{0,20})?")
    | st.from_regex(r"https?://[0-9a-fx.\[\]:]{1,25}/", fullmatch=True)
)
def test_whatever_comes_out_is_a_url_the_database_and_the_client_take(url: str) -> None:
    try:
        checked = check_url(url, AllowList.parse("0.0.0.0/0, ::/0"))
    except InvalidArgumentError:
        return  # refused with a message; nothing else is raised
    assert DATABASE_RULE.match(checked), checked
    parsed = httpx.URL(checked)  # the worker's client can use it (no InvalidURL)
    assert parsed.host
