"""Server settings, read once from the environment into a frozen value."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, TypedDict

from compass_server.domain.email_address import check_address, check_domain
from compass_server.domain.smtp_relay import SmtpRelay
from compass_server.domain.vapid import VapidKey, check_subject
from compass_server.domain.webhook_targets import AllowList

if TYPE_CHECKING:
    from collections.abc import Mapping

DATABASE_URL: Final = "COMPASS_DATABASE_URL"
LISTEN_DATABASE_URL: Final = "COMPASS_LISTEN_DATABASE_URL"
STATEMENT_CACHE: Final = "COMPASS_DB_STATEMENT_CACHE_SIZE"
WORKERS: Final = "COMPASS_WORKERS"
HOST: Final = "COMPASS_HOST"
PORT: Final = "COMPASS_PORT"
PUBLIC_URL: Final = "COMPASS_PUBLIC_URL"
DATA_DIR: Final = "COMPASS_DATA_DIR"
POOL_MIN: Final = "COMPASS_DB_POOL_MIN"
POOL_MAX: Final = "COMPASS_DB_POOL_MAX"
DB_TIMEOUT: Final = "COMPASS_DB_TIMEOUT_SECONDS"
MAX_REQUEST_BYTES: Final = "COMPASS_MAX_REQUEST_BYTES"
SWEEP_INTERVAL: Final = "COMPASS_SWEEP_INTERVAL_SECONDS"
EXPIRY_GRACE: Final = "COMPASS_EXPIRY_GRACE_SECONDS"
METRICS_TOKEN: Final = "COMPASS_METRICS_TOKEN"  # noqa: S105 - the variable's name
METRICS_PORT: Final = "COMPASS_METRICS_PORT"
GRPC_PORT: Final = "COMPASS_GRPC_PORT"
WEBHOOK_POLL: Final = "COMPASS_WEBHOOK_POLL_SECONDS"
WEBHOOK_TIMEOUT: Final = "COMPASS_WEBHOOK_TIMEOUT_SECONDS"
WEBHOOK_BACKOFF: Final = "COMPASS_WEBHOOK_BACKOFF_SECONDS"
WEBHOOK_ALLOW_HOSTS: Final = "COMPASS_WEBHOOK_ALLOW_HOSTS"
VAPID_PRIVATE_KEY: Final = "COMPASS_VAPID_PRIVATE_KEY"
VAPID_SUBJECT: Final = "COMPASS_VAPID_SUBJECT"
PUSH_ALLOW_HOSTS: Final = "COMPASS_PUSH_ALLOW_HOSTS"
REMINDER_AFTER: Final = "COMPASS_REMINDER_AFTER_SECONDS"
REMINDER_MAX: Final = "COMPASS_REMINDER_MAX"
LOG_FORMAT: Final = "COMPASS_LOG_FORMAT"
AUTH_RECHECK: Final = "COMPASS_AUTH_RECHECK_SECONDS"
MAX_STREAMS: Final = "COMPASS_MAX_STREAMS_PER_ACCOUNT"
POSTS_PER_MINUTE: Final = "COMPASS_POSTS_PER_MINUTE"
POST_BURST: Final = "COMPASS_POST_BURST"
MAX_CONNECTIONS: Final = "COMPASS_MAX_CONNECTIONS"
MAX_CONNECTIONS_PER_CLIENT: Final = "COMPASS_MAX_CONNECTIONS_PER_CLIENT"
REQUEST_READ_TIMEOUT: Final = "COMPASS_REQUEST_READ_TIMEOUT_SECONDS"
KEEPALIVE_TIMEOUT: Final = "COMPASS_KEEPALIVE_TIMEOUT_SECONDS"
MCP_GRACE: Final = "COMPASS_MCP_GRACE_SECONDS"
MCP_WAIT: Final = "COMPASS_MCP_WAIT_SECONDS"
MCP_PROGRESS: Final = "COMPASS_MCP_PROGRESS_SECONDS"
SMTP_URL: Final = "COMPASS_SMTP_URL"
EMAIL_FROM: Final = "COMPASS_EMAIL_FROM"
EMAIL_REPLY_DOMAIN: Final = "COMPASS_EMAIL_REPLY_DOMAIN"
INBOUND_SMTP_HOST: Final = "COMPASS_INBOUND_SMTP_HOST"
INBOUND_SMTP_PORT: Final = "COMPASS_INBOUND_SMTP_PORT"
EMAIL_DELAY: Final = "COMPASS_EMAIL_DELAY_SECONDS"
EMAIL_REQUIRE_DKIM: Final = "COMPASS_EMAIL_REQUIRE_DKIM"

#: Every environment variable the server reads (docker-compose.yml may only use these).
ENV_VARS: Final = frozenset(
    {
        DATABASE_URL,
        LISTEN_DATABASE_URL,
        STATEMENT_CACHE,
        WORKERS,
        HOST,
        PORT,
        PUBLIC_URL,
        DATA_DIR,
        POOL_MIN,
        POOL_MAX,
        DB_TIMEOUT,
        MAX_REQUEST_BYTES,
        SWEEP_INTERVAL,
        EXPIRY_GRACE,
        METRICS_TOKEN,
        METRICS_PORT,
        GRPC_PORT,
        WEBHOOK_POLL,
        WEBHOOK_TIMEOUT,
        WEBHOOK_BACKOFF,
        WEBHOOK_ALLOW_HOSTS,
        VAPID_PRIVATE_KEY,
        VAPID_SUBJECT,
        PUSH_ALLOW_HOSTS,
        REMINDER_AFTER,
        REMINDER_MAX,
        LOG_FORMAT,
        AUTH_RECHECK,
        MAX_STREAMS,
        POSTS_PER_MINUTE,
        POST_BURST,
        MAX_CONNECTIONS,
        MAX_CONNECTIONS_PER_CLIENT,
        REQUEST_READ_TIMEOUT,
        KEEPALIVE_TIMEOUT,
        MCP_GRACE,
        MCP_WAIT,
        MCP_PROGRESS,
        SMTP_URL,
        EMAIL_FROM,
        EMAIL_REPLY_DOMAIN,
        INBOUND_SMTP_HOST,
        INBOUND_SMTP_PORT,
        EMAIL_DELAY,
        EMAIL_REQUIRE_DKIM,
    }
)


class ConfigError(ValueError):
    """An environment variable holds a value the server cannot use."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Everything the server is configured with."""

    database_url: str | None = None
    """PostgreSQL DSN; None means: start the embedded server under `data_dir`."""
    listen_database_url: str | None = None
    """DSN of the change listener's LISTEN connection when it must differ from
    `database_url` (a pooler in transaction mode, e.g. PgBouncer, cannot carry LISTEN: point
    the pool at the pooler and this at PostgreSQL itself). None: `database_url`."""
    statement_cache_size: int = 100
    """asyncpg's prepared-statement cache per pooled connection (its default, 100); 0 behind
    a pooler in transaction mode that does not track prepared statements (PgBouncer before
    1.21, or with max_prepared_statements = 0)."""
    workers: int = 1
    """Server processes sharing the port, each with its own pool and change listener."""
    host: str = "127.0.0.1"
    port: int = 8000
    public_url: str | None = None
    """The URL people open, when it differs from http://host:port/ (behind a proxy)."""
    data_dir: str | None = None
    """Where the embedded PostgreSQL keeps its data; None picks a per-user default."""
    pool_min: int = 1
    pool_max: int = 10
    db_timeout_seconds: float = 10.0
    """Connect and command timeout for database calls."""
    max_request_bytes: int = 1 << 20
    """Largest accepted request body; larger requests are refused before parsing."""
    sweep_interval_seconds: float = 1.0
    """How often the deadline sweeper looks for asks to expire."""
    auth_recheck_seconds: float = 2.0
    """How often the tokens of live streams are re-checked (a revoked one ends its streams)."""
    max_streams_per_account: int = 64
    """Open WatchChannel + WatchAsk streams one account may hold in one server process."""
    posts_per_minute: int = 1200
    """AppendMessage + UpdateMessage calls one account may make per minute (per process)."""
    post_burst: int = 300
    """How many of them may come at once."""
    expiry_grace_seconds: float = 60.0
    """How long past a PICK_RECOMMENDED ask's deadline the server waits for the runtime's
    TIMED_OUT report before it expires the ask."""
    metrics_token: str | None = None
    """Bearer token that /metrics requires; without it (and without `metrics_port`) 404."""
    metrics_port: int | None = None
    """A separate port (on `host`) serving /metrics without a token."""
    webhook_poll_seconds: float = 1.0
    """How often the webhook worker looks for due deliveries (and reminders)."""
    webhook_timeout_seconds: float = 10.0
    """How long one delivery attempt may take."""
    webhook_backoff_seconds: tuple[float, ...] | None = None
    """Delays before each retry of a failed delivery (None: webhooks.BACKOFF)."""
    webhook_allow: AllowList = field(default_factory=AllowList)
    """Internal hosts (names, addresses, networks) webhooks may reach; every other internal
    address is refused (domain/webhook_targets.py)."""
    vapid_private_key: str | None = field(default=None, repr=False)
    """The key Web Push is signed with (base64url of the P-256 scalar, or PEM); None: one
    generated once and kept in the database (domain/vapid.py)."""
    vapid_subject: str | None = None
    """The contact in each push's VAPID JWT (mailto: or https:); None: the public URL's
    origin."""
    push_allow: AllowList = field(default_factory=lambda: AllowList(setting=PUSH_ALLOW_HOSTS))
    """Internal hosts push endpoints may be on (names, addresses, networks), and the hosts
    they may be plain http on; every other internal address is refused."""
    reminder_after_seconds: float = 900.0
    """ask.reminder after an ask has waited this long (and again each time); 0: none."""
    reminder_max: int = 3
    """Reminders per ask at most."""
    grpc_port: int | None = None
    """A second listener (on `host`) speaking HTTP/2 as well as HTTP/1.1, so gRPC clients
    (which need HTTP/2 trailers) are served; everything else is the same app."""
    log_format: str = "text"
    """"text" or "json" (one JSON object per line)."""
    max_connections: int = 1000
    """Open client connections the server keeps; more are answered 503 and closed. The
    process needs this many file descriptors plus headroom (`ulimit -n`)."""
    max_connections_per_client: int = 200
    """Open connections from one peer address; 0: no per-client cap (behind a proxy that
    connects from one address)."""
    request_read_timeout_seconds: float = 10.0
    """A connection must deliver a whole request within this long of being opened (or of its
    previous response), else it is closed: half-sent requests cannot pile up."""
    keepalive_timeout_seconds: int = 5
    """How long an idle kept-alive connection stays open between requests."""
    mcp_grace_seconds: float = 60.0
    """How long an MCP ask stays answerable after its client went away (cancelled the call,
    disconnected) before it is WITHDRAWN "agent stopped waiting", unless a call rejoined it."""
    mcp_wait_seconds: float = 50.0
    """How long an MCP `ask`/`ask_wait` call waits before it returns `pending`, when neither
    the call (`wait_seconds`) nor the client (header X-Compass-Wait-Seconds) says."""
    mcp_progress_seconds: float = 15.0
    """How often a waiting MCP call sends a progress notification (and renews its wait)."""
    smtp: SmtpRelay | None = None
    """The relay asks are mailed through (COMPASS_SMTP_URL; its password is never shown);
    None: no mail goes out (docs/answering/email.md)."""
    email_from: str | None = None
    """The From of every mail ("Compass <compass@example.com>"); its domain is the
    Message-IDs'."""
    email_reply_domain: str | None = None
    """Replies go to ask+<token>@ this domain (routed to the inbound listener)."""
    inbound_smtp_host: str | None = None
    inbound_smtp_port: int | None = None
    """Compass's own SMTP listener for replies; None: off."""
    email_delay_seconds: float = 60.0
    """An ask is mailed only when still pending this long after it was asked (0: at once)."""
    email_require_dkim: bool = False
    """Replies must carry a valid DKIM signature of their From domain."""

    @property
    def email_out(self) -> bool:
        """Whether asks are mailed (a relay, a From and a reply domain are set)."""
        return self.smtp is not None

    @property
    def email_in(self) -> bool:
        """Whether Compass listens for replies."""
        return self.inbound_smtp_port is not None

    @property
    def base_url(self) -> str:
        """The URL people open, with a trailing slash: `public_url`, else http://host:port/."""
        url = self.public_url or f"http://{self.host}:{self.port}/"
        return url if url.endswith("/") else url + "/"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read settings from `env` (default: os.environ).

        Raises:
            ConfigError: a variable is set to a value of the wrong kind or range.
        """
        source = os.environ if env is None else env
        return cls(
            database_url=source.get(DATABASE_URL) or None,
            listen_database_url=source.get(LISTEN_DATABASE_URL) or None,
            statement_cache_size=_int(source, STATEMENT_CACHE, 100, low=0, high=100_000),
            workers=_workers(source.get(WORKERS) or "1"),
            host=source.get(HOST) or "127.0.0.1",
            port=_int(source, PORT, 8000, low=0, high=65535),
            public_url=source.get(PUBLIC_URL) or None,
            data_dir=source.get(DATA_DIR) or None,
            pool_min=_int(source, POOL_MIN, 1, low=0, high=1000),
            pool_max=_int(source, POOL_MAX, 10, low=1, high=1000),
            db_timeout_seconds=_float(source, DB_TIMEOUT, 10.0),
            max_request_bytes=_int(source, MAX_REQUEST_BYTES, 1 << 20, low=1024, high=1 << 30),
            sweep_interval_seconds=_float(source, SWEEP_INTERVAL, 1.0),
            auth_recheck_seconds=_float(source, AUTH_RECHECK, 2.0, low=0.05, high=300.0),
            max_streams_per_account=_int(source, MAX_STREAMS, 64, low=1, high=100_000),
            posts_per_minute=_int(source, POSTS_PER_MINUTE, 1200, low=1, high=10_000_000),
            post_burst=_int(source, POST_BURST, 300, low=1, high=10_000_000),
            expiry_grace_seconds=_float(source, EXPIRY_GRACE, 60.0, low=0.0, high=86400.0),
            metrics_token=source.get(METRICS_TOKEN) or None,
            metrics_port=_int(source, METRICS_PORT, 0, low=0, high=65535) or None,
            grpc_port=_int(source, GRPC_PORT, 0, low=0, high=65535) or None,
            webhook_poll_seconds=_float(source, WEBHOOK_POLL, 1.0, low=0.01, high=60.0),
            webhook_timeout_seconds=_float(source, WEBHOOK_TIMEOUT, 10.0, low=0.1, high=120.0),
            webhook_backoff_seconds=_backoff(source.get(WEBHOOK_BACKOFF)),
            webhook_allow=_allow_list(source.get(WEBHOOK_ALLOW_HOSTS) or "", WEBHOOK_ALLOW_HOSTS),
            vapid_private_key=_vapid_key(source.get(VAPID_PRIVATE_KEY) or ""),
            vapid_subject=_vapid_subject(source.get(VAPID_SUBJECT) or ""),
            push_allow=_allow_list(source.get(PUSH_ALLOW_HOSTS) or "", PUSH_ALLOW_HOSTS),
            reminder_after_seconds=_float(source, REMINDER_AFTER, 900.0, low=0.0, high=604800.0),
            reminder_max=_int(source, REMINDER_MAX, 3, low=0, high=100),
            log_format=_log_format(source.get(LOG_FORMAT) or "text"),
            max_connections=_int(source, MAX_CONNECTIONS, 1000, low=1, high=1_000_000),
            max_connections_per_client=_int(
                source, MAX_CONNECTIONS_PER_CLIENT, 200, low=0, high=1_000_000
            ),
            request_read_timeout_seconds=_float(source, REQUEST_READ_TIMEOUT, 10.0),
            keepalive_timeout_seconds=_int(source, KEEPALIVE_TIMEOUT, 5, low=1, high=3600),
            mcp_grace_seconds=_float(source, MCP_GRACE, 60.0, low=0.0, high=86400.0),
            mcp_wait_seconds=_float(source, MCP_WAIT, 50.0, low=0.0, high=3600.0),
            mcp_progress_seconds=_float(source, MCP_PROGRESS, 15.0, low=0.05, high=600.0),
            **_email(source),
        )


class _EmailSettings(TypedDict):
    smtp: SmtpRelay | None
    email_from: str | None
    email_reply_domain: str | None
    inbound_smtp_host: str | None
    inbound_smtp_port: int | None
    email_delay_seconds: float
    email_require_dkim: bool


def _email(source: Mapping[str, str]) -> _EmailSettings:
    """The email settings, checked together: a relay needs a From and a reply domain; the
    listener needs a reply domain, and a host with a port. No message quotes the SMTP URL."""
    smtp: SmtpRelay | None = None
    if raw_url := source.get(SMTP_URL, "").strip():
        try:
            smtp = SmtpRelay.parse(raw_url)
        except ValueError as exc:
            raise ConfigError(f"{SMTP_URL} {exc}") from None
    sender = _email_from(source.get(EMAIL_FROM, "").strip())
    domain: str | None = None
    if raw_domain := source.get(EMAIL_REPLY_DOMAIN, "").strip():
        try:
            domain = check_domain(raw_domain)
        except ValueError as exc:
            raise ConfigError(f"{EMAIL_REPLY_DOMAIN}: {exc}") from None
    host = source.get(INBOUND_SMTP_HOST, "").strip() or None
    port = (
        _int(source, INBOUND_SMTP_PORT, 0, low=0, high=65535)
        if source.get(INBOUND_SMTP_PORT, "").strip()
        else None
    )
    if (host is None) != (port is None):
        raise ConfigError(f"set both {INBOUND_SMTP_HOST} and {INBOUND_SMTP_PORT}, or neither")
    if smtp is not None and (sender is None or domain is None):
        raise ConfigError(f"{SMTP_URL} needs {EMAIL_FROM} and {EMAIL_REPLY_DOMAIN} set too")
    if port is not None and domain is None:
        raise ConfigError(f"{INBOUND_SMTP_PORT} needs {EMAIL_REPLY_DOMAIN} set too")
    dkim = source.get(EMAIL_REQUIRE_DKIM, "").strip()
    if dkim not in {"", "0", "1"}:
        raise ConfigError(f"{EMAIL_REQUIRE_DKIM} must be 1 or 0, got {dkim!r}")
    return {
        "smtp": smtp,
        "email_from": sender,
        "email_reply_domain": domain,
        "inbound_smtp_host": host,
        "inbound_smtp_port": port,
        "email_delay_seconds": _float(source, EMAIL_DELAY, 60.0, low=0.0, high=604800.0),
        "email_require_dkim": dkim == "1",
    }


def _email_from(raw: str) -> str | None:
    if not raw:
        return None
    from email.utils import formataddr, parseaddr

    name, address = parseaddr(raw)
    try:
        check_address(address)
    except ValueError:
        raise ConfigError(
            f"{EMAIL_FROM} must be an address, e.g. Compass <compass@example.com>, got {raw!r}"
        ) from None
    return formataddr((name, address))


MAX_WORKERS: Final = 64


def worker_count(raw: str) -> int:
    """A count of 1 to MAX_WORKERS, or `auto`: the CPUs this process may use (COMPASS_WORKERS
    and `compass serve --workers` alike).

    Raises:
        ValueError: anything else, saying what is accepted.
    """
    if raw.strip().lower() == "auto":
        return min(usable_cpus(), MAX_WORKERS)
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"must be a number of processes or auto, got {raw!r}") from None
    if not 1 <= value <= MAX_WORKERS:
        raise ValueError(f"must be between 1 and {MAX_WORKERS}, got {value}")
    return value


def _workers(raw: str) -> int:
    try:
        return worker_count(raw)
    except ValueError as exc:
        raise ConfigError(f"{WORKERS} {exc}") from None


def usable_cpus(cgroup_cpu_max: str = "/sys/fs/cgroup/cpu.max") -> int:
    """CPUs this process may run on: its affinity, lowered by a cgroup v2 CPU quota (a
    container's CPU limit), at least 1."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cpus = cpus or 1
    try:
        with open(cgroup_cpu_max, encoding="ascii") as quota_file:  # noqa: PTH123 - one small read
            quota, _, period = quota_file.read().partition(" ")
        if quota != "max":
            cpus = min(cpus, max(1, -(-int(quota) // int(period))))  # the quota, rounded up
    except (OSError, ValueError):
        pass  # no cgroup v2 limit to honour
    return cpus


def _log_format(raw: str) -> str:
    if raw not in {"text", "json"}:
        raise ConfigError(f"{LOG_FORMAT} must be text or json, got {raw!r}")
    return raw


def _allow_list(raw: str, setting: str) -> AllowList:
    try:
        return AllowList.parse(raw, setting)
    except ValueError as exc:
        raise ConfigError(f"{setting}: {exc}") from None


def _vapid_key(raw: str) -> str | None:
    if not raw.strip():
        return None
    try:
        VapidKey.parse(raw)
    except ValueError as exc:  # the message never quotes the key
        raise ConfigError(f"{VAPID_PRIVATE_KEY}: {exc}") from None
    return raw.strip()


def _vapid_subject(raw: str) -> str | None:
    if not raw:
        return None
    try:
        return check_subject(raw)
    except ValueError as exc:
        raise ConfigError(f"{VAPID_SUBJECT} {exc}") from None


def _backoff(raw: str | None) -> tuple[float, ...] | None:
    """A comma-separated list of delays in seconds (1 to 20 of them, each 0 to 86400)."""
    if not raw:
        return None
    try:
        delays = tuple(float(part) for part in raw.split(","))
    except ValueError:
        raise ConfigError(
            f"{WEBHOOK_BACKOFF} must be comma-separated seconds, got {raw!r}"
        ) from None
    if not 1 <= len(delays) <= 20 or not all(0 <= d <= 86400 for d in delays):
        raise ConfigError(f"{WEBHOOK_BACKOFF} must list 1 to 20 delays of 0 to 86400 seconds")
    return delays


def _int(source: Mapping[str, str], name: str, default: int, *, low: int, high: int) -> int:
    raw = source.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise ConfigError(f"{name} must be between {low} and {high}, got {value}")
    return value


def _float(
    source: Mapping[str, str],
    name: str,
    default: float,
    *,
    low: float | None = None,
    high: float = 3600.0,
) -> float:
    raw = source.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if low is None:
        if not 0 < value < high:
            raise ConfigError(f"{name} must be between 0 and {high:g} seconds, got {value}")
    elif not low <= value <= high:
        raise ConfigError(f"{name} must be between {low:g} and {high:g} seconds, got {value}")
    return value
