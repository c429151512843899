"""The agent runtime's RPC frames the bridge reads and writes, beyond what EventMapper maps.

Pure: decoded JSON in, small values out; nothing here raises on odd input.

oh-my-pi's `--mode rpc-ui` and pi's `--mode rpc` (`@mariozechner/pi-coding-agent` 0.73.1,
src/modes/rpc/rpc-mode.ts) speak the same JSON lines. What the bridge reads on the runtime's
stdout:

- `{"type": "ready", "protocolVersion": 1, ...}`: omp's first line; the runtime now reads
  commands (the bridge sends its `prompt`, if it has one, after it). pi sends no such line:
  its answer to the bridge's first command (`set_ask_dialog`, "Unknown command") says the same.
- The ask tool, as published (`@oh-my-pi/pi-coding-agent` 18.2.3, measured): one
  `{"type": "extension_ui_request", "id": R, "method": "select", "title": T, "options":
  [labels], "optionDetails"?: [{"description"?}], "timeout"?: ms}` per step of each question,
  in question order; `{"type": "extension_ui_request", "id": R, "method": "editor", "title",
  "promptStyle": true}` for the text of "Other (type your own)". The titles and labels are
  built by `dialog_title`, `single_select_labels` and `multi_select_labels` below (a port of
  oh-my-pi's src/tools/ask.ts `askSingleQuestion` and `disambiguateDisplayLabels`). The
  first select of an ask call arrives a few ms BEFORE the call's `tool_execution_start`.
- Newer sources: after `set_ask_dialog`, one `{"type": "extension_ui_request", "id": R,
  "method": "ask", "questions": [...], "timeout"?}` per ask call, with the tool's own
  questions. Being liberal, the bridge also takes the questions from `params.questions` or
  `args.questions`, and a `toolCallId` (top level or in `params`) when a runtime sends one.
- `{"type": "extension_ui_request", "id": C, "method": "cancel", "targetId": R}`: the runtime
  stopped waiting for R (aborted). `{"type": "extension_ui_cancel", "id": R}` (or with
  `targetId`) is taken to mean the same. A dialog's own `timeout` ends it with no cancel.
- pi's extension dialogs (and any extension's, in either runtime), each waiting for its
  answer: `{"method": "select", "title", "options": [labels], "timeout"?}` (answered with
  `value`), `{"method": "confirm", "title", "message", "timeout"?}` (`confirmed`: true or
  false), `{"method": "input", "title", "placeholder"?, "timeout"?}` (`value`), `{"method":
  "editor", "title", "prefill"?}` (`value`); any of them `cancelled: true` (pi then reads
  undefined, or false for a confirm). A dialog's `timeout` ends it on pi's side with no
  frame; so does an abort of the run. Fire-and-forget methods (`notify`, `setStatus`, ...)
  need no answer.
- `{"type": "response", "command": C, "success": ..., "id"?, "error"?}` answers a command.
  18.2.3 answers `set_ask_dialog` with `{"type": "response", "command": "set_ask_dialog",
  "success": false, "error": "Unknown command: set_ask_dialog"}`: no `id`.

What the bridge writes to the runtime's stdin, one JSON object per line: the opt-in command
`{"type": "set_ask_dialog", "enabled": true}`, the `prompt` command, `{"type": "abort"}` (ends
the run: how a decline reaches pi's ask_user, whose `confirm` cannot tell a cancel from "No"),
and `extension_ui_response` replies (`ask_reply`, `value_reply`, ...): `{"type":
"extension_ui_response", "id": R, "value": label-or-text}`, `"confirmed": bool`, or
`"cancelled": true` (plus `"timedOut": true` to have omp take it as its dialog timeout), or
`"answers": [...]` for a `method: "ask"` request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeAlias

from compass_core.jsonvalues import is_array, is_object
from compass_core.mapper import ASK_TOOL

if TYPE_CHECKING:
    from collections.abc import Sequence

    from compass_bridge.replies import RuntimeAnswers

__all__ = [
    "ABORT_COMMAND",
    "ASK_DIALOG_COMMAND",
    "DONE_SELECTING_LABELS",
    "OTHER_OPTION",
    "PROMPT_COMMAND_ID",
    "RECOMMENDED_SUFFIX",
    "AskRequest",
    "CancelRequest",
    "ConfirmRequest",
    "DialogQuestion",
    "DialogRequest",
    "EditorRequest",
    "InputRequest",
    "NoticeRequest",
    "QuestionMatch",
    "SelectRequest",
    "UIRequest",
    "UnreadableRequest",
    "as_object",
    "ask_reply",
    "cancelled_reply",
    "confirm_reply",
    "dialog_title",
    "locate_select",
    "multi_select_labels",
    "parse_ui_request",
    "prompt_command",
    "sanitize",
    "single_select_labels",
    "timed_out_reply",
    "value_reply",
]

RESPONSE_TYPE: Final = "extension_ui_response"
ASK_DIALOG_COMMAND_ID: Final = "compass-bridge-ask-dialog"
ASK_DIALOG_COMMAND: Final[dict[str, object]] = {
    "id": ASK_DIALOG_COMMAND_ID,
    "type": "set_ask_dialog",
    "enabled": True,
}
"""Sent to the runtime first. A runtime that knows it sends each ask as ONE `method: "ask"`
request; 18.2.3 does not know it and asks through select/editor dialogs."""
PROMPT_COMMAND_ID: Final = "compass-bridge-prompt"
ABORT_COMMAND: Final[dict[str, object]] = {"id": "compass-bridge-abort", "type": "abort"}
"""Ends the runtime's current run (its pending dialogs resolve as dismissed)."""

