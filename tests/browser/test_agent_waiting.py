"""Whether an MCP ask's agent is waiting for it, in the browser (issue 33, N7): an ask whose
tool call returned `pending` says on its form that its agent is not waiting right now and
when it is withdrawn unless the agent comes back; the words go, live, when the agent comes
back with `ask_wait`. The agent is a plain HTTP client of `/mcp` with the agent's token."""

from __future__ import annotations

import asyncio
import json
import re
from typing import TYPE_CHECKING, Any, Final

import httpx
from playwright.async_api import expect

from tests.browser.test_delivery import form_of

if TYPE_CHECKING:
    from tests.browser.conftest import UI

_HEADERS: Final = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-06-18",
}
NOT_WAITING: Final = re.compile(
    r"^Its agent is not waiting right now: an answer reaches it only if it comes back, and "
    r"the ask is withdrawn in 0:[0-5]\d unless it does\.$"
)


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def _structured(reply: httpx.Response) -> dict[str, Any]:
    for line in reply.text.splitlines():
        if line.startswith("data: {") and '"result"' in line:
            content: dict[str, Any] = json.loads(line.removeprefix("data: "))["result"][
                "structuredContent"
            ]
            return content
    raise AssertionError(reply.text)


async def test_a_pending_mcp_ask_says_its_agent_is_not_waiting_until_it_comes_back(
    ui: UI,
) -> None:
    question = {"id": "go", "question": "Ship it?", "options": [{"label": "Yes"}, {"label": "No"}]}
    headers = {**_HEADERS, "authorization": f"Bearer {ui.world.agent.token}"}
    page = await ui.open(ui.world.human)
    async with httpx.AsyncClient(base_url=ui.server.url, timeout=60) as http:
        first = _structured(
            await http.post(
                "mcp",
                json=_call("ask", {"questions": [question], "wait_seconds": 0.5}),
                headers=headers,
            )
        )
        assert first["status"] == "pending"
        form = form_of(page, first["ask_id"])
        note = form.locator(".ask-not-waiting")
        await expect(note).to_be_visible()
        await expect(note).to_have_text(NOT_WAITING)
        await ui.screenshots(page, "agent-not-waiting")
        # The agent comes back: the words go, live.
        waiting = asyncio.create_task(
            http.post(
                "mcp",
                json=_call("ask_wait", {"ask_id": first["ask_id"], "wait_seconds": 30}),
                headers=headers,
            )
        )
        await expect(note).to_be_hidden()
        await form.get_by_label("Yes").check()
        await form.get_by_role("button", name="Send answers").click()
        answered = _structured(await waiting)
    assert answered["status"] == "answered"
