"""What a new user tripped over on a first run (issue 13, "UI fixes"): skipping everything is
an explicit choice, the connection status stays in view and counts down its retry, an
unknown channel says so, a choice error marks the choice (not "Other"), and on a phone a
channel opens at its first pending question. Each at 1280 and 390 px."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

import pytest
from playwright.async_api import expect

from compass_server.store.postgres import PostgresStore
from gen.compass.v1 import comms_pb2
from tests.browser import _agent
from tests.browser._proxy import CuttableProxy
from tests.browser.conftest import DESKTOP, PHONE

if TYPE_CHECKING:
    from playwright.async_api import Page, Request, Route, ViewportSize

    from tests.browser.conftest import UI

SIZES = pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280", "390"])
# Scrolls whatever scrolls the messages to its end (the channel pane on a desktop, the page on
# a phone: issue 33 N8) and returns how far it scrolled.
SCROLL_MESSAGES_TO_END = """() => {
  let pane = document.getElementById("messages").parentElement;
  while (pane !== document.body && !/auto|scroll/.test(getComputedStyle(pane).overflowY)) {
    pane = pane.parentElement;
  }
  if (pane === document.body) pane = document.scrollingElement;
  pane.scrollTo(0, pane.scrollHeight);
  return pane.scrollTop;
}"""


def _respond_requests(page: Page) -> list[Request]:
    sent: list[Request] = []
    page.on("request", lambda r: sent.append(r) if r.url.endswith("/RespondToAsk") else None)
    return sent


@SIZES
async def test_an_untouched_form_sends_nothing_until_skipping_all_is_chosen(
    ui: UI, size: ViewportSize
) -> None:
    server, world = ui.server, ui.world
    message = await _agent.append(server, world.agent, world.channel_id, _agent.two_questions())
    [ask_id] = _agent.ask_ids(message)
    page = await ui.open(world.human, viewport=size)
    sent = _respond_requests(page)
    form = page.locator(f'form.ask[data-ask-id="{ask_id}"]')
    primary = form.locator("button[type=submit]")
    skip_all = form.get_by_role("button", name="Skip all questions")

    await expect(primary).to_have_text("Send answers")
    await expect(skip_all).to_be_visible()
    await expect(form.locator(".skip-notice")).to_have_text(
        "Nothing entered yet: answer at least one question, or skip them all."
    )
    await ui.screenshots(page, "untouched")
    await primary.click()
    await expect(form.locator(".form-error")).to_have_text(
        "Answer at least one question first, or choose “Skip all questions”."
    )
    await expect(form.get_by_label("Postgres")).to_be_focused()
    await asyncio.sleep(0.3)  # a RespondToAsk would be on its way by now
    assert sent == []

    # Something entered: the skip-all choice goes away and the primary says what it skips.
    await form.get_by_label("Postgres").check()
    await expect(skip_all).to_be_hidden()
    await expect(primary).to_have_text("Send answers (1 skipped)")
    await form.get_by_role("button", name="Clear choice").click()
    await expect(skip_all).to_be_visible()

    await skip_all.click()
    await expect(page.locator(f'section.ask-answered[data-ask-id="{ask_id}"]')).to_be_visible()
    assert len(sent) == 1
    assert _agent.sent(sent[0], comms_pb2.RespondToAskRequest()) == comms_pb2.RespondToAskRequest(
        ask_id=ask_id,
        answers=[
            comms_pb2.AskQuestionAnswer(question_id="db"),
            comms_pb2.AskQuestionAnswer(question_id="features"),
        ],
    )


@SIZES
async def test_the_connection_status_stays_in_view_and_counts_down_its_retry(
    ui: UI, size: ViewportSize
) -> None:
    server, world = ui.server, ui.world
    for index in range(12):
        await _agent.append(
            server,
            world.agent,
            world.channel_id,
            _agent.ask_frame(_agent.question(f"q{index}", f"Question {index}?", "Yes", "No")),
        )
    async with CuttableProxy(server.url).running() as proxy:
        page = await ui.new_page(viewport=size)
        await ui.sign_in(page, world.human, url=proxy.url)
        status = page.locator("#live-status")
        assert await page.evaluate(SCROLL_MESSAGES_TO_END) > 0, (
            "the channel must be taller than the screen"
        )
        await _in_view(page, "#live-status")

        proxy.refusing = True
        proxy.cut()
        # Backoff doubles (0.5, 1, 2 s, ...): a wait of 2 s or more must count down, second
        # by second, while still in view.
        seen: set[int] = set()
        for _ in range(200):
            text = await status.text_content() or ""
            if text.startswith("Reconnecting in "):
                seen.add(int(text.removeprefix("Reconnecting in ").split()[0]))
            if {2, 1} <= seen:
                break
            await asyncio.sleep(0.05)
        assert {2, 1} <= seen, seen
        await _in_view(page, "#live-status")
        await ui.screenshots(page, "reconnecting")
        proxy.refusing = False
        await expect(status).to_have_text("Live", timeout=20_000)


async def _in_view(page: Page, selector: str) -> None:
    box = await page.locator(selector).bounding_box()
    assert box is not None
    height = await page.evaluate("window.innerHeight")
    assert box["y"] >= 0, (box, height)
    assert box["y"] + box["height"] <= height, (box, height)


@SIZES
async def test_an_unknown_channel_in_the_address_says_so_and_clears_the_live_dot(
    ui: UI, size: ViewportSize
) -> None:
    world = ui.world
    page = await ui.open(world.human, viewport=size)
    status = page.locator("#live-status")
    await expect(status).to_have_attribute("data-state", "live")

    await page.goto(f"{ui.server.url}#/channel/ch_nosuchchannel")
    await expect(page.get_by_role("heading", name="Channel not found")).to_be_visible()
    await expect(page.locator("#channel-error")).to_have_text(
        "There is no channel “ch_nosuchchannel” among yours. Pick one from the list."
    )
    await expect(status).to_have_text("")
    await expect(status).not_to_have_attribute("data-state", "live")
    await ui.screenshots(page, "unknown-channel")

    await (
        page.get_by_role("navigation", name="Channels")
        .get_by_role("link", name="# general")
        .click()
    )
    await expect(page.get_by_role("heading", name="# general")).to_be_visible()
    await expect(page.locator("#channel-error")).to_be_hidden()
    await expect(status).to_have_text("Live")


@SIZES
async def test_a_choice_error_marks_the_choice_not_the_other_box(
    ui: UI, size: ViewportSize
) -> None:
    server, world = ui.server, ui.world
    message = await _agent.append(server, world.agent, world.channel_id, _agent.two_questions())
    [ask_id] = _agent.ask_ids(message)
    page = await ui.open(world.human, viewport=size)
    form = page.locator(f'form.ask[data-ask-id="{ask_id}"]')
    db = form.locator('fieldset[data-question-id="db"]')

    # A stale form: the option it offers is no longer the agent's (the real server refuses it).
    async def stale_choice(route: Route) -> None:
        body = json.loads(route.request.post_data or "{}")
        body["answers"][0]["chosenOptionIds"] = ["7"]
        await route.continue_(post_data=json.dumps(body))

    await page.route("**/RespondToAsk", stale_choice)
    await db.get_by_label("Postgres").check()
    await form.get_by_role("button", name="Send answers (1 skipped)").click()
    await expect(db.locator(".violation")).to_be_visible()
    other = db.get_by_label("Other")
    await expect(other).not_to_have_attribute("aria-invalid", "true")
    await expect(db.get_by_label("Postgres")).to_have_attribute("aria-invalid", "true")
    colours = await other.evaluate(
        "o => [getComputedStyle(o).borderTopColor,"
        " getComputedStyle(document.querySelector('.violation')).color]"
    )
    assert colours[0] != colours[1], "the Other box is outlined in the error colour"
    await ui.screenshots(page, "choice-error")


async def test_on_a_phone_a_channel_opens_at_its_first_pending_question(ui: UI) -> None:
    server, world = ui.server, ui.world
    long_text = "Here is what I found so far. " * 40
    questions = [
        _agent.question(
            f"q{index}",
            f"Decision {index}: which way?",
            "First way",
            "Second way",
            "Third way",
            descriptions={0: "A longer explanation " * 6, 1: "Another explanation " * 6},
        )
        for index in range(4)
    ]
    message = await _agent.append(
        server, world.agent, world.channel_id, _agent.ask_frame(*questions, text=long_text)
    )
    [ask_id] = _agent.ask_ids(message)
    page = await ui.open(world.human, viewport=PHONE)
    first = page.locator(f'form.ask[data-ask-id="{ask_id}"] fieldset[data-question-id="q0"]')
    await expect(first).to_be_visible()
    form_box = await page.locator(f'form.ask[data-ask-id="{ask_id}"]').bounding_box()
    assert form_box is not None
    assert form_box["height"] > PHONE["height"], form_box
    box = await first.bounding_box()
    head = await page.locator(".channel-head").bounding_box()
    assert box is not None
    assert head is not None
    # The first question starts on screen, below the sticky channel header.
    assert box["y"] >= 0, box
    assert head["y"] + head["height"] <= box["y"] < PHONE["height"], (box, head)
    await ui.screenshots(page, "phone-first-question")


async def test_the_last_channel_opens_by_default(ui: UI) -> None:
    server, world = ui.server, ui.world
    async with PostgresStore(server.dsn, pool_min=1, pool_max=1) as store:
        design = await store.create_channel(world.workspace_id, "design")
        await store.add_participant(design.channel_id, world.human.account_id)
    page = await ui.new_page()
    await page.goto(server.url)
    await page.get_by_label("Access token").fill(world.human.token)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("heading", name="Pick a channel")).to_be_visible()
    await (
        page.get_by_role("navigation", name="Channels").get_by_role("link", name="# design").click()
    )
    await expect(page.get_by_role("heading", name="# design")).to_be_visible()

    # Another tab of the same browser, opened at the bare address: design again.
    second = await page.context.new_page()
    await second.goto(server.url)
    await second.get_by_label("Access token").fill(world.human.token)
    await second.get_by_role("button", name="Sign in").click()
    await expect(second.get_by_role("heading", name="# design")).to_be_visible()
    await expect(second.locator("#live-status")).to_have_text("Live")
