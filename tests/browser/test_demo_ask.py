"""The demo ask (`compass demo`, the first start of `./scripts/serve`) has no agent behind it
(issue 33 N4): a newcomer's first answer ended on "No delivery receipt ... the agent may not
have received this" with nothing saying to expect it. The ask itself says so before it is
answered, and the answer is never shown as delivered."""

from __future__ import annotations

from typing import TYPE_CHECKING

from playwright.async_api import expect

from compass_server.cli import demo
from compass_server.store.postgres import PostgresStore
from tests._server import Account

if TYPE_CHECKING:
    from tests.browser.conftest import UI


async def test_the_demo_ask_says_no_agent_will_confirm_delivery_and_none_is_shown(
    ui: UI,
) -> None:
    async with PostgresStore(ui.server.dsn, pool_min=1, pool_max=1) as store:
        seeded = await demo.seed(store, ui.server.url)
    person = seeded["human"]
    assert isinstance(person, dict)
    human = Account(
        account_id=str(person["account_id"]), name=str(person["name"]), token=str(person["token"])
    )
    ask_id = str(seeded["example_ask_id"])

    page = await ui.new_page()
    # A short wait for the receipt, so that "none came" shows within the test.
    await ui.sign_in(page, human, url=f"{ui.server.url}?receipt-wait-ms=500")
    article = page.locator("article.message").filter(has=page.locator("form.ask-pending"))
    # Said before answering, where the newcomer reads the ask.
    note = article.locator(".text-block")
    await expect(note).to_contain_text("no agent is connected")
    await expect(note).to_contain_text("“No delivery receipt”")
    await expect(note).to_contain_text("Before I scaffold the service, two decisions:")

    form = page.locator(f'form.ask[data-ask-id="{ask_id}"]')
    await form.get_by_label("Postgres").check()
    await form.get_by_role("button", name="Send answers (1 skipped)").click()
    receipt = page.locator(f'section.ask-closed[data-ask-id="{ask_id}"] .receipt')
    await expect(receipt).to_have_attribute("data-state", "missing")
    await expect(receipt).to_have_text(
        "No delivery receipt from Demo Agent yet: the agent may not have received this"
    )
    await expect(page.get_by_text("Delivered", exact=False)).to_have_count(0)
    await ui.screenshots(page, "demo-answered")
