"""What the page shows: agent text as literal text only, recommendation marks, answered asks."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import asyncpg
from playwright.async_api import expect

from tests.browser import _agent

if TYPE_CHECKING:
    from playwright.async_api import Dialog

    from tests.browser.conftest import UI

IMG = '<img src=x onerror="window.__pwned = 1; alert(1)">'
SCRIPT = "<script>window.__pwned = 2; alert(2)</script>"
ANSWER_WITHOUT_STATUS = (
    "UPDATE asks SET answers = $1::jsonb, answered_by_account_id = $2,"
    " answered_at = '2026-03-04T05:06:07Z' WHERE ask_id = $3"
)
ANSWER_WITH_STATUS = (
    "UPDATE asks SET answers = $1::jsonb, answered_by_account_id = $2,"
    " answered_at = '2026-03-04T05:06:07Z', status = 'answered' WHERE ask_id = $3"
)


async def test_agent_text_is_shown_as_text_and_runs_nothing(ui: UI) -> None:
    server, world = ui.server, ui.world
    preview = f"{IMG}\n{SCRIPT}\n<b>not bold</b> & &amp; <!-- not a comment -->"
    frame = _agent.ask_frame(
        _agent.question(
            "html",
            f"Which markup is safe? {IMG}",
            f"<b>bold</b>{SCRIPT}",
            "<a href='javascript:alert(3)'>link</a>",
            header=f"<i>{SCRIPT}</i>",
            descriptions={0: IMG, 1: SCRIPT},
            previews={0: preview, 1: IMG},
        ),
        text=f"Here is {IMG} and {SCRIPT}",
    )
    [ask_id] = _agent.ask_ids(await _agent.append(server, world.agent, world.channel_id, frame))
    page = await ui.new_page()
    dialogs: list[str] = []

    async def dismiss(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        await dialog.dismiss()

    page.on("dialog", dismiss)
    await ui.sign_in(page, world.human)
    form = page.locator(f'form.ask[data-ask-id="{ask_id}"]')
    question = form.locator("fieldset")

    await expect(page.locator(".text-block")).to_have_text(f"Here is {IMG} and {SCRIPT}")
    await expect(question.locator(".question-text")).to_have_text(f"Which markup is safe? {IMG}")
    await expect(question.locator(".chip")).to_have_text(f"<i>{SCRIPT}</i>")
    await expect(question.locator(".option-label")).to_have_text(
        [f"<b>bold</b>{SCRIPT}", "<a href='javascript:alert(3)'>link</a>"]
    )
    await expect(question.locator(".option-description")).to_have_text([IMG, SCRIPT])
    summaries = question.locator(".preview summary")
    await expect(summaries).to_have_count(2)
    for index in range(2):
        await summaries.nth(index).click()
    pres = question.locator(".preview pre")
    await expect(pres.first).to_be_visible()
    assert await pres.evaluate_all("nodes => nodes.map(n => n.textContent)") == [preview, IMG]
    # No element was made from agent text: none of these tags exists in the messages.
    made = await page.locator("#messages").evaluate(
        "m => m.querySelectorAll('img, script, b, i, a, iframe').length"
    )
    assert made == 0
    await ui.screenshots(page, "previews")

    await question.get_by_label("<b>bold</b>", exact=False).check()
    await question.get_by_label("Other").fill(IMG)  # single-select: replaces the pick
    await form.get_by_role("button", name="Send answers").click()
    view = page.locator(f'section.ask-answered[data-ask-id="{ask_id}"]')
    await expect(view.locator(".free-text")).to_have_text(IMG)
    await expect(view.locator(".chip")).to_have_text(f"<i>{SCRIPT}</i>")
    made = await page.locator("#messages").evaluate(
        "m => m.querySelectorAll('img, script, b, i, a, iframe').length"
    )
    assert made == 0
    assert await page.evaluate("window.__pwned") is None
    assert dialogs == []


async def test_recommended_mark_only_for_an_in_range_index(ui: UI) -> None:
    server, world = ui.server, ui.world
    frame = _agent.ask_frame(
        _agent.question("past", "Past the end?", "A", "B", recommended=2),
        _agent.question("neg", "Negative?", "A", "B", recommended=-1),
        _agent.question("none", "No options?", recommended=0),
        _agent.question("last", "Last one?", "A", "B", "C", recommended=2),
    )
    [ask_id] = _agent.ask_ids(await _agent.append(server, world.agent, world.channel_id, frame))
    page = await ui.open(world.human)
    form = page.locator(f'form.ask[data-ask-id="{ask_id}"]')

    await expect(form.locator(".option-recommended")).to_have_count(1)
    await expect(form.get_by_text("Recommended", exact=True)).to_have_count(1)
    await expect(form.locator('[data-question-id="last"] .option-recommended')).to_contain_text("C")


async def test_answered_ask_is_read_only_with_who_when_and_timed_out(ui: UI) -> None:
    server, world = ui.server, ui.world
    message = await _agent.append(server, world.agent, world.channel_id, _agent.gallery_frame())
    [ask_id] = _agent.ask_ids(message)
    # An answer state no RPC writes as ANSWERED (timed_out marks on an answer): written the
    # way the store keeps it (the status column, where the schema has one, says answered).
    # CloseAsk's TIMED_OUT outcome is covered by test_outcomes.py.
    answers = [
        {"question_id": "db", "chosen_option_ids": ["0"], "custom_text": "", "timed_out": True},
        {"question_id": "features", "chosen_option_ids": [], "custom_text": "", "timed_out": True},
    ]
    conn = await asyncpg.connect(server.dsn)
    try:
        has_status = await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM information_schema.columns"
            " WHERE table_name = 'asks' AND column_name = 'status')"
        )
        await conn.execute(
            ANSWER_WITH_STATUS if has_status else ANSWER_WITHOUT_STATUS,
            json.dumps(answers),
            world.agent.account_id,
            ask_id,
        )
    finally:
        await conn.close()
    page = await ui.open(world.human)

    view = page.locator(f'section.ask-answered[data-ask-id="{ask_id}"]')
    await expect(view.locator("input, textarea, button")).to_have_count(0)
    await expect(view.locator('[data-question-id="db"] .chosen li')).to_have_text(["Postgres"])
    await expect(view.locator('[data-question-id="features"]')).to_contain_text("Skipped")
    await expect(view.get_by_text("Timed out", exact=True)).to_have_count(2)
    await expect(view.locator(".answered-by")).to_contain_text("Answered by Coding Agent at")
    await expect(view.locator(".answered-by time")).to_have_attribute(
        "datetime", "2026-03-04T05:06:07Z"
    )
