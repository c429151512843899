"""Firefox ESR (Debian's `firefox-esr`) for a real `PushManager.subscribe()`, end to end.

Firefox's push client speaks Mozilla's autopush protocol over a WebSocket to
`dom.push.serverURL`; a pref (`dom.push.testing.allowInsecureServerURL`) lets that be a plain
`ws://` on loopback. So the browser side is all real here: Firefox subscribes (its own P-256
keys and auth secret), Compass pushes to the endpoint Firefox was given, and Firefox decrypts
the push (RFC 8291) and hands it to Compass's service worker.

- `Autopush`: the stand-in of Mozilla's push service (the cloud only): the WebSocket side
  (hello, register, notification, ack, ping) and the HTTP side that takes a push, checks its
  VAPID JWT against the key the browser subscribed with (tests/e2e/_push_service.verify_vapid)
  and forwards the still-encrypted body to the browser, as autopush does.
- `Marionette`: Firefox's built-in remote protocol (length-prefixed JSON over TCP), enough of
  it to navigate, type, click and run a script in the page (Playwright drives only its own
  patched Firefox builds).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from tests import _server
from tests.e2e._push_service import Refused, verify_vapid

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Generator
    from pathlib import Path

    from starlette.requests import Request


def firefox_path() -> str | None:
    """Debian's Firefox ESR ($COMPASS_FIREFOX, else `firefox-esr` on PATH)."""
    return os.environ.get("COMPASS_FIREFOX") or shutil.which("firefox-esr")


@dataclass
class Autopush:
    """The push service's two sides, for one browser."""

    url: str = ""
    socket: WebSocket | None = None
    channels: dict[str, str] = field(default_factory=dict[str, str])
    """channelID -> the application server key the browser registered it with (base64url)."""
    acks: list[dict[str, object]] = field(default_factory=list[dict[str, object]])
    """Each update the browser acknowledged (channelID, version, code: 100 = delivered)."""
    forwarded: list[str] = field(default_factory=list[str])
    rejected: list[str] = field(default_factory=list[str])
    log: list[str] = field(default_factory=list[str])
    _versions: itertools.count[int] = field(default_factory=itertools.count)

    async def _ws(self, websocket: WebSocket) -> None:
        await websocket.accept(subprotocol="push-notification")
        self.socket = websocket
        try:
            while True:
                message = await websocket.receive_text()
                self.log.append(f"<- {message[:200]}")
                doc = json.loads(message)
                kind = doc.get("messageType") if isinstance(doc, dict) else None
                if kind is None or kind == "ping":
                    await websocket.send_text("{}")
                elif kind == "hello":
                    uaid = doc.get("uaid") or uuid.uuid4().hex
                    await self._send(
                        {"messageType": "hello", "uaid": uaid, "status": 200, "use_webpush": True}
                    )
                elif kind == "register":
                    channel = str(doc["channelID"])
                    key = str(doc.get("key", ""))
                    self.channels[channel] = (
                        base64.urlsafe_b64encode(
                            base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))
                        )
                        .rstrip(b"=")
                        .decode()
                    )
                    await self._send(
                        {
                            "messageType": "register",
                            "channelID": channel,
                            "status": 200,
                            "pushEndpoint": f"{self.url}wpush/{channel}",
                        }
                    )
                elif kind == "ack":
                    self.acks.extend(doc.get("updates", []))
                elif kind == "unregister":
                    await self._send(
                        {"messageType": "unregister", "channelID": doc["channelID"], "status": 200}
                    )
        except WebSocketDisconnect:
            self.socket = None

    async def _send(self, doc: dict[str, object]) -> None:
        assert self.socket is not None
        text = json.dumps(doc)
        self.log.append(f"-> {text[:200]}")
        await self.socket.send_text(text)

    async def _push(self, request: Request) -> Response:
        channel = request.path_params["channel"]
        body = await request.body()
        key = self.channels.get(channel)
        try:
            if key is None or self.socket is None:
                raise Refused("no such subscription, or its browser is away")
            verify_vapid(
                request.headers.get("authorization", ""), key, self.url.rstrip("/"), time.time()
            )
            if request.headers.get("content-encoding") != "aes128gcm":
                raise Refused("not aes128gcm")
        except Refused as exc:
            self.rejected.append(str(exc))
            return Response(str(exc), status_code=400)
        version = f"v{next(self._versions)}"
        await self._send(
            {
                "messageType": "notification",
                "channelID": channel,
                "version": version,
                "data": base64.urlsafe_b64encode(body).rstrip(b"=").decode(),
                "headers": {"encoding": "aes128gcm"},
            }
        )
        self.forwarded.append(version)
        return Response(status_code=201)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                WebSocketRoute("/", self._ws),
                Route("/wpush/{channel}", self._push, methods=["POST"]),
            ]
        )


