"""AgentService over Connect (protobuf binary) on httpx, with error classes and backoff.

Why not the generated `AgentServiceClient` (as evaluated on connect-python 0.9; connectrpc
0.13's pyqwest client has not been re-evaluated for the bridge yet): it turned every
failure it did not foresee into UNAVAILABLE carrying the exception text, it converted task
cancellation into `ConnectError(CANCELED)` (so cancelling a waiting WatchAsk task would need
care at every call site), and its stream timeout bounds the whole stream rather than the
silence between messages. The bridge needs a handful of calls and precise control over those
three points, so it speaks the Connect protocol itself on httpx (pinned for this purpose):

- unary: `POST /compass.v1.AgentService/<Method>`, `content-type: application/proto`; HTTP 200
  carries the response message, anything else a JSON error `{"code", "message"}`;
- server stream: `content-type: application/connect+proto`, one enveloped request (flag byte,
  4-byte big-endian length, payload); the response is a sequence of envelopes ending with an
  end-of-stream envelope (flag 0x02) whose JSON may carry `{"error": {...}}`.

Errors become `RpcError(code, message)`; `retryable(code)` and `fatal(code)` say what the
caller should do with them (see those functions for the reasoning); `backoff()` is the
schedule the bridge retries them on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import httpx
import stamina

from compass_agent.connect_protocol import (
    FLAG_COMPRESSED,
    FLAG_END_STREAM,
    EnvelopeReader,
    end_stream_error,
    envelope,
    unary_error,
)
from gen.compass.v1 import agent_pb2

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterable, Sequence

    from google.protobuf.message import Message

    from gen.compass.v1 import comms_pb2

__all__ = ["AgentClient", "RpcError", "backoff", "fatal", "retryable"]

SERVICE: Final = "compass.v1.AgentService"
MAX_MESSAGE_BYTES: Final = 64 * 1024 * 1024
"""Largest response message accepted (the server caps requests at 1 MiB by default)."""

UNARY_TIMEOUT: Final = httpx.Timeout(30.0, connect=5.0)
"""A unary call that takes longer is abandoned and retried (DEADLINE_EXCEEDED)."""
SERVER_KEEPALIVE_SECONDS: Final = 30.0
"""The server sends a WatchAsk keepalive at least this often while an ask is unchanged."""
STREAM_TIMEOUT: Final = httpx.Timeout(
    connect=5.0, read=3 * SERVER_KEEPALIVE_SECONDS, write=30.0, pool=5.0
)
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


class AgentClient:
    """The AgentService calls the bridge makes, with the agent's bearer token."""

    def __init__(self, base_url: str, token: str, *, http: httpx.AsyncClient) -> None:
        """`http` is owned by the caller (tests pass one with a custom transport)."""
        self._base = base_url.rstrip("/")
        self._http = http
        # Never logged; httpx does not log headers either.
        self._headers = {
            "authorization": f"Bearer {token}",
            "connect-protocol-version": "1",
            "accept-encoding": "identity",
        }

    async def append_message(
        self, channel_id: str, frame: comms_pb2.MessageUpdated
    ) -> comms_pb2.Message:
        request = agent_pb2.AppendMessageRequest(channel_id=channel_id, frame=frame)
        response = agent_pb2.AppendMessageResponse()
        await self._unary("AppendMessage", request, response)
        return response.message

    async def get_channel(self, channel_id: str) -> comms_pb2.Channel:
        """GetChannel: the channel, if this agent may post in it (one attempt)."""
        request = agent_pb2.GetChannelRequest(channel_id=channel_id)
        response = agent_pb2.GetChannelResponse()
        await self._unary("GetChannel", request, response)
        return response.channel

    async def update_message(self, frame: comms_pb2.MessageUpdated) -> comms_pb2.Message:
        request = agent_pb2.UpdateMessageRequest(frame=frame)
        response = agent_pb2.UpdateMessageResponse()
        await self._unary("UpdateMessage", request, response)
        return response.message

    async def close_ask(
        self,
        ask_id: str,
        status: comms_pb2.AskStatus,
        reason: str,
        answers: Sequence[comms_pb2.AskQuestionAnswer] = (),
    ) -> comms_pb2.Ask:
        """CloseAsk: the asking agent ends a pending ask as WITHDRAWN or TIMED_OUT.

        One attempt; the caller retries (core.BridgeCore.close_ask, with the poster's
        `call_with_retry`).
        """
        request = agent_pb2.CloseAskRequest(
            ask_id=ask_id, status=status, reason=reason, answers=answers
        )
        response = agent_pb2.CloseAskResponse()
        await self._unary("CloseAsk", request, response)
        return response.ask

    async def report_delivery(
        self, ask_id: str, state: comms_pb2.DeliveryState, detail: str, payload: str
    ) -> comms_pb2.Ask:
        """ReportDelivery: what the runtime received of a final ask's answer or decline.

        One attempt; the caller retries (core.BridgeCore.report_delivery).
        """
        request = agent_pb2.ReportDeliveryRequest(
            ask_id=ask_id, state=state, detail=detail, payload=payload
        )
        response = agent_pb2.ReportDeliveryResponse()
        await self._unary("ReportDelivery", request, response)
        return response.ask

    async def watch_ask(self, ask_id: str) -> AsyncGenerator[comms_pb2.Ask]:
        """Yield the ask's states until the server ends the stream.

        Raises:
            RpcError: the call failed, or the stream broke or ended with an error.
        """
        payload = agent_pb2.WatchAskRequest(ask_id=ask_id).SerializeToString()
        headers = {**self._headers, "content-type": "application/connect+proto"}
        request = self._http.build_request(
            "POST",
            f"{self._base}/{SERVICE}/WatchAsk",
            content=envelope(payload),
            headers=headers,
            timeout=STREAM_TIMEOUT,
        )
        try:
            response = await self._http.send(request, stream=True)
        except httpx.TimeoutException as exc:
            raise RpcError("deadline_exceeded", f"WatchAsk: {type(exc).__name__}") from exc
        except httpx.TransportError as exc:
            raise RpcError("unavailable", f"WatchAsk: {type(exc).__name__}") from exc
        try:
            if response.status_code != 200:
                await response.aread()
                raise _error_of(response)
            # An oversize message is refused at its header, before its bytes are read.
            reader = EnvelopeReader(keep=lambda _flags, length: length <= MAX_MESSAGE_BYTES)
            async for chunk in response.aiter_raw():
                for frame in reader.feed(chunk):
                    if frame.payload is None:
                        raise RpcError("resource_exhausted", "WatchAsk: message too large")
                    if frame.flags & FLAG_COMPRESSED:
                        raise RpcError("internal", "WatchAsk: unexpected compressed message")
                    if frame.flags & FLAG_END_STREAM:
                        _raise_end_stream_error(frame.payload)
                        return
                    message = agent_pb2.WatchAskResponse()
                    try:
                        message.ParseFromString(frame.payload)
                    except Exception as exc:
                        raise RpcError("internal", "WatchAsk: undecodable message") from exc
                    if message.keepalive and not message.HasField("ask"):
                        continue  # it has done its work: the read timeout starts again
                    yield message.ask
            raise RpcError("unavailable", "WatchAsk: the stream ended without an end frame")
        except httpx.TimeoutException as exc:
            raise RpcError("deadline_exceeded", f"WatchAsk: {type(exc).__name__}") from exc
        except httpx.TransportError as exc:
            raise RpcError("unavailable", f"WatchAsk: {type(exc).__name__}") from exc
        finally:
            await response.aclose()

    async def _unary(self, method: str, request: Message, response: Message) -> None:
        headers = {**self._headers, "content-type": "application/proto"}
        try:
            reply = await self._http.post(
                f"{self._base}/{SERVICE}/{method}",
                content=request.SerializeToString(),
                headers=headers,
                timeout=UNARY_TIMEOUT,
            )
        except httpx.TimeoutException as exc:
            raise RpcError("deadline_exceeded", f"{method}: {type(exc).__name__}") from exc
        except httpx.TransportError as exc:
            raise RpcError("unavailable", f"{method}: {type(exc).__name__}") from exc
        if reply.status_code != 200:
            raise _error_of(reply)
        try:
            response.ParseFromString(reply.content)
        except Exception as exc:
            raise RpcError("internal", f"{method}: undecodable response") from exc


def _error_of(response: httpx.Response) -> RpcError:
    """The Connect error a non-200 response carries, else one derived from its status."""
    is_json = response.headers.get("content-type", "").startswith("application/json")
    return RpcError(*unary_error(response.status_code, response.content if is_json else None))


def _raise_end_stream_error(body: bytes) -> None:
    try:
        error = end_stream_error(body)
    except ValueError:
        raise RpcError("internal", "WatchAsk: unreadable end of stream") from None
    if error is not None:
        raise RpcError(*error)
