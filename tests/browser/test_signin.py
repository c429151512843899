"""Signing in and out: the token lives in the tab's sessionStorage, never in a URL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from playwright.async_api import expect

if TYPE_CHECKING:
    from tests.browser.conftest import UI

TOKEN_KEY = "compass.token"


async def test_sign_in_keeps_the_token_in_the_session_only_and_sign_out_forgets_it(
    ui: UI,
) -> None:
    world = ui.world
    page = await ui.new_page()
    await page.goto(ui.server.url)
    token_box = page.get_by_label("Access token")
    sign_in = page.get_by_role("button", name="Sign in")
    error = page.locator("#signin-error")

    await token_box.fill("cmp_not-a-real-token")
    await sign_in.click()
    await expect(error).to_have_text("That token was not accepted.")
    await expect(token_box).to_have_value("cmp_not-a-real-token")  # kept, to be corrected

    await token_box.fill(world.agent.token)
    await sign_in.click()
    await expect(error).to_have_text(
        "That token belongs to an agent account. Sign in with a person's token."
    )
    assert await page.evaluate(f"sessionStorage.getItem('{TOKEN_KEY}')") is None

    await token_box.fill(world.human.token)
    await sign_in.click()
    await expect(
        page.get_by_role("navigation", name="Channels").get_by_role("link", name="# general")
    ).to_have_attribute("aria-current", "page")
    await expect(token_box).to_have_value("")
    assert await page.evaluate(f"sessionStorage.getItem('{TOKEN_KEY}')") == world.human.token
    assert world.human.token not in page.url

    await page.reload()  # the tab's session survives a reload
    await expect(page.get_by_role("heading", name="# general")).to_be_visible()
    await expect(page.locator("#live-status")).to_have_text("Live")

    await page.get_by_role("button", name="Sign out").click()
    await expect(token_box).to_be_visible()
    await expect(page.locator("#messages")).to_be_empty()
    assert await page.evaluate(f"sessionStorage.getItem('{TOKEN_KEY}')") is None
    await page.reload()
    await expect(token_box).to_be_visible()

    # Another tab (a new context here) does not share the session.
    other = await ui.new_page()
    await other.goto(ui.server.url)
    await expect(other.get_by_label("Access token")).to_be_visible()


async def test_a_token_in_the_address_is_dropped_and_not_used(ui: UI) -> None:
    page = await ui.new_page()
    leaked = "cmp_pasted-into-a-link"
    await page.goto(f"{ui.server.url}?token={leaked}&keep=1")
    await expect(page.locator("#signin-error")).to_have_text(
        "Tokens in links are not accepted: paste yours below."
    )
    assert leaked not in page.url
    assert "keep=1" in page.url
    assert await page.evaluate(f"sessionStorage.getItem('{TOKEN_KEY}')") is None
    # Replaced, not pushed: the address with the token is not in the tab's history either.
    await page.go_back()
    assert page.url == "about:blank"
