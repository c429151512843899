"""ACP `session/request_permission` <-> a typed Ask (pure).

A permission request names a tool call and offers options (allow once, allow always, reject
once, ...): it becomes one single-select question, one option per permission option, no free
text (`permission_ask`), and the chosen option is selected (`choose`).

Some agents put more than a yes or no behind a permission: Qwen Code's `ask_user_question`
(qwen.py) arrives as a permission whose answers travel in a field of their own. Selecting an
option of such a request without those answers would hand the agent an empty answer while
the person's answer is shown as given. `expects_answers` says, conservatively, when a request
is of that family and Compass does not know how to fill it: its tool call's `rawInput` or
`_meta` carries a list of questions or a requested schema, or its `_meta` names an
interaction kind. Such a request is refused (cancelled, nothing posted), never answered as a
bare permission. Ordinary permissions (a command, an edit, a fetch: Claude Code's, Codex's,
Qwen Code's, oh-my-pi's) carry none of these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from compass_core.jsonvalues import is_array, is_object
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from acp.schema import PermissionOption, ToolCallUpdate

__all__ = ["PERMISSION_KINDS", "Choice", "choose", "expects_answers", "permission_ask"]

PERMISSION_KINDS: Final = {
    "allow_once": "allow once",
    "allow_always": "allow always",
    "reject_once": "reject once",
    "reject_always": "reject always",
}
"""ACP's permission option kinds, in words, as each option's description."""

QUESTION_ID: Final = "permission"
_SCHEMA_KEYS: Final = ("requestedSchema", "requested_schema")


def permission_ask(title: str | None, options: list[PermissionOption]) -> comms_pb2.Ask:
    """The Ask of a permission request: one question, one option per permission option."""
    ask = comms_pb2.Ask()
    question = ask.questions.add(
        question_id=QUESTION_ID,
        question=f"Allow the agent: {title or 'a tool call'}?",
        header="Permission",
        # A permission request takes one of its options; free text cannot reach it.
        free_text=comms_pb2.FREE_TEXT_REFUSED,
    )
    for index, option in enumerate(options):
        question.options.add(
            id=str(index), label=option.name, description=PERMISSION_KINDS.get(option.kind, "")
        )
    return ask


@dataclass(frozen=True, slots=True)
class Choice:
    """The option to select for an answered permission Ask, and what changed on the way."""

    option: PermissionOption | None
    """None: nothing was chosen and nothing rejects: the request is cancelled."""
    changes: list[str] = field(default_factory=list[str])


def choose(options: list[PermissionOption], answered: comms_pb2.Ask) -> Choice:
    """The chosen option; an answer without a choice rejects once (when it can)."""
    chosen: list[str] = list(answered.questions[0].chosen_option_ids) if answered.questions else []
    index = int(chosen[0]) if chosen and chosen[0].isdecimal() else -1
    if 0 <= index < len(options):
        return Choice(options[index])
    rejects = [o for o in options if o.kind == "reject_once"]
    if not rejects:
        return Choice(None)
    return Choice(
        rejects[0], [f"no option was chosen: the agent got {rejects[0].name!r} (reject once)"]
    )


def expects_answers(tool_call: ToolCallUpdate) -> str | None:
    """Why a permission request stands for a form Compass cannot fill (see the module
    docstring), or None for an ordinary permission."""
    meta = tool_call.field_meta or {}
    for key, value in meta.items():
        if key.endswith("InteractionKind"):
            return f"its _meta.{key} is {value!r}"
    for where, holder in (("rawInput", tool_call.raw_input), ("_meta", meta)):
        if not is_object(holder):
            continue
        for key, value in holder.items():
            if key.lower().endswith("questions") and is_array(value) and value:
                return f"its {where}.{key} holds {len(value)} question(s)"
            if key in _SCHEMA_KEYS and is_object(value):
                return f"its {where}.{key} is a form"
    return None
