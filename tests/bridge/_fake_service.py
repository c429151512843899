"""An in-process AgentService peer for the bridge's unit tests (a fake of the RPC peer, not of
a database: the end-to-end tests run the real server on PostgreSQL).

It keeps the contract rules the bridge depends on: AppendMessage mints one ask id per ask
block and is idempotent per client_message_id (blocks equal but for ask ids and answer state
-> the stored message, others -> ALREADY_EXISTS); UpdateMessage matches ask blocks to the
stored asks by position (the i-th must carry the i-th minted id, or an empty one with the
stored ask's content: a retry; later ones must be empty and get minted); WatchAsk sends the current state, then changes, and ends once final (any
status but PENDING, or answered); CloseAsk closes a pending ask as WITHDRAWN or TIMED_OUT
(the same close again is OK, any other close of a final ask FAILED_PRECONDITION).
`legacy=True` is a server that writes no status (and has no CloseAsk).
Tests script failures: before a call is handled, or after (a lost response).
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from compass_bridge.client import RpcError
from gen.compass.v1 import agent_pb2, comms_pb2

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable, Sequence

_OPEN = frozenset({comms_pb2.ASK_STATUS_UNSPECIFIED, comms_pb2.ASK_STATUS_PENDING})


@dataclass
class Call:
    method: str
    frame: comms_pb2.MessageUpdated
    ok: bool


@dataclass
class FakeAgentService:
    channel_id: str = "ch"
    messages: dict[str, comms_pb2.Message] = field(default_factory=dict[str, comms_pb2.Message])
    """Stored messages by message id, in insertion order."""
    calls: list[Call] = field(default_factory=list[Call])
    failures: dict[str, list[RpcError]] = field(default_factory=dict[str, list[RpcError]])
    """Errors the next calls of a method raise before it is handled, in order
    ("AppendMessage", "UpdateMessage", "WatchAsk")."""
    lose_responses: dict[str, int] = field(default_factory=dict[str, int])
    """How many of the next calls of a method are handled (stored or refused), then fail
    with `lost_error` as if the response was lost on the way back."""
    lost_error: RpcError = field(
        default_factory=lambda: RpcError("unavailable", "connection reset after the request")
    )
    plan: list[str] = field(default_factory=list[str])
    """Outcomes of the next AppendMessage/UpdateMessage calls, in order: "ok", "down"
    (unavailable, not handled) or "lost" (handled, then unavailable); then all "ok"."""
    minted: int = 0
    """Ask ids minted so far."""
    legacy: bool = False
    """A server before the ask lifecycle: no status written, CloseAsk unimplemented."""
    closes: list[agent_pb2.CloseAskRequest] = field(default_factory=list[agent_pb2.CloseAskRequest])
    """Every CloseAsk call, in order (failed ones too)."""
    receipts: list[agent_pb2.ReportDeliveryRequest] = field(
        default_factory=list[agent_pb2.ReportDeliveryRequest]
    )
    """Every ReportDelivery call, in order (failed ones too)."""
    receipt_changed: asyncio.Event = field(default_factory=asyncio.Event)
    """Set on every ReportDelivery call: a test's sentinel."""
    watching: set[str] = field(default_factory=set[str])
    """Asks whose WatchAsk stream has sent the current state and waits for a change (the
    bridge is waiting for the answer): a test's sentinel."""
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    _changed: dict[str, asyncio.Event] = field(default_factory=dict[str, asyncio.Event])

    async def _handle(
        self, method: str, frame: comms_pb2.MessageUpdated, handle: Callable[[], comms_pb2.Message]
    ) -> comms_pb2.Message:
        await asyncio.sleep(0)
        outcome = self.plan.pop(0) if self.plan else "ok"
        queue = self.failures.get(method)
        if queue or outcome == "down":
            self.calls.append(Call(method, _copy(frame), ok=False))
            raise queue.pop(0) if queue else RpcError("unavailable", "connection refused")
        lose = outcome == "lost"
        if not lose and self.lose_responses.get(method, 0) > 0:
            self.lose_responses[method] -= 1
            lose = True
        try:
            result = handle()
        except RpcError:
            self.calls.append(Call(method, _copy(frame), ok=False))
            if lose:  # refused, but the caller never learns it
                raise self.lost_error from None
            raise
        self.calls.append(Call(method, _copy(frame), ok=not lose))
        if lose:
            raise self.lost_error
        return result

    async def append_message(
        self, channel_id: str, frame: comms_pb2.MessageUpdated
    ) -> comms_pb2.Message:
        assert channel_id == self.channel_id
        return await self._handle("AppendMessage", frame, lambda: self._append(frame))

    def _append(self, frame: comms_pb2.MessageUpdated) -> comms_pb2.Message:
        assert not frame.message_id
        assert all(not b.ask.ask_id for b in frame.blocks if b.HasField("ask"))
        for stored in self.messages.values():
            if stored.client_message_id == frame.client_message_id:
                if content(stored.blocks) != content(frame.blocks):
                    raise RpcError("already_exists", "client_message_id used with other blocks")
                return _copy_message(stored)
        message = comms_pb2.Message(
            message_id=f"msg_{next(self._ids)}",
            channel_id=self.channel_id,
            client_message_id=frame.client_message_id,
            blocks=frame.blocks,
        )
        for block in message.blocks:
            if block.HasField("ask"):
                block.ask.ask_id = self._mint()
        self.messages[message.message_id] = message
        return _copy_message(message)

    async def update_message(self, frame: comms_pb2.MessageUpdated) -> comms_pb2.Message:
        return await self._handle("UpdateMessage", frame, lambda: self._update(frame))

    def _update(self, frame: comms_pb2.MessageUpdated) -> comms_pb2.Message:
        stored = self.messages.get(frame.message_id)
        if stored is None:
            raise RpcError("not_found", "message not found")
        before = [b.ask for b in stored.blocks if b.HasField("ask")]
        sent = [b.ask for b in frame.blocks if b.HasField("ask")]
        if len(sent) < len(before):
            raise RpcError("invalid_argument", "the update drops a stored ask")
        for ordinal, ask in enumerate(sent):
            wanted = before[ordinal].ask_id if ordinal < len(before) else ""
            # An empty id with the stored ask's content is that ask, sent again (a retry).
            retried = not ask.ask_id and wanted and _same_ask(ask, before[ordinal])
            if ask.ask_id != wanted and not retried:
                raise RpcError("invalid_argument", f"ask {ordinal} must carry {wanted!r}")
        blocks: list[comms_pb2.MessageBlock] = []
        ordinal = 0
        for block in frame.blocks:
            copy = comms_pb2.MessageBlock()
            copy.CopyFrom(block)
            if copy.HasField("ask"):
                if ordinal < len(before):
                    copy.ask.CopyFrom(_with_answer(copy.ask, before[ordinal]))
                    copy.ask.ask_id = before[ordinal].ask_id
                else:
                    copy.ask.ask_id = self._mint()
                ordinal += 1
            blocks.append(copy)
        del stored.blocks[:]
        stored.blocks.extend(blocks)
        return _copy_message(stored)

    def _mint(self) -> str:
        self.minted += 1
        return f"ask_{next(self._ids)}"

    async def watch_ask(self, ask_id: str) -> AsyncGenerator[comms_pb2.Ask]:
        await asyncio.sleep(0)
        queue = self.failures.get("WatchAsk")
        if queue:
            raise queue.pop(0)
        changed = self._changed.setdefault(ask_id, asyncio.Event())
        last: bytes | None = None
        while True:
            ask = self.ask(ask_id)
            state = ask.SerializeToString(deterministic=True)
            if state != last:
                last = state
                yield ask
            if ask.answered_by_account_id or ask.status not in _OPEN:
                return
            changed.clear()
            self.watching.add(ask_id)
            try:
                await changed.wait()
            finally:
                self.watching.discard(ask_id)

    def ask(self, ask_id: str) -> comms_pb2.Ask:
        for message in self.messages.values():
            for block in message.blocks:
                if block.HasField("ask") and block.ask.ask_id == ask_id:
                    copy = comms_pb2.Ask()
                    copy.CopyFrom(block.ask)
                    return copy
        raise RpcError("not_found", "ask not found")

    def ask_ids(self) -> list[str]:
        return [b.ask.ask_id for m in self.messages.values() for b in m.blocks if b.HasField("ask")]

    def answer(self, ask_id: str, answers: dict[str, tuple[list[str], str]]) -> None:
        """Record a participant's answer (question id -> (chosen ids, custom text))."""
        for message in self.messages.values():
            for block in message.blocks:
                if block.HasField("ask") and block.ask.ask_id == ask_id:
                    for question in block.ask.questions:
                        chosen, custom = answers.get(question.question_id, ([], ""))
                        question.chosen_option_ids[:] = chosen
                        question.custom_text = custom
                    block.ask.answered_by_account_id = "acc_human"
                    if not self.legacy:
                        block.ask.status = comms_pb2.ASK_STATUS_ANSWERED
        self._changed.setdefault(ask_id, asyncio.Event()).set()

    def decline(self, ask_id: str, reason: str = "") -> None:
        """A participant declines the ask (DeclineAsk)."""
        ask = self._stored_ask(ask_id)
        assert ask.status in _OPEN, ask
        ask.status = comms_pb2.ASK_STATUS_DECLINED
        ask.closed_by_account_id = "acc_human"
        ask.close_reason = reason
        self._changed.setdefault(ask_id, asyncio.Event()).set()

    def _stored_ask(self, ask_id: str) -> comms_pb2.Ask:
        for message in self.messages.values():
            for block in message.blocks:
                if block.HasField("ask") and block.ask.ask_id == ask_id:
                    return block.ask
        raise RpcError("not_found", "ask not found")

    async def close_ask(
        self,
        ask_id: str,
        status: comms_pb2.AskStatus,
        reason: str,
        answers: Sequence[comms_pb2.AskQuestionAnswer] = (),
    ) -> comms_pb2.Ask:
        await asyncio.sleep(0)
        request = agent_pb2.CloseAskRequest(
            ask_id=ask_id, status=status, reason=reason, answers=answers
        )
        self.closes.append(request)
        if self.legacy:
            raise RpcError("unimplemented", "CloseAsk")
        queue = self.failures.get("CloseAsk")
        if queue:
            raise queue.pop(0)
        ask = self._stored_ask(ask_id)
        assert status in {comms_pb2.ASK_STATUS_WITHDRAWN, comms_pb2.ASK_STATUS_TIMED_OUT}
        assert not answers or status == comms_pb2.ASK_STATUS_TIMED_OUT
        if ask.status not in _OPEN or ask.answered_by_account_id:
            if (ask.status, ask.close_reason) == (status, reason):
                return _copy_ask(ask)
            raise RpcError("failed_precondition", f"the ask is {ask.status}")
        ask.status = status
        ask.close_reason = reason
        ask.closed_by_account_id = "acc_agent"
        by_id = {answer.question_id: answer for answer in answers}
        for question in ask.questions:
            answer = by_id.get(question.question_id)
            if answer is not None:
                question.chosen_option_ids[:] = answer.chosen_option_ids
                question.custom_text = answer.custom_text
                question.timed_out = True
        self._changed.setdefault(ask_id, asyncio.Event()).set()
        return _copy_ask(ask)

    async def report_delivery(
        self, ask_id: str, state: comms_pb2.DeliveryState, detail: str, payload: str
    ) -> comms_pb2.Ask:
        await asyncio.sleep(0)
        request = agent_pb2.ReportDeliveryRequest(
            ask_id=ask_id, state=state, detail=detail, payload=payload
        )
        self.receipts.append(request)
        self.receipt_changed.set()
        if self.legacy:
            raise RpcError("unimplemented", "ReportDelivery")
        queue = self.failures.get("ReportDelivery")
        if queue:
            raise queue.pop(0)
        ask = self._stored_ask(ask_id)
        if ask.status not in {comms_pb2.ASK_STATUS_ANSWERED, comms_pb2.ASK_STATUS_DECLINED} and (
            not ask.answered_by_account_id
        ):
            raise RpcError("failed_precondition", f"the ask is {ask.status}")
        sent = comms_pb2.AskDelivery(state=state, detail=detail, payload=payload)
        if ask.HasField("delivery"):
            stored = comms_pb2.AskDelivery(
                state=ask.delivery.state, detail=ask.delivery.detail, payload=ask.delivery.payload
            )
            if stored != sent:
                raise RpcError("failed_precondition", "a delivery receipt is already recorded")
            return _copy_ask(ask)
        ask.delivery.CopyFrom(sent)
        ask.delivery.reported_by_account_id = "acc_agent"
        return _copy_ask(ask)


