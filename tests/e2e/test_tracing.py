"""OpenTelemetry traces (docs/operating/tracing.md; compass_server/observe/tracing.py), over real HTTP on a real
database: the app served by uvicorn in-process with an in-memory exporter, and `compass serve`
exporting over OTLP/HTTP to a collector stub on 127.0.0.1.

- A Connect call is one SERVER span named by its method path, with rpc.* attributes and, when
  it fails, its Connect code (unary errors and a stream's end-of-stream error alike).
- Its SQL statements are CLIENT spans, children of it in its trace; the background sweeper's
  are not traced at all.
- No span holds the bearer token, a SQL parameter or the query string, even when the standard
  variables ask the HTTP instrumentation to capture every header.
- With tracing off, nothing of OpenTelemetry is imported (the runtime install lacks it).
"""

from __future__ import annotations

import asyncio
import contextvars
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
from typing import TYPE_CHECKING

import asyncpg
import httpx
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from compass_server.app import create_app
from compass_server.config import Settings
from compass_server.observe import tracing as telemetry
from tests import _server
from tests._wait import eventually
from tests.e2e._asks import answer, post_ask, respond
from tests.e2e._connect import auth, call, open_stream, path

if TYPE_CHECKING:
    from collections.abc import Generator

    from opentelemetry.sdk.trace import ReadableSpan

RESPOND = "compass.v1.CommsService/RespondToAsk"
WATCH_ASK = "compass.v1.AgentService/WatchAsk"
ANSWERS = (answer("db", "1"), answer("features", "0"))
QUERY_SECRET = "query-secret-7f3a"


def _attribute_text(spans: tuple[ReadableSpan, ...]) -> str:
    """Every span's name, attribute names and values, and event attributes, as one text."""
    parts: list[str] = []
    for span in spans:
        parts.append(span.name)
        for key, value in (span.attributes or {}).items():
            parts.append(f"{key}={value!r}")
        for event in span.events:
            parts.extend(f"{k}={v!r}" for k, v in (event.attributes or {}).items())
    return "\n".join(parts)


def _one(spans: list[ReadableSpan]) -> ReadableSpan:
    assert len(spans) == 1, [s.name for s in spans]
    return spans[0]


