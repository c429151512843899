"""OpenTelemetry traces: optional, and off unless configured.

Tracing is on when `COMPASS_TRACING` is true, or when the standard OpenTelemetry variables ask
for OTLP (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or
`OTEL_TRACES_EXPORTER=otlp`); `COMPASS_TRACING=0`, `OTEL_TRACES_EXPORTER=none` and
`OTEL_SDK_DISABLED=true` turn it off. When it is off this module imports nothing of
OpenTelemetry, so the runtime install without the `otel` extra keeps working; when it is on and
the extra is missing, the server refuses to start.

What is traced:
- one SERVER span per request (opentelemetry-instrumentation-asgi). A Connect call's span is
  named by its method path (`compass.v1.CommsService/RespondToAsk`) and carries `rpc.system`
  (`connect_rpc`), `rpc.service`, `rpc.method` and, when the call fails, the Connect code as
  `rpc.connect_rpc.error_code`. Server-side codes (internal, unavailable, ...) set the span's
  status to ERROR. No header is ever recorded (the OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_*
  variables are ignored: the Authorization header holds a bearer token), nor the query string,
  nor any body: the Connect code is read from the error response, and only the code is kept.
- one CLIENT span per SQL statement (opentelemetry-instrumentation-asyncpg), a child of the
  request's span. The statement text is recorded (statements take their values as `$n`
  parameters); the parameters never are, nor the text of a statement's exception (asyncpg's
  messages quote values).
The deadline sweeper and the change listener are not traced (they would make a trace a second).
The probes (/healthz, /readyz) are not traced either.

Export: OTLP over HTTP/protobuf (opentelemetry-exporter-otlp-proto-http) through a
BatchSpanProcessor; the exporter and processor read their standard variables
(OTEL_EXPORTER_OTLP_*, OTEL_BSP_*), the provider reads OTEL_TRACES_SAMPLER*. The resource's
service.name is "compass" unless OTEL_SERVICE_NAME says otherwise.

The asyncpg instrumentation patches asyncpg's classes, so it is process-wide: one traced app at
a time per process (its lifespan instruments on start and uninstruments on stop).
"""

from __future__ import annotations

import contextlib
import gzip
import os
import zlib
from typing import TYPE_CHECKING, Any, Final, cast

from compass_server.transport import wire
from compass_server.transport.connect_protocol import (
    FLAG_COMPRESSED,
    FLAG_END_STREAM,
    Envelope,
    EnvelopeReader,
    end_stream_error,
    unary_error,
)
from gen.compass.v1 import agent_pb2, comms_pb2

if TYPE_CHECKING:
    from collections.abc import Generator, Mapping
    from contextlib import AbstractContextManager

    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from opentelemetry.trace import Span, Tracer
    from starlette.applications import Starlette
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

SWITCH: Final = "COMPASS_TRACING"
SERVICE_NAME: Final = "compass"

_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off"})

#: Connect codes that are the server's fault: they set the span's status to ERROR (the same
#: split as OpenTelemetry's RPC conventions make for gRPC server spans).
SERVER_ERROR_CODES: Final = frozenset(
    {"unknown", "deadline_exceeded", "unimplemented", "internal", "unavailable", "data_loss"}
)

#: An error document larger than this is not read for its code.
_MAX_ERROR_BYTES: Final = 64 * 1024
_GRPC_WEB_TRAILER: Final = 0x80
#: gRPC status numbers -> Connect code names (0, OK, is not an error).
_GRPC_CODES: Final = {str(n): code.value for code, n in wire.GRPC_STATUS.items()}

_UNTRACED_PATHS: Final = frozenset({"/healthz", "/readyz"})
_QUERY_KEY: Final = "compass.telemetry.query_string"


def _rpc_paths() -> dict[str, tuple[str, str]]:
    """`/service/method` -> (service, method) for every RPC of the contract."""
    paths: dict[str, tuple[str, str]] = {}
    for module in (agent_pb2, comms_pb2):
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                paths[f"/{service.full_name}/{method.name}"] = (service.full_name, method.name)
    return paths


