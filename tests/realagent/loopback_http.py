"""One background HTTP server on 127.0.0.1 (an ephemeral port) for the test doubles that agents
talk to: the scripted models (model_server.py, wire_models.py) and the refusing proxy
(proxy.py). The standard library's ThreadingHTTPServer on a daemon thread: the doubles need
no more than that, and the agents under test are what is real."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from types import TracebackType


class LoopbackHTTPServer:
    """Serves `handler` from `start()` (or `with`) until `close()`."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], *, name: str) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread_name = name
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, name=self._thread_name, daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
