"""`compass agent-bridge --protocol acp`: the bridge as an Agent Client Protocol client.

The agent runs as a child process (process.py) speaking ACP (JSON-RPC over stdio; the `agent-client-
protocol` package does the protocol and its schema). The bridge initializes it with the
form-elicitation capability and no file system or terminal, opens one session, sends one
prompt, and answers everything the agent asks until the prompt turn ends:

- `session/update`: agent text and ask tool calls become frames (acp_events.py translates
  them into the runtime events EventMapper derives the typed Ask from, with full fidelity:
  question ids, headers, previews), posted by the shared Poster.
- `elicitation/create` (form mode): oh-my-pi's ask tool sends ONE form per ask call. It
  arrives a few ms BEFORE the `tool_call` update carrying the call's arguments, so the
  request is held (`hold_seconds`, held.py) until an ask call whose form it is (forms.py,
  `matches_ask_form`) shows up. Then the bridge waits for the ask's minted id, follows
  WatchAsk until a participant answers, and accepts the form with the answer in the form's
  terms (labels, `q<i>__other` text; a skipped question left out). A form that belongs to
  no ask call (another agent's form; oh-my-pi's select/confirm/input/editor dialogs)
  becomes a typed Ask of its own (forms.py, `plan_form`) posted as its own message, and is
  answered in the schema's terms, validated; a required value the answer cannot supply
  declines the form, a form the bridge cannot present is cancelled.
- `session/request_permission`: a typed Ask of its own (one option per permission option,
  permission.py); the chosen option is selected; an answer without a choice rejects once
  (or, with no reject option, is cancelled). Qwen Code's `ask_user_question` arrives this
  way: its questions become one Ask, answered with Submit and the answers in Qwen's own
  field (qwen.py). A request that expects answers Compass cannot give
  (`permission.expects_answers`) is cancelled without asking anyone: selecting an option
  would hand over an empty answer.
- receipts: an answer handed over for a tool call the agent announced (an ask call's form,
  a form naming its call, Qwen Code's questions) is reported when that call ends, with the
  text the model read, or NOT_DELIVERED when it failed; within a bound (calls.py, one rule
  for all). Any other answer, and a permission's choice, is reported at the hand-over.
- file system and terminal requests: not offered in the capabilities; answered with
  JSON-RPC "method not found", never left hanging.

Outcomes (design record, resolved decision 11). The wait ends when the ask is final in
Compass: ANSWERED is delivered as above; DECLINED (a participant declined) is the runtime's
cancel: the elicitation is answered `decline` (oh-my-pi then aborts the ask call and the
prompt turn ends `cancelled`), a permission request `cancelled`; any other outcome written
elsewhere (EXPIRED) is answered `cancel`. When the agent stops waiting first, the request is
answered `cancel` and the bridge closes the ask (bridge_core.BridgeCore.close_ask): the ask call
completed without a delivered answer, or failed (aborted), the turn ended, the agent exited,
the bridge got a signal: WITHDRAWN with that reason; the completed call's `rawOutput` shows
oh-my-pi's own `ask.timeout` picked the answer (`details.timedOut`, the model reads
"(auto-selected after timeout)"): TIMED_OUT with those picks. Nothing in ACP announces that
timeout beforehand (the elicitation carries none), so asks posted over ACP carry no
`deadline`.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from acp import RequestError
from acp.interfaces import Client
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    CancelElicitationResponse,
    DeclineElicitationResponse,
    DeniedOutcome,
    ElicitationFormRequestMode,
    ElicitationFormSessionMode,
    RequestPermissionResponse,
)

from compass_bridge.acp.calls import CALL_END_SECONDS, CallReceipts
from compass_bridge.acp.events import AcpTranslator
from compass_bridge.acp.permission import choose, expects_answers, permission_ask
from compass_bridge.acp.qwen import QwenQuestions, qwen_reply, read_questions
from compass_bridge.bridge_core import OneTurnBridge, Reason, StoppedError
from compass_bridge.forms import (
    ask_form_changes,
    ask_form_content,
    could_be_ask_form,
    form_content,
    matches_ask_form,
    plan_form,
)
from compass_bridge.held import HOLD_SECONDS, HeldRequests
from compass_bridge.receipts import (
    DECLINE_PAYLOAD,
    delivered,
    not_delivered,
    payload_of,
)
from compass_bridge.replies import runtime_timeout
from compass_core import ConversationUpdated
from compass_core.ask_status import outcome, status_name
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from acp.interfaces import Agent
    from acp.schema import (
        CreateTerminalResponse,
        ElicitationSchema,
        EnvVariable,
        KillTerminalResponse,
        PermissionOption,
        ReadTextFileResponse,
        ReleaseTerminalResponse,
        TerminalOutputResponse,
        ToolCallUpdate,
        WaitForTerminalExitResponse,
        WriteTextFileResponse,
    )

    from compass_bridge.client import AgentApi

__all__ = ["AcpBridge"]

logger = logging.getLogger("compass.bridge.acp")


ElicitationResponse = (
    AcceptElicitationResponse | DeclineElicitationResponse | CancelElicitationResponse
)
_CANCELLED: Final = RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
"""A permission request's answer when the agent is to get no answer."""