OTHER_OPTION: Final = "Other (type your own)"
"""The last option of every ask select; choosing it makes the runtime open an editor."""
RECOMMENDED_SUFFIX: Final = " (Recommended)"
DONE_SELECTING_LABELS: Final = (
    "\u2714 Done selecting",
    "\uf00c Done selecting",
    "[ok] Done selecting",
)
"""oh-my-pi's `${theme.status.success} Done selecting`, for its symbol presets unicode (the
default), nerd and ascii. It ends a multi-select; the runtime shows it only in a one-question
ask once something is selected, but takes it as the answer whenever it is sent."""

#: Dialogs that block the runtime until the host answers; one that belongs to no ask call
#: becomes an Ask of its own (omp/lone.py), unless it is a step of omp's own ask.
DIALOG_METHODS: Final = frozenset({"select", "confirm", "input", "editor"})
#: UI requests that expect no answer.
NOTICE_METHODS: Final = frozenset(
    {"notify", "setStatus", "setWidget", "setTitle", "set_editor_text", "open_url"}
)

_SELECTED_PREFIX: Final = re.compile(r"\(([1-9][0-9]{0,8}) selected\) ")
_CARRIAGE_RETURNS: Final = re.compile(r"\r+")


@dataclass(frozen=True, slots=True, kw_only=True)
class AskRequest:
    """The runtime waits for the answer to one ask call (`method: "ask"`)."""

    request_id: str
    question_ids: tuple[str, ...]
    question_texts: tuple[str, ...]
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectRequest:
    """The runtime waits for one option of a select dialog (`value`: the label shown)."""

    request_id: str
    title: str
    options: tuple[str, ...]
    timeout_ms: float | None = None
    """The runtime's own deadline for this dialog (its `ask.timeout` setting), if any."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EditorRequest:
    """The runtime waits for free text (omp: after "Other (type your own)" was chosen)."""

    request_id: str
    title: str
    prefill: str | None = None
    """The text the editor opens with (pi's `ctx.ui.editor(title, prefill)`), if any."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfirmRequest:
    """The runtime waits for yes or no (`confirmed`)."""

    request_id: str
    title: str
    message: str = ""
    timeout_ms: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class InputRequest:
    """The runtime waits for one line of free text (`value`)."""

    request_id: str
    title: str
    placeholder: str | None = None
    timeout_ms: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelRequest:
    """The runtime no longer waits for request `target_id`."""

    target_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NoticeRequest:
    """A UI request that needs no answer (`notify`, `setStatus`, ...)."""

    method: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UnreadableRequest:
    """A UI request the bridge cannot make sense of; `reason` says why."""

    method: str
    reason: str
    request_id: str | None = None


UIRequest: TypeAlias = (
    AskRequest
    | SelectRequest
    | ConfirmRequest
    | InputRequest
    | EditorRequest
    | CancelRequest
    | NoticeRequest
    | UnreadableRequest
)
DialogRequest: TypeAlias = SelectRequest | ConfirmRequest | InputRequest | EditorRequest
"""A dialog waiting for its answer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DialogQuestion:
    """One question of an ask call as the runtime presents it (raw, as the tool got it)."""

    question_id: str
    text: str
    labels: tuple[str, ...]
    multi: bool = False
    recommended: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionMatch:
    """A select request read as a step of question `index` of an ask."""

    index: int
    selected: int
    """How many options the runtime says are selected (the `(k selected) ` title prefix)."""
    exact: bool
    """The options are exactly the ones the runtime shows for this question; otherwise only
    the title and the number of options agree."""


def as_object(value: object) -> dict[str, object] | None:
    """`value` as a JSON object, or None."""
    return value if is_object(value) else None


def ask_reply(request_id: str, answers: RuntimeAnswers) -> dict[str, object]:
    """The reply frame answering the runtime's `extension_ui_request` (method `ask`)."""
    return {"type": RESPONSE_TYPE, "id": request_id, "answers": list(answers.answers)}


def cancelled_reply(request_id: str) -> dict[str, object]:
    """The reply frame that tells the runtime a dialog will not be answered."""
    return {"type": RESPONSE_TYPE, "id": request_id, "cancelled": True}


def value_reply(request_id: str, value: str) -> dict[str, object]:
    """The reply frame answering a select (the label shown), an input or an editor (the
    text)."""
    return {"type": RESPONSE_TYPE, "id": request_id, "value": value}


def confirm_reply(request_id: str, confirmed: bool) -> dict[str, object]:
    """The reply frame answering a confirm."""
    return {"type": RESPONSE_TYPE, "id": request_id, "confirmed": confirmed}


def timed_out_reply(request_id: str) -> dict[str, object]:
    """The reply frame the runtime takes as its own dialog timeout (it keeps what is picked)."""
    return {"type": RESPONSE_TYPE, "id": request_id, "cancelled": True, "timedOut": True}


def prompt_command(message: str) -> dict[str, object]:
    """The command that starts an agent turn with `message`."""
    return {"id": PROMPT_COMMAND_ID, "type": "prompt", "message": message}


# -- how oh-my-pi 18.2.3 shows an ask (src/tools/ask.ts, src/tools/render-utils.ts) ----------


def sanitize(text: str) -> str:
    """The runtime's `sanitizeCarriageReturns`: CRLF -> LF, other CR runs -> one space."""
    if "\r" not in text:
        return text
    return _CARRIAGE_RETURNS.sub(" ", text.replace("\r\n", "\n"))


def dialog_title(question: DialogQuestion, index: int, count: int) -> str:
    """The select title of question `index` of `count`, before any `(k selected) ` prefix."""
    text = sanitize(question.text)
    return f"{text} ({index + 1}/{count})" if count > 1 else text


def single_select_labels(question: DialogQuestion) -> list[str]:
    """The option labels a single-select shows, before "Other (type your own)".

    The recommended option gets " (Recommended)" unless its label already ends with it; then
    labels that collide (with each other or with "Other (type your own)") get " (2)", " (3)",
    ... as in `disambiguateDisplayLabels`.
    """
    labels = [sanitize(label) for label in question.labels]
    recommended = question.recommended
    if recommended is not None and 0 <= recommended < len(labels):
        label = labels[recommended]
        if not label.endswith(RECOMMENDED_SUFFIX):
            labels[recommended] = label + RECOMMENDED_SUFFIX
    taken = {OTHER_OPTION}
    shown: list[str] = []
    for base in labels:
        candidate = base
        suffix = 2
        while candidate in taken:
            candidate = f"{base} ({suffix})"
            suffix += 1
        taken.add(candidate)
        shown.append(candidate)
    return shown


def multi_select_labels(question: DialogQuestion) -> list[str]:
    """The option labels a multi-select shows, before its done label and "Other": as given."""
    return [sanitize(label) for label in question.labels]


def locate_select(
    request: SelectRequest, questions: Sequence[DialogQuestion]
) -> list[QuestionMatch]:
    """Which questions of an ask `request` can be a step of, exact matches first.

    A step of question i (of N) has the title `dialog_title(...)`, on a multi-select with a
    `(k selected) ` prefix once k > 0; its options are the question's shown labels, then
    (multi-select, N = 1, k > 0) the done label, then "Other (type your own)".
    """
    exact: list[QuestionMatch] = []
    loose: list[QuestionMatch] = []
    count = len(questions)
    for index, question in enumerate(questions):
        selected = _selected_count(request.title, dialog_title(question, index, count), question)
        if selected is None:
            continue
        if question.multi:
            shown = multi_select_labels(question)
            with_done = count == 1 and selected > 0
        else:
            shown = single_select_labels(question)
            with_done = False
        expected = len(shown) + (2 if with_done else 1)
        if len(request.options) != expected:
            continue
        options = list(request.options)
        done = options[len(shown)] if with_done else None
        same = (
            options[: len(shown)] == shown
            and options[-1] == OTHER_OPTION
            and (done is None or (done not in shown and done != OTHER_OPTION))
        )
        match = QuestionMatch(index=index, selected=selected, exact=same)
        (exact if same else loose).append(match)
    return exact + loose


def _selected_count(title: str, base: str, question: DialogQuestion) -> int | None:
    if title == base:
        return 0
    if not question.multi or not title.endswith(base):
        return None
    prefix = _SELECTED_PREFIX.fullmatch(title[: len(title) - len(base)])
    return int(prefix.group(1)) if prefix else None


# -- parsing ---------------------------------------------------------------------------------


def parse_ui_request(event: dict[str, object]) -> UIRequest:
    """Classify an `extension_ui_request` (or `extension_ui_cancel`) event."""
    request_id = event.get("id")
    rid = request_id if isinstance(request_id, str) and request_id else None
    if event.get("type") == "extension_ui_cancel":
        target = _target(event) or rid
        if target is None:
            return UnreadableRequest(method="cancel", reason="no id to cancel")
        return CancelRequest(target_id=target)
    method = event.get("method")
    if not isinstance(method, str):
        return UnreadableRequest(method="?", reason="method is not a string", request_id=rid)
    if method == "cancel":
        target = _target(event)
        if target is None:
            return UnreadableRequest(method=method, reason="targetId is missing", request_id=rid)
        return CancelRequest(target_id=target)
    if method in NOTICE_METHODS:
        return NoticeRequest(method=method)
    if rid is None:
        return UnreadableRequest(method=method, reason="id is missing or not a string")
    if method == "select":
        return _select_request(event, rid)
    title = event.get("title")
    title = title if isinstance(title, str) else ""
    if method == "editor":
        return EditorRequest(request_id=rid, title=title, prefill=_text(event, "prefill"))
    if method == "confirm":
        message = _text(event, "message") or ""
        return ConfirmRequest(
            request_id=rid, title=title, message=message, timeout_ms=_timeout(event)
        )
    if method == "input":
        placeholder = _text(event, "placeholder")
        return InputRequest(
            request_id=rid, title=title, placeholder=placeholder, timeout_ms=_timeout(event)
        )
    if method != ASK_TOOL:
        return UnreadableRequest(method=method, reason="unknown method", request_id=rid)
    return _ask_request(event, rid)


def _select_request(event: dict[str, object], request_id: str) -> UIRequest:
    title = event.get("title")
    options = event.get("options")
    if not isinstance(title, str):
        return UnreadableRequest(
            method="select", reason="title is not a string", request_id=request_id
        )
    if not is_array(options):
        return UnreadableRequest(
            method="select", reason="options is not a list", request_id=request_id
        )
    labels: list[str] = []
    for index, item in enumerate(options):
        # 18.2.3 writes plain labels; an extension's `{label, ...}` item is read too.
        label = item if isinstance(item, str) else (as_object(item) or {}).get("label")
        if not isinstance(label, str):
            return UnreadableRequest(
                method="select", reason=f"options[{index}] has no label", request_id=request_id
            )
        labels.append(label)
    return SelectRequest(
        request_id=request_id, title=title, options=tuple(labels), timeout_ms=_timeout(event)
    )


def _timeout(event: dict[str, object]) -> float | None:
    timeout = event.get("timeout")
    if isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0:
        return float(timeout)
    return None


def _text(event: dict[str, object], key: str) -> str | None:
    value = event.get(key)
    return value if isinstance(value, str) else None


def _ask_request(event: dict[str, object], request_id: str) -> UIRequest:
    params = as_object(event.get("params")) or {}
    questions = event.get("questions")
    if questions is None:
        questions = params.get("questions")
    if questions is None:
        questions = (as_object(event.get("args")) or {}).get("questions")
    if not is_array(questions) or not questions:
        return UnreadableRequest(
            method=ASK_TOOL, reason="questions is missing or empty", request_id=request_id
        )
    ids: list[str] = []
    texts: list[str] = []
    for index, item in enumerate(questions):
        question = as_object(item)
        qid = question.get("id") if question is not None else None
        if question is None or not isinstance(qid, str):
            return UnreadableRequest(
                method=ASK_TOOL,
                reason=f"questions[{index}].id is missing or not a string",
                request_id=request_id,
            )
        text = question.get("question")
        ids.append(qid)
        texts.append(text if isinstance(text, str) else "")
    call_id = event.get("toolCallId", params.get("toolCallId"))
    return AskRequest(
        request_id=request_id,
        question_ids=tuple(ids),
        question_texts=tuple(texts),
        tool_call_id=call_id if isinstance(call_id, str) and call_id else None,
    )


def _target(event: dict[str, object]) -> str | None:
    target = event.get("targetId")
    return target if isinstance(target, str) and target else None
