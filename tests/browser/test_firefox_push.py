"""A real `PushManager.subscribe()`, end to end, in Debian's Firefox ESR (headless): the page's
own "Notify me on this device" subscribes through Firefox's push client to a loopback
stand-in of Mozilla's push service (autopush protocol over a WebSocket: tests/browser/
_firefox.py) and registers the subscription with Compass; an agent's ask is then pushed by
Compass to the endpoint Firefox was given, encrypted to the keys Firefox made and signed
with the key Firefox subscribed with (the stand-in checks the JWT against it), forwarded to
Firefox, decrypted by Firefox and shown by Compass's service worker as a notification.

Nothing here is a double of the browser: the subscription, its keys, the decryption and the
service worker are Firefox's. Only Mozilla's cloud is stood in for. (Chromium's push client
needs Google's FCM: tests/browser/test_push.py drives Chromium's side through CDP.)
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

import httpx
import pytest

from tests import _server
from tests._wait import eventually
from tests.browser._firefox import Marionette, autopush, firefox, firefox_path
from tests.e2e._asks import ask_block, ask_ids, post, question
from tests.e2e._connect import call

if TYPE_CHECKING:
    from collections.abc import Generator
    from pathlib import Path

PUSH_ENV = {
    "COMPASS_WEBHOOK_POLL_SECONDS": "0.1",
    "COMPASS_PUSH_ALLOW_HOSTS": "127.0.0.1",
    "COMPASS_VAPID_SUBJECT": "mailto:ops@compass.test",
}
NOTIFICATIONS_JS = """return navigator.serviceWorker.ready
  .then((r) => r.getNotifications())
  .then((shown) => shown.map((n) => ({title: n.title, tag: n.tag, body: n.body,
                                      actions: n.actions.map((a) => a.action)})));"""


@pytest.fixture
def compass_server(database_url: str) -> Generator[_server.RunningServer]:
    with _server.serve(database_url, env=PUSH_ENV) as server:
        yield server


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_firefox_subscribes_for_real_and_shows_a_pushed_ask(
    compass_server: _server.RunningServer, seeded: _server.SeededWorld, tmp_path: Path
) -> None:
    if not firefox_path():
        pytest.fail("no firefox-esr: run scripts/ensure-firefox (Debian's package)")
    world = seeded
    port = _free_port()
    async with autopush() as service:
        with firefox(tmp_path / "profile", service.url.replace("http://", "ws://"), port):
            browser = await Marionette.connect(port)
            try:
                await browser.send("WebDriver:NewSession", {"capabilities": {}})
                await browser.send("WebDriver:Navigate", {"url": compass_server.url})
                token_input = await browser.element("#token-input")
                await browser.send(
                    "WebDriver:ElementSendKeys", {"id": token_input, "text": world.human.token}
                )
                await browser.send(
                    "WebDriver:ElementClick", {"id": await browser.element("#signin-submit")}
                )

                async def offered() -> bool:
                    return (
                        await browser.script(
                            "return !document.querySelector('#push-enable').hidden"
                        )
                        is True
                    )

                await eventually(offered, "the Notify me button", within=30, every=0.2)
                await browser.send(
                    "WebDriver:ElementClick", {"id": await browser.element("#push-enable")}
                )

                async def listed() -> bool:
                    count = await browser.script(
                        "return document.querySelectorAll('#devices-list li').length"
                    )
                    return count == 1

                await eventually(listed, "this device in the Devices list", within=30, every=0.2)
                note = await browser.script(
                    "return document.querySelector('#push-note').textContent"
                )
                assert note == "This device is notified of new asks, even with Compass closed."
                (channel,) = service.channels  # Firefox registered with the push service
                async with httpx.AsyncClient(base_url=compass_server.url, timeout=30) as http:
                    config = await call(http, "GetPushConfig", {}, world.human.token)
                    assert service.channels[channel] == config.body["vapidPublicKey"]
                    devices = await call(http, "ListPushSubscriptions", {}, world.human.token)
                    (device,) = devices.body["subscriptions"]  # pyright: ignore[reportGeneralTypeIssues]
                    assert device["deviceName"] == "Firefox on Linux"  # pyright: ignore[reportIndexIssue, reportCallIssue, reportArgumentType]
                    block = ask_block(question("db", "0", "1"))
                    (ask_id,) = ask_ids(
                        await post(http, world.agent.token, world.channel_id, block)
                    )

                await eventually(lambda: service.acks, "Firefox's ack of the push", within=30)
                assert service.rejected == []
                assert [a["code"] for a in service.acks] == [100]  # decrypted and delivered

                async def shown() -> bool:
                    return bool(await browser.script(NOTIFICATIONS_JS))

                await eventually(shown, "the notification", within=15, every=0.2)
                notices = await browser.script(NOTIFICATIONS_JS)
                assert notices == [
                    {
                        "title": "Coding Agent asks in #general",
                        "tag": ask_id,
                        "body": "What about db?",
                        "actions": ["0", "1"],
                    }
                ]
            finally:
                await browser.close()
