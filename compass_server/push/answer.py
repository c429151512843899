"""`POST /push/answer`: the front door a notification's button answers through
(docs/answering/push.md).

The service worker of a person's device POSTs `{"answer_token": "...", "option_id": "..."}`
as JSON, with no other credential: the token, pushed to that device with the ask (encrypted
to it), is one-time and bound to the ask and the device's person. The answer goes through
the application's push use case (`service/push.Push.answer`), which answers through
RespondToAsk's as that person. The answers:

- 200 `{"status": "ASK_STATUS_ANSWERED"}`: answered;
- 409 `{"status": "ASK_STATUS_..."}`: the ask had ended already (answered elsewhere, closed);
- 404: the token is unknown, used or voided (the same answer for each);
- 403: the person's account is disabled, or no longer takes part in the channel;
- 400: not the JSON above, or an option that does not answer the ask (the token still works);
- 413 / 415: a body over MAX_BODY_BYTES, or not JSON; 503: try again.

Error bodies are `{"error": "<words for people>"}`: never a token, a secret or an exception's
text (anything unforeseen is logged here and answered 500 "internal error").
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Final

from starlette.responses import JSONResponse

from compass_server.domain.errors import (
    CompassError,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    UnavailableError,
)
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from starlette.requests import Request

    from compass_server.service.push import Push

logger = logging.getLogger(__name__)

PATH: Final = "/push/answer"
MAX_BODY_BYTES: Final = 4096
NO_STORE: Final = {"cache-control": "no-store"}
SHAPE: Final = 'send {"answer_token": "...", "option_id": "..."} as application/json'


def _json(status: int, body: dict[str, str]) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers=NO_STORE)


def answer_endpoint(push: Push) -> Callable[[Request], Awaitable[JSONResponse]]:
    """The /push/answer route's endpoint over the push use cases."""

    async def answer(request: Request) -> JSONResponse:
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != (
            "application/json"
        ):
            return _json(415, {"error": SHAPE})
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                return _json(413, {"error": "request too large"})
        try:
            doc: object = json.loads(body)
        except (UnicodeDecodeError, ValueError):
            return _json(400, {"error": SHAPE})
        token = doc.get("answer_token") if isinstance(doc, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType] - JSON
        option_id = doc.get("option_id") if isinstance(doc, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType] - JSON
        if not isinstance(token, str) or not isinstance(option_id, str):
            return _json(400, {"error": SHAPE})
        try:
            tapped = await push.answer(token, option_id)
        except NotFoundError as exc:
            return _json(404, {"error": exc.message})
        except PermissionDeniedError as exc:
            return _json(403, {"error": exc.message})
        except InvalidArgumentError as exc:  # which option, in the judge's words
            said = "; ".join(v.description for v in exc.violations[:1])
            return _json(400, {"error": f"{exc.message}: {said}" if said else exc.message})
        except FailedPreconditionError as exc:
            return _json(409, {"error": exc.message})
        except UnavailableError:
            return _json(503, {"error": "the server cannot answer right now; try again"})
        except CompassError as exc:
            logger.warning("a push answer was refused: %s", exc.message)
            return _json(400, {"error": exc.message})
        except Exception:
            logger.exception("a push answer failed")
            return _json(500, {"error": "internal error"})
        status = comms_pb2.AskStatus.Name(tapped.status)
        return _json(200 if tapped.answered else 409, {"status": status})

    return answer
