"""End to end under failure: the server goes away and comes back, responses get lost. The
bridge must lose nothing, duplicate nothing, and still deliver the answer."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time
from typing import TYPE_CHECKING, Any

import httpx
import pyqwest
import pytest

from compass_bridge.client import transport
from compass_bridge.omp.process import run
from compass_bridge.process import BridgeOptions
from gen.compass.v1 import agent_pb2
from tests import _server
from tests._wait import eventually
from tests.bridge import _events as ev
from tests.bridge._harness import list_messages, respond, start_bridge, wait_exit, wait_for_asks
from tests.bridge._scenarios import (
    DEPLOY_ANSWERS,
    DEPLOY_REPLY_FIELDS,
    GALLERY_ANSWERS,
    GALLERY_REPLY,
    INTRO,
)

if TYPE_CHECKING:
    import contextlib
    from collections.abc import Callable, Generator
    from pathlib import Path

    from tests._server import RunningServer, SeededWorld

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

FOLLOW_UP = "Postgres it is, with email, OAuth and passkeys. Scaffolding now."
METRICS_TOKEN = "outage-metrics-token"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Servers:
    """`compass serve` on one database and port, stopped and started again at will."""

    def __init__(self, dsn: str, port: int) -> None:
        self.dsn = dsn
        self.port = port
        self.url = f"http://127.0.0.1:{port}/"
        self._current: contextlib.AbstractContextManager[RunningServer] | None = None
        self.server: RunningServer | None = None

    def start(self) -> RunningServer:
        assert self._current is None
        self._current = _server.serve(
            self.dsn, port=self.port, env={"COMPASS_METRICS_TOKEN": METRICS_TOKEN}
        )
        self.server = self._current.__enter__()
        return self.server

    def stop(self, *, crash: bool = False) -> float:
        """Stop the server (SIGKILL when `crash`); returns how long stopping took."""
        assert self._current is not None
        assert self.server is not None
        started = time.monotonic()
        if crash:
            self.server.process.kill()
            self.server.process.wait()
        self._current.__exit__(None, None, None)
        self._current = None
        self.server = None
        return time.monotonic() - started


@pytest.fixture
def servers(database_url: str) -> Generator[Servers]:
    servers = Servers(database_url, _free_port())
    try:
        yield servers
    finally:
        if servers.server is not None:
            servers.stop(crash=True)


async def _eventually(check: Callable[[], object], what: str) -> None:
    await eventually(check, what, within=30, every=0.05)


async def _watching(servers: Servers) -> bool:
    """Whether the server has a WatchAsk stream open (its metrics say so)."""
    async with httpx.AsyncClient(base_url=servers.url, timeout=5) as http:
        reply = await http.get("/metrics", headers={"authorization": f"Bearer {METRICS_TOKEN}"})
    reply.raise_for_status()
    return 'compass_live_streams{kind="WatchAsk"} 1.0' in reply.text


async def test_outages_before_the_post_during_the_wait_and_at_exit_lose_and_duplicate_nothing(
    servers: Servers, tmp_path: Path
) -> None:
    questions = ev.gallery_questions()
    go_ask, go_finish = tmp_path / "go-ask", tmp_path / "go-finish"
    steps = [
        *ev.emit([{"type": "agent_start"}, {"type": "turn_start"}]),
        *ev.emit(ev.user_prompt("m-user", "Set up the new accounts service.")),
        {"wait_file": str(go_ask)},
        *ev.emit(ev.assistant_message("m-1", INTRO, asks=[("call-1", questions)])),
        {"await_command": "set_ask_dialog"},
        *ev.emit([ev.ask_request("req-1", questions), ev.ask_start("call-1", questions)]),
        {"expect_replies": [GALLERY_REPLY]},
        {"wait_file": str(go_finish)},
        *ev.emit(ev.ask_end("call-1", GALLERY_REPLY, questions)),
        *ev.emit([{"type": "turn_end"}, {"type": "turn_start"}]),
        *ev.emit(ev.assistant_message("m-2", FOLLOW_UP)),
        *ev.emit([{"type": "turn_end"}, {"type": "agent_end"}]),
    ]
    servers.start()
    world = await _server.seed_world(servers.dsn)
    with start_bridge(
        server_url=servers.url,
        channel_id=world.channel_id,
        token=world.agent.token,
        steps=steps,
        workdir=tmp_path,
        extra=("--max-backoff", "0.5"),
    ) as bridge:
        await _eventually(lambda: "set_ask_dialog accepted" in bridge.log(), "the opt-in")

        # 1. Down before anything is posted: the text, the ask and the runtime's request all
        #    arrive while the bridge cannot reach the server.
        servers.stop()
        go_ask.touch()
        await _eventually(lambda: "AppendMessage" in bridge.log(), "a failed append")
        await _eventually(lambda: "request req-1 waits" in bridge.log(), "the request, held")
        assert bridge.process.poll() is None, bridge.log()
        servers.start()
        async with httpx.AsyncClient(base_url=servers.url, timeout=30) as comms:
            (ask,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1)
            assert len(await list_messages(comms, world.human.token, world.channel_id)) == 1

        # 2. Crash while the bridge waits on WatchAsk; the answer is given on the server that
        #    comes back, so only a resumed watch can see it.
        await _eventually(lambda: _watching(servers), "the bridge's WatchAsk on the server")
        servers.stop(crash=True)
        await _eventually(
            lambda: "reconnecting in" in bridge.log(), "the bridge's failed reconnect of WatchAsk"
        )
        servers.start()
        async with httpx.AsyncClient(base_url=servers.url, timeout=30) as comms:
            await respond(comms, world.human.token, ask["askId"], GALLERY_ANSWERS)
        await _eventually(
            lambda: "got the expected reply for req-1" in bridge.log(), "the delivered answer"
        )

        # 3. Down again while the runtime finishes: its last message is queued, and the bridge
        #    keeps trying until the server is back before it exits.
        servers.stop()
        go_finish.touch()
        await _eventually(
            lambda: any(
                "AppendMessage" in line and "m-2" in line and "retrying" in line
                for line in bridge.log().splitlines()
            ),
            "a failed append of the last message",
        )
        assert bridge.process.poll() is None, bridge.log()
        servers.start()
        assert await wait_exit(bridge) == 0, bridge.log()

    async with httpx.AsyncClient(base_url=servers.url, timeout=30) as comms:
        messages = await list_messages(comms, world.human.token, world.channel_id)
    assert len(messages) == 2, json.dumps(messages, indent=1)
    first, second = messages
    assert [next(iter(b)) for b in first["blocks"]] == ["text", "ask"]
    assert first["blocks"][0]["text"]["text"] == INTRO
    stored = first["blocks"][1]["ask"]
    assert stored["askId"] == ask["askId"]
    assert stored["answeredByAccountId"] == world.human.account_id
    assert second["blocks"] == [{"text": {"text": FOLLOW_UP}}]
    assert len({m["clientMessageId"] for m in messages}) == 2


class LosingTransport:
    """A pyqwest transport that passes requests to the real server, then drops some
    responses, as a connection that breaks after the server has done the work: the first
    `lose[method]` responses of a method, and the response of every UpdateMessage that adds
    an ask (once per frame). Touches `appended` once an AppendMessage response got through."""

    def __init__(self, lose: dict[str, int], appended: Path) -> None:
        self._inner = transport()
        self.lose = dict(lose)
        self.appended = appended
        self.sent: list[str] = []
        self.lost_adds: list[agent_pb2.UpdateMessageRequest] = []

    async def execute(self, request: pyqwest.Request) -> pyqwest.Response:
        method = request.url.rsplit("/", 1)[-1]
        self.sent.append(method)
        body = request.content
        assert isinstance(body, bytes)  # the bridge's requests are one message each
        response = await self._inner.execute(request)
        if self.lose.get(method, 0) > 0:
            self.lose[method] -= 1
        elif method == "UpdateMessage" and self._adds_an_ask_first_time(body):
            pass
        else:
            if method == "AppendMessage" and response.status == 200:
                self.appended.touch()
            return response
        async for _ in response.content:  # the server's answer, read in full, then lost
            pass
        raise pyqwest.ReadError("the connection broke after the server answered")

    def _adds_an_ask_first_time(self, body: bytes) -> bool:
        update = agent_pb2.UpdateMessageRequest.FromString(body)
        asks = [b.ask for b in update.frame.blocks if b.HasField("ask")]
        if not asks or asks[-1].ask_id or update in self.lost_adds:
            return False
        self.lost_adds.append(update)
        return True


async def test_lost_responses_are_retried_without_a_duplicate_message_or_ask(
    module_server: RunningServer,
    world: SeededWorld,
    comms: httpx.AsyncClient,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    q1, q2 = ev.gallery_questions(), ev.deploy_questions()
    reply_a = {**GALLERY_REPLY, "id": "req-a"}
    reply_b = ev.reply("req-b", *DEPLOY_REPLY_FIELDS)
    appended = tmp_path / "appended"
    steps = [
        *ev.emit(ev.assistant_message("m-1", INTRO, asks=[("c1", q1), ("c2", q2)])),
        # The text is stored before the first ask starts, so both asks join it by update.
        {"wait_file": str(appended)},
        {"await_command": "set_ask_dialog"},
        *ev.emit([ev.ask_request("req-a", q1), ev.ask_start("c1", q1)]),
        {"expect_replies": [reply_a]},
        *ev.emit(ev.ask_end("c1", reply_a, q1)),
        *ev.emit([ev.ask_request("req-b", q2), ev.ask_start("c2", q2)]),
        {"expect_replies": [reply_b]},
        *ev.emit(ev.ask_end("c2", reply_b, q2)),
        *ev.emit([{"type": "turn_end"}, {"type": "agent_end"}]),
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    transport = LosingTransport({"AppendMessage": 2, "WatchAsk": 1}, appended)
    options = BridgeOptions(
        server=module_server.url,
        channel_id=world.channel_id,
        token=world.agent.token,
        command=(sys.executable, str(ev.FAKE_RUNTIME), str(script)),
        max_backoff=0.2,
    )

    async def participant() -> list[dict[str, Any]]:
        (first,) = await wait_for_asks(comms, world.human.token, world.channel_id, 1)
        await respond(comms, world.human.token, first["askId"], GALLERY_ANSWERS)
        asks = await wait_for_asks(comms, world.human.token, world.channel_id, 2)
        await respond(comms, world.human.token, asks[1]["askId"], DEPLOY_ANSWERS)
        return asks

    async with asyncio.timeout(90):
        http = pyqwest.Client(transport)
        code, asks = await asyncio.gather(run(options, http=http), participant())
    assert code == 0, caplog.text
    assert transport.lose == {"AppendMessage": 0, "WatchAsk": 0}
    assert len(transport.lost_adds) == 2  # the update adding ask 1, then the one adding ask 2
    # 3 tries of the first append (2 responses lost); each lost add was simply sent again,
    # and the real server took the retry's unminted ask for the one the lost attempt stored.
    assert transport.sent.count("AppendMessage") == 3, transport.sent
    assert transport.sent.count("UpdateMessage") == 4, transport.sent
    assert "invalid_argument" not in caplog.text
    assert "dropping" not in caplog.text
    (message,) = await list_messages(comms, world.human.token, world.channel_id)
    text, first, second = message["blocks"]
    assert text == {"text": {"text": INTRO}}
    assert [first["ask"]["askId"], second["ask"]["askId"]] == [a["askId"] for a in asks]
    assert [q["questionId"] for q in second["ask"]["questions"]] == ["region", "name"]
    assert first["ask"]["answeredByAccountId"] == world.human.account_id
    assert second["ask"]["answeredByAccountId"] == world.human.account_id
