"""What the agent can receive, in the browser (issue 22): "Other" only where the agent takes
free text, a warning where picks and text will not both arrive, and the delivery receipt the
posting side reports (AgentService/ReportDelivery), shown live on the answered or declined ask,
or, when none comes within the wait, that none came.

Asks are posted, and receipts reported, the way an agent bridge does: the real AgentService
over HTTP with the agent's token; people answer in the page or with CommsService.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Final

from playwright.async_api import expect

from gen.compass.v1 import comms_pb2
from tests.browser import _agent
from tests.browser.conftest import PHONE

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page, Request, Route

    from tests.browser.conftest import UI

REFUSED: Final = comms_pb2.FREE_TEXT_REFUSED
ACCEPTED: Final = comms_pb2.FREE_TEXT_ACCEPTED
INSTEAD_OF_PICKS: Final = comms_pb2.FREE_TEXT_INSTEAD_OF_PICKS
WARNING: Final = (
    "The agent will see only your text for this question, not the options you ticked. "
    "Clear the text to send the options instead."
)
# A time as the page shows it (Intl, medium date and short time), e.g. "Dec 4, 2026, 10:22 AM".
SHOWN_TIME: Final = r"[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d{2}\s?[AP]M"


def form_of(page: Page, ask_id: str) -> Locator:
    return page.locator(f'form.ask[data-ask-id="{ask_id}"]')


def closed_of(page: Page, ask_id: str) -> Locator:
    return page.locator(f'section.ask-closed[data-ask-id="{ask_id}"]')


def receipt_of(page: Page, ask_id: str) -> Locator:
    return closed_of(page, ask_id).locator(".receipt")


def mixed_ask() -> comms_pb2.MessageUpdated:
    """One question per FreeText policy (the posting side decides each)."""
    return _agent.ask_frame(
        _agent.question("db", "Which database?", "Postgres", "SQLite", free_text=REFUSED),
        _agent.question(
            "auth",
            "Which sign-in methods?",
            "Email",
            "OAuth",
            allow_multiple=True,
            free_text=ACCEPTED,
        ),
        _agent.question("region", "Which region?", "EU", "US"),  # UNSPECIFIED: accepted
        _agent.question(
            "tags", "Which labels?", "bug", "ui", allow_multiple=True, free_text=INSTEAD_OF_PICKS
        ),
        text="A few choices:",
    )


async def open_mixed_ask(ui: UI) -> tuple[str, Page, Locator]:
    """The agent posts `mixed_ask()`; a person opens the channel: the ask id, page and form."""
    message = await _agent.append(ui.server, ui.world.agent, ui.world.channel_id, mixed_ask())
    [ask_id] = _agent.ask_ids(message)
    page = await ui.open(ui.world.human)
    return ask_id, page, form_of(page, ask_id)


async def test_a_refused_question_offers_no_other_box_and_its_answer_carries_no_text(
    ui: UI,
) -> None:
    server, world = ui.server, ui.world
    ask_id, page, form = await open_mixed_ask(ui)
    db = form.locator('fieldset[data-question-id="db"]')

    await expect(db.get_by_role("radio")).to_have_count(2)
    await expect(db.locator("textarea")).to_have_count(0)
    await expect(db.get_by_text("Other", exact=True)).to_have_count(0)
    for accepted in ("auth", "region", "tags"):
        fieldset = form.locator(f'fieldset[data-question-id="{accepted}"]')
        await expect(fieldset.get_by_label("Other")).to_be_visible()
    await expect(form.locator("textarea.other-input")).to_have_count(3)
    await ui.screenshots(page, "refused-other")

    await db.get_by_label("SQLite").check()
    await form.locator('fieldset[data-question-id="region"]').get_by_label("Other").fill("APAC")
    sent: list[Request] = []
    page.on("request", lambda r: sent.append(r) if r.url.endswith("/RespondToAsk") else None)
    await form.get_by_role("button", name="Send answers (2 skipped)").click()

    view = closed_of(page, ask_id)
    await expect(view.locator(".answered-by")).to_contain_text("Answered by Ada at")
    assert len(sent) == 1
    # proto3 JSON: a field at its zero value is left out (the refused question's text too).
    answers = json.loads(sent[0].post_data or "")["answers"]
    assert answers[0] == {"questionId": "db", "chosenOptionIds": ["1"]}  # no customText at all
    assert answers[2] == {"questionId": "region", "customText": "APAC"}
    stored = await _agent.get_ask(server, world.human, ask_id)
    db_stored = stored.questions[0]
    assert (list(db_stored.chosen_option_ids), db_stored.custom_text) == (["1"], "")
    assert stored.questions[2].custom_text == "APAC"


async def test_should_the_server_refuse_text_anyway_its_violation_shows_at_the_question(
    ui: UI,
) -> None:
    """A form that sent text for a refused question (here, a request altered on its way) is
    refused by the real server, whose violation shows next to that question; nothing stored."""
    server, world = ui.server, ui.world
    ask_id, page, form = await open_mixed_ask(ui)
    db = form.locator('fieldset[data-question-id="db"]')

    async def add_text(route: Route) -> None:
        body = json.loads(route.request.post_data or "{}")
        body["answers"][0]["customText"] = "MariaDB"
        await route.continue_(post_data=json.dumps(body))

    await page.route("**/RespondToAsk", add_text)
    await db.get_by_label("Postgres").check()
    await form.get_by_role("button", name="Send answers (3 skipped)").click()
    violation = db.locator(".violation")
    await expect(violation).to_have_text(re.compile(r"cannot receive free text"))
    await expect(db).to_have_class(re.compile(r"\bhas-violation\b"))
    await expect(form.locator(".form-error")).to_have_text(
        "Some answers were not accepted; see the notes next to them."
    )
    await expect(form.locator('fieldset[data-question-id="tags"] .violation')).to_be_hidden()
    stored = await _agent.get_ask(server, world.human, ask_id)
    assert stored.status == comms_pb2.ASK_STATUS_PENDING
    await ui.screenshots(page, "refused-violation")


async def test_picks_and_text_on_an_instead_of_picks_question_warn_before_submit(
    ui: UI,
) -> None:
    server, world = ui.server, ui.world
    ask_id, page, form = await open_mixed_ask(ui)
    tags = form.locator('fieldset[data-question-id="tags"]')
    auth = form.locator('fieldset[data-question-id="auth"]')
    warning = tags.locator(".free-text-warning")

    await expect(tags.locator(".other-hint")).to_have_text(
        "Optional. With options ticked, the agent sees only this text."
    )
    await tags.get_by_label("bug").check()
    await expect(warning).to_be_hidden()
    await tags.get_by_label("Other").fill("   ")  # blank text is not sent: no warning
    await expect(warning).to_be_hidden()
    await tags.get_by_label("Other").fill("needs triage")
    await expect(warning).to_be_visible()
    await expect(warning).to_have_text(WARNING)
    await expect(tags.get_by_label("Other")).to_have_accessible_description(re.compile(WARNING))
    # Where text goes alongside picks whole (ACCEPTED), no warning.
    await auth.get_by_label("Email").check()
    await auth.get_by_label("Other").fill("Passkeys")
    await expect(form.locator(".free-text-warning:visible")).to_have_count(1)
    # It goes as soon as either goes, and comes back with both.
    await tags.get_by_label("bug").uncheck()
    await expect(warning).to_be_hidden()
    await tags.get_by_label("ui").check()
    await expect(warning).to_be_visible()
    await ui.screenshots(page, "instead-of-picks-warning")

    # The person decides: the submit stays possible and sends both.
    await form.get_by_role("button", name="Send answers (2 skipped)").click()
    await expect(closed_of(page, ask_id).locator(".answered-by")).to_contain_text("Answered by")
    stored = await _agent.get_ask(server, world.human, ask_id)
    tags_stored = stored.questions[3]
    assert (list(tags_stored.chosen_option_ids), tags_stored.custom_text) == (
        ["1"],
        "needs triage",
    )


async def test_each_receipt_shows_live_when_the_agent_reports_it(ui: UI) -> None:
    server, world = ui.server, ui.world
    ids: dict[str, str] = {}
    for name in ("delivered", "changed", "not_delivered"):
        message = await _agent.append(server, world.agent, world.channel_id, _agent.two_questions())
        [ids[name]] = _agent.ask_ids(message)
    page = await ui.open(world.human)
    await page.evaluate("window.__sameDocument = true")  # gone if the page reloads

    # Answered here: no receipt yet, so the page waits for one and says so (neutrally).
    form = form_of(page, ids["delivered"])
    await form.locator('fieldset[data-question-id="db"]').get_by_label("SQLite").check()
    await form.get_by_role("button", name="Send answers (1 skipped)").click()
    waiting = receipt_of(page, ids["delivered"])
    await expect(waiting).to_have_attribute("data-state", "waiting")
    await expect(waiting).to_have_text("Waiting for Coding Agent to confirm delivery")
    # Answered and declined by someone else.
    await _agent.rpc(
        server,
        world.human2,
        "CommsService",
        "RespondToAsk",
        {
            "askId": ids["changed"],
            "answers": [{"questionId": "db", "chosenOptionIds": ["0"]}, {"questionId": "features"}],
        },
    )
    await _agent.rpc(
        server, world.human2, "CommsService", "DeclineAsk", {"askId": ids["not_delivered"]}
    )
    await expect(receipt_of(page, ids["not_delivered"])).to_have_attribute("data-state", "waiting")
    await expect(page.get_by_text("Delivered", exact=False)).to_have_count(0)

    payload = json.dumps({"answers": {"db": "SQLite"}}, indent=2)
    await _agent.report_delivery(
        server, world.agent, ids["delivered"], "DELIVERY_STATE_DELIVERED", payload=payload
    )
    await _agent.report_delivery(
        server,
        world.agent,
        ids["changed"],
        "DELIVERY_STATE_DELIVERED_WITH_CHANGES",
        detail="The skipped question reached the agent as empty text.",
    )
    await _agent.report_delivery(
        server,
        world.agent,
        ids["not_delivered"],
        "DELIVERY_STATE_NOT_DELIVERED",
        detail="The agent's run had ended <b>before</b> the decline arrived.",
        payload='{"action": "decline"}',
    )

    delivered = receipt_of(page, ids["delivered"])
    await expect(delivered).to_have_attribute("data-state", "delivered")
    await expect(delivered.locator(".receipt-line")).to_have_text(
        re.compile(rf"^Delivered to Coding Agent at {SHOWN_TIME}$")
    )
    await expect(delivered.locator("time")).to_have_count(1)
    details = delivered.locator("details.receipt-payload")
    await expect(details.locator("summary")).to_have_text("What the agent received")
    await expect(details.locator("pre")).to_be_hidden()
    await details.locator("summary").click()
    await expect(details.locator("pre")).to_have_text(payload)

    changed = receipt_of(page, ids["changed"])
    await expect(changed).to_have_attribute("data-state", "changed")
    await expect(changed.locator(".receipt-line")).to_have_text(
        "Delivered with changes: The skipped question reached the agent as empty text."
    )
    await expect(changed.locator(".receipt-by")).to_have_text(
        re.compile(rf"^Delivered to Coding Agent at {SHOWN_TIME}$")
    )
    await expect(changed.locator("details")).to_have_count(0)  # no payload reported

    refused = receipt_of(page, ids["not_delivered"])
    await expect(refused).to_have_attribute("data-state", "not-delivered")
    await expect(refused.locator(".receipt-line")).to_have_text(
        "Not delivered: The agent's run had ended <b>before</b> the decline arrived."
    )
    await expect(refused.locator("b")).to_have_count(0)  # agent text stays text
    await expect(refused.locator(".receipt-by")).to_have_text(
        re.compile(rf"^Reported by Coding Agent at {SHOWN_TIME}$")
    )
    # Styled so nobody takes it as received: the ask is outlined in the error colour, unlike
    # a delivered one, and the warning sits right under the outcome.
    colours = await page.evaluate(
        """([ok, bad]) => [ok, bad].map((id) => getComputedStyle(
            document.querySelector(`section.ask-closed[data-ask-id="${id}"]`)).borderLeftColor)""",
        [ids["delivered"], ids["not_delivered"]],
    )
    error = await refused.evaluate("r => getComputedStyle(r).borderTopColor")
    assert colours[1] == error != colours[0], (colours, error)
    following = await closed_of(page, ids["not_delivered"]).evaluate(
        "s => s.querySelector('.ask-outcome').nextElementSibling.className"
    )
    assert following == "receipt"

    assert await page.evaluate("window.__sameDocument") is True
    stored = await _agent.get_ask(server, world.human, ids["not_delivered"])
    assert stored.delivery.state == comms_pb2.DELIVERY_STATE_NOT_DELIVERED
    await ui.screenshots(page, "receipts")


async def test_without_a_receipt_the_page_says_so_once_the_wait_runs_out(ui: UI) -> None:
    server, world = ui.server, ui.world
    message = await _agent.append(server, world.agent, world.channel_id, _agent.two_questions())
    [ask_id] = _agent.ask_ids(message)
    page = await ui.new_page()
    # The wait, shortened for the test (the page's own is 20 s): long enough that the neutral
    # state is seen first even on a busy machine.
    await ui.sign_in(page, world.human, url=f"{server.url}?receipt-wait-ms=4000")
    await page.evaluate("window.__sameDocument = true")
    form = form_of(page, ask_id)
    await form.locator('fieldset[data-question-id="db"]').get_by_label("Postgres").check()
    await form.get_by_role("button", name="Send answers (1 skipped)").click()

    receipt = receipt_of(page, ask_id)
    await expect(receipt).to_have_attribute("data-state", "waiting")
    await expect(receipt).to_have_text("Waiting for Coding Agent to confirm delivery")
    # No reload, no new message: the page's timer turns it.
    await expect(receipt).to_have_attribute("data-state", "missing", timeout=20_000)
    await expect(receipt).to_have_text(
        "No delivery receipt from Coding Agent yet: the agent may not have received this"
    )
    await expect(receipt).to_have_attribute("role", "status")
    await ui.screenshots(page, "no-receipt")

    # A late receipt replaces it, live.
    await _agent.report_delivery(server, world.agent, ask_id, "DELIVERY_STATE_DELIVERED")
    await expect(receipt).to_have_attribute("data-state", "delivered")
    await expect(receipt).to_have_text(re.compile(r"^Delivered to Coding Agent at "))
    assert await page.evaluate("window.__sameDocument") is True


async def test_a_receipt_fits_a_phone_screen(ui: UI) -> None:
    server, world = ui.server, ui.world
    message = await _agent.append(server, world.agent, world.channel_id, _agent.two_questions())
    [ask_id] = _agent.ask_ids(message)
    await _agent.rpc(
        server,
        world.human2,
        "CommsService",
        "RespondToAsk",
        {
            "askId": ask_id,
            "answers": [{"questionId": "db", "chosenOptionIds": ["2"]}, {"questionId": "features"}],
        },
    )
    unbroken = "x" * 300
    await _agent.report_delivery(
        server,
        world.agent,
        ask_id,
        "DELIVERY_STATE_NOT_DELIVERED",
        detail=f"The form could not carry https://example.test/{unbroken} at all.",
        payload=json.dumps({"answers": {"db": "MongoDB", "note": unbroken}}),
    )
    page = await ui.open(world.human, viewport=PHONE)
    receipt = receipt_of(page, ask_id)
    await expect(receipt).to_have_attribute("data-state", "not-delivered")
    await receipt.locator("summary").click()
    await expect(receipt.locator("pre")).to_be_visible()
    await receipt.scroll_into_view_if_needed()
    for part in (".receipt-line", ".receipt-by", "summary"):
        box = await receipt.locator(part).bounding_box()
        assert box is not None
        assert box["x"] >= 0, (part, box)
        assert box["x"] + box["width"] <= PHONE["width"], (part, box)
    # Nothing inside the receipt scrolls sideways but the payload's own box (its text wraps).
    wide = await receipt.evaluate(
        "r => [r, ...r.querySelectorAll('p, bdi')].filter(n => n.scrollWidth > n.clientWidth + 1)"
        ".map(n => n.className || n.tagName)"
    )
    assert wide == []
    pre = await receipt.locator("pre").evaluate("p => p.scrollWidth - p.clientWidth")
    assert pre <= 1
    await ui.screenshots(page, "receipt-phone")  # checks the page does not scroll sideways


async def test_a_question_the_agent_needs_answered_cannot_be_skipped(ui: UI) -> None:
    """A required property of the agent's form (`answer_required`): marked, no "Skip all",
    and a send that leaves it empty is stopped in the page, before any request."""
    needed = _agent.question("env", "Deploy where?", "staging", "production")
    needed.answer_required = True
    frame = _agent.ask_frame(needed, _agent.question("note", "Anything else?"))
    message = await _agent.append(ui.server, ui.world.agent, ui.world.channel_id, frame)
    [ask_id] = _agent.ask_ids(message)
    page = await ui.open(ui.world.human)
    form = form_of(page, ask_id)
    env = form.locator('fieldset[data-question-id="env"]')
    await expect(env.locator(".required-tag")).to_have_text("answer needed")
    await expect(form.locator('fieldset[data-question-id="note"] .required-tag')).to_have_count(0)
    await expect(form.get_by_role("button", name="Skip all questions")).to_be_hidden()

    sent: list[Request] = []
    page.on("request", lambda r: sent.append(r) if r.url.endswith("/RespondToAsk") else None)
    await form.locator('fieldset[data-question-id="note"]').locator("textarea").fill("thanks")
    await form.get_by_role("button", name=re.compile("^Send answers")).click()
    await expect(env.locator(".violation")).to_contain_text("cannot be skipped")
    assert sent == []  # stopped in the page

    await env.get_by_label("staging").check()
    await form.get_by_role("button", name=re.compile("^Send answers")).click()
    await expect(closed_of(page, ask_id).locator(".answered-by")).to_contain_text("Answered by")
    stored = await _agent.get_ask(ui.server, ui.world.human, ask_id)
    assert list(stored.questions[0].chosen_option_ids) == ["0"]
