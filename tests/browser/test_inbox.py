"""Where a waiting question finds its person (issue 13): who is signed in and who asked, the
"Waiting on you" inbox across channels with counts, deep links to one ask (also through
sign-in), the tab title, and a browser notification for a new ask (permission granted
through the browser context). Real Chromium against `compass serve`, at 1280 and 390 px."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from playwright.async_api import expect

from compass_server.store.postgres import PostgresStore
from tests.browser import _agent
from tests.browser.conftest import DESKTOP, PHONE

if TYPE_CHECKING:
    from playwright.async_api import ViewportSize

    from tests._server import SeededWorld
    from tests.browser.conftest import UI

SIZES = pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280", "390"])

# Records every Notification the page creates (and still creates the real one).
RECORD_NOTIFICATIONS = """
(() => {
  const Real = window.Notification;
  window.__notified = [];
  class Recorded extends Real {
    constructor(title, options) {
      super(title, options);
      window.__notified.push({ title, body: options?.body ?? "", tag: options?.tag ?? "" });
    }
  }
  window.Notification = Recorded;
})();
"""


async def _design(ui: UI) -> str:
    world = ui.world
    async with PostgresStore(ui.server.dsn, pool_min=1, pool_max=1) as store:
        design = await store.create_channel(world.workspace_id, "design")
        for account in (world.human, world.agent):
            await store.add_participant(design.channel_id, account.account_id)
    return design.channel_id


async def _ask(ui: UI, channel_id: str, question_id: str, text: str) -> str:
    frame = _agent.ask_frame(_agent.question(question_id, text, "Yes", "No"))
    message = await _agent.append(ui.server, ui.world.agent, channel_id, frame)
    [ask_id] = _agent.ask_ids(message)
    return ask_id


@SIZES
async def test_the_inbox_lists_what_waits_across_channels_with_counts_and_who_asked(
    ui: UI, size: ViewportSize
) -> None:
    world: SeededWorld = ui.world
    design = await _design(ui)
    first = await _ask(ui, world.channel_id, "deploy", "Deploy to staging now?")
    second = await _ask(ui, design, "font", "Serif or sans for the headings?")
    page = await ui.new_page(viewport=size)
    await ui.sign_in(page, world.human, url=f"{ui.server.url}#/channel/{world.channel_id}")

    await expect(page.locator("#session-status")).to_have_text("Signed in as Ada")
    inbox = page.locator("#inbox-list a")
    await expect(inbox).to_have_count(2)
    await expect(inbox.nth(0)).to_contain_text("Deploy to staging now?")
    await expect(inbox.nth(0)).to_contain_text(f"{world.agent.name} in # general")
    await expect(inbox.nth(1)).to_contain_text("Serif or sans for the headings?")
    await expect(inbox.nth(1)).to_contain_text("in # design")
    await expect(page.locator("#inbox-count")).to_have_text("2")
    await expect(page).to_have_title("(2) Compass")
    await expect(page.locator(f'#channel-list a[data-channel-id="{design}"] .count')).to_have_text(
        "1"
    )
    # Every message says which agent wrote it.
    await expect(page.locator("article.message .message-meta .author").first).to_have_text(
        world.agent.name
    )
    await ui.screenshots(page, "inbox")

    # Answering here takes it out of the inbox at once; a new ask elsewhere comes in.
    form = page.locator(f'form.ask[data-ask-id="{first}"]')
    await form.get_by_label("Yes").check()
    await form.get_by_role("button", name="Send answers").click()
    await expect(inbox).to_have_count(1)
    await expect(page).to_have_title("(1) Compass")
    third = await _ask(ui, design, "color", "Blue or green?")
    await expect(page.locator(f'#inbox-list a[data-ask-id="{third}"]')).to_be_visible(
        timeout=15_000
    )
    await expect(page.locator(f'#channel-list a[data-channel-id="{design}"] .count')).to_have_text(
        "2"
    )
    await expect(page.locator(f'#inbox-list a[data-ask-id="{second}"]')).to_be_visible()


@SIZES
async def test_a_deep_link_opens_the_ask_even_through_sign_in(ui: UI, size: ViewportSize) -> None:
    world = ui.world
    design = await _design(ui)
    await _ask(ui, world.channel_id, "other", "Something else?")
    ask_id = await _ask(ui, design, "font", "Serif or sans?")
    page = await ui.new_page(viewport=size)
    await page.goto(f"{ui.server.url}#/ask/{ask_id}")
    await page.get_by_label("Access token").fill(world.human.token)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("heading", name="# design")).to_be_visible()
    form = page.locator(f'form.ask[data-ask-id="{ask_id}"]')
    await expect(form.get_by_label("Yes")).to_be_focused()
    box = await form.bounding_box()
    assert box is not None
    assert box["y"] >= 0, box
    assert box["y"] < size["height"], box
    await ui.screenshots(page, "deep-link")

    # From the inbox, another ask's link opens its channel at it.
    await page.locator("#inbox-list a", has_text="Something else?").click()
    await expect(page.get_by_role("heading", name="# general")).to_be_visible()
    # A link to an ask nobody can see here says so.
    await page.goto(f"{ui.server.url}#/ask/ask_doesnotexist")
    await expect(page.get_by_role("heading", name="Ask not found")).to_be_visible()


async def test_a_new_ask_elsewhere_raises_a_browser_notification(ui: UI) -> None:
    world = ui.world
    design = await _design(ui)
    page = await ui.new_page()
    await page.context.grant_permissions(["notifications"])
    await page.add_init_script(RECORD_NOTIFICATIONS)
    await ui.sign_in(page, world.human, url=f"{ui.server.url}#/channel/{world.channel_id}")
    await expect(page.locator("#notify-enable")).to_be_hidden()  # already granted
    ask_id = await _ask(ui, design, "font", "Serif or sans?")
    await expect(page.locator(f'#inbox-list a[data-ask-id="{ask_id}"]')).to_be_visible(
        timeout=15_000
    )
    notified = await page.evaluate("window.__notified")
    assert notified == [
        {"title": f"{world.agent.name} asks in # design", "body": "Serif or sans?", "tag": ask_id}
    ]
    # One in the channel being looked at is not notified (it is on screen).
    here = await _ask(ui, world.channel_id, "deploy", "Deploy?")
    await expect(page.locator(f'#inbox-list a[data-ask-id="{here}"]')).to_be_visible(timeout=15_000)
    assert len(await page.evaluate("window.__notified")) == 1


async def test_without_permission_the_page_offers_to_ask_for_it(ui: UI) -> None:
    page = await ui.open(ui.world.human)
    button = page.locator("#notify-enable")
    await expect(button).to_be_visible()
    await expect(button).to_have_text("Notify me of new asks")
