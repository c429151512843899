"""What published agents put beside a choice in their ACP forms (pure; read by forms.py).

A form property is one question, except a choice's free-text companion: the field the agent
reads a person's own answer from, which Compass folds into the choice's question as its
"Other" (docs/spec.md §2.3). Read from the packages as published:

- Claude Code (`@agentclientprotocol/claude-agent-acp` 0.101.0, `dist/elicitation.js`): its
  AskUserQuestion form has per question `question_<n>` (a `oneOf`, or an array whose
  `items.anyOf` holds the options) and `question_<n>_custom`, a plain string titled "Other".
  The adapter folds the text in: with no pick it is the answer; beside a single-select's
  pick it travels as the tool's `notes`; on a multi-select it joins the picks. An option's
  `preview` rides in `oneOf[i]._meta["_claude/askUserQuestionOption"].preview`.
- Codex (`@agentclientprotocol/codex-acp` 2.6.0, `CodexElicitationHandler`): per question of
  `request_user_input` a string `oneOf` (`_meta.codex.isOther` when the question takes an
  own answer, then ending in the const "None of the above") and a companion `<id>_note`
  with `_meta.codex.role == "user_note"` and `_meta.codex.questionId == <id>`. Every
  question is `required`; the adapter sends the model the pick and `user_note: <text>`.
  With text but no pick the form must still name a value: the "None of the above" const,
  which is therefore not shown as an option of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from acp.schema import (
    ElicitationMultiSelectPropertySchema,
    ElicitationStringPropertySchema,
    TitledMultiSelectItems,
)

from compass_core.jsonvalues import is_object

if TYPE_CHECKING:
    from collections.abc import Mapping

    from acp.schema import EnumOption

__all__ = [
    "CLAUDE_CUSTOM_SUFFIX",
    "CLAUDE_OPTION_META",
    "CODEX_OTHER_OPTION",
    "Companions",
    "find_companions",
    "option_preview",
]

CLAUDE_CUSTOM_SUFFIX: Final = "_custom"
CLAUDE_OPTION_META: Final = "_claude/askUserQuestionOption"
CODEX_OTHER_OPTION: Final = "None of the above"
_CODEX_NOTE_ROLE: Final = "user_note"


@dataclass(frozen=True, slots=True)
class Companions:
    """A form's free-text companions: `text_of[choice key]` is the key the choice's free
    text goes to; `other_of[choice key]` the choice's own value that means "my own answer"
    (hidden from the options, chosen when the person gave only text)."""

    text_of: Mapping[str, str]
    other_of: Mapping[str, str]

    @property
    def folded(self) -> set[str]:
        """The companion keys, which are not questions of their own."""
        return set(self.text_of.values())


def _is_choice(prop: object) -> bool:
    if isinstance(prop, ElicitationStringPropertySchema):
        return bool(prop.one_of or prop.enum)
    return isinstance(prop, ElicitationMultiSelectPropertySchema)


def _is_plain_text(prop: object) -> bool:
    return isinstance(prop, ElicitationStringPropertySchema) and not (
        prop.one_of or prop.enum or prop.format
    )


def _codex(meta: object) -> Mapping[str, object]:
    if not is_object(meta):
        return {}
    codex = meta.get("codex")
    return codex if is_object(codex) else {}


def find_companions(properties: Mapping[str, object]) -> Companions:
    """The free-text companions of the choices among `properties` (see the module doc)."""
    text_of: dict[str, str] = {}
    other_of: dict[str, str] = {}
    for key, prop in properties.items():
        if not _is_plain_text(prop):
            continue
        codex = _codex(getattr(prop, "field_meta", None))
        owner = codex.get("questionId")
        if codex.get("role") == _CODEX_NOTE_ROLE and isinstance(owner, str):
            target = properties.get(owner)
            if _is_choice(target) and owner not in text_of:
                text_of[owner] = key
                if isinstance(target, ElicitationStringPropertySchema) and _codex(
                    target.field_meta
                ).get("isOther"):
                    offered = [e.const for e in target.one_of or ()] or list(target.enum or ())
                    if CODEX_OTHER_OPTION in offered:
                        other_of[owner] = CODEX_OTHER_OPTION
            continue
        if key.endswith(CLAUDE_CUSTOM_SUFFIX):
            owner = key.removesuffix(CLAUDE_CUSTOM_SUFFIX)
            if _is_choice(properties.get(owner)) and owner not in text_of:
                text_of[owner] = key
    return Companions(text_of=text_of, other_of=other_of)


def option_preview(entry: EnumOption) -> str:
    """Claude Code's option preview (`_meta["_claude/askUserQuestionOption"].preview`)."""
    meta = entry.field_meta
    if not is_object(meta):
        return ""
    option = meta.get(CLAUDE_OPTION_META)
    preview = option.get("preview") if is_object(option) else None
    return preview if isinstance(preview, str) else ""


def entries_of(prop: object) -> list[EnumOption] | None:
    """A choice's titled entries (`oneOf`, or `items.anyOf`); None for an untitled enum."""
    if isinstance(prop, ElicitationStringPropertySchema) and prop.one_of:
        return list(prop.one_of)
    if isinstance(prop, ElicitationMultiSelectPropertySchema) and isinstance(
        prop.items, TitledMultiSelectItems
    ):
        return list(prop.items.any_of)
    return None
