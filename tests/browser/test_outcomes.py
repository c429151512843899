"""Ask outcomes in the browser (design record, resolved decision 11): a pending ask's deadline
as a live countdown, every closed status read-only with who or what closed it, when and why,
declining only after a warning, and a submit that arrives after the ask closed.

Everything goes through the real server: asks are closed by RespondToAsk / DeclineAsk (a
person), CloseAsk (the asking agent, Connect-JSON with its token) and the server's sweeper.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

from playwright.async_api import expect

from gen.compass.v1 import comms_pb2
from tests.browser import _agent
from tests.browser._proxy import CuttableProxy

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page, Request, Route

    from tests.browser.conftest import UI

# Hebrew ("not now"), markup, and a right-to-left override that must not leak past the reason.
RTL_REASON: Final = "\u05dc\u05d0 \u05e2\u05db\u05e9\u05d9\u05d5 <b>later</b> \u202eevil"
PICK: Final = comms_pb2.ASK_TIMEOUT_POLICY_PICK_RECOMMENDED
FAIL: Final = comms_pb2.ASK_TIMEOUT_POLICY_FAIL


def form_of(page: Page, ask_id: str) -> Locator:
    return page.locator(f'form.ask[data-ask-id="{ask_id}"]')


def closed_of(page: Page, ask_id: str) -> Locator:
    return page.locator(f'section.ask-closed[data-ask-id="{ask_id}"]')


def in_seconds(seconds: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


async def test_deadline_counts_down_live_says_time_is_up_then_shows_the_auto_answer(
    ui: UI,
) -> None:
    server, world = ui.server, ui.world
    soon = await _agent.append(
        server,
        world.agent,
        world.channel_id,
        _agent.two_questions(deadline=in_seconds(7), on_timeout=PICK),
    )
    later = await _agent.append(
        server,
        world.agent,
        world.channel_id,
        _agent.two_questions(deadline=in_seconds(3725), on_timeout=FAIL),
    )
    [soon_id], [later_id] = _agent.ask_ids(soon), _agent.ask_ids(later)
    page = await ui.open(world.human)
    await page.evaluate("window.__sameDocument = true")  # gone if the page reloads
    soon_deadline = form_of(page, soon_id).locator(".ask-deadline")
    later_deadline = form_of(page, later_id).locator(".ask-deadline")

    await expect(later_deadline).to_have_text(
        re.compile(r"^Answer within 1:02:0\d — then the ask expires\.$")
    )
    await expect(soon_deadline).to_have_text(
        re.compile(r"^Answer within 0:0[1-7] — then the agent picks the recommended option\.$")
    )
    # It ticks on its own.
    shown = await soon_deadline.text_content() or ""
    await expect(soon_deadline).not_to_have_text(shown, timeout=3_000)
    await ui.screenshots(page, "countdown")

    # Zero: the page says so without a reload; the form is still there until the outcome.
    await expect(soon_deadline).to_have_text(
        "Time is up — the agent picks the recommended option.", timeout=10_000
    )
    await expect(soon_deadline).to_have_attribute("data-state", "up")
    await expect(form_of(page, soon_id)).to_have_count(1)

    # The runtime's timeout picked the recommended option; the agent reports it (CloseAsk)
    # and the page shows the outcome live.
    await _agent.close_ask(
        server,
        world.agent,
        soon_id,
        "ASK_STATUS_TIMED_OUT",
        answers=[{"questionId": "db", "chosenOptionIds": ["0"]}, {"questionId": "features"}],
    )
    view = closed_of(page, soon_id)
    await expect(view).to_have_attribute("data-status", "ASK_STATUS_TIMED_OUT")
    await expect(view.locator(".outcome-label")).to_have_text("Timed out: auto-answered")
    db = view.locator('[data-question-id="db"]')
    await expect(db.locator(".chosen li")).to_have_text(["Postgres"])
    await expect(db.get_by_role("list", name="Auto-selected")).to_be_visible()
    await expect(view.get_by_text("Timed out", exact=True)).to_have_count(2)
    await expect(view.locator(".closed-by")).to_contain_text(
        "Nobody answered in time: Coding Agent (the agent) picked the answers marked Timed out"
    )
    await expect(view.locator("input, textarea, button")).to_have_count(0)
    await expect(form_of(page, soon_id)).to_have_count(0)
    await expect(form_of(page, later_id)).to_have_count(1)
    assert await page.evaluate("window.__sameDocument") is True
    await ui.screenshots(page, "timed-out")


async def test_ask_expires_at_its_deadline_live_and_keeps_what_was_entered(ui: UI) -> None:
    server, world = ui.server, ui.world
    message = await _agent.append(
        server,
        world.agent,
        world.channel_id,
        _agent.two_questions(deadline=in_seconds(4), on_timeout=FAIL),
    )
    [ask_id] = _agent.ask_ids(message)
    page = await ui.open(world.human)
    form = form_of(page, ask_id)
    await expect(form.locator(".ask-deadline")).to_contain_text("then the ask expires.")
    await form.get_by_label("SQLite").check()

    # The server owns a FAIL deadline: its sweeper expires the ask, the watch shows it.
    view = closed_of(page, ask_id)
    await expect(view).to_have_attribute("data-status", "ASK_STATUS_EXPIRED", timeout=30_000)
    await expect(view.locator(".outcome-label")).to_have_text("Expired")
    await expect(view.locator(".closed-by")).to_contain_text(
        "Nobody answered before the deadline; the server closed it at"
    )
    await expect(view.locator(".closed-by time")).to_have_count(1)
    await expect(view.locator(".answered-question .skipped")).to_have_text(
        ["Not answered", "Not answered"]
    )
    await expect(view.locator(".notice")).to_have_text(
        "This ask expired while you were filling it in; your answers were not sent."
    )
    await expect(view.locator('[data-unsent-question-id="db"] .chosen li')).to_have_text(["SQLite"])
    await expect(form).to_have_count(0)
    stored = await _agent.get_ask(server, world.human, ask_id)
    assert stored.status == comms_pb2.ASK_STATUS_EXPIRED
    assert not stored.closed_by_account_id
    await ui.screenshots(page, "expired")


async def test_every_closed_status_is_read_only_with_outcome_who_when_and_reason(
    ui: UI,
) -> None:
    server, world = ui.server, ui.world
    asks: dict[str, str] = {}
    for name in ("answered", "declined", "withdrawn", "timed_out"):
        message = await _agent.append(server, world.agent, world.channel_id, _agent.two_questions())
        [asks[name]] = _agent.ask_ids(message)
    await _agent.rpc(
        server,
        world.human2,
        "CommsService",
        "RespondToAsk",
        {
            "askId": asks["answered"],
            "answers": [
                {"questionId": "db", "chosenOptionIds": ["1"]},
                {"questionId": "features", "customText": "Passkeys"},
            ],
        },
    )
    await _agent.rpc(
        server,
        world.human2,
        "CommsService",
        "DeclineAsk",
        {"askId": asks["declined"], "reason": RTL_REASON},
    )
    await _agent.close_ask(
        server, world.agent, asks["withdrawn"], "ASK_STATUS_WITHDRAWN", reason="tool call aborted"
    )
    await _agent.close_ask(
        server,
        world.agent,
        asks["timed_out"],
        "ASK_STATUS_TIMED_OUT",
        answers=[
            {"questionId": "db", "chosenOptionIds": ["0"]},
            {"questionId": "features", "chosenOptionIds": ["0", "1"]},
        ],
    )
    page = await ui.open(world.human)

    expected = {
        "answered": ("ASK_STATUS_ANSWERED", "Answered", "Answered by Grace at"),
        "declined": ("ASK_STATUS_DECLINED", "Declined", "Declined by Grace at"),
        "withdrawn": (
            "ASK_STATUS_WITHDRAWN",
            "Withdrawn by the agent",
            "Withdrawn by Coding Agent (the agent) at",
        ),
        "timed_out": (
            "ASK_STATUS_TIMED_OUT",
            "Timed out: auto-answered",
            "Nobody answered in time: Coding Agent (the agent) picked",
        ),
    }
    await expect(page.locator("form.ask")).to_have_count(0)
    for name, (status, label, by) in expected.items():
        view = closed_of(page, asks[name])
        await expect(view).to_have_attribute("data-status", status)
        await expect(view.locator(".outcome-label")).to_have_text(label)
        who = view.locator(".answered-by, .closed-by")
        await expect(who).to_contain_text(by)
        await expect(who.locator("time")).to_have_count(1)
        await expect(view.locator("input, textarea, button")).to_have_count(0)

    answered = closed_of(page, asks["answered"])
    await expect(answered.locator('[data-question-id="db"] .chosen li')).to_have_text(["SQLite"])
    await expect(answered.locator(".free-text")).to_have_text("Passkeys")
    await expect(answered.get_by_text("Timed out", exact=True)).to_have_count(0)
    await expect(answered.locator(".close-reason")).to_have_count(0)

    declined = closed_of(page, asks["declined"])
    await expect(declined.locator(".skipped")).to_have_text(["Not answered", "Not answered"])
    reason = declined.locator(".close-reason-text")
    assert await reason.evaluate("n => n.textContent") == RTL_REASON
    assert await reason.evaluate("n => n.tagName") == "BDI"
    assert await reason.evaluate("n => getComputedStyle(n).unicodeBidi") == "isolate"
    made = await page.locator("#messages").evaluate("m => m.querySelectorAll('b').length")
    assert made == 0  # the reason's markup stayed text

    withdrawn = closed_of(page, asks["withdrawn"])
    await expect(withdrawn.locator(".close-reason")).to_have_text("Reason: tool call aborted")

    timed_out = closed_of(page, asks["timed_out"])
    await expect(timed_out.locator('[data-question-id="features"] .chosen li')).to_have_text(
        ["Email", "OAuth"]
    )
    await expect(timed_out.get_by_role("list", name="Auto-selected")).to_have_count(2)
    await expect(timed_out.get_by_text("Timed out", exact=True)).to_have_count(2)
    await ui.screenshots(page, "closed")


async def test_decline_warns_first_then_declines_with_a_reason(ui: UI) -> None:
    server, world = ui.server, ui.world
    message = await _agent.append(server, world.agent, world.channel_id, _agent.two_questions())
    [ask_id] = _agent.ask_ids(message)
    page = await ui.open(world.human)
    form = form_of(page, ask_id)
    sent: list[Request] = []
    page.on("request", lambda r: sent.append(r) if r.url.endswith("/DeclineAsk") else None)
    await form.get_by_label("SQLite").check()
    open_button = form.get_by_role("button", name="Decline…")
    panel = form.get_by_role("group", name="Decline this ask?")

    # First the warning: what declining does, and that what was entered is not sent.
    await expect(panel).to_be_hidden()
    await open_button.click()
    await expect(panel).to_be_visible()
    await expect(panel.locator(".decline-warning")).to_have_text(
        "Decline this ask? The agent will be told you declined; its run stops."
        " What you entered above is not sent."
    )
    await expect(panel.get_by_label("Reason (optional)")).to_be_focused()
    await ui.screenshots(page, "decline-warning")
    # Backing out sends nothing and keeps the form as it was (by button, and by Escape).
    await panel.get_by_role("button", name="Keep answering").click()
    await expect(panel).to_be_hidden()
    await expect(open_button).to_be_focused()
    await open_button.click()
    await page.keyboard.press("Escape")
    await expect(panel).to_be_hidden()
    await expect(form.get_by_label("SQLite")).to_be_checked()
    assert sent == []

    await open_button.click()
    await panel.get_by_label("Reason (optional)").fill("  Out of scope this sprint ")
    await panel.get_by_role("button", name="Decline ask").click()

    view = closed_of(page, ask_id)
    await expect(view).to_have_attribute("data-status", "ASK_STATUS_DECLINED")
    await expect(view.locator(".closed-by")).to_contain_text("Declined by Ada at")
    await expect(view.locator(".close-reason-text")).to_have_text("Out of scope this sprint")
    # Declined here, by this person: no "not sent" note, no unsent draft.
    await expect(view.locator(".notice, .unsent")).to_have_count(0)
    await expect(form).to_have_count(0)
    assert len(sent) == 1
    assert _agent.sent(sent[0], comms_pb2.DeclineAskRequest()) == comms_pb2.DeclineAskRequest(
        ask_id=ask_id, reason="Out of scope this sprint"
    )
    stored = await _agent.get_ask(server, world.human, ask_id)
    assert stored.status == comms_pb2.ASK_STATUS_DECLINED
    assert stored.closed_by_account_id == world.human.account_id
    assert stored.close_reason == "Out of scope this sprint"
    await ui.screenshots(page, "declined")


async def test_late_submit_shows_the_outcome_next_to_the_form_and_keeps_the_draft(
    ui: UI,
) -> None:
    server, world = ui.server, ui.world
    message = await _agent.append(server, world.agent, world.channel_id, _agent.two_questions())
    [ask_id] = _agent.ask_ids(message)
    async with CuttableProxy(server.url).running() as proxy:
        page = await ui.new_page()
        await ui.sign_in(page, world.human, url=proxy.url)
        form = form_of(page, ask_id)
        features = form.locator('[data-question-id="features"]')
        await form.get_by_label("Postgres").check()
        await features.get_by_label("Other").fill("Keep me")

        # The page loses its watch and cannot get it back, while Grace declines the ask.
        async def refuse(route: Route) -> None:
            await route.abort("connectionrefused")

        await page.route("**/WatchChannel", refuse)
        proxy.refusing = True
        proxy.cut()
        await expect(page.locator("#live-status")).to_contain_text("Reconnecting")
        proxy.refusing = False
        await _agent.rpc(
            server,
            world.human2,
            "CommsService",
            "DeclineAsk",
            {"askId": ask_id, "reason": "Not needed"},
        )

        # Sending now is too late: the outcome shows by the form, nothing entered is lost.
        send = form.get_by_role("button", name="Send answers")
        await send.click()
        await expect(form.locator(".form-error")).to_have_text(
            "This ask was declined by Grace, so your answers were not sent."
        )
        await expect(form.get_by_label("Postgres")).to_be_checked()
        await expect(features.get_by_label("Other")).to_have_value("Keep me")
        await expect(send).to_be_disabled()
        await expect(form.get_by_role("button", name="Decline…")).to_be_disabled()
        await ui.screenshots(page, "late-submit")

        # The watch comes back: the closed view replaces the form, the draft still in view.
        await page.unroute("**/WatchChannel", refuse)
        view = closed_of(page, ask_id)
        await expect(view.locator(".closed-by")).to_contain_text(
            "Declined by Grace at", timeout=20_000
        )
        await expect(view.locator(".close-reason-text")).to_have_text("Not needed")
        await expect(view.locator(".notice")).to_have_text(
            "This ask was declined while you were filling it in; your answers were not sent."
        )
        unsent = view.get_by_role("group", name="Your answers, not sent")
        await expect(unsent.locator('[data-unsent-question-id="db"] .chosen li')).to_have_text(
            ["Postgres"]
        )
        await expect(
            unsent.locator('[data-unsent-question-id="features"] .free-text')
        ).to_have_text("Keep me")
        await expect(form).to_have_count(0)
        await ui.screenshots(page, "late-submit-closed")
    stored = await _agent.get_ask(server, world.human, ask_id)
    assert stored.status == comms_pb2.ASK_STATUS_DECLINED
    assert [list(q.chosen_option_ids) for q in stored.questions] == [[], []]


async def test_withdrawal_rerenders_live_and_keeps_what_was_being_typed(ui: UI) -> None:
    server, world = ui.server, ui.world
    message = await _agent.append(server, world.agent, world.channel_id, _agent.two_questions())
    [ask_id] = _agent.ask_ids(message)
    page = await ui.open(world.human)
    await page.evaluate("window.__sameDocument = true")
    form = form_of(page, ask_id)
    await (
        form.locator('[data-question-id="features"]')
        .get_by_label("Other")
        .fill("half-written thought")
    )

    await _agent.close_ask(
        server, world.agent, ask_id, "ASK_STATUS_WITHDRAWN", reason="tool call aborted"
    )
    view = closed_of(page, ask_id)
    await expect(view.locator(".outcome-label")).to_have_text("Withdrawn by the agent")
    await expect(view.locator(".notice")).to_have_text(
        "The agent withdrew this ask while you were filling it in; your answers were not sent."
    )
    await expect(view.locator('[data-unsent-question-id="features"] .free-text')).to_have_text(
        "half-written thought"
    )
    await expect(view.locator(".close-reason-text")).to_have_text("tool call aborted")
    await expect(form).to_have_count(0)
    assert await page.evaluate("window.__sameDocument") is True
    await ui.screenshots(page, "withdrawn")
