"""`POST /auth/sign-in`: exchange a one-time sign-in code (from `compass admin sign-in-link`)
for a session token, so a person signs in on a device without pasting a token.

Not a Connect RPC: every RPC needs a bearer token, and this is how a browser gets one. The
code arrives in the request body (the link carries it in the URL fragment, which browsers
never send), and the answer is never cached. Whatever is wrong with a code (unknown, used,
expired, voided, or its account disabled), the answer is the same 401, so nothing about
other people's codes can be learned from it; it says how to get a new link.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final

from starlette.responses import JSONResponse

from compass_server.domain.errors import UnavailableError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from starlette.requests import Request

    from compass_server.store import Store

MAX_BODY_BYTES: Final = 1024
NO_STORE: Final = {"cache-control": "no-store"}
NOT_VALID: Final = (
    "This sign-in link cannot be used: it was used already (a link works once), has expired "
    "or was revoked. Ask for a new one: whoever runs Compass makes it with "
    "`compass admin sign-in-link --account ACCOUNT_ID`; or sign in with your access token "
    "instead."
)
"""The one answer for every code that cannot be used (the store does not say which case it
was), with what to do next; the browser shows it above the token form."""


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=NO_STORE)


def sign_in_endpoint(store: Store) -> Callable[[Request], Awaitable[JSONResponse]]:
    async def sign_in(request: Request) -> JSONResponse:
        if request.method != "POST":
            return _error(405, "use POST")
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != (
            "application/json"
        ):
            return _error(415, "send application/json")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                return _error(413, "request too large")
        try:
            doc: object = json.loads(body)
        except (UnicodeDecodeError, ValueError):
            return _error(400, 'send {"code": "..."}')
        code = doc.get("code") if isinstance(doc, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType] - JSON
        if not isinstance(code, str) or not code:
            return _error(400, 'send {"code": "..."}')
        try:
            exchanged = await store.exchange_sign_in_link(code)
        except UnavailableError:
            return _error(503, "the server cannot sign you in right now; try again")
        if exchanged is None:
            return _error(401, NOT_VALID)
        account, token = exchanged
        return JSONResponse(
            {"token": token, "accountId": account.account_id, "name": account.name},
            headers=NO_STORE,
        )

    return sign_in