@dataclass
class ListSink:
    """Collects the lines the bridge writes to the runtime."""

    lines: list[bytes] = field(default_factory=list[bytes])
    closed: bool = False
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def send(self, line: bytes) -> None:
        if self.closed:
            raise BrokenPipeError("closed")
        self.lines.append(line)
        self.arrived.set()


def _with_answer(sent: comms_pb2.Ask, stored: comms_pb2.Ask) -> comms_pb2.Ask:
    """The stored answer state wins over what the agent sends."""
    result = comms_pb2.Ask()
    result.CopyFrom(sent)
    answers = {q.question_id: q for q in stored.questions}
    for question in result.questions:
        old = answers.get(question.question_id)
        question.chosen_option_ids[:] = old.chosen_option_ids if old else []
        question.custom_text = old.custom_text if old else ""
    result.answered_by_account_id = stored.answered_by_account_id
    for name in ("status", "closed_by_account_id", "close_reason"):
        setattr(result, name, getattr(stored, name))
    for question in result.questions:
        old = answers.get(question.question_id)
        question.timed_out = old.timed_out if old else False
    return result


def _same_ask(a: comms_pb2.Ask, b: comms_pb2.Ask) -> bool:
    return content([comms_pb2.MessageBlock(ask=a)]) == content([comms_pb2.MessageBlock(ask=b)])


