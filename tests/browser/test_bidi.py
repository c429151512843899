"""Bidi controls in untrusted text stay inside their element (issue 12 F6, issue 33 H8): a
U+202E (right-to-left override) or an unmatched U+2066 (left-to-right isolate) in anything an
agent, another person or an address wrote must not reorder what follows it on the page.

The rule (ui/src/dom.js `untrusted`, app.css `.untrusted`): every such string is the whole
text of its own element, of class "untrusted", which is bidi-isolated. These tests plant a
marked string in every kind of untrusted text the page shows (labels, descriptions, headers,
previews, question and message text, free text, names, receipts' detail and payload, close
reasons, channel names, the address) across the ask form, closed asks, an unsent draft, the
inbox, the channel list and the sign-in dialogs, then walk every text node of the page: each
planted string must be found, and each text node holding a bidi control must be exactly one
planted string in an isolated ".untrusted" element. (Before, the test checked a fixed list of
selectors, the same list as the stylesheet's, so text outside that list went unseen: the
receipt's payload and the skip notice's question names were not isolated.)
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Final
from urllib.parse import quote

import pytest
from playwright.async_api import expect

from compass_server.store import AccountKind
from compass_server.store.postgres import PostgresStore
from gen.compass.v1 import comms_pb2
from tests._server import Account
from tests.browser import _agent
from tests.browser._proxy import CuttableProxy
from tests.browser.conftest import DESKTOP, PHONE

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page, Route, ViewportSize

    from tests.browser.conftest import UI

RLO: Final = "\u202e"  # right-to-left override
LRI: Final = "\u2066"  # left-to-right isolate (left unmatched here)

# Every text node holding a bidi control: its text, its element and that element's bidi.
TEXT_NODES_JS: Final = """() => {
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const found = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!/[\\u202a-\\u202e\\u2066-\\u2069]/.test(node.data)) continue;
    const element = node.parentElement;
    found.push({
      text: node.data,
      element: `${element.tagName.toLowerCase()}.${[...element.classList].join(".")}`,
      untrusted: element.classList.contains("untrusted"),
      bidi: getComputedStyle(element).unicodeBidi,
    });
  }
  const marked = [...document.querySelectorAll(".untrusted")].map((element) => ({
    element: `${element.tagName.toLowerCase()}.${[...element.classList].join(".")}`,
    bidi: getComputedStyle(element).unicodeBidi,
  }));
  return { found, marked };
}"""


def planted(*names: str) -> dict[str, str]:
    """One marked string per name: a bidi control, then the name (every other one starts
    with an unmatched U+2066 instead of U+202E)."""
    return {name: f"{LRI if index % 2 else RLO}{name}" for index, name in enumerate(names)}


async def assert_isolated(
    page: Page, strings: dict[str, str], *, present: tuple[str, ...] = ()
) -> None:
    """Every planted string (or those named in `present`) is on the page, each the whole text
    of an isolated `.untrusted` element; no other text holds a bidi control; every
    `.untrusted` element is isolated."""
    result = await page.evaluate(TEXT_NODES_JS)
    found: list[dict[str, object]] = result["found"]
    marked: list[dict[str, object]] = result["marked"]
    texts = {str(node["text"]) for node in found}
    wanted = present or tuple(strings)
    problems = {
        # A planted string not found whole in a text node: not shown, or run together with
        # the page's own words.
        "planted text not on the page alone": sorted(
            name for name in wanted if strings[name] not in texts
        ),
        "untrusted text whose element has unicode-bidi != isolate": [
            node for node in found if node["bidi"] != "isolate"
        ],
        "untrusted text in an element without the .untrusted class": [
            node for node in found if not node["untrusted"]
        ],
        "untrusted text mixed with the page's own words in one element": [
            node for node in found if node["text"] not in strings.values()
        ],
        ".untrusted elements with unicode-bidi != isolate": [
            element for element in marked if element["bidi"] != "isolate"
        ],
    }
    assert not any(problems.values()), "\n".join(
        f"{what}: {len(items)}: {items}" for what, items in problems.items() if items
    )
    assert marked, "no .untrusted element on the page"


async def _left(locator: Locator) -> float:
    box = await locator.bounding_box()
    assert box is not None
    return box["x"]


async def _reads_after(first: Locator, then: Locator) -> bool:
    """Whether `then` starts after `first` ends in left-to-right reading: to its right on the
    same line, or on a line below (a narrow screen wraps; an inline box can span lines)."""
    end = await first.evaluate(
        "n => { const r = [...n.getClientRects()].at(-1); return [r.right, r.bottom]; }"
    )
    start = await then.evaluate("n => { const r = n.getClientRects()[0]; return [r.left, r.top]; }")
    if start[1] >= end[1]:
        return True
    return start[0] >= end[0]


async def _account(ui: UI, kind: AccountKind, name: str, *channels: str) -> Account:
    async with PostgresStore(ui.server.dsn, pool_min=1, pool_max=1) as store:
        row, token = await store.create_account(kind, name)
        for channel_id in channels:
            await store.add_participant(channel_id, row.account_id)
    return Account(account_id=row.account_id, name=row.name, token=token)


async def _channel(ui: UI, name: str) -> str:
    async with PostgresStore(ui.server.dsn, pool_min=1, pool_max=1) as store:
        channel = await store.create_channel(ui.world.workspace_id, name)
    return channel.channel_id


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280", "390"])
async def test_untrusted_text_cannot_escape_its_element_anywhere_on_the_page(
    ui: UI, size: ViewportSize
) -> None:
    server, world = ui.server, ui.world
    s = planted(
        "agent",
        "person",
        "channel",
        "text",
        "header",
        "question",
        "label",
        "description",
        "preview",
        "question2",
        "inbox-question",
        "answered-question",
        "chosen",
        "free-text",
        "detail",
        "payload",
        "declined-question",
        "decline-reason",
        "not-delivered",
        "withdrawn-question",
        "withdraw-reason",
    )
    general = world.channel_id
    other = await _channel(ui, s["channel"])
    agent = await _account(ui, AccountKind.AGENT, s["agent"], general, other)
    person = await _account(ui, AccountKind.HUMAN, s["person"], general, other)

    # The pending ask, in general (waiting longest, so general opens first).
    pending = _agent.ask_frame(
        _agent.question(
            "q",
            s["question"],
            s["label"],
            "Second",
            header=s["header"],
            recommended=0,
            descriptions={0: s["description"]},
            previews={0: s["preview"]},
        ),
        _agent.question("q2", s["question2"], "Yes", "No"),
        text=s["text"],
    )
    [pending_id] = _agent.ask_ids(await _agent.append(server, agent, general, pending))
    # In the other channel: an ask for the inbox (with the channel's name).
    inbox = _agent.ask_frame(_agent.question("i", s["inbox-question"], "A", "B"))
    await _agent.append(server, agent, other, inbox)

    # Closed asks: answered (with a receipt and its payload), declined (not delivered),
    # withdrawn; each with a reason where it takes one.
    def one(question: str) -> comms_pb2.MessageUpdated:
        return _agent.ask_frame(_agent.question("c", s[question], s["chosen"], "Other one"))

    [answered] = _agent.ask_ids(
        await _agent.append(server, agent, general, one("answered-question"))
    )
    await _agent.rpc(
        server,
        person,
        "CommsService",
        "RespondToAsk",
        {"askId": answered, "answers": [{"questionId": "c", "chosenOptionIds": ["0"]}]},
    )
    await _agent.report_delivery(
        server,
        agent,
        answered,
        "DELIVERY_STATE_DELIVERED",
        detail=s["detail"],
        payload=s["payload"],
    )
    free = _agent.ask_frame(_agent.question("f", "Say it", free_text=comms_pb2.FREE_TEXT_ACCEPTED))
    [free_id] = _agent.ask_ids(await _agent.append(server, agent, general, free))
    await _agent.rpc(
        server,
        person,
        "CommsService",
        "RespondToAsk",
        {"askId": free_id, "answers": [{"questionId": "f", "customText": s["free-text"]}]},
    )
    [declined] = _agent.ask_ids(
        await _agent.append(server, agent, general, one("declined-question"))
    )
    await _agent.rpc(
        server,
        person,
        "CommsService",
        "DeclineAsk",
        {"askId": declined, "reason": s["decline-reason"]},
    )
    await _agent.report_delivery(
        server, agent, declined, "DELIVERY_STATE_NOT_DELIVERED", detail=s["not-delivered"]
    )
    [withdrawn] = _agent.ask_ids(
        await _agent.append(server, agent, general, one("withdrawn-question"))
    )
    await _agent.close_ask(
        server, agent, withdrawn, "ASK_STATUS_WITHDRAWN", reason=s["withdraw-reason"]
    )

    page = await ui.open(person, viewport=size)
    form = page.locator(f'form.ask[data-ask-id="{pending_id}"]')
    await expect(form).to_be_visible()
    await expect(page.locator("#inbox-list a")).to_have_count(2)
    await expect(page.locator("#session-status")).to_contain_text("Signed in as")
    # One question answered, the other left empty: the skip notice names it.
    await form.get_by_label("Second").check()
    await expect(form.locator(".skip-notice")).to_contain_text("will be sent as skipped")
    await expect(page.locator("section.ask-closed .receipt")).to_have_count(3)

    await assert_isolated(page, s)
    # What follows an override still reads left to right: the question after its header
    # chip, the "Recommended" badge after its option's label, the time after the author's
    # name and after the answerer's.
    legend = form.locator("fieldset[data-question-id='q'] legend")
    assert await _left(legend.locator(".question-text")) > await _left(legend.locator(".chip"))
    first = form.locator(".option").first
    assert await _left(first.locator(".badge")) > await _left(first.locator(".option-label"))
    meta = page.locator("article.message .message-meta").first
    assert await _left(meta.locator("time")) > await _left(meta.locator(".author"))
    by = page.locator(f'section.ask-closed[data-ask-id="{answered}"] .answered-by')
    assert await _reads_after(by.locator(".untrusted"), by.locator("time"))
    await ui.screenshots(page, "bidi")


async def test_a_name_inside_the_pages_own_sentences_stays_isolated(ui: UI) -> None:
    """A late submit names who declined ("This ask was declined by X, so ..."), and the draft
    the person typed is shown back as not sent."""
    server, world = ui.server, ui.world
    s = planted("decliner", "question", "label", "typed", "reason")
    decliner = await _account(ui, AccountKind.HUMAN, s["decliner"], world.channel_id)
    frame = _agent.ask_frame(
        _agent.question("q", s["question"], s["label"], "Other one"),
        _agent.question("t", "Anything else?"),
    )
    [ask_id] = _agent.ask_ids(await _agent.append(server, world.agent, world.channel_id, frame))
    async with CuttableProxy(server.url).running() as proxy:
        page = await ui.new_page()
        await ui.sign_in(page, world.human, url=proxy.url)
        form = page.locator(f'form.ask[data-ask-id="{ask_id}"]')
        await form.get_by_label(s["label"]).check()
        await form.locator('[data-question-id="t"] textarea').fill(s["typed"])

        async def refuse(route: Route) -> None:
            await route.abort("connectionrefused")

        await page.route("**/WatchChannel", refuse)
        proxy.refusing = True
        proxy.cut()
        await expect(page.locator("#live-status")).to_contain_text("Reconnecting")
        proxy.refusing = False
        await _agent.rpc(
            server, decliner, "CommsService", "DeclineAsk", {"askId": ask_id, "reason": s["reason"]}
        )
        await form.get_by_role("button", name="Send answers").click()
        await expect(form.locator(".form-error")).to_have_text(
            f"This ask was declined by {s['decliner']}, so your answers were not sent."
        )
        await assert_isolated(page, s, present=("decliner", "question", "label"))

        await page.unroute("**/WatchChannel", refuse)
        view = page.locator(f'section.ask-closed[data-ask-id="{ask_id}"]')
        await expect(view.locator(".unsent")).to_be_visible(timeout=20_000)
        await assert_isolated(page, s)
        await ui.screenshots(page, "bidi-late-submit")


async def test_names_in_the_address_and_the_sign_in_dialog_stay_isolated(ui: UI) -> None:
    """An address naming an unknown channel, and a sign-in link for another account (its
    name in the question and on the buttons)."""
    world = ui.world
    s = planted("nowhere", "other-person")
    page = await ui.open(world.human)
    await page.goto(f"{ui.server.url}#/channel/{quote(s['nowhere'])}")
    await expect(page.locator("#channel-error")).to_contain_text("There is no channel")
    await assert_isolated(page, s, present=("nowhere",))

    other = await _account(ui, AccountKind.HUMAN, s["other-person"], world.channel_id)
    async with PostgresStore(ui.server.dsn, pool_min=1, pool_max=1) as store:
        code, _ = await store.create_sign_in_link(other.account_id, timedelta(minutes=5))
    await page.goto(f"{ui.server.url}#/sign-in/{code}")
    dialog = page.get_by_role("dialog", name="Switch accounts?")
    await expect(dialog).to_be_visible()
    await assert_isolated(page, s, present=("other-person",))
    await ui.screenshots(page, "bidi-switch")
