"""On a desktop the top bar and the sidebar stay in view and only the channel pane scrolls
(issue 33 N8: opening an ask deep in a long channel scrolled the whole page, top bar and
sidebar out of view). On a phone the page itself scrolls, as before."""

from __future__ import annotations

from typing import TYPE_CHECKING

from playwright.async_api import expect

from gen.compass.v1 import comms_pb2
from tests.browser import _agent
from tests.browser.conftest import DESKTOP

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page

    from tests.browser.conftest import UI


async def _note(ui: UI, index: int) -> None:
    note = comms_pb2.MessageBlock(text=comms_pb2.TextBlock(text=f"note {index} " * 40))
    frame = comms_pb2.MessageUpdated(client_message_id=f"note-{index}", blocks=[note])
    await _agent.append(ui.server, ui.world.agent, ui.world.channel_id, frame)


async def _ask(ui: UI, question_id: str, text: str) -> str:
    frame = _agent.ask_frame(_agent.question(question_id, text, "Yes", "No"))
    message = await _agent.append(ui.server, ui.world.agent, ui.world.channel_id, frame)
    [ask_id] = _agent.ask_ids(message)
    return ask_id


async def _whole_in_view(page: Page, locator: Locator) -> None:
    box = await locator.bounding_box()
    viewport = page.viewport_size
    assert box is not None
    assert viewport is not None
    assert box["y"] >= 0, (box, viewport)
    assert box["x"] >= 0, (box, viewport)
    assert box["y"] + box["height"] <= viewport["height"] + 0.5, (box, viewport)
    assert box["x"] + box["width"] <= viewport["width"] + 0.5, (box, viewport)


async def _fixed_parts_in_view(page: Page) -> None:
    await _whole_in_view(page, page.locator(".topbar"))
    await _whole_in_view(page, page.locator(".sidebar"))
    await _whole_in_view(page, page.get_by_role("heading", name="Waiting on you"))
    await _whole_in_view(page, page.get_by_role("navigation", name="Channels"))
    await _whole_in_view(page, page.locator(".channel-head"))
    # The page itself never scrolled: only the channel pane did.
    assert await page.evaluate("document.scrollingElement.scrollTop") == 0


async def test_opening_an_ask_deep_in_a_long_channel_scrolls_only_the_channel_pane(
    ui: UI,
) -> None:
    for index in range(25):
        await _note(ui, index)
    deep = await _ask(ui, "deep", "The ask deep in the channel?")
    for index in range(25, 40):
        await _note(ui, index)
    last = await _ask(ui, "last", "The ask at the end?")

    page = await ui.open(ui.world.human, viewport=DESKTOP)
    # Opened at its first pending question, far down the channel.
    deep_form = page.locator(f'form.ask[data-ask-id="{deep}"]')
    await expect(deep_form).to_be_in_viewport()
    await _fixed_parts_in_view(page)
    pane = await page.evaluate("document.querySelector('#channel-view').scrollTop")
    assert pane > 0, "the channel must be taller than the screen"

    # A deep link to the other ask, from the inbox.
    await page.locator(f'#inbox-list a[data-ask-id="{last}"]').click()
    last_form = page.locator(f'form.ask[data-ask-id="{last}"]')
    await expect(last_form).to_be_in_viewport()
    await _fixed_parts_in_view(page)

    # Scrolling with the wheel over the messages moves the messages only.
    await last_form.hover()
    await page.mouse.wheel(0, -4000)
    await expect(last_form).not_to_be_in_viewport()
    await _fixed_parts_in_view(page)
    await ui.screenshots(page, "long-channel")
