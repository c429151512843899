"""`/email/unsubscribe?token=...`: the link of every mail's List-Unsubscribe header
(docs/answering/email.md). The token, minted for the person the mail went to (only its hash
is kept), is the only credential: no sign-in.

- POST (RFC 8058 one-click, `List-Unsubscribe=One-Click`, which mail clients send
  themselves; any body is accepted and none is read past MAX_BODY_BYTES): email asks off for
  that person, 200;
- GET (a person following the link): a page with one button that POSTs, so a link scanner
  that fetches every URL in a mail turns nothing off.

An unknown token is 404. The token appears nowhere but in the page's own form action, and
the responses are `no-store` and send no Referer.
"""

from __future__ import annotations

import html
import logging
from typing import TYPE_CHECKING, Final

from starlette.responses import HTMLResponse, PlainTextResponse

from compass_server.domain.errors import UnavailableError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from starlette.requests import Request
    from starlette.responses import Response

    from compass_server.service.email import Email

logger = logging.getLogger(__name__)

PATH: Final = "/email/unsubscribe"
MAX_BODY_BYTES: Final = 4096
HEADERS: Final = {"cache-control": "no-store", "referrer-policy": "no-referrer"}
_PAGE: Final = """<!doctype html>
<html><head><meta charset="utf-8"><title>Compass: email asks</title></head>
<body><form method="post" action="{action}">
<p>Stop getting Compass asks by email? You can turn them on again in Compass.</p>
<button type="submit">Turn email asks off</button></form></body></html>
"""


def unsubscribe_endpoint(email: Email) -> Callable[[Request], Awaitable[Response]]:
    """The /email/unsubscribe route's endpoint over the email use cases."""

    async def unsubscribe(request: Request) -> Response:
        token = request.query_params.get("token", "")
        if request.method == "GET":
            action = html.escape(f"{PATH}?token={token}", quote=True)
            return HTMLResponse(_PAGE.format(action=action), headers=HEADERS)
        read = 0
        async for chunk in request.stream():
            read += len(chunk)
            if read > MAX_BODY_BYTES:
                return PlainTextResponse("request too large", 413, headers=HEADERS)
        try:
            done = await email.unsubscribe(token)
        except UnavailableError:
            return PlainTextResponse("try again later", 503, headers=HEADERS)
        except Exception:
            logger.exception("an unsubscribe failed")
            return PlainTextResponse("internal error", 500, headers=HEADERS)
        if not done:
            return PlainTextResponse("unknown link", 404, headers=HEADERS)
        return PlainTextResponse("Email asks are off.", headers=HEADERS)

    return unsubscribe