@dataclass(slots=True, eq=False)
class _Form:
    """An elicitation held until the ask call it is the form of arrives."""

    schema: ElicitationSchema
    tool_call_id: str | None
    call: asyncio.Future[_AskCall | None]
    """Its ask call; None when none arrived in time, or none did before the turn ended."""


@dataclass(slots=True, kw_only=True)
class _AskCall:
    """An ask tool call the mapper turned into an Ask block."""

    tool_call_id: str | None
    key: str
    """The mapper's client_message_id of the message holding the ask."""
    ordinal: int
    """Which ask of that message it is."""
    ask: comms_pb2.Ask
    claimed: bool = False
    """An elicitation is answered from this ask."""
    delivered: bool = False
    final: bool = False
    """The ask has its outcome in Compass (declined, expired): nothing to close."""
    ended: asyncio.Event = field(default_factory=asyncio.Event)


class AcpBridge(OneTurnBridge, Client):
    """The ACP client's side of one agent session, bridged to one Compass channel."""

    _OWN_KIND = "form"
    _NOT_POSTED = "an ask cannot be answered: %s; cancelled"
    _log = logger

    def __init__(
        self,
        *,
        api: AgentApi,
        channel_id: str,
        run_id: str,
        hold_seconds: float = HOLD_SECONDS,
        call_end_seconds: float = CALL_END_SECONDS,
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
        self._translator = AcpTranslator()
        self._calls: list[_AskCall] = []
        self._forms = HeldRequests[_Form](hold_seconds, lambda _key, form: _settle(form, None))
        self._form_keys = itertools.count(1)
        self._receipts = CallReceipts(self.asks, call_end_seconds)
        """The agent's tool calls, and the receipts of answers waiting for one to end."""
        self.unmapped = 0

    # -- session updates -------------------------------------------------------------------

    async def session_update(self, session_id: str, update: object, **_: Any) -> None:
        """A `session/update` notification. Synchronous inside: updates keep their order."""
        del session_id
        for event in self._translator.translate(update):
            self._feed(event)
        self._receipts.update(update)

    def end_turn(self, reason: str = Reason.TURN_ENDED) -> None:
        """The prompt turn ended: settle the open message, stop every wait (the asks still
        waited for are closed as WITHDRAWN with `reason`)."""
        for event in self._translator.end_turn():
            self._feed(event)
        super().end_turn(reason)
        for call in self._calls:
            self._end_call(call, self._stop_reason)
        self._receipts.end_turn()

    def _feed(self, event: dict[str, object]) -> None:
        for output in self.mapper.map(event):
            if isinstance(output, ConversationUpdated):
                self._on_frame(output)
            else:
                self.unmapped += 1
                logger.warning("unmapped agent event %s: %s", output.event_type, output.reason)
        if event.get("type") == "tool_execution_end":
            call_id = event.get("toolCallId")
            failed = event.get("isError") is True
            for call in self._calls:
                if call.tool_call_id == call_id:
                    if failed:
                        self._end_call(call, Reason.TOOL_CALL_ABORTED)
                    else:
                        self._end_call(call, Reason.TOOL_CALL_ENDED, event.get("result"))

    def _on_frame(self, output: ConversationUpdated) -> None:
        frame = output.value
        self.mark_native_asks(frame)
        if output.block_index is not None:
            blocks = frame.blocks
            ask = comms_pb2.Ask()
            ask.CopyFrom(blocks[output.block_index].ask)
            ordinal = sum(1 for block in blocks[: output.block_index] if block.HasField("ask"))
            self._calls.append(
                _AskCall(
                    tool_call_id=output.tool_call_id,
                    key=frame.client_message_id,
                    ordinal=ordinal,
                    ask=ask,
                )
            )
            self._forms.retry(self._resume)
        self.poster.submit(frame)

    def _end_call(self, call: _AskCall, reason: str, result: object = None) -> None:
        """The agent no longer waits for `call`'s ask: close it unless it was answered (its
        receipt waits for the call's end: calls.py) or has its outcome (TIMED_OUT when
        `result` shows the agent's own timeout answered)."""
        if call.ended.is_set():
            return
        call.ended.set()
        if call.delivered or call.final:
            return
        timeout = runtime_timeout(call.ask, result) if result is not None else None
        if timeout is None:
            logger.warning(
                "ask %d of message %s: its tool call %s ended without a delivered answer (%s)",
                call.ordinal,
                call.key,
                call.tool_call_id,
                reason,
            )
            self.close_ask(call.key, call.ordinal, reason)
            return
        for problem in timeout.problems:
            logger.warning("ask %d of message %s: %s", call.ordinal, call.key, problem)
        self.close_ask(call.key, call.ordinal, Reason.RUNTIME_TIMEOUT, timeout.answers)

    # -- elicitation -----------------------------------------------------------------------

    async def create_elicitation(self, message: str, mode: object, **_: Any) -> ElicitationResponse:
        """`elicitation/create`: answered from a participant's answer in Compass."""
        if not isinstance(mode, ElicitationFormSessionMode | ElicitationFormRequestMode):
            logger.warning("an elicitation in a mode the bridge does not offer; cancelled")
            return CancelElicitationResponse(action="cancel")
        schema = mode.requested_schema
        tool_call_id = getattr(mode, "tool_call_id", None)
        call = await self._ask_call_for(schema, tool_call_id)
        try:
            if call is not None:
                return await self._answer_ask_call(call)
            return await self._answer_form(message, schema, tool_call_id)
        except StoppedError:
            return CancelElicitationResponse(action="cancel")

    async def _ask_call_for(
        self, schema: ElicitationSchema, tool_call_id: str | None
    ) -> _AskCall | None:
        """The ask call `schema` is the form of, waiting up to `hold_seconds` for it."""
        call = self._claim(schema, tool_call_id)
        if call is not None or self._stopping.is_set():
            return call
        if not could_be_ask_form(schema) or (
            tool_call_id is not None and self._translator.is_other_call(tool_call_id)
        ):
            return None  # no ask call can claim it: presented at once, never held
        form = _Form(schema, tool_call_id, asyncio.get_running_loop().create_future())
        key = f"form-{next(self._form_keys)}"
        self._forms.hold(key, form)
        try:
            return await form.call
        finally:
            self._forms.pop(key)

    def _resume(self, form: _Form) -> Callable[[], None] | None:
        """What to do with a held form now that another ask call arrived: None to go on
        waiting."""
        call = self._claim(form.schema, form.tool_call_id)
        if call is None and not self._stopping.is_set():
            return None
        return functools.partial(_settle, form, call)

    def _claim(self, schema: ElicitationSchema, tool_call_id: str | None) -> _AskCall | None:
        """The first unclaimed, still running ask call `schema` is the form of (by its tool
        call id when the elicitation names one), now claimed."""
        for call in self._calls:
            if call.claimed or call.ended.is_set():
                continue
            if (tool_call_id is not None and call.tool_call_id == tool_call_id) or (
                matches_ask_form(schema, call.ask)
            ):
                call.claimed = True
                return call
        return None

    async def _answer_ask_call(self, call: _AskCall) -> ElicitationResponse:
        answered = await self._wait_answer(
            lambda: self.poster.ask_id(call.key, call.ordinal), call.ended
        )
        if answered is None:
            return CancelElicitationResponse(action="cancel")
        if outcome(answered) != comms_pb2.ASK_STATUS_ANSWERED:
            call.final = True
            return self._refusal(answered, "the ask call's form")
        content, problems = ask_form_content(answered)
        changes = [*problems, *ask_form_changes(answered)]
        for problem in changes:
            logger.warning("ask %s: %s", answered.ask_id, problem)
        call.delivered = True
        self._receipts.report(
            call.tool_call_id, answered.ask_id, delivered(changes, payload_of(content))
        )
        self.delivered += 1
        logger.info("delivered the answer of ask %s to the agent", answered.ask_id)
        return AcceptElicitationResponse(action="accept", content=dict(content))

    async def _answer_form(
        self, message: str, schema: ElicitationSchema, tool_call_id: str | None = None
    ) -> ElicitationResponse:
        plan = plan_form(message, schema)
        if isinstance(plan, str):
            logger.warning("cannot present the agent's form (%s); cancelled", plan)
            return CancelElicitationResponse(action="cancel")
        key = self._post_own([plan.intro] if plan.intro else [], plan.ask)
        try:
            answered = await self._wait_answer(lambda: self.poster.ask_id(key, 0), None)
        except StoppedError:
            self.close_ask(key, 0, self._stop_reason)
            raise
        if answered is None:
            return CancelElicitationResponse(action="cancel")
        if outcome(answered) != comms_pb2.ASK_STATUS_ANSWERED:
            return self._refusal(answered, "the agent's form")
        result = form_content(plan, answered)
        changes = list(result.problems)
        if result.missing:
            changes.append(
                f"the agent's form requires {', '.join(result.missing)}, left without an "
                "answer; sent without it"
            )
        for change in changes:
            logger.warning("ask %s: %s", answered.ask_id, change)
        self.delivered += 1
        logger.info("delivered the answer of ask %s to the agent's form", answered.ask_id)
        receipt = delivered(changes, payload_of(dict(result.content)))
        self._receipts.report(tool_call_id, answered.ask_id, receipt)
        return AcceptElicitationResponse(action="accept", content=dict(result.content))

    # -- permission ------------------------------------------------------------------------

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **_: Any,
    ) -> RequestPermissionResponse:
        """`session/request_permission`: a typed Ask; the chosen option is selected. Qwen
        Code's questions (qwen.py) are asked as they are and answered in its terms; another
        request that expects answers Compass cannot give is refused (permission.py)."""
        del session_id
        if not options:
            return _CANCELLED
        questions = read_questions(tool_call, options)
        unfillable = questions if isinstance(questions, str) else None
        if questions is None:
            unfillable = expects_answers(tool_call)
        if unfillable is not None:
            logger.warning(
                "the agent's permission request %r expects answers Compass cannot give "
                "(%s); cancelled without asking",
                tool_call.title,
                unfillable,
            )
            return _CANCELLED
        if isinstance(questions, QwenQuestions):
            return await self._answer_questions(tool_call.tool_call_id, questions)
        key = self._post_own([], permission_ask(tool_call.title, options))
        answered = await self._permission_answer(key, "the permission request")
        if answered is None or outcome(answered) != comms_pb2.ASK_STATUS_ANSWERED:
            return _CANCELLED
        choice = choose(options, answered)
        if choice.option is None:
            logger.warning("permission answered without a choice; cancelled")
            self.asks.report_soon(
                answered.ask_id,
                not_delivered(
                    "no option was chosen and the request offers no way to reject it; "
                    "the agent got a cancel"
                ),
            )
            return _CANCELLED
        picked = choice.option
        if choice.changes:
            logger.warning("permission answered without a choice; rejected once")
        self.delivered += 1
        self.asks.report_soon(
            answered.ask_id,
            delivered(choice.changes, payload_of({"option": picked.name, "kind": picked.kind})),
        )
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=picked.option_id)
        )

    async def _answer_questions(
        self, tool_call_id: str, questions: QwenQuestions
    ) -> RequestPermissionResponse:
        """Qwen Code's `ask_user_question`: Submit with the answers in its terms, its Cancel
        for a decline. The receipt waits for the call's end (calls.py): its result is what
        the model read."""
        key = self._post_own([], questions.ask)
        answered = await self._permission_answer(key, "the agent's questions")
        if answered is None:
            return _CANCELLED
        if outcome(answered) != comms_pb2.ASK_STATUS_ANSWERED:
            if outcome(answered) == comms_pb2.ASK_STATUS_DECLINED and questions.cancel:
                option = questions.cancel.option_id
                return RequestPermissionResponse(
                    outcome=AllowedOutcome(outcome="selected", option_id=option)
                )
            return _CANCELLED
        reply = qwen_reply(questions, answered)
        for change in reply.changes:
            logger.warning("ask %s: %s", answered.ask_id, change)
        self.delivered += 1
        logger.info("delivered the answer of ask %s to the agent's questions", answered.ask_id)
        self._receipts.report(
            tool_call_id, answered.ask_id, delivered(reply.changes, payload_of(reply.answers))
        )
        return reply.response

    async def _permission_answer(self, key: str, what: str) -> comms_pb2.Ask | None:
        """The Ask of a permission request posted under `key` in its final state; None when
        it cannot be had or the agent stopped waiting (then closed). An outcome other than
        ANSWERED is logged, a decline reported as delivered: the agent gets its cancel."""
        try:
            answered = await self._wait_answer(lambda: self.poster.ask_id(key, 0), None)
        except StoppedError:
            self.close_ask(key, 0, self._stop_reason)
            return None
        if answered is not None and outcome(answered) != comms_pb2.ASK_STATUS_ANSWERED:
            self._refusal(answered, what)
        return answered

    # -- requests the bridge does not offer ------------------------------------------------

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse | None:
        raise RequestError.method_not_found("fs/write_text_file")

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        raise RequestError.method_not_found("fs/read_text_file")

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        raise RequestError.method_not_found("terminal/create")

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        raise RequestError.method_not_found("terminal/output")

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse | None:
        raise RequestError.method_not_found("terminal/release")

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        raise RequestError.method_not_found("terminal/wait_for_exit")

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse | None:
        raise RequestError.method_not_found("terminal/kill")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        logger.debug("elicitation %s completed by the agent", elicitation_id)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        logger.debug("agent extension notification %s ignored", method)

    def on_connect(self, conn: Agent) -> None:
        """The library hands the agent's side over; the session drives it instead."""

    # -- shared ----------------------------------------------------------------------------

    def _post_own(self, texts: Sequence[str], ask: comms_pb2.Ask) -> str:
        """Post a message of the bridge's own holding `ask`; return its key. The agent's text
        so far is settled first, so that its lead-in is posted before the ask."""
        for event in self._translator.settle():
            self._feed(event)
        return super()._post_own(texts, ask)

    def _refusal(self, ask: comms_pb2.Ask, what: str) -> ElicitationResponse:
        """The agent's answer to an ask that ended in Compass without an answer (see
        `_refusal`); a participant's decline is reported delivered as the agent's decline."""
        response = _refusal(ask, what)
        if outcome(ask) == comms_pb2.ASK_STATUS_DECLINED:
            self.asks.report_soon(ask.ask_id, delivered((), DECLINE_PAYLOAD))
        return response


def _settle(form: _Form, call: _AskCall | None) -> None:
    if not form.call.done():
        form.call.set_result(call)


def _refusal(ask: comms_pb2.Ask, what: str) -> ElicitationResponse:
    """The agent's cancel for an ask that ended in Compass without an answer: `decline` for a
    participant's decline, `cancel` for any other outcome (logged)."""
    why = f" ({ask.close_reason})" if ask.close_reason else ""
    if outcome(ask) == comms_pb2.ASK_STATUS_DECLINED:
        logger.warning(
            "ask %s was declined in Compass%s: %s is declined, so the agent cancels",
            ask.ask_id,
            why,
            what,
        )
        return DeclineElicitationResponse(action="decline")
    logger.warning(
        "ask %s ended in Compass as %s%s: %s is cancelled",
        ask.ask_id,
        status_name(outcome(ask)).upper(),
        why,
        what,
    )
    return CancelElicitationResponse(action="cancel")
