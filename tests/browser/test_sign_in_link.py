"""Sign-in per device with a one-time link (issue 13): `compass admin sign-in-link` prints
it, opening it signs the browser in (every tab of it) without pasting a token, the code
leaves the address at once and works only once, no token ever reaches a URL or the log, and
`compass admin revoke-sessions` signs the device out. Real CLI, real Chromium."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

import pytest
from playwright.async_api import expect

from compass_server.store.postgres import PostgresStore
from tests.browser.conftest import DESKTOP, PHONE
from tests.cli.conftest import cli_env, run_cli

if TYPE_CHECKING:
    from playwright.async_api import ViewportSize

    from tests.browser.conftest import UI

SIZES = pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280", "390"])
SESSION_KEY = "compass.session"
# What a used, expired or revoked link says (one answer for all: issue 33 N8), and what to do.
NOT_VALID: Final = (
    "This sign-in link cannot be used: it was used already (a link works once), has expired "
    "or was revoked. Ask for a new one: whoever runs Compass makes it with "
    "`compass admin sign-in-link --account ACCOUNT_ID`; or sign in with your access token "
    "instead."
)


async def _admin(ui: UI, *args: str) -> dict[str, object]:
    env = cli_env(COMPASS_DATABASE_URL=ui.server.dsn)
    ran = await asyncio.to_thread(run_cli, ["admin", *args], env)
    assert ran.code == 0, ran
    result = json.loads(ran.stdout)
    assert isinstance(result, dict)
    return result  # pyright: ignore[reportUnknownVariableType] - checked to be an object


async def _link(ui: UI) -> str:
    made = await _admin(
        ui, "sign-in-link", "--account", ui.world.human.account_id, "--url", ui.server.url
    )
    return str(made["url"])


@SIZES
async def test_a_sign_in_link_signs_this_device_in_once_and_revoking_signs_it_out(
    ui: UI, size: ViewportSize
) -> None:
    link = await _link(ui)
    code = link.rsplit("/", 1)[1]
    page = await ui.new_page(viewport=size)
    exchanges: list[str] = []
    page.on("request", lambda r: exchanges.append(r.url) if "/auth/sign-in" in r.url else None)
    await page.goto(link)
    await expect(page.locator("#session-status")).to_have_text("Signed in as Ada")
    await expect(page.get_by_role("heading", name="# general")).to_be_visible()
    assert code not in page.url
    assert len(exchanges) == 1
    assert code not in exchanges[0]
    session = await page.evaluate(f"localStorage.getItem('{SESSION_KEY}')")
    assert isinstance(session, str)
    assert session.startswith("cmp_")
    await ui.screenshots(page, "signed-in-by-link")

    # Another tab of this browser is signed in too, with nothing pasted.
    tab = await page.context.new_page()
    await tab.goto(ui.server.url)
    await expect(tab.locator("#session-status")).to_have_text("Signed in as Ada")

    # The link is spent: another device opening it is told so, and signed in as nobody.
    other = await ui.new_page(viewport=size)
    await other.goto(link)
    await expect(other.locator("#signin-error")).to_have_text(NOT_VALID)
    await expect(other.locator("#signin-view")).to_be_visible()
    assert code not in other.url

    # Revoked: the next load of this device asks to sign in again.
    revoked = await _admin(ui, "revoke-sessions", "--account", ui.world.human.account_id)
    assert revoked["sessions_ended"] == 1
    await tab.reload()
    await expect(tab.locator("#signin-error")).to_have_text(
        "Your token is no longer accepted. Sign in again."
    )
    assert await tab.evaluate(f"localStorage.getItem('{SESSION_KEY}')") is None
    # The session token never travelled in a URL nor reached the server's log.
    assert not any(session in url for url in ui.request_urls)
    assert session not in ui.server.log()
    assert code not in ui.server.log()


async def test_signing_out_forgets_the_device_session(ui: UI) -> None:
    page = await ui.new_page()
    await page.goto(await _link(ui))
    await expect(page.locator("#session-status")).to_have_text("Signed in as Ada")
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.locator("#signin-view")).to_be_visible()
    assert await page.evaluate(f"localStorage.getItem('{SESSION_KEY}')") is None
    await page.reload()
    await expect(page.locator("#signin-view")).to_be_visible()


async def test_a_link_for_another_account_asks_before_switching(ui: UI) -> None:
    """Issue 24 G8 (login CSRF): opening someone else's unused link while signed in replaced
    the session without a word. Now the page asks, and staying keeps the session."""
    page = await ui.new_page()
    await page.goto(await _link(ui))
    await expect(page.locator("#session-status")).to_have_text("Signed in as Ada")
    mine = await page.evaluate(f"localStorage.getItem('{SESSION_KEY}')")

    async def grace_link() -> str:
        made = await _admin(
            ui, "sign-in-link", "--account", ui.world.human2.account_id, "--url", ui.server.url
        )
        return str(made["url"])

    # Opened from a mail or a chat: a new tab of this browser.
    page = await page.context.new_page()
    await page.goto(await grace_link())
    dialog = page.get_by_role("dialog", name="Switch accounts?")
    await expect(dialog).to_be_visible()
    await expect(dialog).to_contain_text(
        "You are signed in as Ada. This sign-in link is for Grace."
    )
    await ui.screenshots(page, "switch-accounts")
    await dialog.get_by_role("button", name="Stay signed in as Ada").click()
    await expect(page.locator("#session-status")).to_have_text("Signed in as Ada")
    await expect(dialog).to_be_hidden()
    assert await page.evaluate(f"localStorage.getItem('{SESSION_KEY}')") == mine

    # Asked again with another of Grace's links (pasted into this tab's address bar: only
    # the fragment changes), the person switches on purpose.
    await page.goto(await grace_link())
    await page.get_by_role("button", name="Switch to Grace").click()
    await expect(page.locator("#session-status")).to_have_text("Signed in as Grace")
    assert await page.evaluate(f"localStorage.getItem('{SESSION_KEY}')") != mine

    # A link for the account already signed in asks nothing.
    again = await _admin(
        ui, "sign-in-link", "--account", ui.world.human2.account_id, "--url", ui.server.url
    )
    await page.goto(str(again["url"]))
    await expect(page.locator("#session-status")).to_have_text("Signed in as Grace")
    await expect(page.get_by_role("dialog")).to_have_count(0)


@SIZES
async def test_an_expired_link_says_what_happened_and_what_to_do_next(
    ui: UI, size: ViewportSize
) -> None:
    """Issue 33 N8: an expired link (like a used one) said only that it was not valid."""
    async with PostgresStore(ui.server.dsn, pool_min=1, pool_max=1) as store:
        code, expires_at = await store.create_sign_in_link(
            ui.world.human.account_id, timedelta(seconds=-1)
        )
    assert expires_at < datetime.now(UTC)  # expired before it is opened
    page = await ui.new_page(viewport=size)
    await page.goto(f"{ui.server.url}#/sign-in/{code}")
    error = page.locator("#signin-error")
    await expect(error).to_have_text(NOT_VALID)
    await expect(page.locator("#signin-view")).to_be_visible()
    await expect(page.get_by_label("Access token")).to_be_visible()
    assert code not in page.url
    assert await page.evaluate(f"localStorage.getItem('{SESSION_KEY}')") is None
    await ui.screenshots(page, "expired-link")
