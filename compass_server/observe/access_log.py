"""The per-RPC access log: one line per RPC (`compass.access`), and the JSON log format.

`RpcObserver` is the outermost Connect interceptor: it counts each RPC and its duration in
`Metrics`, keeps the live-stream gauge, and logs one access line with the request id, the
account, the code and the duration. `JsonFormatter` writes every record, those lines
included, as one JSON object (COMPASS_LOG_FORMAT=json).
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from typing import TYPE_CHECKING, Final, TypeVar

from connectrpc.errors import ConnectError

from compass_server.observe.metrics import STREAM_KINDS

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from connectrpc.request import RequestContext
    from prometheus_client import Counter, Histogram

    from compass_server.observe.metrics import Metrics
    from compass_server.store import AccountRow
    from compass_server.transport.auth import AuthContext

REQ = TypeVar("REQ")
RES = TypeVar("RES")

access_logger = logging.getLogger("compass.access")

_REQUEST_ID: Final = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class RpcObserver:
    """Connect interceptor (outermost): RPC count/latency, live streams, one access line."""

    def __init__(self, metrics: Metrics, auth: AuthContext[AccountRow]) -> None:
        self._m = metrics
        self._auth = auth
        # Each (method, code)'s counter and histogram children, looked up once: `labels()`
        # takes a lock and builds its key on every call, on every RPC (bench.respond).
        self._children: dict[tuple[str, str], tuple[Counter, Histogram]] = {}

    async def intercept_unary(
        self,
        call_next: Callable[[REQ, RequestContext[REQ, RES]], Awaitable[RES]],
        request: REQ,
        ctx: RequestContext[REQ, RES],
    ) -> RES:
        start = time.perf_counter()
        code = "ok"
        try:
            return await call_next(request, ctx)
        except ConnectError as exc:
            code = exc.code.value
            raise
        except BaseException:
            code = "internal"
            raise
        finally:
            self._done(ctx, code, start)

    async def intercept_server_stream(
        self,
        call_next: Callable[[REQ, RequestContext[REQ, RES]], AsyncIterator[RES]],
        request: REQ,
        ctx: RequestContext[REQ, RES],
    ) -> AsyncIterator[RES]:
        start = time.perf_counter()
        kind = ctx.method.name
        gauge = self._m.streams.labels(kind=kind) if kind in STREAM_KINDS else None
        if gauge is not None:
            gauge.inc()
        code = "ok"
        try:
            async for response in call_next(request, ctx):
                yield response
        except ConnectError as exc:
            code = exc.code.value
            raise
        except BaseException:
            code = "canceled"
            raise
        finally:
            if gauge is not None:
                gauge.dec()
            self._done(ctx, code, start)

    def _done(self, ctx: RequestContext[REQ, RES], code: str, start: float) -> None:
        seconds = time.perf_counter() - start
        method = ctx.method.name
        children = self._children.get((method, code))
        if children is None:
            children = self._children[method, code] = (
                self._m.rpc_total.labels(method=method, code=code),
                self._m.rpc_seconds.labels(method=method, code=code),
            )
        total, duration = children
        total.inc()
        duration.observe(seconds)
        headers = ctx.request_headers
        incoming = headers.get("x-request-id") or ""
        request_id = incoming if incoming and _REQUEST_ID.match(incoming) else uuid.uuid4().hex
        try:
            account_id = self._auth.current().account_id
        except Exception:  # noqa: BLE001 - no account: logged as empty
            account_id = ""
        access_logger.info(
            "%s %s %.1fms",
            method,
            code,
            seconds * 1000,
            extra={
                "request_id": request_id,
                "method": method,
                "account_id": account_id,
                "code": code,
                "duration_ms": round(seconds * 1000, 3),
            },
        )


_FIELDS: Final = ("request_id", "method", "account_id", "code", "duration_ms")


class JsonFormatter(logging.Formatter):
    """One JSON object per record (COMPASS_LOG_FORMAT=json)."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, object] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in _FIELDS:
            value: object = record.__dict__.get(field)
            if value is not None:
                doc[field] = value
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)