RPC_PATHS: Final = _rpc_paths()


def requested(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment asks for traces (see the module's docstring).

    Raises:
        ValueError: COMPASS_TRACING is neither true nor false.
    """
    env = os.environ if environ is None else environ
    switch = env.get(SWITCH, "").strip().lower()
    if switch in _TRUE:
        return True
    if switch in _FALSE:
        return False
    if switch:
        raise ValueError(f"{SWITCH} must be 1 or 0 (true/false), not {env[SWITCH]!r}")
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = {e.strip().lower() for e in env.get("OTEL_TRACES_EXPORTER", "").split(",")}
    if "none" in exporters:
        return False
    return "otlp" in exporters or any(
        env.get(name, "").strip()
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


class Tracing:
    """An app's tracing: a TracerProvider, the request middleware and the SQL instrumentation.

    Made by `from_environment` (OTLP export) or `with_processor` (tests: an in-memory
    exporter); `create_app` wraps its app with `install` and runs `running` in its lifespan.
    """

    def __init__(self, provider: TracerProvider) -> None:
        self.provider: Final = provider

    def install(self, app: Starlette) -> None:
        """Wrap `app`'s requests in spans (outermost of its user middleware)."""
        app.add_middleware(self._middleware)

    @contextlib.contextmanager
    def running(self) -> Generator[None]:
        """For the lifespan: SQL spans while it runs, and every span exported at its end.

        The lifespan's own context (and so the background tasks it starts: the sweeper, the
        change listener) is untraced; requests run in contexts of their own.
        """
        from opentelemetry.instrumentation.asyncpg import (  # pyright: ignore[reportMissingTypeStubs] - untyped
            AsyncPGInstrumentor,
        )
        from opentelemetry.instrumentation.utils import suppress_instrumentation

        instrumentor = AsyncPGInstrumentor(capture_parameters=False)
        instrumentor.instrument(tracer_provider=_QuietTracerProvider(self.provider))
        try:
            with suppress_instrumentation():
                yield
        finally:
            instrumentor.uninstrument()
            self.provider.shutdown()

    def _middleware(self, app: ASGIApp) -> ASGIApp:
        from opentelemetry.instrumentation.asgi import (  # pyright: ignore[reportMissingTypeStubs] - untyped
            OpenTelemetryMiddleware,
        )
        from opentelemetry.metrics import NoOpMeterProvider

        middleware = OpenTelemetryMiddleware(
            _with_query_string(_recording_connect_codes(app)),
            excluded_urls=",".join(f"{path}$" for path in sorted(_UNTRACED_PATHS)),
            default_span_details=_span_details,
            tracer_provider=self.provider,
            meter_provider=NoOpMeterProvider(),  # metrics are the Prometheus endpoint's job
            exclude_spans=["receive", "send"],
        )
        # Never headers: the constructor falls back to OTEL_INSTRUMENTATION_HTTP_CAPTURE_*.
        middleware.http_capture_headers_server_request = None
        middleware.http_capture_headers_server_response = None
        return _without_query_string(cast("ASGIApp", middleware))


class _QuietTracerProvider:
    """Tracers whose spans record no exception event and no exception text as their status.

    For the SQL spans: asyncpg's messages hold values (a DataError names the argument it could
    not encode, a constraint violation's DETAIL the key). The asyncpg instrumentation still
    sets the ERROR status itself, without a description.
    """

    def __init__(self, provider: TracerProvider) -> None:
        self._provider = provider

    def get_tracer(self, *args: Any, **kwargs: Any) -> _QuietTracer:
        return _QuietTracer(self._provider.get_tracer(*args, **kwargs))


class _QuietTracer:
    _QUIET: Final = {"record_exception": False, "set_status_on_exception": False}

    def __init__(self, tracer: Tracer) -> None:
        self._tracer = tracer

    def start_span(self, *args: Any, **kwargs: Any) -> Span:
        return self._tracer.start_span(*args, **{**kwargs, **self._QUIET})

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> AbstractContextManager[Span]:
        return self._tracer.start_as_current_span(*args, **{**kwargs, **self._QUIET})


def with_processor(processor: SpanProcessor) -> Tracing:
    """Tracing whose spans go to `processor` (tests: a SimpleSpanProcessor)."""
    from opentelemetry.sdk.resources import SERVICE_NAME as SERVICE_NAME_KEY, Resource
    from opentelemetry.sdk.trace import TracerProvider

    name = os.environ.get("OTEL_SERVICE_NAME", "").strip() or SERVICE_NAME
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME_KEY: name}))
    provider.add_span_processor(processor)
    return Tracing(provider)