async def test_rpc_spans_carry_connect_codes_and_sql_children_without_secrets(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An operator asking the HTTP instrumentation for every header must still not get the token.
    monkeypatch.setenv("OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SERVER_REQUEST", ".*")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SERVER_RESPONSE", ".*")
    world = await _server.seed_world(database_url)
    exporter = InMemorySpanExporter()
    tracing = telemetry.with_processor(SimpleSpanProcessor(exporter))
    # A sweep every 20 ms: its statements must not show up as traces of their own.
    settings = Settings(database_url=database_url, sweep_interval_seconds=0.02)
    app = create_app(settings, tracing=tracing)
    async with (
        _server.in_process(app) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        ask_id = await post_ask(client, world.agent.token, world.channel_id)
        answered = await call(client, "RespondToAsk", respond(ask_id, *ANSWERS), world.human.token)
        assert answered.ok, answered
        again = await call(client, "RespondToAsk", respond(ask_id, *ANSWERS), world.human2.token)
        assert not again.ok
        response = await client.post(
            f"{path('RespondToAsk')}?secret={QUERY_SECRET}",
            content=json.dumps(respond(ask_id, *ANSWERS)).encode(),
            headers={"content-type": "application/json", **auth("cmp_not_a_token")},
        )
        assert response.status_code == 401, response.text
        async with open_stream(
            client, "WatchAsk", {"askId": "ask_missing"}, world.agent.token
        ) as s:
            missing = (await s.end()).error()
        assert missing is not None
        assert missing["code"] == "not_found"
        assert (await client.get("healthz")).status_code == 200
        # Sweeps running untraced are the thing under test: let several run.
        registry = app.state.metrics.registry

        def swept() -> float:
            return registry.get_sample_value("compass_sweeps_total", {"result": "ok"}) or 0

        start = swept()
        await eventually(lambda: swept() >= start + 5, "five more sweeps")
    spans = exporter.get_finished_spans()
    assert spans, "no span was exported"

    servers = [s for s in spans if s.kind is SpanKind.SERVER]
    responds = [s for s in servers if s.name == RESPOND]
    assert len(responds) == 3, [s.name for s in servers]
    ok, refused, unauthenticated = responds
    for span in responds:
        attributes = span.attributes or {}
        assert attributes["rpc.system"] == "connect_rpc"
        assert attributes["rpc.service"] == "compass.v1.CommsService"
        assert attributes["rpc.method"] == "RespondToAsk"
        assert span.resource.attributes["service.name"] == "compass"

    assert (ok.attributes or {})["http.status_code"] == 200
    assert "rpc.connect_rpc.error_code" not in (ok.attributes or {})
    assert ok.status.status_code is StatusCode.UNSET
    assert (refused.attributes or {})["rpc.connect_rpc.error_code"] == again.code
    assert (refused.attributes or {})["http.status_code"] == again.status
    assert refused.status.status_code is StatusCode.UNSET  # the client's error, not ours
    assert (unauthenticated.attributes or {})["rpc.connect_rpc.error_code"] == "unauthenticated"

    watch = _one([s for s in servers if s.name == WATCH_ASK])
    assert (watch.attributes or {})["rpc.connect_rpc.error_code"] == "not_found"
    assert {s.name for s in servers} == {
        "compass.v1.AgentService/AppendMessage",
        RESPOND,
        WATCH_ASK,
    }, "the probe is not traced; every RPC span is named by its method path"

    # The answer's SQL: CLIENT spans, children of its RPC span, in its trace.
    assert ok.context is not None
    children = [s for s in spans if s.parent is not None and s.parent.span_id == ok.context.span_id]
    sql = [s for s in children if s.kind is SpanKind.CLIENT]
    assert sql, "no SQL span under RespondToAsk"
    assert children == sql
    for span in sql:
        assert span.context is not None
        assert span.context.trace_id == ok.context.trace_id
        assert (span.attributes or {})["db.system"] == "postgresql"
    statements = [str((s.attributes or {}).get("db.statement", "")) for s in sql]
    assert any("answers" in statement for statement in statements), statements

    # Every span belongs to a request's trace: the sweeper's statements are untraced.
    request_traces = {s.context.trace_id for s in servers if s.context is not None}
    assert {s.context.trace_id for s in spans if s.context is not None} == request_traces

    # No token, no SQL parameter, no header, no query string anywhere.
    text = _attribute_text(spans)
    for secret in (
        world.agent.token,
        world.human.token,
        world.human2.token,
        "cmp_not_a_token",
        "Bearer",
        ask_id,  # a parameter of the answer's statements (and in the request body)
        world.human.account_id,  # a parameter: who answered
        QUERY_SECRET,
    ):
        assert secret not in text, secret
    assert "parameters" not in text
    assert "http.request.header" not in text
    assert "http.response.header" not in text


async def test_a_failed_statement_records_no_value(database_url: str) -> None:
    """asyncpg's messages quote values: a SQL span records its error, not the message."""
    exporter = InMemorySpanExporter()
    tracing = telemetry.with_processor(SimpleSpanProcessor(exporter))
    secret = "not-an-int-5e1d"

    async def failing() -> None:
        conn = await asyncpg.connect(database_url)
        try:
            with pytest.raises(asyncpg.DataError, match=secret):  # the message holds it
                await conn.fetchval("SELECT $1::int", secret)
        finally:
            await conn.close()

    with tracing.running():
        # A context of its own, as a request's: the lifespan's context is untraced.
        await asyncio.create_task(failing(), context=contextvars.Context())
    span = _one([s for s in exporter.get_finished_spans() if s.name == "SELECT"])
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["db.statement"] == "SELECT $1::int"
    assert secret not in f"{_attribute_text((span,))}\n{span.status.description}"


def test_tracing_off_imports_only_the_opentelemetry_api(database_url: str) -> None:
    """create_app, the lifespan and an MCP tool call, in a fresh interpreter: the only
    OpenTelemetry modules loaded are the API's (the `mcp` SDK imports `opentelemetry-api`),
    none of the SDK, an exporter or an instrumentation, and no tracer provider is set, so
    nothing is recorded (docs/operating/tracing.md)."""
    script = """
import asyncio, importlib.metadata, sys
import httpx
from compass_server.app import create_app
from compass_server.config import Settings
from compass_server.store import AccountKind
from compass_server.store.postgres import PostgresStore

async def main():
    async with PostgresStore(sys.argv[1]) as store:
        workspace = await store.create_workspace("w")
        channel = await store.create_channel(workspace.workspace_id, "c")
        agent, token = await store.create_account(AccountKind.AGENT, "a")
        await store.add_participant(channel.channel_id, agent.account_id)
    app = create_app(Settings(database_url=sys.argv[1]))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as http:
            reply = await http.post(
                "/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                    "name": "ask", "arguments": {
                        "questions": [{"id": "q", "question": "?", "options": []}],
                        "wait_seconds": 0}}},
                headers={"authorization": f"Bearer {token}",
                         "accept": "application/json, text/event-stream",
                         "mcp-protocol-version": "2025-06-18"},
            )
            assert reply.status_code == 200 and '\\"pending\\"' in reply.text, reply.text

asyncio.run(main())
api = {
    str(f).removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    for f in importlib.metadata.files("opentelemetry-api") or ()
    if str(f).endswith(".py")
}
loaded = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
from opentelemetry import trace
print("api modules:", len(loaded))
# Namespace packages (opentelemetry, opentelemetry.util, ...) have no file of their own.
files = {m: getattr(sys.modules[m], "__file__", None) for m in loaded}
print("outside the api:", [m for m in loaded if m not in api and files[m] is not None])
print("provider:", type(trace.get_tracer_provider()).__name__)
"""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != telemetry.SWITCH
    }
    result = subprocess.run(
        [sys.executable, "-c", script, database_url],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "outside the api: []" in result.stdout, result.stdout
    assert "provider: ProxyTracerProvider" in result.stdout, result.stdout


@pytest.mark.parametrize(
    ("environ", "on"),
    [
        ({}, False),
        ({"COMPASS_TRACING": "1"}, True),
        ({"COMPASS_TRACING": "0", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, False),
        ({"OTEL_TRACES_EXPORTER": "console"}, False),
    ],
)
def test_what_turns_tracing_on(environ: dict[str, str], *, on: bool) -> None:
    assert telemetry.requested(environ) is on


def test_unusable_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="COMPASS_TRACING"):
        telemetry.requested({"COMPASS_TRACING": "maybe"})
    with pytest.raises(ValueError, match="http/protobuf"):
        telemetry.from_environment({"COMPASS_TRACING": "1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})


class _Collector(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: keeps every ExportTraceServiceRequest it is sent."""

    received: list[trace_service_pb2.ExportTraceServiceRequest]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        type(self).received.append(request)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()
        self.wfile.write(trace_service_pb2.ExportTraceServiceResponse().SerializeToString())

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Generator[tuple[str, list[trace_service_pb2.ExportTraceServiceRequest]]]:
    received: list[trace_service_pb2.ExportTraceServiceRequest] = []
    handler = type("Collector", (_Collector,), {"received": received})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        thread.join(timeout=5)
        server.server_close()


async def test_compass_serve_exports_over_otlp_http(
    database_url: str,
    collector: tuple[str, list[trace_service_pb2.ExportTraceServiceRequest]],
) -> None:
    endpoint, received = collector
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    with _server.serve(database_url, env=env) as server:
        world = await _server.seed_world(database_url)
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            ask_id = await post_ask(client, world.agent.token, world.channel_id)
            reply = await call(client, "RespondToAsk", respond(ask_id, *ANSWERS), world.human.token)
            assert reply.ok, reply
        server.process.send_signal(signal.SIGTERM)
        await asyncio.to_thread(server.process.wait, 15)
    exported = [
        (resource.resource, span)
        for request in received
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    names = sorted(span.name for _, span in exported)
    resource, span = next(((r, s) for r, s in exported if s.name == RESPOND), (None, None))
    assert resource is not None, names
    assert span is not None
    service = {a.key: a.value.string_value for a in resource.attributes}["service.name"]
    assert service == "compass"
    attributes = {a.key: a.value.string_value for a in span.attributes}
    assert attributes["rpc.method"] == "RespondToAsk"
    children = [s for _, s in exported if s.parent_span_id == span.span_id]
    assert children, "the SQL spans did not reach the collector"
    assert world.human.token.encode() not in b"".join(r.SerializeToString() for r in received)
