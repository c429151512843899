"""Web Push in real Chromium (docs/answering/push.md): the installable app, the service
worker's notifications, the answer a notification's button sends, and the Devices panel.

Chromium's PushManager.subscribe() needs Google's push service (FCM), which is not reachable
here, so the browser's subscription is stood in for: the device is registered with the real
AddPushSubscription, pointing at the loopback push service of tests/e2e/_push_service.py; the
server pushes to it (encrypted, signed: checked there) and the test hands the decrypted push
to the page's real service worker with CDP `ServiceWorker.deliverPushMessage`, as the browser
does with what its push service delivers. A click on a notification has no CDP command: the
test dispatches a `NotificationEvent` for the real notification in the worker (its
`waitUntil` replaced, since a script's event is not trusted), which runs the worker's own
click handler.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final

import httpx
import pytest
from playwright.async_api import async_playwright, expect

from compass_server.store.postgres import PostgresStore
from tests import _server
from tests._wait import eventually
from tests.browser import _agent
from tests.browser.conftest import CHROMIUM_ARGS, chromium_path
from tests.browser.test_bidi import RLO, assert_isolated
from tests.e2e import _push_service
from tests.e2e._connect import call

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Generator
    from pathlib import Path

    from playwright.async_api import BrowserContext, CDPSession, Page, Worker

    from tests.browser.conftest import UI
    from tests.e2e._push_service import PushService

PUSH_ENV: Final = {
    "COMPASS_WEBHOOK_POLL_SECONDS": "0.1",
    "COMPASS_PUSH_ALLOW_HOSTS": "127.0.0.1",
    "COMPASS_VAPID_SUBJECT": "mailto:ops@compass.test",
}
NOTIFICATIONS_JS: Final = """async () => {
  const registration = await navigator.serviceWorker.ready;
  return (await registration.getNotifications()).map((n) => ({
    title: n.title, tag: n.tag, body: n.body, data: n.data,
    actions: n.actions.map((a) => ({action: a.action, title: a.title})),
  }));
}"""
CLICK_JS: Final = """async ({tag, action}) => {
  const [notification] = await self.registration.getNotifications({tag});
  if (!notification) throw new Error(`no notification ${tag}`);
  const event = new NotificationEvent("notificationclick", {notification, action});
  let done = Promise.resolve();
  Object.defineProperty(event, "waitUntil", {value: (promise) => { done = promise; }});
  self.dispatchEvent(event);
  await done;
}"""


@pytest.fixture
def compass_server(database_url: str) -> Generator[_server.RunningServer]:
    """This module's server pushes every 0.1 s, to a push service on loopback."""
    with _server.serve(database_url, env=PUSH_ENV) as server:
        yield server


@pytest.fixture
async def pushes(ui: UI) -> AsyncGenerator[PushService]:
    async with (
        httpx.AsyncClient(base_url=ui.server.url, timeout=30) as http,
        _push_service.serving() as service,
    ):
        await service.learn_key(http, ui.world.human.token)
        yield service


async def _device(ui: UI, pushes: PushService, name: str = "Test phone") -> str:
    """Ada's device on the stand-in (what the page would register after subscribe())."""
    async with httpx.AsyncClient(base_url=ui.server.url, timeout=30) as http:
        _, endpoint, _ = await pushes.add_device(http, ui.world.human.token, name=name)
    return endpoint


class Worker_:  # noqa: N801 - a small harness around Playwright's Worker
    """The page's service worker: CDP's push delivery and clicks on its notifications."""

    def __init__(self, page: Page, cdp: CDPSession, worker: Worker, registration: str) -> None:
        self.page, self.cdp, self.worker, self.registration = page, cdp, worker, registration

    async def push(self, payload: dict[str, object]) -> None:
        origin = self.page.url.split("#", 1)[0].rstrip("/")
        await self.cdp.send(
            "ServiceWorker.deliverPushMessage",
            {"origin": origin, "registrationId": self.registration, "data": json.dumps(payload)},
        )

    async def notifications(self) -> list[dict[str, object]]:
        shown: list[dict[str, object]] = await self.page.evaluate(NOTIFICATIONS_JS)
        return shown

    async def click(self, tag: str, action: str = "") -> None:
        await self.worker.evaluate(CLICK_JS, {"tag": tag, "action": action})


async def _controlled(page: Page) -> None:
    """Wait until the service worker controls the page (page.wait_for_function would eval a
    string, which the page's CSP forbids; page.evaluate goes through CDP)."""

    async def controlled() -> bool:
        return bool(await page.evaluate("() => navigator.serviceWorker.controller !== null"))

    await eventually(controlled, "the service worker controlling the page", within=15, every=0.1)