def content(blocks: object) -> list[bytes]:
    """The blocks as the peer compares them (without ask ids and answer state)."""
    out: list[bytes] = []
    for block in blocks:  # type: ignore[attr-defined] - a repeated MessageBlock field
        copy = comms_pb2.MessageBlock()
        copy.CopyFrom(block)
        if copy.HasField("ask"):
            # Compared without ask ids and answer state, as the server does.
            copy.ask.ask_id = ""
            copy.ask.answered_by_account_id = ""
            for name in ("status", "closed_by_account_id", "close_reason"):
                copy.ask.ClearField(name)
            for question in copy.ask.questions:
                del question.chosen_option_ids[:]
                question.custom_text = ""
                question.timed_out = False
        out.append(copy.SerializeToString(deterministic=True))
    return out


def _copy(frame: comms_pb2.MessageUpdated) -> comms_pb2.MessageUpdated:
    copy = comms_pb2.MessageUpdated()
    copy.CopyFrom(frame)
    return copy


def _copy_ask(ask: comms_pb2.Ask) -> comms_pb2.Ask:
    copy = comms_pb2.Ask()
    copy.CopyFrom(ask)
    return copy


def _copy_message(message: comms_pb2.Message) -> comms_pb2.Message:
    copy = comms_pb2.Message()
    copy.CopyFrom(message)
    return copy