@contextlib.asynccontextmanager
async def autopush() -> AsyncGenerator[Autopush]:
    service = Autopush()
    async with _server.in_process(service.app()) as url:
        service.url = url
        yield service


class MarionetteError(Exception):
    pass


class Marionette:
    """A Marionette client: one command at a time, over TCP (protocol 3)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer
        self._ids = itertools.count(1)

    @classmethod
    async def connect(cls, port: int, *, within: float = 60.0) -> Marionette:
        deadline = time.monotonic() + within
        while True:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)  # Firefox is still starting: poll its port
        client = cls(reader, writer)
        await client._read()  # {"applicationType": "gecko", "marionetteProtocol": 3}
        return client

    async def _read(self) -> object:
        size = int((await self._reader.readuntil(b":"))[:-1])
        return json.loads(await self._reader.readexactly(size))

    async def send(self, command: str, params: dict[str, object] | None = None) -> object:
        message_id = next(self._ids)
        data = json.dumps([0, message_id, command, params or {}]).encode()
        self._writer.write(str(len(data)).encode() + b":" + data)
        await self._writer.drain()
        while True:
            reply = await asyncio.wait_for(self._read(), 120)
            if isinstance(reply, list) and reply[:2] == [1, message_id]:
                break
        _, _, error, result = reply
        if error:
            raise MarionetteError(f"{command}: {error}")
        return result

    async def script(self, body: str, *args: object) -> object:
        """Run `body` (a function body; `arguments` are `args`; may return a promise) in the page."""
        result = await self.send("WebDriver:ExecuteScript", {"script": body, "args": list(args)})
        return result.get("value") if isinstance(result, dict) else result  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType] - JSON

    async def element(self, css: str) -> str:
        found = await self.send("WebDriver:FindElement", {"using": "css selector", "value": css})
        assert isinstance(found, dict)
        value = found["value"]  # pyright: ignore[reportUnknownVariableType] - JSON
        assert isinstance(value, dict)
        return str(next(iter(value.values())))  # pyright: ignore[reportUnknownArgumentType]

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()


PREFS = {
    "dom.push.enabled": True,
    "dom.push.connection.enabled": True,
    "dom.push.testing.allowInsecureServerURL": True,
    "dom.push.loglevel": "debug",
    "permissions.default.desktop-notification": 1,
    "dom.serviceWorkers.enabled": True,
    "dom.serviceWorkers.testing.enabled": True,
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.page": 0,
    "browser.startup.homepage_override.mstone": "ignore",
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "app.update.disabledForTesting": True,
    "network.proxy.type": 0,
    "browser.aboutwelcome.enabled": False,
    "alerts.useSystemBackend": False,
}


@contextlib.contextmanager
def firefox(
    profile: Path, push_server: str, marionette_port: int
) -> Generator[subprocess.Popen[bytes]]:
    """Headless Firefox ESR on a fresh `profile`, its push service at `push_server`."""
    path = firefox_path()
    assert path, "no firefox-esr (scripts/ensure-firefox installs Debian's)"
    profile.mkdir(parents=True, exist_ok=True)
    prefs = {**PREFS, "dom.push.serverURL": push_server, "marionette.port": marionette_port}
    (profile / "user.js").write_text(
        "".join(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n" for k, v in prefs.items())
    )
    with (profile / "stderr.log").open("wb") as log:
        process = subprocess.Popen(
            [path, "--headless", "--marionette", "--no-remote", "--profile", str(profile)],
            stdout=subprocess.DEVNULL,
            stderr=log,
            env={**os.environ, "MOZ_HEADLESS": "1"},
        )
        try:
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
