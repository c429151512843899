"""The channel list: the caller's channels only, and switching between them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from playwright.async_api import expect

from compass_server.store.postgres import PostgresStore
from tests.browser import _agent

if TYPE_CHECKING:
    from tests.browser.conftest import UI


async def test_lists_the_callers_channels_and_switches_between_them(ui: UI) -> None:
    server, world = ui.server, ui.world
    async with PostgresStore(server.dsn, pool_min=1, pool_max=1) as store:
        design = await store.create_channel(world.workspace_id, "design")
        await store.create_channel(world.workspace_id, "not-mine")
        for account in (world.human, world.agent):
            await store.add_participant(design.channel_id, account.account_id)
    frame = _agent.ask_frame(_agent.question("font", "Which font?", "Serif", "Sans"), text="Hi")
    await _agent.append(server, world.agent, design.channel_id, frame)
    await _agent.append(server, world.agent, world.channel_id, _agent.gallery_frame())

    page = await ui.new_page()
    await page.goto(server.url)
    await page.get_by_label("Access token").fill(world.human.token)
    await page.get_by_role("button", name="Sign in").click()
    channels = page.get_by_role("navigation", name="Channels").get_by_role("link")
    await expect(channels).to_have_count(2)
    names = page.locator("#channel-list .channel-name")  # a link also holds its count
    assert sorted(await names.all_text_contents()) == ["# design", "# general"]
    # Nothing in the address and no channel opened before: the one where an ask has waited
    # longest opens (issue 24: it said "Pick a channel" with asks waiting).
    await expect(page.get_by_role("heading", name="# design")).to_be_visible()

    await (
        page.get_by_role("navigation", name="Channels").get_by_role("link", name="# design").click()
    )
    await expect(page.get_by_role("heading", name="# design")).to_be_visible()
    await expect(page.locator("fieldset[data-question-id='font']")).to_be_visible()
    await expect(page.locator("fieldset[data-question-id='db']")).to_have_count(0)

    await (
        page.get_by_role("navigation", name="Channels")
        .get_by_role("link", name="# general")
        .click()
    )
    await expect(page.get_by_role("heading", name="# general")).to_be_visible()
    await expect(page.locator("fieldset[data-question-id='db']")).to_be_visible()
    await expect(page.locator("fieldset[data-question-id='font']")).to_have_count(0)
    await expect(page.locator("#live-status")).to_have_text("Live")

    await page.go_back()  # the channel is in the address (never the token): back works
    await expect(page.get_by_role("heading", name="# design")).to_be_visible()
    await expect(page.locator("fieldset[data-question-id='font']")).to_be_visible()
