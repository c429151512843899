"""`compass agent-bridge --protocol copilot`: Copilot CLI's session, bridged to one channel.

process.py runs `copilot --headless --stdio` and opens one session asking to hear the
agent's questions (`requestUserInput`, `requestElicitation`); this bridge hears the session's
events (`session.event` notifications) and answers its questions (questions.py):

- `assistant.message` of the main agent: its text is posted (through EventMapper and the
  shared Poster, as the other bridges post the agent's words), so the agent's lead-in is
  posted before the ask it introduces.
- `user_input.requested` (`ask_user`) and `elicitation.requested` (its form variant, or an
  MCP server's form): a typed Ask of its own, posted as its own message; once a person
  answers in Compass (WatchAsk), the answer is handed over with
  `session.ui.handlePendingUserInput` / `handlePendingElicitation` (by the request's id,
  whose `success` says whether Copilot took it); a decline as Copilot takes one
  (questions.py). The CLI's own `userInput.request` for the same question (sent because the
  session asked for questions) is left unanswered: the event's request id answers exactly
  that question, and the CLI drops the request once the question is resolved.
- The receipt is reported once the ask's tool call completes (`tool.execution_complete`):
  DELIVERED with the tool result the model reads (its `result.content`), NOT_DELIVERED when
  the call failed, or when Copilot no longer waited (`success: false`).

When Copilot stops waiting before an answer was handed over, the bridge closes the ask
(BridgeCore.close_ask, WITHDRAWN with the reason): the ask's tool call completed
(`tool.execution_complete`) or was interrupted (`agent.interrupted`, after an `abort`), the
question was resolved another way (`user_input.completed` / `elicitation.completed`), the
turn ended (`session.idle`), the CLI exited, or the bridge got a signal (it then aborts the
turn: `session.abort`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from compass_bridge.bridge_core import OneTurnBridge, Reason, StoppedError
from compass_bridge.copilot.jsonrpc import METHOD_NOT_FOUND, ConnectionLostError, RpcError
from compass_bridge.copilot.questions import (
    Form,
    Reply,
    UserInput,
    form_refusal,
    form_reply,
    read_form,
    read_tool_result,
    read_user_input,
    user_input_refusal,
    user_input_reply,
)
from compass_bridge.receipts import Receipt, delivered, not_delivered, payload_of
from compass_core import ConversationUpdated
from compass_core.ask_status import outcome, status_name
from compass_core.jsonvalues import is_array, is_object
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine

    from compass_bridge.client import AgentApi
    from compass_bridge.copilot.jsonrpc import Incoming
    from compass_core.jsonvalues import JsonObject

__all__ = ["USER_INPUT_REQUEST", "CopilotBridge"]

logger = logging.getLogger("compass.bridge.copilot")


USER_INPUT_REQUEST: Final = "userInput.request"
"""The CLI's own request for a question, left unanswered (see the module docstring)."""
ANSWER_USER_INPUT: Final = "session.ui.handlePendingUserInput"
ANSWER_FORM: Final = "session.ui.handlePendingElicitation"
NOT_TAKEN: Final = "Copilot no longer waited for the answer (its request was already resolved)"


@dataclass(slots=True, eq=False)
class _Question:
    """A question of Copilot's posted in Compass: its request, its message, its state."""

    request_id: str
    tool_call_id: str
    key: str
    """The poster's key of the message holding the ask."""
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    """Copilot no longer waits for it."""
    reason: str = Reason.TOOL_CALL_ENDED
    handing: bool = False
    """The answer is being (or was) handed over: Copilot's end of waiting is its own doing."""


