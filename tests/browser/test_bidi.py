"""Bidi controls in agent text stay inside their element (issue 12 F6): a U+202E (right-to-
left override) in a header, a question, an option, a text block or an author's name must
not reorder what follows it on the page."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from playwright.async_api import expect

from compass_server.store import AccountKind
from compass_server.store.postgres import PostgresStore
from tests._server import Account
from tests.browser import _agent
from tests.browser.conftest import DESKTOP, PHONE

if TYPE_CHECKING:
    from playwright.async_api import Locator, ViewportSize

    from tests.browser.conftest import UI

RLO = "\u202e"
AGENT_TEXT = (
    ".text-block, .question-text, .chip, .option-label, .option-description, .author, "
    ".inbox-question, .channel-name"
)


async def _left(locator: Locator) -> float:
    box = await locator.bounding_box()
    assert box is not None
    return box["x"]


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280", "390"])
async def test_a_right_to_left_override_in_agent_text_cannot_escape_its_element(
    ui: UI, size: ViewportSize
) -> None:
    server, world = ui.server, ui.world
    async with PostgresStore(server.dsn, pool_min=1, pool_max=1) as store:
        row, token = await store.create_account(AccountKind.AGENT, f"{RLO}Evil Agent")
        await store.add_participant(world.channel_id, row.account_id)
    evil = Account(account_id=row.account_id, name=row.name, token=token)
    frame = _agent.ask_frame(
        _agent.question(
            "q",
            f"{RLO}Which one",
            f"{RLO}First",
            "Second",
            header=f"{RLO}HDR",
            recommended=0,
            descriptions={0: f"{RLO}about first"},
        ),
        text=f"{RLO}hello there",
    )
    message = await _agent.append(server, evil, world.channel_id, frame)
    [ask_id] = _agent.ask_ids(message)
    page = await ui.open(world.human, viewport=size)
    form = page.locator(f'form.ask[data-ask-id="{ask_id}"]')
    await expect(form).to_be_visible()

    # Every element holding agent text is isolated...
    styles = await page.eval_on_selector_all(
        AGENT_TEXT, "nodes => nodes.map(n => getComputedStyle(n).unicodeBidi)"
    )
    assert styles, "no agent text on the page"
    assert set(styles) == {"isolate"}, styles
    # ...so what follows an override still reads left to right: the question comes after
    # its header chip, the "Recommended" badge after its option's label, and the time
    # after the author's name.
    legend = form.locator("fieldset[data-question-id='q'] legend")
    assert await _left(legend.locator(".question-text")) > await _left(legend.locator(".chip"))
    first = form.locator(".option").first
    assert await _left(first.locator(".badge")) > await _left(first.locator(".option-label"))
    meta = page.locator("article.message .message-meta").first
    assert await _left(meta.locator("time")) > await _left(meta.locator(".author"))
    await ui.screenshots(page, "bidi")
