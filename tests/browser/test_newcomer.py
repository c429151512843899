"""What a new person met in the browser (issue 24): a fresh tab with several channels opened
none although an ask waited; opening a channel scrolled the asker's name and lead-in away; the
"answer at least one question first" error stayed after answering; "+1 more" in the inbox
read as one more channel; the phone's top bar broke "Compass" in two. Real Chromium against
`compass serve`, at 1280 and 390 px."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from playwright.async_api import expect

from compass_server.store import AccountKind
from compass_server.store.postgres import PostgresStore
from gen.compass.v1 import comms_pb2
from tests.browser import _agent
from tests.browser.conftest import DESKTOP, PHONE
from tests.browser.test_inbox import _ask, _design

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page, ViewportSize

    from tests.browser.conftest import UI

SIZES = pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280", "390"])


async def _sign_in_fresh(ui: UI, page: Page) -> None:
    """Sign in through the form at the bare address (nothing in the fragment)."""
    await page.goto(ui.server.url)
    await page.get_by_label("Access token").fill(ui.world.human.token)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#session-status")).to_have_text("Signed in as Ada")


async def _in_view_below_header(page: Page, node: Locator) -> None:
    """`node` is on screen, not under the sticky channel header nor below the window."""
    box = await node.bounding_box()
    head = await page.locator(".channel-head").bounding_box()
    viewport = page.viewport_size
    assert box is not None
    assert head is not None
    assert viewport is not None
    assert box["y"] >= head["y"] + head["height"] - 1, (box, head)
    assert box["y"] + min(box["height"], 40) <= viewport["height"], (box, viewport)


@SIZES
async def test_a_fresh_tab_opens_the_channel_where_an_ask_waits(ui: UI, size: ViewportSize) -> None:
    design = await _design(ui)  # a second channel: nothing is "the only one"
    await _ask(ui, design, "font", "Serif or sans for the headings?")
    page = await ui.new_page(viewport=size)
    await _sign_in_fresh(ui, page)
    await expect(page.get_by_role("heading", name="# design")).to_be_visible()
    await expect(page.locator("form.ask-pending")).to_contain_text(
        "Serif or sans for the headings?"
    )
    await expect(page.locator("#live-status")).to_have_text("Live")


@SIZES
async def test_opening_a_channel_shows_who_asked_and_what_they_said_first(
    ui: UI, size: ViewportSize
) -> None:
    # Enough history above the ask that the page must scroll to it.
    for i in range(12):
        note = comms_pb2.MessageBlock(text=comms_pb2.TextBlock(text=f"note {i} " * 30))
        frame = comms_pb2.MessageUpdated(client_message_id=f"note-{i}", blocks=[note])
        await _agent.append(ui.server, ui.world.agent, ui.world.channel_id, frame)
    await _agent.append(ui.server, ui.world.agent, ui.world.channel_id, _agent.gallery_frame())
    page = await ui.open(ui.world.human, viewport=size)
    article = page.locator("article.message").filter(has=page.locator("form.ask-pending"))
    await expect(article).to_have_count(1)
    lead_in = article.get_by_text("Two decisions before I start:")
    await expect(lead_in).to_be_visible()
    await _in_view_below_header(page, lead_in)
    await _in_view_below_header(page, article.get_by_text(ui.world.agent.name).first)
    await ui.screenshots(page, "opened-at-the-ask")


async def test_the_nothing_entered_error_goes_once_something_is_entered(ui: UI) -> None:
    await _ask(ui, ui.world.channel_id, "deploy", "Deploy to staging now?")
    page = await ui.open(ui.world.human)
    form = page.locator("form.ask-pending")
    await form.get_by_role("button", name="Send answers").click()
    error = form.locator(".form-error")
    await expect(error).to_have_text("Answer the question first, or choose “Skip all questions”.")
    await form.get_by_label("Yes").check()
    await expect(error).to_be_hidden()


async def test_the_inbox_says_more_questions_not_more(ui: UI) -> None:
    await _agent.append(ui.server, ui.world.agent, ui.world.channel_id, _agent.gallery_frame())
    page = await ui.open(ui.world.human)
    item = page.locator("#inbox-list a")
    await expect(item).to_have_count(1)
    await expect(item).to_contain_text("+1 more question")


async def test_the_phone_top_bar_keeps_the_name_whole(ui: UI) -> None:
    # A person with a long name: "Signed in as ..." takes the bar's width.
    async with PostgresStore(ui.server.dsn, pool_min=1, pool_max=1) as store:
        person, token = await store.create_account(
            AccountKind.HUMAN, "Maximiliane Konstantinopoulou-Wetherington"
        )
        await store.add_participant(ui.world.channel_id, person.account_id)
    page = await ui.new_page(viewport=PHONE)
    await page.goto(ui.server.url)
    await page.get_by_label("Access token").fill(token)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#session-status")).to_contain_text("Maximiliane")
    brand = page.locator(".brand")
    box = await brand.bounding_box()
    line = await brand.evaluate("(node) => parseFloat(getComputedStyle(node).lineHeight)")
    assert box is not None
    assert box["height"] < 1.5 * line, box  # one line: "Compass", not "Comp" / "ass"
    for node in (page.locator("#session-status"), page.get_by_role("button", name="Sign out")):
        other = await node.bounding_box()
        assert other is not None
        assert other["height"] < 3 * line, other
