"""The Email panel in real Chromium (docs/answering/email.md): a person sees the address an
operator set and turns asks by email off and on; the server's record follows."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest
from playwright.async_api import expect

from compass_server.store.postgres import PostgresStore
from tests import _server
from tests.e2e._connect import call
from tests.e2e.test_email import email_env, free_port

if TYPE_CHECKING:
    from collections.abc import Generator

    from tests.browser.conftest import UI

ADA = "ada@example.org"


@pytest.fixture
def compass_server(database_url: str) -> Generator[_server.RunningServer]:
    """This module's server mails asks (to a relay that is never reached: none is posted)."""
    with _server.serve(database_url, env=email_env(free_port(), free_port())) as server:
        yield server


async def _email_asks(ui: UI) -> bool:
    async with httpx.AsyncClient(base_url=ui.server.url, timeout=30) as http:
        got = await call(http, "GetEmailSettings", {}, ui.world.human.token)
    assert got.ok, got
    settings = got.body["settings"]
    assert isinstance(settings, dict)
    return settings.get("emailAsks") is True  # pyright: ignore[reportUnknownMemberType]


async def test_a_person_turns_email_asks_off_and_on(ui: UI) -> None:
    async with PostgresStore(ui.server.dsn, pool_min=1, pool_max=1) as store:
        emails = store.email()
        await emails.set_email(ui.world.human.account_id, ADA)
    page = await ui.open(ui.world.human)
    panel = page.locator("#email")
    await expect(panel).to_be_visible()
    await expect(page.locator("#email-note")).to_contain_text(f"Asks are mailed to {ADA}")
    await page.get_by_role("button", name="Stop email asks").click()
    await expect(page.locator("#email-note")).to_contain_text("Email asks are off")
    assert not await _email_asks(ui)
    await ui.screenshots(page, "email-off")
    await page.get_by_role("button", name="Email me asks").click()
    await expect(page.get_by_role("button", name="Stop email asks")).to_be_visible()
    assert await _email_asks(ui)


async def test_without_an_address_the_panel_says_so_and_offers_nothing(ui: UI) -> None:
    page = await ui.open(ui.world.human2)
    await expect(page.locator("#email-note")).to_contain_text("No email address is set for you")
    await expect(page.locator("#email-toggle")).to_be_hidden()
