"""Live updates: WatchChannel shows other people's answers and new asks without a reload,
and resumes from the last revision after the connection drops."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from playwright.async_api import expect

from tests.browser import _agent
from tests.browser._proxy import CuttableProxy

if TYPE_CHECKING:
    from playwright.async_api import Request, Route

    from tests.browser.conftest import UI


async def test_new_ask_and_another_participants_answer_appear_live(ui: UI) -> None:
    server, world = ui.server, ui.world
    ada = await ui.open(world.human)
    grace = await ui.open(world.human2)
    for page in (ada, grace):
        await expect(page.get_by_text("No messages yet.")).to_be_visible()
        await page.evaluate("window.__sameDocument = true")  # gone if the page reloads

    message = await _agent.append(server, world.agent, world.channel_id, _agent.gallery_frame())
    [ask_id] = _agent.ask_ids(message)
    ada_form = ada.locator(f'form.ask[data-ask-id="{ask_id}"]')
    grace_form = grace.locator(f'form.ask[data-ask-id="{ask_id}"]')
    await expect(ada_form).to_be_visible()
    await expect(grace_form).to_be_visible()
    await expect(ada.get_by_text("No messages yet.")).to_have_count(0)

    await grace_form.locator('[data-question-id="features"]').get_by_label("Other").fill("SSO")
    await ada_form.get_by_label("MongoDB").check()
    await ada_form.get_by_role("button", name="Send answers").click()

    view = grace.locator(f'section.ask-answered[data-ask-id="{ask_id}"]')
    await expect(view.locator(".answered-by")).to_contain_text("Answered by Ada at")
    await expect(view.locator('[data-question-id="db"] .chosen li')).to_have_text(["MongoDB"])
    await expect(view.locator(".notice")).to_have_text(
        "This ask was answered while you were filling it in; your answers were not sent."
    )
    await expect(grace_form).to_have_count(0)
    await expect(
        ada.locator(f'section.ask-answered[data-ask-id="{ask_id}"] .notice')
    ).to_have_count(0)
    for page in (ada, grace):
        assert await page.evaluate("window.__sameDocument") is True
    stored = await _agent.get_ask(server, world.human2, ask_id)
    assert stored.answered_by_account_id == world.human.account_id


def _watch_after(request: Request) -> str:
    body = request.post_data_buffer or b""
    payload = json.loads(body[5:])  # one Connect envelope: flag byte, 4-byte length, JSON
    return str(payload.get("afterRevision", 0))  # proto3 JSON leaves out a zero


async def test_watch_resumes_after_network_trouble_and_send_errors_keep_the_draft(
    ui: UI,
) -> None:
    server, world = ui.server, ui.world
    message = await _agent.append(server, world.agent, world.channel_id, _agent.gallery_frame())
    [ask_id] = _agent.ask_ids(message)
    async with CuttableProxy(server.url).running() as proxy:
        page = await ui.new_page()
        watches: list[Request] = []
        page.on("request", lambda r: watches.append(r) if r.url.endswith("/WatchChannel") else None)
        await ui.sign_in(page, world.human, url=proxy.url)
        form = page.locator(f'form.ask[data-ask-id="{ask_id}"]')
        features = form.locator('[data-question-id="features"]')
        await form.get_by_label("Postgres").check()
        await features.get_by_label("Other").fill("Keep me")
        send = form.get_by_role("button", name="Send answers")
        status = page.locator("#live-status")

        # 1. The server is unreachable: the live view says so, and sending fails but keeps
        #    everything entered.
        proxy.refusing = True
        proxy.cut()
        await expect(status).to_contain_text("Reconnecting")
        await send.click()
        await expect(form.locator(".form-error")).to_have_text(
            "The server could not take your answers right now. They are kept here; try again."
        )
        await expect(features.get_by_label("Other")).to_have_value("Keep me")
        await expect(form.get_by_label("Postgres")).to_be_checked()

        # 2. The network is back but the watch still cannot reconnect; meanwhile Grace
        #    answered. Sending now loses the race: a form-level error, the draft still there.
        async def refuse(route: Route) -> None:
            await route.abort("connectionrefused")

        await page.route("**/WatchChannel", refuse)
        proxy.refusing = False
        await _agent.rpc(
            server,
            world.human2,
            "CommsService",
            "RespondToAsk",
            {
                "askId": ask_id,
                "answers": [
                    {"questionId": "db", "chosenOptionIds": ["1"]},
                    {"questionId": "features", "customText": "Grace's pick"},
                ],
            },
        )
        await send.click()
        await expect(form.locator(".form-error")).to_have_text(
            "This ask has already been answered, so your answers were not sent."
        )
        await expect(features.get_by_label("Other")).to_have_value("Keep me")

        # 3. The watch reconnects, resuming after the revision it had shown, and the answer
        #    replaces the form.
        await page.unroute("**/WatchChannel", refuse)
        view = page.locator(f'section.ask-answered[data-ask-id="{ask_id}"]')
        await expect(view.locator(".answered-by")).to_contain_text("Answered by Grace at")
        await expect(view.locator('[data-question-id="features"] .free-text')).to_have_text(
            "Grace's pick"
        )
        await expect(view.locator(".notice")).to_contain_text("your answers were not sent")
        await expect(status).to_have_text("Live")
        assert len(watches) >= 2
        assert {_watch_after(r) for r in watches} == {str(message.revision)}