def from_environment(environ: Mapping[str, str] | None = None) -> Tracing | None:
    """Tracing exporting over OTLP/HTTP when the environment asks for it, else None (and
    nothing of OpenTelemetry is imported).

    Raises:
        ValueError: a variable has a value this server cannot honour.
        RuntimeError: tracing is asked for but the `otel` extra is not installed.
    """
    env = os.environ if environ is None else environ
    if not requested(env):
        return None
    for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        protocol = env.get(name, "").strip()
        if protocol:
            if protocol != "http/protobuf":
                raise ValueError(f"{name}={protocol}: compass exports traces over http/protobuf")
            break
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise RuntimeError(
            "tracing is configured (COMPASS_TRACING or OTEL_*) but OpenTelemetry is not "
            "installed: install compass with its `otel` extra"
        ) from exc
    return with_processor(BatchSpanProcessor(OTLPSpanExporter()))


# ---------------------------------------------------------------------------------------------
# The request span: its name and rpc.* attributes, the Connect code, no query string.


def _span_details(scope: Scope) -> tuple[str, dict[str, str]]:
    method = str(scope.get("method", "HTTP"))
    path = str(scope.get("path", ""))
    rpc = RPC_PATHS.get(path)
    if rpc is None:
        # Not a known RPC: no path in the name (static files, unknown paths: unbounded).
        return method, {}
    service, rpc_method = rpc
    return f"{service}/{rpc_method}", {
        "rpc.system": "connect_rpc",
        "rpc.service": service,
        "rpc.method": rpc_method,
    }


