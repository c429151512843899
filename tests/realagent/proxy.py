"""A loopback HTTP proxy that refuses every request and records it: point an agent's
HTTPS_PROXY/HTTP_PROXY/ALL_PROXY at it (with NO_PROXY for loopback) and anything it tries to
reach outside 127.0.0.1 (telemetry, update checks, a vendor's API) is refused and listed, so a
test can prove the agent ran on loopback only and see what it tried.

Usage:
    with RefusingProxy() as proxy:
        env.update(proxy.env())
        ...
        assert proxy.refused == [...]
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.realagent.loopback_http import LoopbackHTTPServer

__all__ = ["LOOPBACK", "Refused", "RefusingProxy"]

LOOPBACK = "127.0.0.1,localhost,::1"
"""NO_PROXY: the scripted servers on loopback are reached directly."""


@dataclass(frozen=True)
class Refused:
    """One request the proxy refused: `CONNECT host:port` or `GET http://host/path`."""

    method: str
    target: str


class RefusingProxy(LoopbackHTTPServer):
    """An HTTP proxy on 127.0.0.1 (ephemeral port) answering 403 to everything."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._refused: list[Refused] = []
        super().__init__(_handler_for(self), name="refusing-proxy")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def refused(self) -> list[Refused]:
        with self._lock:
            return list(self._refused)

    def hosts(self) -> set[str]:
        """The hosts refused (without ports or paths)."""
        found: set[str] = set()
        for item in self.refused:
            target = item.target.split("://", 1)[-1]
            found.add(target.split("/", 1)[0].rsplit(":", 1)[0])
        return found

    def env(self) -> dict[str, str]:
        """Every proxy variable (both spellings) pointing here, loopback excepted."""
        env = {"NO_PROXY": LOOPBACK, "no_proxy": LOOPBACK}
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            env[name] = self.url
            env[name.lower()] = self.url
        return env

    def _record(self, method: str, target: str) -> None:
        with self._lock:
            self._refused.append(Refused(method, target))


def _handler_for(proxy: RefusingProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # everything is in `proxy.refused`

        def _refuse(self) -> None:
            proxy._record(self.command, self.path)  # pyright: ignore[reportPrivateUsage]
            length = int(self.headers.get("Content-Length") or 0)
            if length and self.command != "CONNECT":
                self.rfile.read(length)
            body = b"outbound network is disabled in this test\n"
            self.close_connection = True
            self.send_response(403)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        do_CONNECT = _refuse  # noqa: N815 - BaseHTTPRequestHandler's names
        do_GET = _refuse  # noqa: N815
        do_POST = _refuse  # noqa: N815
        do_PUT = _refuse  # noqa: N815
        do_HEAD = _refuse  # noqa: N815
        do_DELETE = _refuse  # noqa: N815
        do_PATCH = _refuse  # noqa: N815

    return Handler
