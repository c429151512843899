"""AgentService for the bridge and `compass mcp`: connectrpc's generated client
(`gen.compass.v1.agent_connect.AgentServiceClient`, on pyqwest), the errors its callers meet,
and the one retry of a call (`call_with_retry`, on `backoff`).

The errors, as the agent side meets them (every caller catches these, never the library's):

    Exception
    ├── RpcError              one call failed: `code` is the Connect code ("unavailable", ...),
    │                         `retryable` says whether repeating it may succeed
    ├── GaveUpError           a call failed for good (not retryable, or out of bounded
    │                         retries); `error` is its last RpcError
    ├── FatalServerError      the server refuses the agent itself (token, account, channel):
    │                         no call can succeed, the caller stops
    ├── AskNotPostedError     the message holding an ask was not stored, or its ask cannot be
    │                         watched: there is no ask to wait on
    └── SupersededError       a newer request replaced the one being retried (the Poster's
                              snapshots)

`_rpc_error` is the one place the library's `ConnectError` becomes an `RpcError` (or the
`CancelledError` it was); `call_with_retry` the one place an `RpcError` becomes a retry, a
`GaveUpError` or a `FatalServerError`; `AgentApi` is what the callers need of the client
(tests fake it).

The generated client speaks the protocol: the envelopes, the codec, content types, the
HTTP-to-code table, the end-of-stream message, the message size limit. Before the generated client the
bridge spoke Connect itself on httpx, because connect-python 0.9's client mis-handled three
things. connectrpc 0.13 was re-evaluated against each, with a test that asserts the library's
own behaviour (tests/bridge/test_client.py, `test_the_library_*`: when an upgrade fixes one,
its test fails and the code for it here can go):

1. Unforeseen failures: still every exception the library did not foresee (a bug, a malformed
   end-of-stream message) becomes UNAVAILABLE, retried forever, carrying the exception's text;
   an undecodable response becomes INVALID_ARGUMENT, as if the request were at fault. Kept by
   hand: `_rpc_error` (INTERNAL, whose retries are bounded, named by the exception's type only).
2. Cancellation: still a cancelled call raises `ConnectError(CANCELED)` instead of
   `CancelledError`, so the task is not cancelled and `asyncio.timeout` or a TaskGroup around a
   call breaks. Kept by hand: `_rpc_error` re-raises the `CancelledError`.
3. Stream timeout: the client's `timeout_ms` still bounds a whole stream. Adopted all the same:
   pyqwest's transport has a read timeout, which bounds each read, i.e. the silence between
   messages (`transport()`); WatchAsk runs without `timeout_ms`.

`retryable(code)` and `fatal(code)` say what a caller should do with an `RpcError` (see those
functions for the reasoning); `backoff()` is the schedule the agent side retries on.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

import pyqwest
import stamina
from connectrpc.errors import ConnectError

from gen.compass.v1 import agent_pb2
from gen.compass.v1.agent_connect import AgentServiceClient

if TYPE_CHECKING:
    from collections.abc import AsyncIterable, Awaitable, Callable, Sequence

    from gen.compass.v1 import comms_pb2

__all__ = [
    "MAX_BOUNDED_RETRIES",
    "AgentApi",
    "AgentClient",
    "AskNotPostedError",
    "FatalServerError",
    "GaveUpError",
    "RpcError",
    "SupersededError",
    "backoff",
    "call_with_retry",
    "fatal",
    "retryable",
    "transport",
]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

MAX_MESSAGE_BYTES: Final = 64 * 1024 * 1024
"""Largest response message accepted (the server caps requests at 1 MiB by default)."""

CONNECT_TIMEOUT_SECONDS: Final = 5.0
UNARY_TIMEOUT_MS: Final = 30_000
"""A unary call that takes longer is abandoned and retried (DEADLINE_EXCEEDED)."""
SERVER_KEEPALIVE_SECONDS: Final = 30.0
"""The server sends a WatchAsk keepalive at least this often while an ask is unchanged."""
READ_TIMEOUT_SECONDS: Final = 3 * SERVER_KEEPALIVE_SECONDS
"""A WatchAsk silent for three keepalive intervals is dead (a connection that died without a
reset): the bridge reconnects. (A server older than WatchAsk's keepalive sends nothing while an
ask is unchanged: there the bridge reconnects, with a warning, every 90 s.)"""

# Transient: the same request can succeed later. A retry of AppendMessage is safe because
# the server makes it idempotent per client_message_id; UpdateMessage replaces the whole
# block set, so repeating it is harmless too; repeating the same CloseAsk is OK by contract.
_RETRYABLE: Final = frozenset(
    {"unavailable", "deadline_exceeded", "aborted", "resource_exhausted", "internal", "unknown"}
)
# The caller's credentials or channel are wrong: every later call would fail the same way.
_FATAL: Final = frozenset({"unauthenticated", "permission_denied"})
MAX_BOUNDED_RETRIES: Final = 5
"""Retries of a call failing with INTERNAL or UNKNOWN before it is given up on."""
_LOG_EVERY: Final = 10  # after the first failure, log every n-th retry of the same call


def retryable(code: str) -> bool:
    """Whether a call that failed with `code` may succeed if simply repeated.

    UNAVAILABLE, DEADLINE_EXCEEDED (also our own timeouts), ABORTED (a serialization
    conflict), RESOURCE_EXHAUSTED, and connection failures (reported as UNAVAILABLE) are
    transient. INTERNAL and UNKNOWN (HTTP 5xx) are retried too, but callers bound how often:
    an unforeseen server error can be a deterministic bug, and retrying one frame forever
    would stall every frame behind it. Everything else (INVALID_ARGUMENT, ALREADY_EXISTS,
    FAILED_PRECONDITION, NOT_FOUND, ...) describes the request itself and cannot succeed on
    a repeat.
    """
    return code in _RETRYABLE


def fatal(code: str) -> bool:
    """Whether `code` means the bridge cannot post anything at all (bad token or channel)."""
    return code in _FATAL


def bounded(code: str) -> bool:
    """Whether retries of `code` are bounded (see `retryable`)."""
    return code in {"internal", "unknown"}


class RpcError(Exception):
    """A Connect call failed: `code` is the Connect code ("unavailable", ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    @property
    def retryable(self) -> bool:
        return retryable(self.code)


class GaveUpError(Exception):
    """A call failed for good (not retryable, or out of bounded retries)."""

    def __init__(self, error: RpcError) -> None:
        super().__init__(str(error))
        self.error = error


class FatalServerError(Exception):
    """The server refuses the bridge itself (token, account or channel); nothing can post."""


class AskNotPostedError(Exception):
    """The message holding an ask could not be stored, so the ask has no id to wait on."""


class SupersededError(Exception):
    """A newer request replaced the one being retried (`call_with_retry`'s `superseded`)."""


def backoff(
    on: type[Exception] | tuple[type[Exception], ...], *, initial: float, cap: float
) -> AsyncIterable[stamina.Attempt]:
    """Attempts of a block retried forever while it raises `on`: capped exponential backoff
    with jitter (stamina), the n-th wait min(`cap`, `initial` * 2^(n-1) + U(0, `initial`)),
    so many bridges do not retry in step. The caller decides what is worth retrying (it
    raises `on` only then) and bounds it itself where it must.

    Use as `async for attempt in backoff(...): with attempt: ...`; `attempt.num` counts
    from 1 and `attempt.next_wait` is the wait after this attempt, without the jitter.
    """
    return stamina.retry_context(
        on=on, attempts=None, timeout=None, wait_initial=initial, wait_max=cap, wait_jitter=initial
    )


@functools.cache
def transport(*, read_timeout: float = READ_TIMEOUT_SECONDS) -> pyqwest.HTTPTransport:
    """The HTTP transport of the bridge's calls (one per process and read timeout, like
    pyqwest's default one): the system's CAs for https, a connect timeout, and the read
    timeout that bounds the silence on a WatchAsk (reason 3 in the module's docstring)."""
    return pyqwest.HTTPTransport(
        tls_include_system_certs=True,
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=read_timeout,
    )


class AgentApi(Protocol):
    """What the agent side needs of AgentService (`AgentClient`; tests fake it)."""

    async def append_message(
        self, channel_id: str, frame: comms_pb2.MessageUpdated
    ) -> comms_pb2.Message: ...

    async def update_message(self, frame: comms_pb2.MessageUpdated) -> comms_pb2.Message: ...

    def watch_ask(self, ask_id: str) -> AsyncGenerator[comms_pb2.Ask]: ...

    async def close_ask(
        self,
        ask_id: str,
        status: comms_pb2.AskStatus,
        reason: str,
        answers: Sequence[comms_pb2.AskQuestionAnswer] = (),
    ) -> comms_pb2.Ask: ...

    async def report_delivery(
        self, ask_id: str, state: comms_pb2.DeliveryState, detail: str, payload: str
    ) -> comms_pb2.Ask: ...


class AgentClient:
    """The AgentService calls the bridge makes, with the agent's bearer token."""

    def __init__(self, base_url: str, token: str, *, http: pyqwest.Client | None = None) -> None:
        """`http`: the pyqwest client to send with (tests pass one with their own transport);
        default: one on `transport()`."""
        self._client = AgentServiceClient(
            base_url.rstrip("/"),
            http_client=http or pyqwest.Client(transport()),
            # Identity both ways, as before: small messages, mostly on loopback or a LAN.
            send_compression=None,
            accept_compression=(),
            read_max_bytes=MAX_MESSAGE_BYTES,
        )
        # Never logged; neither library logs headers.
        self._headers = {"authorization": f"Bearer {token}"}

    async def append_message(
        self, channel_id: str, frame: comms_pb2.MessageUpdated
    ) -> comms_pb2.Message:
        request = agent_pb2.AppendMessageRequest(channel_id=channel_id, frame=frame)
        call = self._client.append_message(
            request, headers=self._headers, timeout_ms=UNARY_TIMEOUT_MS
        )
        return (await _unary("AppendMessage", call)).message

    async def get_channel(self, channel_id: str) -> comms_pb2.Channel:
        """GetChannel: the channel, if this agent may post in it (one attempt)."""
        request = agent_pb2.GetChannelRequest(channel_id=channel_id)
        call = self._client.get_channel(request, headers=self._headers, timeout_ms=UNARY_TIMEOUT_MS)
        return (await _unary("GetChannel", call)).channel

    async def update_message(self, frame: comms_pb2.MessageUpdated) -> comms_pb2.Message:
        request = agent_pb2.UpdateMessageRequest(frame=frame)
        call = self._client.update_message(
            request, headers=self._headers, timeout_ms=UNARY_TIMEOUT_MS
        )
        return (await _unary("UpdateMessage", call)).message

    async def close_ask(
        self,
        ask_id: str,
        status: comms_pb2.AskStatus,
        reason: str,
        answers: Sequence[comms_pb2.AskQuestionAnswer] = (),
    ) -> comms_pb2.Ask:
        """CloseAsk: the asking agent ends a pending ask as WITHDRAWN or TIMED_OUT.

        One attempt; the caller retries (asks.AgentAsks, with `call_with_retry`).
        """
        request = agent_pb2.CloseAskRequest(
            ask_id=ask_id, status=status, reason=reason, answers=answers
        )
        call = self._client.close_ask(request, headers=self._headers, timeout_ms=UNARY_TIMEOUT_MS)
        return (await _unary("CloseAsk", call)).ask

    async def report_delivery(
        self, ask_id: str, state: comms_pb2.DeliveryState, detail: str, payload: str
    ) -> comms_pb2.Ask:
        """ReportDelivery: what the runtime received of a final ask's answer or decline.

        One attempt; the caller retries (asks.AgentAsks, with `call_with_retry`).
        """
        request = agent_pb2.ReportDeliveryRequest(
            ask_id=ask_id, state=state, detail=detail, payload=payload
        )
        call = self._client.report_delivery(
            request, headers=self._headers, timeout_ms=UNARY_TIMEOUT_MS
        )
        return (await _unary("ReportDelivery", call)).ask

    async def watch_ask(self, ask_id: str) -> AsyncGenerator[comms_pb2.Ask]:
        """Yield the ask's states until the server ends the stream. No `timeout_ms`: the
        transport's read timeout bounds the silence between messages instead.

        Raises:
            RpcError: the call failed, or the stream broke or ended with an error.
        """
        request = agent_pb2.WatchAskRequest(ask_id=ask_id)
        stream = self._client.watch_ask(request, headers=self._headers)
        try:
            async for message in stream:
                if message.keepalive and not message.HasField("ask"):
                    continue  # it has done its work: the read timeout starts again
                yield message.ask
        except ConnectError as exc:
            raise _rpc_error("WatchAsk", exc) from exc
        finally:
            if isinstance(stream, AsyncGenerator):  # it is one: closed, also when left early
                await stream.aclose()


async def call_with_retry(
    what: str,
    call: Callable[[], Awaitable[_T]],
    *,
    initial_backoff: float,
    max_backoff: float,
    not_found_is_fatal: bool = False,
    superseded: Callable[[], bool] | None = None,
) -> _T:
    """`call()`, retried with backoff while it fails transiently (see `retryable`).

    Raises:
        GaveUpError: the call failed for good.
        SupersededError: `superseded()` turned true before an attempt.
        FatalServerError: the server refuses the bridge itself.
    """
    bounded_failures = 0
    async for attempt in backoff(RpcError, initial=initial_backoff, cap=max_backoff):
        with attempt:
            if superseded is not None and superseded():
                raise SupersededError
            try:
                result = await call()
            except RpcError as exc:
                if fatal(exc.code) or (not_found_is_fatal and exc.code == "not_found"):
                    raise FatalServerError(f"{what}: the server refused it ({exc})") from exc
                bounded_failures += bounded(exc.code)
                if not exc.retryable or bounded_failures > MAX_BOUNDED_RETRIES:
                    raise GaveUpError(exc) from exc
                if attempt.num == 1 or attempt.num % _LOG_EVERY == 0:
                    logger.warning(
                        "%s failed (%s); retrying in %.1fs (attempt %d)",
                        what,
                        exc,
                        attempt.next_wait,
                        attempt.num,
                    )
                raise  # retryable: the backoff waits, then tries again
            if attempt.num > 1:
                logger.info("%s succeeded after %d retries", what, attempt.num - 1)
            return result
    raise AssertionError("unreachable: the backoff retries until the call returns or raises")


async def _unary(method: str, call: Awaitable[_T]) -> _T:
    try:
        return await call
    except ConnectError as exc:
        raise _rpc_error(method, exc) from exc


# What pyqwest raises when the connection fails, breaks or times out (TimeoutError and
# ConnectionError are OSErrors): the library's code for these stands (UNAVAILABLE,
# DEADLINE_EXCEEDED, or a stream reset's own).
_TRANSPORT_FAILURES: Final = (
    OSError,
    pyqwest.RemoteProtocolError,
    pyqwest.ReadError,
    pyqwest.WriteError,
)


def _rpc_error(method: str, exc: ConnectError) -> BaseException:
    """What the bridge raises for the library's `exc` (hand-written: reasons 1 and 2 in the
    module's docstring).

    A `ConnectError` without a cause is the server's own error or the library's reading of
    the protocol: kept as it is. One the library made of another exception is kept by code
    only for a transport failure, named by the exception's type (its text may name hosts and
    paths); a cancellation is raised again as the `CancelledError` it was; anything else is
    INTERNAL, whose retries the callers bound (the library would say UNAVAILABLE and retry a
    deterministic failure for ever).
    """
    cause = exc.__cause__
    if cause is None:
        return RpcError(exc.code.value, exc.message)
    if isinstance(cause, asyncio.CancelledError):
        return cause
    if isinstance(cause, _TRANSPORT_FAILURES):
        return RpcError(exc.code.value, f"{method}: {type(cause).__name__}")
    return RpcError("internal", f"{method}: {type(cause).__name__}")