async def _worker(page: Page, context: BrowserContext) -> Worker_:
    """The page's service worker, active and controlling the page, with its registration id."""
    cdp = await context.new_cdp_session(page)
    registrations: list[str] = []
    cdp.on(
        "ServiceWorker.workerRegistrationUpdated",
        lambda event: registrations.extend(
            r["registrationId"] for r in event["registrations"] if not r.get("isDeleted")
        ),
    )
    await cdp.send("ServiceWorker.enable")
    await _controlled(page)
    await eventually(lambda: registrations, "the service worker's registration", within=10)
    (worker,) = context.service_workers
    return Worker_(page, cdp, worker, registrations[-1])


async def _signed_in(ui: UI) -> tuple[Page, Worker_]:
    page = await ui.new_page()
    await page.context.grant_permissions(["notifications"])
    await ui.sign_in(page, ui.world.human)
    return page, await _worker(page, page.context)


async def test_the_app_is_installable(ui: UI, tmp_path: Path) -> None:
    """Chromium's own installability check says nothing is missing. It needs a profile on
    disk: a browser context of Playwright's is off the record ("in-incognito")."""
    async with async_playwright() as playwright:
        context = await playwright.chromium.launch_persistent_context(
            tmp_path / "profile", executable_path=chromium_path(), args=CHROMIUM_ARGS
        )
        try:
            page = await context.new_page()
            await page.goto(ui.server.url)
            cdp = await context.new_cdp_session(page)
            manifest = await page.request.get(f"{ui.server.url}manifest.webmanifest")
            assert manifest.headers["content-type"].startswith("application/manifest+json")
            doc = await manifest.json()
            assert (doc["name"], doc["display"], doc["start_url"]) == (
                "Compass",
                "standalone",
                "./",
            )
            assert {i["sizes"] for i in doc["icons"]} == {"192x192", "512x512"}
            for size in (192, 512):
                icon = await page.request.get(f"{ui.server.url}icons/icon-{size}.png")
                assert icon.headers["content-type"] == "image/png"
                body = await icon.body()
                assert body[:8] == b"\x89PNG\r\n\x1a\n"
                assert int.from_bytes(body[16:20], "big") == size  # IHDR width
            await _controlled(page)
            seen: list[object] = []

            async def installable() -> bool:
                errors = await cdp.send("Page.getInstallabilityErrors")
                seen.append(errors["installabilityErrors"])
                return errors["installabilityErrors"] == []

            await eventually(
                installable, f"no installability errors ({seen[-1:]})", within=15, every=0.5
            )
        finally:
            await context.close()


async def test_a_pushed_ask_is_a_notification_whose_button_answers_it(
    ui: UI, pushes: PushService
) -> None:
    world = ui.world
    endpoint = await _device(ui, pushes)
    page, worker = await _signed_in(ui)
    frame = _agent.ask_frame(_agent.question("db", "Which database?", "Postgres", "SQLite"))
    [ask_id] = _agent.ask_ids(await _agent.append(ui.server, world.agent, world.channel_id, frame))
    await pushes.wait_for(lambda: len(pushes.of(endpoint)) == 1, "the push")
    pushed = pushes.of(endpoint)[0].payload
    await worker.push(pushed)

    async def shown() -> bool:
        return bool(await worker.notifications())

    await eventually(shown, "the notification")
    (notice,) = await worker.notifications()
    assert notice["title"] == f"{world.agent.name} asks in #general"
    assert notice["tag"] == ask_id
    assert notice["body"] == "Which database?"
    assert notice["actions"] == [
        {"action": "0", "title": "Postgres"},
        {"action": "1", "title": "SQLite"},
    ]
    assert notice["data"] == {
        "ask_id": ask_id,
        "url": f"{ui.server.url}#/ask/{ask_id}",
        "answer_url": f"{ui.server.url}push/answer",
        "answer_token": pushed["answer_token"],
    }

    await worker.click(ask_id, "1")  # the "SQLite" button
    assert await worker.notifications() == []
    async with (
        PostgresStore(ui.server.dsn, pool_min=1, pool_max=1) as store,
        store.connection() as conn,
    ):
        row = await conn.fetchrow(
            "SELECT status, answered_by_account_id, answers::text FROM asks WHERE ask_id = $1",
            ask_id,
        )
        spent = await conn.fetchval(
            "SELECT used_at IS NOT NULL FROM push_answer_tokens WHERE ask_id = $1", ask_id
        )
    assert row is not None
    assert (row["status"], row["answered_by_account_id"]) == ("answered", world.human.account_id)
    assert '"1"' in row["answers"]
    assert spent is True
    # The page shows the answer (it watches the channel).
    await expect(
        page.locator(f'[data-ask-id="{ask_id}"][data-status="ASK_STATUS_ANSWERED"]')
    ).to_be_visible(timeout=15_000)

    # A second tap (the same notice delivered again) fails closed: nothing is written, the
    # ask opens instead so its person sees it was answered.
    await page.goto(f"{ui.server.url}#/channel/{world.channel_id}")
    await worker.push(pushed)
    await eventually(shown, "the notice again")
    await worker.click(ask_id, "0")
    await expect(page).to_have_url(f"{ui.server.url}#/ask/{ask_id}", timeout=10_000)
    async with PostgresStore(ui.server.dsn, pool_min=1, pool_max=1) as store:
        asked = await store.get_ask(await store.get_account(world.human.account_id), ask_id)
    assert list(asked.ask.questions[0].chosen_option_ids) == ["1"]

    # The ask's end reaches every device: "ask_closed" closes its notice.
    await pushes.wait_for(lambda: len(pushes.of(endpoint)) == 2, "the closing push")
    closing = pushes.of(endpoint)[1].payload
    assert (closing["type"], closing["tag"], closing["by"]) == ("ask_closed", ask_id, "Ada")
    await worker.push(pushed)
    await eventually(shown, "the notice once more")
    await worker.push(closing)

    async def closed() -> bool:
        return await worker.notifications() == []

    await eventually(closed, "the notice closed by ask_closed")


