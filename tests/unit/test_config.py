"""Settings come from the environment; docker-compose.yml uses the same variable names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from compass_server import config
from compass_server.config import ConfigError, Settings

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_without_environment() -> None:
    settings = Settings.from_env({})
    assert settings.database_url is None
    assert (settings.host, settings.port) == ("127.0.0.1", 8000)
    assert (settings.sweep_interval_seconds, settings.expiry_grace_seconds) == (1.0, 60.0)


def test_reads_every_variable() -> None:
    settings = Settings.from_env(
        {
            config.DATABASE_URL: "postgresql://u@h/db",
            config.HOST: "0.0.0.0",  # noqa: S104 - a value under test, not a bind
            config.PORT: "9000",
            config.POOL_MIN: "2",
            config.POOL_MAX: "20",
            config.DB_TIMEOUT: "2.5",
            config.MAX_REQUEST_BYTES: "4096",
            config.SWEEP_INTERVAL: "0.25",
            config.EXPIRY_GRACE: "0",
        }
    )
    assert settings.database_url == "postgresql://u@h/db"
    assert settings.port == 9000
    assert (settings.pool_min, settings.pool_max) == (2, 20)
    assert settings.db_timeout_seconds == 2.5
    assert settings.max_request_bytes == 4096
    assert (settings.sweep_interval_seconds, settings.expiry_grace_seconds) == (0.25, 0.0)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        (config.PORT, "http"),
        (config.PORT, "70000"),
        (config.DB_TIMEOUT, "-1"),
        (config.POOL_MAX, "0"),
        (config.SWEEP_INTERVAL, "0"),
        (config.EXPIRY_GRACE, "-1"),
        (config.EXPIRY_GRACE, "86401"),
    ],
)
def test_bad_values_name_the_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        Settings.from_env({name: value})


def test_compose_uses_only_variables_the_server_reads() -> None:
    compose = (ROOT / "docker-compose.yml").read_text()
    used = set(re.findall(r"\b(COMPASS_[A-Z_]+)\s*:", compose))
    assert config.DATABASE_URL in used
    assert used <= config.ENV_VARS, used - config.ENV_VARS
    # The server's URL points at the compose postgres service with its credentials.
    assert re.search(
        r"COMPASS_DATABASE_URL: postgresql://compass:compass@postgres:5432/compass", compose
    )


def test_operating_variables() -> None:
    settings = Settings.from_env(
        {"COMPASS_METRICS_TOKEN": "t", "COMPASS_METRICS_PORT": "9100", "COMPASS_LOG_FORMAT": "json"}
    )
    assert (settings.metrics_token, settings.metrics_port, settings.log_format) == (
        "t",
        9100,
        "json",
    )
    assert Settings.from_env({}).metrics_port is None
    assert Settings.from_env({}).grpc_port is None
    assert Settings.from_env({"COMPASS_GRPC_PORT": "50051"}).grpc_port == 50051
    with pytest.raises(ConfigError, match="COMPASS_GRPC_PORT"):
        Settings.from_env({"COMPASS_GRPC_PORT": "70000"})
    with pytest.raises(ConfigError, match="COMPASS_LOG_FORMAT"):
        Settings.from_env({"COMPASS_LOG_FORMAT": "xml"})


def test_connection_limits_are_read_and_range_checked() -> None:
    settings = Settings.from_env(
        {
            config.MAX_CONNECTIONS: "50",
            config.MAX_CONNECTIONS_PER_CLIENT: "0",
            config.REQUEST_READ_TIMEOUT: "2.5",
            config.KEEPALIVE_TIMEOUT: "7",
        }
    )
    assert settings.max_connections == 50
    assert settings.max_connections_per_client == 0
    assert settings.request_read_timeout_seconds == 2.5
    assert settings.keepalive_timeout_seconds == 7
    defaults = Settings.from_env({})
    assert (defaults.max_connections, defaults.max_connections_per_client) == (1000, 200)
    for name, bad in (
        (config.MAX_CONNECTIONS, "0"),
        (config.REQUEST_READ_TIMEOUT, "0"),
        (config.KEEPALIVE_TIMEOUT, "0"),
    ):
        with pytest.raises(ConfigError, match=name):
            Settings.from_env({name: bad})


def test_webhook_and_reminder_settings() -> None:
    default = Settings.from_env({})
    assert default.webhook_backoff_seconds is None  # webhooks.BACKOFF
    assert (default.reminder_after_seconds, default.reminder_max) == (900.0, 3)
    tuned = Settings.from_env(
        {
            "COMPASS_WEBHOOK_BACKOFF_SECONDS": "0.5, 2,10",
            "COMPASS_WEBHOOK_POLL_SECONDS": "0.1",
            "COMPASS_REMINDER_AFTER_SECONDS": "0",
        }
    )
    assert tuned.webhook_backoff_seconds == (0.5, 2.0, 10.0)
    assert tuned.webhook_poll_seconds == 0.1
    assert tuned.reminder_after_seconds == 0.0
    for bad in ("", "x", "1,,2", "-1", ",".join(["1"] * 21)):
        if not bad:
            continue
        with pytest.raises(ConfigError, match="COMPASS_WEBHOOK_BACKOFF_SECONDS"):
            Settings.from_env({"COMPASS_WEBHOOK_BACKOFF_SECONDS": bad})


def test_workers_listen_url_and_statement_cache() -> None:
    settings = Settings.from_env(
        {
            config.WORKERS: "3",
            config.LISTEN_DATABASE_URL: "postgresql://u@db/compass",
            config.STATEMENT_CACHE: "0",
        }
    )
    assert (settings.workers, settings.statement_cache_size) == (3, 0)
    assert settings.listen_database_url == "postgresql://u@db/compass"
    defaults = Settings.from_env({})
    assert (defaults.workers, defaults.statement_cache_size) == (1, 100)
    assert defaults.listen_database_url is None
    assert Settings.from_env({config.WORKERS: "auto"}).workers == config.usable_cpus()


@pytest.mark.parametrize("value", ["0", "65", "two", "-1"])
def test_bad_worker_counts_name_the_variable(value: str) -> None:
    with pytest.raises(ConfigError, match=config.WORKERS):
        Settings.from_env({config.WORKERS: value})


@pytest.mark.parametrize(
    ("cpu_max", "expected"),
    [("max 100000\n", None), ("150000 100000\n", 2), ("50000 100000\n", 1), ("garbage", None)],
)
def test_usable_cpus_honours_a_cgroup_quota(
    tmp_path: Path, cpu_max: str, expected: int | None
) -> None:
    quota = tmp_path / "cpu.max"
    quota.write_text(cpu_max)
    affinity = config.usable_cpus(str(tmp_path / "missing"))
    assert config.usable_cpus(str(quota)) == (
        affinity if expected is None else min(affinity, expected)
    )


def test_the_webhook_allow_list() -> None:
    assert Settings.from_env({}).webhook_allow.names == frozenset()
    allow = Settings.from_env(
        {"COMPASS_WEBHOOK_ALLOW_HOSTS": "hooks.lan, 10.0.0.0/8"}
    ).webhook_allow
    assert allow.allows_name("HOOKS.lan.")
    with pytest.raises(ConfigError, match="COMPASS_WEBHOOK_ALLOW_HOSTS: 'a b' is not"):
        Settings.from_env({"COMPASS_WEBHOOK_ALLOW_HOSTS": "a b"})


def test_serve_workers_on_the_command_line_reads_as_compass_workers() -> None:
    from compass_server import cli

    parse = cli.build_parser().parse_args
    assert parse(["serve", "--workers", "auto"]).workers == config.usable_cpus()
    assert parse(["serve", "--workers", "2"]).workers == 2
    for bad in ("0", "65", "two"):
        with pytest.raises(SystemExit):  # argparse's usage error, exit 2
            parse(["serve", "--workers", bad])


def test_the_push_settings() -> None:
    from compass_server.domain.vapid import VapidKey, generate_private_key

    default = Settings.from_env({})
    assert (default.vapid_private_key, default.vapid_subject) == (None, None)
    assert default.push_allow.setting == "COMPASS_PUSH_ALLOW_HOSTS"
    assert default.base_url == "http://127.0.0.1:8000/"
    key = generate_private_key()
    tuned = Settings.from_env(
        {
            "COMPASS_VAPID_PRIVATE_KEY": f" {key}\n",
            "COMPASS_VAPID_SUBJECT": "mailto:ops@example.com",
            "COMPASS_PUSH_ALLOW_HOSTS": "push.lan, 127.0.0.1",
            "COMPASS_PUBLIC_URL": "https://c.example.com/team",
        }
    )
    assert tuned.vapid_private_key == key
    assert key not in repr(tuned)  # never in a settings dump
    assert VapidKey.parse(key).public_key
    assert tuned.vapid_subject == "mailto:ops@example.com"
    assert tuned.push_allow.allows_name("push.lan")
    assert tuned.base_url == "https://c.example.com/team/"
    with pytest.raises(ConfigError, match="COMPASS_VAPID_PRIVATE_KEY: ") as raised:
        Settings.from_env({"COMPASS_VAPID_PRIVATE_KEY": key[:-2]})
    assert key[:-2] not in str(raised.value)
    with pytest.raises(ConfigError, match="COMPASS_VAPID_SUBJECT must be a mailto: or https:"):
        Settings.from_env({"COMPASS_VAPID_SUBJECT": "ops@example.com"})
    with pytest.raises(ConfigError, match="COMPASS_PUSH_ALLOW_HOSTS: 'a b' is not"):
        Settings.from_env({"COMPASS_PUSH_ALLOW_HOSTS": "a b"})


# -- email (docs/answering/email.md) ------------------------------------------------------------

EMAIL_ON = {
    "COMPASS_SMTP_URL": "smtp://mailer:s3cret%2Fpw@relay.example.com:587?starttls=1",
    "COMPASS_EMAIL_FROM": "Compass <compass@example.com>",
    "COMPASS_EMAIL_REPLY_DOMAIN": "Reply.Example.com",
}


def test_email_settings_are_read_together() -> None:
    settings = config.Settings.from_env(
        {
            **EMAIL_ON,
            "COMPASS_INBOUND_SMTP_HOST": "127.0.0.1",
            "COMPASS_INBOUND_SMTP_PORT": "2525",
            "COMPASS_EMAIL_DELAY_SECONDS": "0",
            "COMPASS_EMAIL_REQUIRE_DKIM": "1",
        }
    )
    relay = settings.smtp
    assert relay is not None
    assert (relay.host, relay.port, relay.security) == ("relay.example.com", 587, "starttls")
    assert (relay.username, relay.password) == ("mailer", "s3cret/pw")
    assert "s3cret" not in repr(settings)
    assert settings.email_from == "Compass <compass@example.com>"
    assert settings.email_reply_domain == "reply.example.com"
    assert (settings.inbound_smtp_host, settings.inbound_smtp_port) == ("127.0.0.1", 2525)
    assert (settings.email_delay_seconds, settings.email_require_dkim) == (0.0, True)
    assert settings.email_out
    assert settings.email_in
    default = config.Settings.from_env({})
    assert (default.smtp, default.email_out, default.email_in) == (None, False, False)
    implicit = config.Settings.from_env(
        {**EMAIL_ON, "COMPASS_SMTP_URL": "smtps://relay.example.com"}
    )
    assert implicit.smtp is not None
    assert (implicit.smtp.port, implicit.smtp.security) == (465, "tls")


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"COMPASS_SMTP_URL": "http://u:s3cret@relay.example.com"}, "smtp://"),
        ({"COMPASS_SMTP_URL": "smtps://u:s3cret@relay.example.com?starttls=1"}, "implicit"),
        ({"COMPASS_SMTP_URL": "smtp://u:s3cret@relay.example.com:99999"}, "URL"),
        ({"COMPASS_SMTP_URL": "smtp://u:s3cret@relay.example.com?tls=yes"}, "starttls"),
        ({"COMPASS_SMTP_URL": "smtp://u:s3cret@/"}, "host"),
        ({"COMPASS_EMAIL_FROM": ""}, "COMPASS_EMAIL_FROM"),
        ({"COMPASS_EMAIL_FROM": "Compass <not an address>"}, "COMPASS_EMAIL_FROM"),
        ({"COMPASS_EMAIL_REPLY_DOMAIN": "not a domain"}, "COMPASS_EMAIL_REPLY_DOMAIN"),
        ({"COMPASS_INBOUND_SMTP_PORT": "2525"}, "COMPASS_INBOUND_SMTP_HOST"),
        ({"COMPASS_EMAIL_DELAY_SECONDS": "-1"}, "COMPASS_EMAIL_DELAY_SECONDS"),
        ({"COMPASS_EMAIL_REQUIRE_DKIM": "yes"}, "COMPASS_EMAIL_REQUIRE_DKIM"),
    ],
)
def test_bad_email_settings_are_a_clear_error_that_never_shows_the_password(
    changes: dict[str, str], says: str
) -> None:
    env = {**EMAIL_ON, "COMPASS_SMTP_URL": "smtp://u:s3cret@relay.example.com:25", **changes}
    with pytest.raises(config.ConfigError) as caught:
        config.Settings.from_env(env)
    assert says in str(caught.value)
    assert "s3cret" not in str(caught.value)


def test_the_listener_needs_a_reply_domain() -> None:
    with pytest.raises(config.ConfigError, match="COMPASS_EMAIL_REPLY_DOMAIN"):
        config.Settings.from_env(
            {"COMPASS_INBOUND_SMTP_HOST": "127.0.0.1", "COMPASS_INBOUND_SMTP_PORT": "2525"}
        )
