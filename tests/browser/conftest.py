"""Browser tests: Debian's Chromium, headless, driven by Playwright against `compass serve`.

Every test gets a real server on its own fresh database (`compass_server`), a seeded world
(`seeded`) and its own Chromium (`ui`). Playwright's async API is used because the tests and
the seeding fixture run in pytest-asyncio's loop (its sync API refuses to run inside one).
Screenshots go to test-artifacts/screenshots/ (gitignored), for people to look at.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest
from playwright.async_api import async_playwright, expect

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from playwright.async_api import Browser, BrowserContext, Page, ViewportSize

    from tests._server import Account, RunningServer, SeededWorld

ROOT: Final = Path(__file__).resolve().parents[2]
SCREENSHOTS: Final = ROOT / "test-artifacts" / "screenshots"
CHROMIUM_ARGS: Final = [
    "--no-sandbox",  # runs as root in CI containers, where the sandbox cannot start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
DESKTOP: Final[ViewportSize] = {"width": 1280, "height": 900}
PHONE: Final[ViewportSize] = {"width": 390, "height": 844}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/browser/" in item.nodeid:
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.integration)


def chromium_path() -> str:
    """The Chromium to drive: $COMPASS_CHROMIUM, else `chromium` on PATH (Debian's package).

    A missing browser fails the test rather than skipping it: a UI test that silently does
    not run is no test (`.ci/run` installs the package).
    """
    path = os.environ.get("COMPASS_CHROMIUM") or shutil.which("chromium")
    if not path:
        pytest.fail("no Chromium: install Debian's `chromium` or set COMPASS_CHROMIUM")
    return path


@pytest.fixture
async def browser() -> AsyncGenerator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=chromium_path(), args=CHROMIUM_ARGS
        )
        try:
            yield launched
        finally:
            await launched.close()


@dataclass
class UI:
    """Opens signed-in pages on the test's server and checks what every page must hold."""

    server: RunningServer
    world: SeededWorld
    browser: Browser
    test_name: str
    contexts: list[BrowserContext] = field(default_factory=list["BrowserContext"])
    page_errors: list[str] = field(default_factory=list[str])
    request_urls: list[str] = field(default_factory=list[str])

    async def new_page(self, *, viewport: ViewportSize | None = None) -> Page:
        context = await self.browser.new_context(viewport=viewport or DESKTOP)
        self.contexts.append(context)
        context.on("request", lambda request: self.request_urls.append(request.url))
        page = await context.new_page()
        page.on(
            "pageerror", lambda error: self.page_errors.append(f"{error.name}: {error.message}")
        )
        return page

    async def sign_in(self, page: Page, account: Account, *, url: str = "") -> None:
        """Sign in through the form (at `url`, default the server's) and wait until the
        channel is shown live."""
        await page.goto(url or self.server.url)
        await page.get_by_label("Access token").fill(account.token)
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_role("heading", name="# general")).to_be_visible()
        await expect(page.locator("#live-status")).to_have_text("Live")

    async def open(self, account: Account, *, viewport: ViewportSize | None = None) -> Page:
        page = await self.new_page(viewport=viewport)
        await self.sign_in(page, account)
        return page

    async def screenshots(self, page: Page, name: str) -> None:
        """Full-page screenshots at 1280px and 390px; at 390px nothing may scroll sideways."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        original = page.viewport_size
        for size in (DESKTOP, PHONE):
            await page.set_viewport_size(size)
            overflow = await page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, f"{name} scrolls sideways by {overflow}px at {size['width']}px"
            path = SCREENSHOTS / f"{self.test_name}-{name}-{size['width']}.png"
            await page.screenshot(path=path, full_page=True)
        if original is not None:
            await page.set_viewport_size(original)

    async def close(self) -> None:
        for context in self.contexts:
            await context.close()


@pytest.fixture
async def ui(
    request: pytest.FixtureRequest,
    browser: Browser,
    compass_server: RunningServer,
    seeded: SeededWorld,
) -> AsyncGenerator[UI]:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    harness = UI(server=compass_server, world=seeded, browser=browser, test_name=name)
    try:
        yield harness
    finally:
        await harness.close()
    # Checked for every test: the page never threw, and no token ever travelled in a URL or
    # reached the server's log.
    assert harness.page_errors == []
    for account in (seeded.human, seeded.human2, seeded.agent):
        assert not any(account.token in url for url in harness.request_urls)
        assert account.token not in compass_server.log()
