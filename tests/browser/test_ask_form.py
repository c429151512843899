"""Answering asks in the browser: one form per ask, one RespondToAsk per submit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from playwright.async_api import expect

from gen.compass.v1 import comms_pb2
from tests.browser import _agent

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page, Request

    from tests.browser.conftest import UI


def ask_form(page: Page, ask_id: str) -> Locator:
    return page.locator(f'form.ask[data-ask-id="{ask_id}"]')


def answered(page: Page, ask_id: str) -> Locator:
    return page.locator(f'section.ask-answered[data-ask-id="{ask_id}"]')


def stored_state(ask: comms_pb2.Ask) -> list[tuple[str, list[str], str, bool]]:
    return [
        (q.question_id, list(q.chosen_option_ids), q.custom_text, q.timed_out)
        for q in ask.questions
    ]


async def test_gallery_ask_is_answered_with_one_submit(ui: UI) -> None:
    server, world = ui.server, ui.world
    message = await _agent.append(server, world.agent, world.channel_id, _agent.gallery_frame())
    [ask_id] = _agent.ask_ids(message)
    page = await ui.open(world.human)
    form = ask_form(page, ask_id)
    db = form.locator('fieldset[data-question-id="db"]')
    features = form.locator('fieldset[data-question-id="features"]')

    await expect(page.get_by_text("Two decisions before I start:")).to_be_visible()
    await expect(form.locator("fieldset")).to_have_count(2)
    await expect(db.locator("legend")).to_have_text("Which database should the new service use?")
    await expect(db.get_by_role("radio")).to_have_count(3)
    await expect(features.get_by_role("checkbox")).to_have_count(4)
    await expect(form.locator(".chip")).to_have_count(0)  # the example has no headers
    # The recommended option (index 0) is marked, and only it.
    await expect(form.get_by_text("Recommended", exact=True)).to_have_count(1)
    await expect(db.locator(".option-recommended")).to_contain_text("Postgres")
    # Descriptions sit under their label and describe the input.
    await expect(db.get_by_role("radio", name="Postgres")).to_have_accessible_description(
        "Relational, strong consistency, JSONB support"
    )
    await expect(features.get_by_role("checkbox", name="SAML SSO")).to_have_accessible_description(
        "Enterprise; can be deferred"
    )
    # Every input has exactly one bound label.
    unlabeled = await form.evaluate(
        "f => [...f.querySelectorAll('input, textarea')].filter(i => i.labels.length !== 1).length"
    )
    assert unlabeled == 0
    await expect(form.locator(".skip-notice")).to_have_text(
        "Nothing entered yet: answer at least one question, or skip them all."
    )
    await expect(form.locator("button[type=submit]")).to_have_text("Send answers")
    await expect(form.get_by_role("button", name="Skip all questions")).to_be_visible()
    await ui.screenshots(page, "unanswered")

    await db.get_by_label("SQLite").check()
    await features.get_by_label("Email + password").check()
    await features.get_by_label("OAuth (Google, GitHub)").check()
    await features.get_by_label("Other").fill("  Passkeys in v2 ")
    await expect(form.locator(".skip-notice")).to_be_hidden()

    sent: list[Request] = []
    page.on("request", lambda r: sent.append(r) if r.url.endswith("/RespondToAsk") else None)
    await form.get_by_role("button", name="Send answers").click()

    view = answered(page, ask_id)
    await expect(view.locator(".answered-by")).to_contain_text("Answered by Ada at")
    await expect(form).to_have_count(0)
    assert len(sent) == 1
    assert _agent.sent(sent[0], comms_pb2.RespondToAskRequest()) == comms_pb2.RespondToAskRequest(
        ask_id=ask_id,
        answers=[
            comms_pb2.AskQuestionAnswer(question_id="db", chosen_option_ids=["1"]),
            comms_pb2.AskQuestionAnswer(
                question_id="features", chosen_option_ids=["0", "1"], custom_text="Passkeys in v2"
            ),
        ],
    )
    stored = await _agent.get_ask(server, world.human, ask_id)
    assert stored_state(stored) == [
        ("db", ["1"], "", False),
        ("features", ["0", "1"], "Passkeys in v2", False),
    ]
    assert stored.answered_by_account_id == world.human.account_id
    await expect(view.locator('[data-question-id="db"] .chosen li')).to_have_text(["SQLite"])
    await expect(view.locator('[data-question-id="features"] .chosen li')).to_have_text(
        ["Email + password", "OAuth (Google, GitHub)"]
    )
    await expect(view.locator('[data-question-id="features"] .free-text')).to_have_text(
        "Passkeys in v2"
    )
    await expect(view.get_by_text("Timed out")).to_have_count(0)
    await ui.screenshots(page, "answered")


async def test_keyboard_alone_answers_and_single_select_keeps_pick_or_text(ui: UI) -> None:
    server, world = ui.server, ui.world
    message = await _agent.append(server, world.agent, world.channel_id, _agent.gallery_frame())
    [ask_id] = _agent.ask_ids(message)
    page = await ui.open(world.human)
    form = ask_form(page, ask_id)
    db = form.locator('fieldset[data-question-id="db"]')
    features = form.locator('fieldset[data-question-id="features"]')
    postgres, sqlite = (
        db.get_by_role("radio", name="Postgres"),
        db.get_by_role("radio", name="SQLite"),
    )
    db_other = db.get_by_label("Other")

    await postgres.focus()
    await page.keyboard.press("Space")
    await expect(postgres).to_be_checked()
    # Free text instead of a pick: typing clears the pick ...
    await db_other.fill("CockroachDB")
    await expect(postgres).not_to_be_checked()
    await expect(sqlite).not_to_be_checked()
    # ... and a pick (here by Enter) clears the text.
    await sqlite.focus()
    await page.keyboard.press("Enter")
    await expect(sqlite).to_be_checked()
    await expect(db_other).to_have_value("")
    await expect(form).to_have_count(1)  # Enter picked; it did not submit

    # Tab order: the picked radio, "Clear choice", the Other box, then the next question.
    await page.keyboard.press("Tab")
    await expect(db.get_by_role("button", name="Clear choice")).to_be_focused()
    await page.keyboard.press("Tab")
    await expect(db_other).to_be_focused()
    await page.keyboard.press("Tab")
    email = features.get_by_role("checkbox", name="Email + password")
    await expect(email).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(email).to_be_checked()
    await page.keyboard.press("Tab")
    oauth = features.get_by_role("checkbox", name="OAuth (Google, GitHub)")
    await expect(oauth).to_be_focused()
    await page.keyboard.press("Space")
    await page.keyboard.press("Space")
    await expect(oauth).not_to_be_checked()
    submit = form.get_by_role("button", name="Send answers")
    for _ in range(10):
        if await submit.evaluate("b => b === document.activeElement"):
            break
        await page.keyboard.press("Tab")
    await expect(submit).to_be_focused()
    await page.keyboard.press("Enter")

    await expect(answered(page, ask_id)).to_be_visible()
    stored = await _agent.get_ask(server, world.human, ask_id)
    assert stored_state(stored) == [("db", ["1"], "", False), ("features", ["0"], "", False)]


async def test_zero_option_question_is_answered_by_free_text_and_empty_one_skipped(
    ui: UI,
) -> None:
    server, world = ui.server, ui.world
    frame = _agent.ask_frame(
        _agent.question("notes", "Anything else I should know before I start?", header="Notes"),
        _agent.question("lang", "Which language?", "Python", "Go"),
    )
    [ask_id] = _agent.ask_ids(await _agent.append(server, world.agent, world.channel_id, frame))
    page = await ui.open(world.human)
    form = ask_form(page, ask_id)
    notes = form.locator('fieldset[data-question-id="notes"]')
    lang = form.locator('fieldset[data-question-id="lang"]')

    await expect(notes.locator("input")).to_have_count(0)  # no options, so no radios
    await expect(notes.locator(".chip")).to_have_text("Notes")
    await expect(lang.locator(".chip")).to_have_count(0)  # an empty header shows no chip
    await notes.get_by_label("Your answer").fill("The staging database is shared;\nbe careful.")
    await expect(form.locator(".skip-notice")).to_have_text(
        "1 question left empty will be sent as skipped: “Which language?”"
    )
    await form.get_by_role("button", name="Send answers (1 skipped)").click()

    view = answered(page, ask_id)
    await expect(view.locator('[data-question-id="notes"] .free-text')).to_have_text(
        "The staging database is shared;\nbe careful."
    )
    await expect(view.locator('[data-question-id="lang"]')).to_contain_text("Skipped")
    stored = await _agent.get_ask(server, world.human, ask_id)
    assert stored_state(stored) == [
        ("notes", [], "The staging database is shared;\nbe careful.", False),
        ("lang", [], "", False),
    ]


async def test_server_violation_shows_next_to_its_question_and_keeps_everything_typed(
    ui: UI,
) -> None:
    server, world = ui.server, ui.world
    message = await _agent.append(server, world.agent, world.channel_id, _agent.gallery_frame())
    [ask_id] = _agent.ask_ids(message)
    page = await ui.open(world.human)
    form = ask_form(page, ask_id)
    db = form.locator('fieldset[data-question-id="db"]')
    features = form.locator('fieldset[data-question-id="features"]')

    too_long = "Passkeys, then WebAuthn everywhere. " * 300  # > the server's 10,000 characters
    await db.get_by_label("Other").fill("DuckDB")
    await features.get_by_label("Magic links").check()
    await features.get_by_label("Other").fill(too_long)
    await form.get_by_role("button", name="Send answers").click()

    violation = features.get_by_role("alert")
    await expect(violation).to_have_text("custom_text is longer than 10000 characters")
    await expect(db.get_by_role("alert")).to_be_hidden()
    await expect(form.locator(".form-error")).to_have_text(
        "Some answers were not accepted; see the notes next to them."
    )
    await expect(features.get_by_label("Other")).to_have_attribute("aria-invalid", "true")
    # Nothing typed or picked is lost.
    await expect(db.get_by_label("Other")).to_have_value("DuckDB")
    await expect(features.get_by_label("Other")).to_have_value(too_long)
    await expect(features.get_by_label("Magic links")).to_be_checked()
    stored = await _agent.get_ask(server, world.human, ask_id)
    assert not stored.answered_by_account_id
    await ui.screenshots(page, "violation")

    await features.get_by_label("Other").fill("Passkeys")
    await form.get_by_role("button", name="Send answers").click()
    await expect(answered(page, ask_id)).to_be_visible()
    stored = await _agent.get_ask(server, world.human, ask_id)
    assert stored_state(stored) == [
        ("db", [], "DuckDB", False),
        ("features", ["2"], "Passkeys", False),
    ]