class CopilotBridge(OneTurnBridge):
    """The host's side of one Copilot session, bridged to one Compass channel."""

    _log = logger

    def __init__(
        self,
        *,
        api: AgentApi,
        channel_id: str,
        run_id: str,
        max_backoff: float = 5.0,
        initial_backoff: float = 0.2,
    ) -> None:
        super().__init__(
            api=api,
            channel_id=channel_id,
            run_id=run_id,
            max_backoff=max_backoff,
            initial_backoff=initial_backoff,
        )
        self._request: Callable[[str, JsonObject], Awaitable[object]] | None = None
        self._respond_error: (
            Callable[[int | str, int, str], Coroutine[object, object, None]] | None
        ) = None
        self.session_id = ""
        self._questions: dict[str, _Question] = {}
        """The questions still waited for, by request id."""
        self._results: dict[str, tuple[str, Receipt]] = {}
        """Delivered answers' (ask id, receipt) by tool call id, reported when the call
        completes (its result is what the model read)."""
        self._asked: set[str] = set()
        """The tool call ids of the questions asked."""
        self._completed: dict[str, str] = {}
        """The result text of the questions' tool calls that completed, by call id."""
        self._failed: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.idle = asyncio.Event()
        """Set when the turn ended (`session.idle`)."""
        self.turn_error: str | None = None
        """The turn's last `session.error` message, if any."""

    def attach(
        self,
        request: Callable[[str, JsonObject], Awaitable[object]],
        respond_error: Callable[[int | str, int, str], Coroutine[object, object, None]],
    ) -> None:
        """The connection's `request` and `respond_error` (jsonrpc.Connection)."""
        self._request = request
        self._respond_error = respond_error

    # -- the CLI's messages ----------------------------------------------------------------

    def on_notification(self, method: str, params: JsonObject) -> None:
        """A notification of the CLI's: `session.event` is dispatched, the rest ignored."""
        if method != "session.event":
            return
        event = params.get("event")
        if params.get("sessionId") != self.session_id or not is_object(event):
            return
        kind = event.get("type")
        data = event.get("data")
        data = data if is_object(data) else {}
        if kind == "assistant.message" and "agentId" not in event:
            self._post_text(data)
        elif kind == "user_input.requested":
            self._on_question(read_user_input(data), data, is_form=False)
        elif kind == "elicitation.requested":
            self._on_question(read_form(data), data, is_form=True)
        elif kind == "tool.execution_complete":
            self._tool_completed(data)
        elif kind in {"user_input.completed", "elicitation.completed"}:
            self._resolved(data)
        elif kind == "agent.interrupted":
            ids = data.get("toolCallIds")
            for call_id in ids if is_array(ids) else []:
                self._call_ended(call_id, Reason.TOOL_CALL_ABORTED)
        elif kind == "session.error":
            message = data.get("message")
            self.turn_error = message if isinstance(message, str) else "an error"
            logger.warning("Copilot reports an error: %s", self.turn_error)
        elif kind == "session.idle":
            self.end_turn()

    def on_request(self, incoming: Incoming) -> None:
        """A request of the CLI's: `userInput.request` is left for the event's answer (see the
        module docstring); any other is refused as not served."""
        if incoming.method == USER_INPUT_REQUEST:
            return
        logger.debug("the CLI's request %s is not served", incoming.method)
        if self._respond_error is not None:
            self._spawn(
                self._respond_error(incoming.request_id, METHOD_NOT_FOUND, incoming.method),
                "refusal",
            )

    # -- the turn ----------------------------------------------------------------------------

    def end_turn(self, reason: str = Reason.TURN_ENDED) -> None:
        """The turn ended (or the CLI is gone): every question still waited for is closed in
        Compass with `reason`; receipts still waiting for their call are reported as they
        are."""
        super().end_turn(reason)
        for question in list(self._questions.values()):
            self._end(question, self._stop_reason)
        for pending in self._results.values():
            self.asks.report_soon(*pending)
        self._results.clear()
        self.idle.set()

    async def abort(self) -> None:
        """Abort the turn (the bridge got a signal): Copilot stops waiting for its questions."""
        if self._request is None or not self.session_id:
            return
        try:
            await self._request("session.abort", {"sessionId": self.session_id})
        except (RpcError, ConnectionLostError) as exc:
            logger.warning("cannot abort Copilot's turn: %s", exc)

    async def settle_tasks(self) -> None:
        """Cancel what still waits for an answer (the run is over)."""
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # -- events ------------------------------------------------------------------------------

    def _post_text(self, data: JsonObject) -> None:
        text = data.get("content")
        if not isinstance(text, str) or not text.strip():
            return
        start: JsonObject = {"type": "message_start", "message": {"role": "assistant"}}
        message_id = data.get("messageId")
        if isinstance(message_id, str):
            start["messageId"] = message_id
        end: JsonObject = {
            "type": "message_end",
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        }
        for event in (start, end):
            for output in self.mapper.map(event):
                if isinstance(output, ConversationUpdated):
                    self.poster.submit(output.value)
                else:
                    logger.warning("unmapped agent text: %s", output.reason)

    def _tool_completed(self, data: JsonObject) -> None:
        result = read_tool_result(data)
        if result is None or result.tool_call_id not in self._asked:
            return
        if not result.success:
            self._failed.add(result.tool_call_id)
        self._completed[result.tool_call_id] = result.text
        self._call_ended(result.tool_call_id, Reason.TOOL_CALL_ENDED)
        pending = self._results.pop(result.tool_call_id, None)
        if pending is not None:
            self.asks.report_soon(*self._confirmed(result.tool_call_id, *pending))

    def _resolved(self, data: JsonObject) -> None:
        """A question was resolved; one the bridge is not answering was resolved another way."""
        request_id = data.get("requestId")
        question = self._questions.get(request_id) if isinstance(request_id, str) else None
        if question is not None and not question.handing:
            self._end(question, Reason.TOOL_CALL_ENDED)

    def _call_ended(self, call_id: object, reason: str) -> None:
        for question in list(self._questions.values()):
            if question.tool_call_id and question.tool_call_id == call_id:
                self._end(question, reason)

    def _end(self, question: _Question, reason: str) -> None:
        if question.ended.is_set() or question.handing:
            return
        question.reason = reason
        question.ended.set()

    # -- answering ---------------------------------------------------------------------------

    def _on_question(
        self, request: UserInput | Form | str, data: JsonObject, *, is_form: bool
    ) -> None:
        """A question of Copilot's: posted now (so that its tool call's end, heard next, finds
        it), answered in the background."""
        if isinstance(request, str):
            request_id = data.get("requestId")
            logger.warning("cannot ask Copilot's question in Compass (%s); refused", request)
            if isinstance(request_id, str):
                self._spawn(self._refuse(request_id, is_form=is_form, why=request), "refusal")
            return
        if isinstance(request, Form):
            ask, texts = request.plan.ask, [request.plan.intro] if request.plan.intro else []
        else:
            ask, texts = request.ask, []
        key = self._post_own(texts, ask)
        question = _Question(request.request_id, request.tool_call_id, key)
        self._questions[request.request_id] = question
        if request.tool_call_id:
            self._asked.add(request.tool_call_id)
        if self._stopping.is_set():
            self._end(question, self._stop_reason)
        self._spawn(self._answer(request, question), "question")

    async def _refuse(self, request_id: str, *, is_form: bool, why: str) -> None:
        """A question that cannot be asked in Compass: a form is cancelled, a question
        answered with words saying so (Copilot's answer has no refusal)."""
        if is_form:
            await self._hand(ANSWER_FORM, request_id, {"action": "cancel"})
            return
        words = f"The question could not be asked in Compass ({why}); nobody will answer it."
        await self._hand(ANSWER_USER_INPUT, request_id, {"answer": words, "wasFreeform": True})

    async def _answer(self, request: UserInput | Form, question: _Question) -> None:
        """Wait for the ask's outcome, hand it to Copilot, report the receipt."""
        is_form = isinstance(request, Form)
        method = ANSWER_FORM if is_form else ANSWER_USER_INPUT
        try:
            answered = await self._wait_answer(
                lambda: self.poster.ask_id(question.key, 0), question.ended
            )
        except StoppedError:
            logger.warning(
                "Copilot no longer waits for its question %s (%s)",
                request.request_id,
                question.reason,
            )
            self.close_ask(question.key, 0, question.reason)
            return
        finally:
            question.handing = True
            self._questions.pop(request.request_id, None)
        if answered is None:
            await self._refuse(request.request_id, is_form=is_form, why="it was not stored")
            return
        status = outcome(answered)
        if status == comms_pb2.ASK_STATUS_ANSWERED:
            reply = (
                form_reply(request, answered)
                if isinstance(request, Form)
                else user_input_reply(request, answered)
            )
        else:
            why = f" ({answered.close_reason})" if answered.close_reason else ""
            logger.warning(
                "ask %s ended in Compass as %s%s; Copilot is told so",
                answered.ask_id,
                status_name(status).upper(),
                why,
            )
            reply = form_refusal(answered) if is_form else user_input_refusal(answered)
        for change in reply.changes:
            logger.warning("ask %s: %s", answered.ask_id, change)
        taken = await self._hand(method, request.request_id, reply.payload)
        if status not in {comms_pb2.ASK_STATUS_ANSWERED, comms_pb2.ASK_STATUS_DECLINED}:
            return  # no receipt: nobody's answer or decline to confirm
        if not taken:
            self.asks.report_soon(answered.ask_id, not_delivered(NOT_TAKEN, _sent(reply)))
            return
        if status == comms_pb2.ASK_STATUS_ANSWERED:
            self.delivered += 1
            logger.info("delivered the answer of ask %s to Copilot", answered.ask_id)
        receipt = delivered(reply.changes, _sent(reply))
        self._receipt_after_call(request.tool_call_id, answered.ask_id, receipt)

    async def _hand(self, method: str, request_id: str, payload: JsonObject) -> bool:
        """Hand Copilot `payload` for request `request_id`; whether it took it."""
        if self._request is None:
            return False
        params: JsonObject = {"sessionId": self.session_id, "requestId": request_id}
        params["result" if method == ANSWER_FORM else "response"] = payload
        try:
            result = await self._request(method, params)
        except (RpcError, ConnectionLostError) as exc:
            logger.error("cannot hand Copilot the answer to its request %s: %s", request_id, exc)
            return False
        taken = is_object(result) and result.get("success") is True
        if not taken:
            logger.warning(
                "Copilot did not take the answer to its request %s: %s", request_id, result
            )
        return taken

    def _receipt_after_call(self, call_id: str, ask_id: str, receipt: Receipt) -> None:
        """Report `receipt` once the tool call `call_id` completes (its result is what the
        model reads), at once if it has, at the turn's end at the latest."""
        if not call_id:
            self.asks.report_soon(ask_id, receipt)
        elif call_id in self._completed:
            self.asks.report_soon(*self._confirmed(call_id, ask_id, receipt))
        elif self._stopping.is_set():
            self.asks.report_soon(ask_id, receipt)
        else:
            self._results[call_id] = (ask_id, receipt)

    def _confirmed(self, call_id: str, ask_id: str, receipt: Receipt) -> tuple[str, Receipt]:
        text = self._completed.get(call_id, "")
        if call_id in self._failed:
            return ask_id, not_delivered(
                f"Copilot's tool call failed after the answer was handed to it: {text}"[:900],
                receipt.payload,
            )
        if text:
            receipt = Receipt(receipt.state, receipt.detail, text)
        return ask_id, receipt

    # -- shared ----------------------------------------------------------------------------

    def _spawn(self, work: Coroutine[object, object, None], name: str) -> None:
        task = asyncio.create_task(work, name=f"compass-copilot-{name}")
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("answering Copilot failed", exc_info=task.exception())


def _sent(reply: Reply) -> str:
    """What the bridge handed over, as the receipt's payload until the model's text is known."""
    payload = reply.payload
    if "answer" in payload:
        answer = payload.get("answer")
        return answer if isinstance(answer, str) else payload_of(payload)
    return payload_of(payload.get("content", payload))
