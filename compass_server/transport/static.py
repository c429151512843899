"""The browser UI's static files (`compass_server/static/`, built by scripts/generate), served
with the headers a page of agent text needs: the page, its bundle (`app.js`), the service
worker (`sw.js`, at the root so its scope is the whole app), the web app manifest and icons
(docs/answering/push.md)."""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import TYPE_CHECKING, Final

from starlette.staticfiles import StaticFiles

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

STATIC_DIR: Final = Path(__file__).parent.parent / "static"
# The web app manifest's type (W3C appmanifest), which Python's table lacks.
mimetypes.add_type("application/manifest+json", ".webmanifest")

#: Response headers of the UI's static files. The page's own meta CSP cannot forbid framing,
#: and without a validator-forcing Cache-Control a browser may keep an old app.js after an
#: upgrade (heuristic caching of Last-Modified responses).
UI_HEADERS: Final = (
    (b"cache-control", b"no-cache"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        b"img-src 'self' data:; manifest-src 'self'; worker-src 'self'; base-uri 'none'; "
        b"form-action 'self'; frame-ancestors 'none'",
    ),
)


def ui_app() -> ASGIApp:
    """The UI's files (index.html at /), each response with `UI_HEADERS`."""
    return _with_headers(StaticFiles(directory=STATIC_DIR, html=True), UI_HEADERS)


def _with_headers(app: ASGIApp, headers: tuple[tuple[bytes, bytes], ...]) -> ASGIApp:
    """`app`, with `headers` added to every response it starts."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *headers]}
            await send(message)

        await app(scope, receive, send_with_headers)

    return wrapped