def _without_query_string(app: ASGIApp) -> ASGIApp:
    """Hide the query string from the span middleware (a Connect GET carries its request
    message there); `_with_query_string` gives it back to the app inside."""

    async def hiding(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _QUERY_KEY not in scope:
            scope = {**scope, "query_string": b"", _QUERY_KEY: scope.get("query_string", b"")}
        await app(scope, receive, send)

    return hiding


def _with_query_string(app: ASGIApp) -> ASGIApp:
    async def restoring(scope: Scope, receive: Receive, send: Send) -> None:
        if _QUERY_KEY in scope:
            original = scope[_QUERY_KEY]
            scope = {k: v for k, v in scope.items() if k != _QUERY_KEY}
            scope["query_string"] = original
        await app(scope, receive, send)

    return restoring


def _recording_connect_codes(app: ASGIApp) -> ASGIApp:
    """Record the Connect code of a failed call on the current (request) span, before the
    response's last message ends the span."""

    async def recording(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") not in RPC_PATHS:
            await app(scope, receive, send)
            return
        from opentelemetry import trace

        span = trace.get_current_span()
        reader = ConnectCodeReader()

        async def send_recording(message: Message) -> None:
            reader.feed(message)
            if reader.done:
                _record_code(span, reader.code)
            await send(message)

        await app(scope, receive, send_recording)

    return recording


def _record_code(span: Span, code: str | None) -> None:
    if code is None or not span.is_recording():
        return
    span.set_attribute("rpc.connect_rpc.error_code", code)
    if code in SERVER_ERROR_CODES:
        from opentelemetry.trace import Status, StatusCode

        span.set_status(Status(StatusCode.ERROR))


class ConnectCodeReader:
    """Finds the Connect code of a response from its ASGI messages, keeping nothing else.

    A unary error is a JSON document `{"code": ...}` with a non-200 status; a stream's code is
    in its end-of-stream envelope (flag 0x02) `{"error": {"code": ...}}`. gRPC's status is a
    `grpc-status` field: in the headers of a trailers-only response, in the trailers, or in
    gRPC-Web's trailer envelope (flag 0x80). Message envelopes are skipped, not kept. `code` is
    None for a success.
    """

    def __init__(self) -> None:
        self.done = False
        self.code: str | None = None
        self._mode = ""  # "error" (a unary error document), "stream", or "" (nothing to read)
        self._status = 0
        self._gzip = False
        self._buffer = bytearray()  # a unary error document
        self._envelopes: EnvelopeReader | None = None  # a stream's: keeps only its end
        self._trailers = False  # the response ends with an http.response.trailers message

    def feed(self, message: Message) -> None:
        if self.done:
            return
        if message["type"] == "http.response.trailers":
            fields = cast("list[Any]", message.get("headers", []))
            self._grpc_status({bytes(k).lower(): bytes(v) for k, v in fields})
            if not message.get("more_trailers", False):
                self.done = True
        elif message["type"] == "http.response.start":
            self._start(message)
        elif message["type"] == "http.response.body":
            body = cast("bytes", message.get("body", b""))
            if self._mode == "error":
                if len(self._buffer) + len(body) <= _MAX_ERROR_BYTES:
                    self._buffer += body
            elif self._envelopes is not None:
                for frame in self._envelopes.feed(body):
                    self._envelope_done(frame)
            if not message.get("more_body", False) and not self._trailers:
                self._finish()

    def _start(self, message: Message) -> None:
        self._status = int(message["status"])
        headers = {
            bytes(k).lower(): bytes(v) for k, v in cast("list[Any]", message.get("headers", []))
        }
        content_type = headers.get(b"content-type", b"").decode("latin-1").lower()
        self._gzip = headers.get(b"content-encoding", b"").strip().lower() == b"gzip"
        if content_type.startswith("application/connect+"):
            self._mode = "stream"
            self._envelopes = EnvelopeReader(keep=self._keeps)
        elif content_type.startswith("application/grpc"):
            self._mode = "grpc"
            self._envelopes = EnvelopeReader(keep=self._keeps)
            self._trailers = bool(message.get("trailers", False))
            self._grpc_status(headers)
        elif self._status != 200:
            self._mode = "error" if content_type.startswith("application/json") else ""

    def _keeps(self, flags: int, length: int) -> bool:
        """Only the end of a stream is read (messages are skipped as they pass), and only
        up to _MAX_ERROR_BYTES (a larger one records no code)."""
        end = _GRPC_WEB_TRAILER if self._mode == "grpc" else FLAG_END_STREAM
        return bool(flags & end) and length <= _MAX_ERROR_BYTES

    def _grpc_status(self, fields: dict[bytes, bytes]) -> None:
        status = fields.get(b"grpc-status")
        if status is not None:
            name = _GRPC_CODES.get(status.strip().decode("latin-1"), "unknown")
            self.code = None if status.strip() == b"0" else name

    def _envelope_done(self, frame: Envelope) -> None:
        if frame.payload is None:
            return
        if self._mode == "grpc":
            lines = frame.payload.split(b"\r\n")
            pairs = (line.partition(b":") for line in lines)
            self._grpc_status({k.strip().lower(): v.strip() for k, _, v in pairs})
        else:
            compressed = frame.flags & FLAG_COMPRESSED
            payload = _inflate(frame.payload) if compressed else frame.payload
            with contextlib.suppress(ValueError):  # unreadable: no code to record
                error = end_stream_error(payload)
                self.code = None if error is None else error[0]

    def _finish(self) -> None:
        self.done = True
        if self._mode in {"stream", "grpc"} or self._status == 200:
            return
        payload = _inflate(bytes(self._buffer)) if self._gzip else self._buffer
        self.code = unary_error(self._status, payload if self._mode == "error" else None)[0]


def _inflate(data: bytes) -> bytes:
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error):
        return b""
