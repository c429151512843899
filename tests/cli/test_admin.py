"""`compass admin ...`: each subcommand's JSON, tokens printed once and stored only as a hash,
and errors as one line on stderr with exit code 1 (no JSON, no traceback)."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

import asyncpg

from compass_server.store.postgres import PostgresStore

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.cli.conftest import Ran


def ok_json(ran: Ran) -> dict[str, object]:
    assert ran.code == 0, ran
    value = json.loads(ran.stdout)
    assert isinstance(value, dict)
    return value  # pyright: ignore[reportUnknownVariableType] - checked to be an object


def failed(ran: Ran, message: str) -> None:
    assert ran.code == 1, ran
    assert ran.stdout == "", ran
    assert ran.stderr.strip().endswith(f"compass: {message}"), ran
    assert "Traceback" not in ran.stderr


async def test_every_admin_subcommand_prints_json_and_does_what_it_says(
    compass_cli: Callable[..., Ran], database_url: str
) -> None:
    workspace = ok_json(compass_cli("admin", "create-workspace", "--name", "acme"))
    assert set(workspace) == {"workspace_id", "name"}
    assert workspace["name"] == "acme"
    assert str(workspace["workspace_id"]).startswith("ws_")

    channel = ok_json(
        compass_cli(
            "admin",
            "create-channel",
            "--workspace",
            str(workspace["workspace_id"]),
            "--name",
            "general",
        )
    )
    assert channel == {
        "channel_id": channel["channel_id"],
        "workspace_id": workspace["workspace_id"],
        "name": "general",
    }

    human = ok_json(
        compass_cli("admin", "create-account", "--kind", "human", "--name", "Ada Lovelace")
    )
    agent = ok_json(
        compass_cli("admin", "create-account", "--kind", "agent", "--name", "Coding Agent")
    )
    for account, kind in ((human, "human"), (agent, "agent")):
        assert set(account) == {"account_id", "kind", "name", "token"}
        assert account["kind"] == kind
        assert str(account["token"]).startswith("cmp_")
    assert human["token"] != agent["token"]

    for account in (human, agent):
        added = ok_json(
            compass_cli(
                "admin",
                "add-participant",
                "--channel",
                str(channel["channel_id"]),
                "--account",
                str(account["account_id"]),
            )
        )
        assert added == {"channel_id": channel["channel_id"], "account_id": account["account_id"]}

    async with PostgresStore(database_url, pool_min=1, pool_max=1) as store:
        ada = await store.authenticate(str(human["token"]))
        assert ada is not None
        assert (ada.account_id, ada.name, ada.kind.value) == (
            human["account_id"],
            "Ada Lovelace",
            "human",
        )
        (listed,) = await store.list_channels(ada)
        assert listed.channel_id == channel["channel_id"]

    # Tokens are stored only as their SHA-256: the plain token appears nowhere in the database.
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch("SELECT token_hash FROM api_tokens")
        dump = await conn.fetchval("SELECT string_agg(t::text, ' ') FROM api_tokens t")
    finally:
        await conn.close()
    digests = {bytes(row["token_hash"]) for row in rows}
    for account in (human, agent):
        token = str(account["token"])
        assert hashlib.sha256(token.encode()).digest() in digests
        assert token not in dump
        assert token[4:] not in dump

    disabled = ok_json(
        compass_cli("admin", "disable-account", "--account", str(human["account_id"]))
    )
    assert disabled == {"account_id": human["account_id"], "disabled": True}
    async with PostgresStore(database_url, pool_min=1, pool_max=1) as store:
        assert await store.authenticate(str(human["token"])) is None
        assert await store.authenticate(str(agent["token"])) is not None


def test_admin_errors_are_one_line_with_exit_code_1(compass_cli: Callable[..., Ran]) -> None:
    failed(
        compass_cli("admin", "create-channel", "--workspace", "ws_nope", "--name", "x"),
        "workspace not found",
    )
    failed(
        compass_cli("admin", "add-participant", "--channel", "ch_nope", "--account", "acct_nope"),
        "channel not found",
    )
    failed(compass_cli("admin", "disable-account", "--account", "acct_nope"), "account not found")
    ok_json(compass_cli("admin", "create-workspace", "--name", "twice"))
    failed(
        compass_cli("admin", "create-workspace", "--name", "twice"),
        "a workspace with this name already exists",
    )
    failed(compass_cli("admin", "create-workspace", "--name", ""), "invalid name: name is empty")


def test_admin_usage_errors_come_from_argparse(compass_cli: Callable[..., Ran]) -> None:
    wrong_kind = compass_cli("admin", "create-account", "--kind", "robot", "--name", "R2")
    assert wrong_kind.code == 2
    assert "invalid choice: 'robot'" in wrong_kind.stderr
    missing = compass_cli("admin", "create-channel", "--name", "x")
    assert missing.code == 2
    assert "--workspace" in missing.stderr


def test_sign_in_links_and_revoking_sessions(compass_cli: Callable[..., Ran]) -> None:
    person = ok_json(compass_cli("admin", "create-account", "--kind", "human", "--name", "Ada"))
    robot = ok_json(compass_cli("admin", "create-account", "--kind", "agent", "--name", "R2"))
    account = str(person["account_id"])
    link = ok_json(
        compass_cli(
            "admin", "sign-in-link", "--account", account, "--url", "https://compass.example/"
        )
    )
    assert link["account_id"] == account
    url = str(link["url"])
    assert url.startswith("https://compass.example/#/sign-in/cmpl_"), url
    assert len(url.rsplit("/", 1)[1]) > 40
    assert str(link["expires_at"]).endswith("+00:00")
    # Without --url: the server's own address from the settings.
    default = ok_json(compass_cli("admin", "sign-in-link", "--account", account, "--minutes", "5"))
    assert str(default["url"]).startswith("http://127.0.0.1:8000/#/sign-in/cmpl_"), default
    failed(
        compass_cli("admin", "sign-in-link", "--account", account, "--minutes", "0"),
        "--minutes must be a whole number from 1 to 10080",
    )
    failed(
        compass_cli("admin", "sign-in-link", "--account", str(robot["account_id"])),
        "sign-in links are for enabled accounts of people",
    )
    failed(compass_cli("admin", "sign-in-link", "--account", "acct_nope"), "account not found")
    revoked = ok_json(compass_cli("admin", "revoke-sessions", "--account", account))
    assert revoked == {"account_id": account, "sessions_ended": 0, "links_voided": 2}


def test_add_webhook_refuses_bad_and_internal_urls_in_one_line(
    compass_cli: Callable[..., Ran], database_url: str
) -> None:
    """Issue 24 G2/G6/G9: `HTTP://...` and `http://[::1/x` ended in tracebacks (one printing
    the new secret from the database's DETAIL), port 99999 was stored and then stopped every
    delivery, and internal addresses were accepted."""
    workspace = ok_json(compass_cli("admin", "create-workspace", "--name", "hooks"))
    ws = str(workspace["workspace_id"])
    cases = {
        "http://[::1/x": "not a valid URL",
        "http://example.com:99999/hook": "not a valid URL",
        "ftp://example.com/": "must start with http:// or https://",
        "http://169.254.169.254/latest/": "internal address",
        "http://127.1:8000/": "internal address",
        "http://localhost/": "internal",
    }
    for url, reason in cases.items():
        ran = compass_cli("admin", "add-webhook", "--workspace", ws, "--url", url)
        assert ran.code == 1, (url, ran)
        assert ran.stdout == "", (url, ran)
        assert reason in ran.stderr, (url, ran)
        assert len(ran.stderr.strip().splitlines()) == 1, (url, ran)
        assert "Traceback" not in ran.stderr
        assert "whsec_" not in ran.stderr
    added = ok_json(
        compass_cli(
            "admin", "add-webhook", "--workspace", ws, "--url", "HTTP://hooks.example.com/x"
        )
    )
    assert added["url"] == "http://hooks.example.com/x"
    listed = ok_json(compass_cli("admin", "list-webhooks", "--workspace", ws))
    assert [w["url"] for w in listed["webhooks"]] == ["http://hooks.example.com/x"]  # pyright: ignore[reportGeneralTypeIssues, reportUnknownVariableType]


def test_the_allow_list_lets_add_webhook_reach_a_named_internal_host(database_url: str) -> None:
    from tests.cli.conftest import cli_env, run_cli

    env = cli_env(COMPASS_DATABASE_URL=database_url, COMPASS_WEBHOOK_ALLOW_HOSTS="127.0.0.1")
    workspace = ok_json(run_cli(["admin", "create-workspace", "--name", "allowed"], env))
    ws = str(workspace["workspace_id"])
    ok_json(
        run_cli(["admin", "add-webhook", "--workspace", ws, "--url", "http://127.0.0.1:9/"], env)
    )
    failed(
        run_cli(["admin", "add-webhook", "--workspace", ws, "--url", "http://10.0.0.1/"], env),
        "the URL's host 10.0.0.1 is an internal address (allow it with COMPASS_WEBHOOK_ALLOW_HOSTS)",
    )
    bad = cli_env(COMPASS_DATABASE_URL=database_url, COMPASS_WEBHOOK_ALLOW_HOSTS="not a host!")
    ran = run_cli(["admin", "list-webhooks", "--workspace", ws], bad)
    assert ran.code == 1, ran
    assert "COMPASS_WEBHOOK_ALLOW_HOSTS" in ran.stderr
    assert "Traceback" not in ran.stderr


def test_admin_without_an_action_names_the_actions(compass_cli: Callable[..., Ran]) -> None:
    """Issue 24: it said "the following arguments are required: action_name"."""
    ran = compass_cli("admin")
    assert ran.code == 2, ran
    assert "choose an action: create-workspace, create-channel" in ran.stderr, ran
    assert "action_name" not in ran.stderr
    bare = compass_cli()
    assert bare.code == 2, bare
    assert "choose a command: serve, migrate, demo, admin" in bare.stderr, bare


def test_a_bad_name_says_what_is_wrong_with_it(compass_cli: Callable[..., Ran]) -> None:
    """Issue 24: an empty name said only "invalid name", and a name of spaces was taken."""
    failed(compass_cli("admin", "create-workspace", "--name", ""), "invalid name: name is empty")
    failed(
        compass_cli("admin", "create-workspace", "--name", "   "),
        "invalid name: name is blank (only spaces)",
    )
    failed(
        compass_cli("admin", "create-account", "--kind", "human", "--name", " \t "),
        "invalid name: name is blank (only spaces)",
    )
    long = compass_cli("admin", "create-workspace", "--name", "x" * 201)
    assert long.code == 1, long
    assert "invalid name: name is longer than" in long.stderr, long


def test_list_accounts_and_channels_give_the_ids_the_other_commands_take(
    compass_cli: Callable[..., Ran],
) -> None:
    """Issue 33 N3: after a restart the server says to run `sign-in-link --account ACCOUNT_ID`,
    but nothing listed the accounts; the demo's JSON was printed once. Tokens never appear."""
    assert ok_json(compass_cli("admin", "list-accounts")) == {"accounts": []}
    assert ok_json(compass_cli("admin", "list-channels")) == {"channels": []}
    demo = ok_json(compass_cli("demo"))
    human, agent = demo["human"], demo["agent"]
    assert isinstance(human, dict)
    assert isinstance(agent, dict)
    loner = ok_json(compass_cli("admin", "create-account", "--kind", "human", "--name", "Loner"))
    ok_json(compass_cli("admin", "disable-account", "--account", str(loner["account_id"])))

    ran = compass_cli("admin", "list-accounts")
    accounts = ok_json(ran)["accounts"]
    assert isinstance(accounts, list)
    for account in accounts:
        assert isinstance(account, dict)
        assert str(account.pop("created_at"))[:4].isdigit()
    assert accounts == [
        {"account_id": human["account_id"], "kind": "human", "name": "Demo Human",
         "disabled": False, "channels": [demo["channel_id"]]},
        {"account_id": agent["account_id"], "kind": "agent", "name": "Demo Agent",
         "disabled": False, "channels": [demo["channel_id"]]},
        {"account_id": loner["account_id"], "kind": "human", "name": "Loner",
         "disabled": True, "channels": []},
    ]  # fmt: skip
    for token in (human["token"], agent["token"], loner["token"]):
        assert str(token)[4:] not in ran.stdout

    people = ok_json(compass_cli("admin", "list-accounts", "--kind", "human"))["accounts"]
    assert isinstance(people, list)
    assert [a["account_id"] for a in people if isinstance(a, dict)] == [
        human["account_id"],
        loner["account_id"],
    ]
    # The id it lists is the one sign-in-link takes.
    link = ok_json(compass_cli("admin", "sign-in-link", "--account", str(human["account_id"])))
    assert "#/sign-in/" in str(link["url"])

    channels = ok_json(compass_cli("admin", "list-channels"))["channels"]
    assert isinstance(channels, list)
    (channel,) = channels
    assert isinstance(channel, dict)
    assert str(channel.pop("created_at"))[:4].isdigit()
    assert channel == {
        "channel_id": demo["channel_id"],
        "workspace_id": demo["workspace_id"],
        "name": "general",
        "participants": [
            {"account_id": human["account_id"], "kind": "human", "name": "Demo Human"},
            {"account_id": agent["account_id"], "kind": "agent", "name": "Demo Agent"},
        ],
    }
    wrong_kind = compass_cli("admin", "list-accounts", "--kind", "robot")
    assert wrong_kind.code == 2
    assert "invalid choice: 'robot'" in wrong_kind.stderr


def test_email_addresses_are_set_at_creation_or_later_and_a_bad_one_is_a_usage_error(
    compass_cli: Callable[..., Ran],
) -> None:
    ana = ok_json(
        compass_cli(
            "admin",
            "create-account",
            "--kind",
            "human",
            "--name",
            "Ana",
            "--email",
            "Ana@Example.com",
        )
    )
    assert ana["email"] == "Ana@Example.com"
    assert set(ana) == {"account_id", "kind", "name", "token", "email"}
    plain = ok_json(compass_cli("admin", "create-account", "--kind", "human", "--name", "Bo"))
    assert "email" not in plain
    changed = ok_json(
        compass_cli(
            "admin", "set-email", "--account", str(plain["account_id"]), "--email", "bo@example.com"
        )
    )
    assert changed == {
        "account_id": plain["account_id"],
        "email": "bo@example.com",
        "email_asks": True,
    }
    for bad in ("not an address", "a@b", "@example.com", "a@@example.com", "a b@example.com"):
        refused = compass_cli(
            "admin", "set-email", "--account", str(plain["account_id"]), "--email", bad
        )
        assert refused.code == 2, (bad, refused)
        assert "--email" in refused.stderr
        assert "Traceback" not in refused.stderr
    made = compass_cli("admin", "create-account", "--kind", "human", "--name", "C", "--email", "x")
    assert made.code == 2
    robot = compass_cli(
        "admin", "create-account", "--kind", "agent", "--name", "R2", "--email", "r2@example.com"
    )
    failed(robot, "--email is for people's accounts (--kind human)")
    failed(
        compass_cli("admin", "set-email", "--account", "acct_nope", "--email", "x@example.com"),
        "account not found",
    )