async def test_a_plain_click_opens_the_ask(ui: UI, pushes: PushService) -> None:
    world = ui.world
    endpoint = await _device(ui, pushes)
    page, worker = await _signed_in(ui)
    frame = _agent.ask_frame(
        _agent.question("db", "Which database?", "A", "B"),
        _agent.question("cache", "Which cache?", "C", "D"),
    )
    [ask_id] = _agent.ask_ids(await _agent.append(ui.server, world.agent, world.channel_id, frame))
    await pushes.wait_for(lambda: len(pushes.of(endpoint)) == 1, "the push")
    await worker.push(pushes.of(endpoint)[0].payload)

    async def shown() -> bool:
        return bool(await worker.notifications())

    await eventually(shown, "the notification")
    (notice,) = await worker.notifications()
    assert notice["actions"] == []  # two questions: the form must be opened
    assert notice["body"] == "Which database? (+1 more)"
    await worker.click(ask_id)
    await expect(page).to_have_url(f"{ui.server.url}#/ask/{ask_id}", timeout=10_000)
    await expect(page.locator(f'form[data-ask-id="{ask_id}"]')).to_be_visible()  # the form


async def test_offline_the_page_says_so_instead_of_the_browsers_error(ui: UI) -> None:
    page = await ui.open(ui.world.human)
    await _controlled(page)
    await page.context.set_offline(True)
    await expect(page.locator("#offline-banner")).to_be_visible()
    await expect(page.locator("#offline-banner")).to_contain_text("You are offline")
    await page.reload()
    await expect(page.get_by_role("heading", name="You are offline")).to_be_visible()
    await page.context.set_offline(False)
    await page.get_by_role("link", name="try again").click()
    await expect(page.get_by_role("heading", name="# general")).to_be_visible()


async def test_the_devices_list_shows_each_device_and_removes_one(
    ui: UI, pushes: PushService
) -> None:
    phone = f"{RLO}Ada's phone"
    await _device(ui, pushes, phone)
    await _device(ui, pushes, "Laptop")
    page, _ = await _signed_in(ui)
    devices = page.locator("#devices-list li")
    await expect(devices).to_have_count(2)
    await expect(devices.nth(0)).to_contain_text("Not notified yet")
    await assert_isolated(page, {"phone": phone})
    await expect(page.locator("#push-enable")).to_have_text("Notify me on this device")
    await ui.screenshots(page, "devices")
    await devices.nth(1).get_by_role("button", name="Remove").click()
    await expect(devices).to_have_count(1)
    async with httpx.AsyncClient(base_url=ui.server.url, timeout=30) as http:
        listed = await call(http, "ListPushSubscriptions", {}, ui.world.human.token)
    assert [d["deviceName"] for d in listed.body["subscriptions"]] == [phone]  # pyright: ignore[reportGeneralTypeIssues, reportIndexIssue, reportUnknownVariableType]


async def test_where_push_cannot_work_the_page_says_why(ui: UI) -> None:
    # Blocked in the browser's settings.
    page = await ui.new_page()
    cdp = await page.context.new_cdp_session(page)
    target = await cdp.send("Target.getTargetInfo")
    await cdp.send(
        "Browser.setPermission",
        {
            "permission": {"name": "notifications"},
            "setting": "denied",
            "origin": ui.server.url.rstrip("/"),
            "browserContextId": target["targetInfo"]["browserContextId"],
        },
    )
    await ui.sign_in(page, ui.world.human)
    await expect(page.locator("#push-note")).to_contain_text("Notifications are blocked")
    await expect(page.locator("#push-enable")).to_be_hidden()
    # An iPhone's Safari outside the Home Screen has no PushManager.
    ios = await ui.new_page()
    await ios.add_init_script(
        """Object.defineProperty(navigator, "userAgent", {get: () =>
             "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
             + "(KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"});
           delete window.PushManager;"""
    )
    await ui.sign_in(ios, ui.world.human)
    await expect(ios.locator("#push-note")).to_contain_text("Add to Home Screen")
    # A browser without service workers.
    bare = await ui.new_page()
    await bare.add_init_script("delete Navigator.prototype.serviceWorker;")
    await ui.sign_in(bare, ui.world.human)
    await expect(bare.locator("#push-note")).to_contain_text("cannot show notifications")
