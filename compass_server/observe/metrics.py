"""Prometheus metrics (docs/operating/metrics.md); the per-RPC access log is `observe/access_log.py`.

One `Metrics` per app, on its own CollectorRegistry (no process-global state). What it knows
about asks (when each was created and first viewed, which reached their outcome) it keeps in
memory per process: a server restart or an ask created through another process simply goes
unobserved in the time-to-answer / time-to-first-view histograms.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Final, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.responses import Response

from compass_server.domain.limits import DELIVERY_STATE_NAMES
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Iterator
    from datetime import datetime

    from prometheus_client.metrics_core import Metric
    from starlette.requests import Request

    from compass_server.store import AskRow

V = TypeVar("V")

STREAM_KINDS: Final = frozenset({"WatchChannel", "WatchAsk"})
"""The streaming RPCs `compass_live_streams` counts (by `observe/access_log.RpcObserver`)."""
_ASK_BUCKETS: Final = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600)
_RECEIPT_BUCKETS: Final = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600)
"""A receipt normally follows its answer within a second (the bridge reports as it hands
the answer over); the long tail is a bridge that was away."""
_PUSH_BUCKETS: Final = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600)
"""An ask's push normally leaves within the worker's poll interval; the tail is retries."""
PUSH_RESULTS: Final = ("sent", "skipped", "retried", "failed", "gone")
EMAIL_RESULTS: Final = ("sent", "skipped", "retried", "failed")
REPLY_OUTCOMES: Final = (
    ("answered", ""),
    ("declined", ""),
    ("not_understood", ""),
    ("ended", ""),
    ("refused", "unknown_token"),
    ("refused", "automatic"),
    ("refused", "wrong_sender"),
    ("refused", "no_dkim"),
    ("refused", "not_allowed"),
)
_PENDING_CACHE_SECONDS: Final = 5.0
REMEMBERED_ASKS: Final = 100_000
"""Ask ids kept per table (created, viewed, final): about 10 MB at most."""
_FINAL_NAMES: Final = {
    comms_pb2.ASK_STATUS_ANSWERED: "answered",
    comms_pb2.ASK_STATUS_DECLINED: "declined",
    comms_pb2.ASK_STATUS_WITHDRAWN: "withdrawn",
    comms_pb2.ASK_STATUS_TIMED_OUT: "timed_out",
    comms_pb2.ASK_STATUS_EXPIRED: "expired",
}


class Metrics:
    """The app's metrics, on a dedicated registry."""

    def __init__(
        self,
        clock: Callable[[], datetime],
        *,
        pool_in_use: Callable[[], int | None] = lambda: None,
        count_pending: Callable[[], Awaitable[int]] | None = None,
        remember: int = REMEMBERED_ASKS,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._clock = clock
        self._count_pending = count_pending
        self._pending: tuple[float, int] | None = None
        # Bounded, oldest forgotten first: an ask that ends in another process (or never) must
        # not hold memory here forever. Forgetting costs at most one observation.
        self._created: _Recent[datetime] = _Recent(remember)
        self._viewed: _Recent[None] = _Recent(remember)
        self._final: _Recent[None] = _Recent(remember)
        self._receipts: _Recent[None] = _Recent(remember)
        r = self.registry
        self.rpc_total = Counter(
            "compass_rpc", "RPCs served, by method and Connect code", ["method", "code"], registry=r
        )
        self.rpc_seconds = Histogram(
            "compass_rpc_duration_seconds",
            "RPC duration (a stream's: its whole life), by method and Connect code",
            ["method", "code"],
            registry=r,
        )
        self.streams = Gauge(
            "compass_live_streams", "Open watch streams, by kind", ["kind"], registry=r
        )
        for kind in STREAM_KINDS:
            self.streams.labels(kind=kind)
        self.listener_reconnects = Counter(
            "compass_listener_reconnects",
            "Times the change listener (re)connected after the first time",
            registry=r,
        )
        self.asks_created = Counter("compass_asks_created", "Asks created", registry=r)
        self.outcomes = Counter(
            "compass_ask_outcomes",
            "Asks that reached an outcome, by status",
            ["status"],
            registry=r,
        )
        for name in _FINAL_NAMES.values():
            self.outcomes.labels(status=name)
        self.questions_answered = Counter(
            "compass_questions_answered", "Questions answered through RespondToAsk", registry=r
        )
        self.questions_other = Counter(
            "compass_questions_answered_other",
            'Questions answered through RespondToAsk with free text ("Other")',
            registry=r,
        )
        self.auto_picks = Counter(
            "compass_questions_auto_picked",
            "Questions recorded timed_out by CloseAsk TIMED_OUT (the runtime's automatic pick)",
            registry=r,
        )
        self.watch_reads = Counter(
            "compass_watch_reads",
            "Store reads made by WatchChannel streams (shared: one per change and channel, "
            "however many watch it in this process)",
            registry=r,
        )
        self.sweeps = Counter(
            "compass_sweeps",
            "Deadline sweeps run by this process, by result (ok: ran, or found another process "
            "sweeping; failed: the database did not answer)",
            ["result"],
            registry=r,
        )
        for result in ("ok", "failed"):
            self.sweeps.labels(result=result)
        self.webhook_deliveries = Counter(
            "compass_webhook_deliveries",
            "Webhook delivery attempts by outcome (delivered, retry, failed)",
            ["outcome"],
            registry=r,
        )
        for outcome in ("delivered", "retry", "failed"):
            self.webhook_deliveries.labels(outcome=outcome)
        self.webhook_worker_up = Gauge(
            "compass_webhook_worker_up",
            "1 while this process's webhook delivery worker runs and ends its rounds; 0 when it "
            "stopped or stalled (no worker: 0)",
            registry=r,
        )
        self.webhook_worker_errors = Counter(
            "compass_webhook_worker_errors",
            "Unexpected errors in the webhook worker's rounds and attempts (it carries on)",
            registry=r,
        )
        self.pushes = Counter(
            "compass_push_deliveries",
            "Web Push attempts by outcome (sent: the push service took it; skipped: its ask "
            "ended first; retried; failed; gone: the device was unsubscribed, 404/410)",
            ["outcome"],
            registry=r,
        )
        for outcome in PUSH_RESULTS:
            self.pushes.labels(outcome=outcome)
        self.push_latency = Histogram(
            "compass_push_latency_seconds",
            "From an ask's storing to its push service accepting its push (each device)",
            buckets=_PUSH_BUCKETS,
            registry=r,
        )
        self.push_worker_up = Gauge(
            "compass_push_worker_up",
            "1 while this process's push worker runs and ends its rounds; 0 when it stopped "
            "or stalled (no worker: 0)",
            registry=r,
        )
        self.push_worker_errors = Counter(
            "compass_push_worker_errors",
            "Unexpected errors in the push worker's rounds and attempts (it carries on)",
            registry=r,
        )
        self.emails = Counter(
            "compass_emails",
            "Email attempts by outcome (sent: the relay took it; skipped: its ask ended "
            "first, or the person has no address or email asks off; retried; failed)",
            ["outcome"],
            registry=r,
        )
        for outcome in EMAIL_RESULTS:
            self.emails.labels(outcome=outcome)
        self.email_latency = Histogram(
            "compass_email_latency_seconds",
            "From an ask's storing to the relay accepting its mail (each person; the "
            "COMPASS_EMAIL_DELAY_SECONDS wait included)",
            buckets=_PUSH_BUCKETS,
            registry=r,
        )
        self.email_worker_up = Gauge(
            "compass_email_worker_up",
            "1 while this process's email sender runs and ends its rounds; 0 when it stopped "
            "or stalled (no sender: 0)",
            registry=r,
        )
        self.email_worker_errors = Counter(
            "compass_email_worker_errors",
            "Unexpected errors in the email sender's rounds and attempts (it carries on)",
            registry=r,
        )
        self.email_replies = Counter(
            "compass_email_replies",
            "Email replies by outcome (answered, declined, not_understood, ended, refused) "
            "and, when refused, why",
            ["outcome", "reason"],
            registry=r,
        )
        for outcome, reason in REPLY_OUTCOMES:
            self.email_replies.labels(outcome=outcome, reason=reason)
        self.time_to_answer = Histogram(
            "compass_ask_time_to_answer_seconds",
            "From an ask's creation to its answer (asks created by this process)",
            buckets=_ASK_BUCKETS,
            registry=r,
        )
        self.time_to_first_view = Histogram(
            "compass_ask_time_to_first_view_seconds",
            "From an ask's creation to the first time a participant was sent it",
            buckets=_ASK_BUCKETS,
            registry=r,
        )
        self.deliveries = Counter(
            "compass_ask_deliveries",
            "Delivery receipts of answered or declined asks, by state",
            ["state"],
            registry=r,
        )
        for name in DELIVERY_STATE_NAMES.values():
            self.deliveries.labels(state=name)
        self.answer_to_receipt = Histogram(
            "compass_ask_answer_to_receipt_seconds",
            "From an ask's stored answer (or decline) to its stored delivery receipt",
            buckets=_RECEIPT_BUCKETS,
            registry=r,
        )
        r.register(_Sampled(pool_in_use, lambda: self._pending))
        self._connected_once = False

    # -- listener --------------------------------------------------------------------------

    def listener_connected(self) -> None:
        if self._connected_once:
            self.listener_reconnects.inc()
        self._connected_once = True

    # -- asks --------------------------------------------------------------------------------

    def asks_seen(self, asks: Iterable[comms_pb2.Ask]) -> None:
        """After AppendMessage/UpdateMessage: count pending asks this process has not seen
        before (an update that carries an already-final ask counts nothing)."""
        for ask in asks:
            if (
                ask.ask_id
                and ask.status == comms_pb2.ASK_STATUS_PENDING
                and ask.ask_id not in self._created
                and ask.ask_id not in self._final
            ):
                self._created[ask.ask_id] = self._clock()
                self.asks_created.inc()

    def viewed(self, ask_ids: Iterable[str]) -> None:
        """A participant was sent these asks (ListMessages, GetAsk, WatchChannel)."""
        for ask_id in ask_ids:
            created = self._created.get(ask_id)
            if created is None or ask_id in self._viewed:
                continue
            self._viewed[ask_id] = None
            self.time_to_first_view.observe(_seconds(self._clock() - created))

    def outcome(self, row: AskRow) -> None:
        """After a final write (RespondToAsk, DeclineAsk, CloseAsk); retries count once."""
        ask = row.ask
        name = _FINAL_NAMES.get(ask.status)
        if name is None or ask.ask_id in self._final:
            return
        self._final[ask.ask_id] = None
        self.outcomes.labels(status=name).inc()
        created = self._created.pop(ask.ask_id, None)
        self._viewed.pop(ask.ask_id, None)
        if ask.status == comms_pb2.ASK_STATUS_ANSWERED:
            for question in ask.questions:
                self.questions_answered.inc()
                if question.custom_text:
                    self.questions_other.inc()
            if created is not None:
                self.time_to_answer.observe(_seconds(self._clock() - created))
        elif ask.status == comms_pb2.ASK_STATUS_TIMED_OUT:
            self.auto_picks.inc(sum(1 for q in ask.questions if q.timed_out))

    def delivery(self, row: AskRow) -> None:
        """After ReportDelivery: count the receipt by state, once (an identical repeat counts
        nothing more), and time it from the stored answer or decline to the stored receipt,
        so an ask answered through another process is timed too."""
        ask = row.ask
        name = DELIVERY_STATE_NAMES.get(ask.delivery.state)
        if not ask.HasField("delivery") or name is None or ask.ask_id in self._receipts:
            return
        self._receipts[ask.ask_id] = None
        self.deliveries.labels(state=name).inc()
        if ask.status == comms_pb2.ASK_STATUS_ANSWERED:
            since = ask.answered_at if ask.HasField("answered_at") else None
        else:
            since = ask.closed_at if ask.HasField("closed_at") else None
        if since is not None and ask.delivery.HasField("reported_at"):
            self.answer_to_receipt.observe(
                _seconds(ask.delivery.reported_at.ToDatetime() - since.ToDatetime())
            )

    def watch_webhook_worker(self, alive: Callable[[], bool] | None) -> None:
        """`compass_webhook_worker_up` reads `alive` at each scrape (None: no worker, 0)."""
        if alive is not None:
            self.webhook_worker_up.set_function(lambda: 1.0 if alive() else 0.0)

    def webhook_outcome(self, outcome: str) -> None:
        """One webhook delivery attempt ended: "delivered", "retry" or "failed"."""
        self.webhook_deliveries.labels(outcome=outcome).inc()

    def watch_push_worker(self, alive: Callable[[], bool] | None) -> None:
        """`compass_push_worker_up` reads `alive` at each scrape (None: no worker, 0)."""
        if alive is not None:
            self.push_worker_up.set_function(lambda: 1.0 if alive() else 0.0)

    def push_outcome(self, outcome: str) -> None:
        """One push attempt ended (PUSH_RESULTS)."""
        self.pushes.labels(outcome=outcome).inc()

    def watch_email_worker(self, alive: Callable[[], bool] | None) -> None:
        """`compass_email_worker_up` reads `alive` at each scrape (None: no sender, 0)."""
        if alive is not None:
            self.email_worker_up.set_function(lambda: 1.0 if alive() else 0.0)

    def email_outcome(self, outcome: str) -> None:
        """One mail attempt ended (EMAIL_RESULTS)."""
        self.emails.labels(outcome=outcome).inc()

    def email_reply(self, outcome: str, reason: str | None) -> None:
        """One reply reached the inbound listener and did `outcome` (REPLY_OUTCOMES)."""
        self.email_replies.labels(outcome=outcome, reason=reason or "").inc()

    def swept(self, ask_ids: Iterable[str] | None) -> None:
        """After a sweep: the asks it closed as EXPIRED (None: the sweep failed)."""
        self.sweeps.labels(result="failed" if ask_ids is None else "ok").inc()
        self._closed(ask_ids or (), "expired")

    def abandoned(self, ask_ids: Iterable[str]) -> None:
        """After the MCP leave sweep: the asks it WITHDREW (their agent stopped waiting)."""
        self._closed(ask_ids, "withdrawn")

    def _closed(self, ask_ids: Iterable[str], status: str) -> None:
        for ask_id in ask_ids:
            if ask_id in self._final:
                continue
            self._final[ask_id] = None
            self._created.pop(ask_id, None)
            self._viewed.pop(ask_id, None)
            self.outcomes.labels(status=status).inc()

    def remembered(self) -> int:
        """How many ask ids it holds (bounded by 4 x `remember`)."""
        return len(self._created) + len(self._viewed) + len(self._final) + len(self._receipts)

    # -- exposition --------------------------------------------------------------------------

    async def render(self) -> bytes:
        if self._count_pending is not None:
            now = time.monotonic()
            if self._pending is None or now - self._pending[0] > _PENDING_CACHE_SECONDS:
                try:
                    self._pending = (now, await self._count_pending())
                except Exception:  # noqa: BLE001 - a scrape must not fail on the database
                    logging.getLogger(__name__).warning("pending ask count failed")
        return generate_latest(self.registry)


def _seconds(delta: object) -> float:
    from datetime import timedelta

    return max(0.0, delta.total_seconds()) if isinstance(delta, timedelta) else 0.0


class _Sampled:
    """Gauges read at scrape time: pool connections in use, pending asks (cached)."""

    def __init__(
        self, pool_in_use: Callable[[], int | None], pending: Callable[[], tuple[float, int] | None]
    ) -> None:
        self._pool_in_use = pool_in_use
        self._pending = pending

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        in_use = self._pool_in_use()
        if in_use is not None:
            yield GaugeMetricFamily(
                "compass_db_pool_connections_in_use", "Pool connections in use", value=in_use
            )
        pending = self._pending()
        if pending is not None:
            yield GaugeMetricFamily(
                "compass_asks_pending", "Asks pending now (cached briefly)", value=pending[1]
            )


def metrics_endpoint(
    metrics: Metrics, token: str | None
) -> Callable[[Request], Awaitable[Response]]:
    """GET /metrics: 404 without a token configured, 401 without the right Bearer token."""

    async def endpoint(request: Request) -> Response:
        if not token:
            return Response("Not Found", status_code=404)
        header = request.headers.get("authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode(), token.encode()
        ):
            return Response("Unauthorized", status_code=401, headers={"www-authenticate": "Bearer"})
        return Response(await metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return endpoint


def open_metrics_endpoint(metrics: Metrics) -> Callable[[Request], Awaitable[Response]]:
    """GET /metrics without a token: for the separate COMPASS_METRICS_PORT server."""

    async def endpoint(_request: Request) -> Response:
        return Response(await metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return endpoint


class _Recent(OrderedDict[str, V]):
    """A dict that forgets its oldest entries beyond `limit` (insertion order). Eight lines of
    OrderedDict, not worth a dependency such as cachetools."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self._limit = limit

    def __setitem__(self, key: str, value: V) -> None:
        super().__setitem__(key, value)
        while len(self) > self._limit:
            self.popitem(last=False)
