"""ACP form elicitations <-> typed Asks (pure; docs/spec.md §2.3, `--protocol acp`).

An ACP agent asks its client for input with `elicitation/create` in form mode: a message and
a flat JSON schema (`requestedSchema`, one level of properties, each a string, number,
integer, boolean or array of strings). Two kinds reach the bridge:

1. The ask tool's own form (oh-my-pi's `askDialog`): per question `i` a property `q<i>`
   (a `string` with `oneOf` entries `{const: label, title: label, description?}` and
   `default` = the recommended label, or an `array` whose `items.anyOf` holds the entries,
   for multi-select; absent when the question has no options) and a `q<i>__other` string
   for the free text. The typed Ask of such a form comes from the tool call's arguments
   through EventMapper (full fidelity: ids, headers, previews); `matches_ask_form` says
   whether a form is that Ask's, and `ask_form_content` turns the answered Ask into the
   form's content: the chosen labels, and the free text under `q<i>__other`.
2. Any other form (Claude Code's and Codex's ask forms, another agent's, oh-my-pi's
   select/confirm/input/editor dialogs): `plan_form` maps the schema into a typed Ask of its
   own, one question per property in schema order: a string with `enum`/`oneOf` ->
   single-select, an array of such strings -> multi-select, a boolean -> Yes/No, a string,
   number or integer -> a free-text-only question; a choice's free-text companion
   (companions.py) is folded into it as its "Other", and each question says whether free
   text can reach the agent (`AskQuestion.free_text`). `form_content` turns the participant's answer back into the schema's terms
   and validates it (choices among the offered values, numbers that parse and stay in
   bounds, string lengths and patterns, item counts); what cannot be expressed in the
   schema's terms is left out and reported.

Nothing here raises on odd input; the schema arrives already validated by the ACP library.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

from acp.schema import (
    ElicitationBooleanPropertySchema,
    ElicitationIntegerPropertySchema,
    ElicitationMultiSelectPropertySchema,
    ElicitationNumberPropertySchema,
    ElicitationStringPropertySchema,
    TitledMultiSelectItems,
)

from compass_bridge.companions import find_companions, option_preview
from compass_bridge.replies import build_answers
from compass_core.jsonvalues import is_array, is_object
from compass_core.limits import (
    MAX_ID_LENGTH,
    MAX_OPTIONS_PER_QUESTION,
    MAX_QUESTIONS_PER_ASK,
    NUL,
)
from gen.compass.v1 import comms_pb2

if TYPE_CHECKING:
    from acp.schema import ElicitationSchema, EnumOption

    from compass_core.jsonvalues import JsonObject

__all__ = [
    "FormContent",
    "FormField",
    "FormPlan",
    "ask_form_changes",
    "ask_form_content",
    "could_be_ask_form",
    "form_content",
    "matches_ask_form",
    "plan_elicitation",
    "plan_form",
]

OTHER_SUFFIX: Final = "__other"
"""oh-my-pi's key suffix for a question's free text (`q0__other`)."""
YES: Final = "Yes"
NO: Final = "No"
_HEADER_MAX: Final = 32
"""A property description up to this long is shown as the question's header chip; a longer
one is appended to the question text."""

FieldKind = Literal["choice", "choices", "boolean", "text", "number", "integer"]
JsonContent = str | int | float | bool | list[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class FormField:
    """One property of a mapped form: how to read the participant's answer back."""

    key: str
    kind: FieldKind
    values: tuple[str, ...] = ()
    """The schema's values of a choice, by option index (option id "0" is values[0])."""
    required: bool = False
    min_items: int | None = None
    max_items: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    companion: str = ""
    """A choice's free-text companion key (companions.py): where its free text goes."""
    other: str = ""
    """A choice's own "my own answer" value, not offered as an option: the value when the
    person gave only free text."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FormPlan:
    """A form mapped into a typed Ask, with what is needed to answer it in its own terms."""

    ask: comms_pb2.Ask
    """The typed Ask (empty ask_id and answer state), one question per property."""
    fields: tuple[FormField, ...]
    intro: str = ""
    """The form's message when no question shows it already (posted as a text block)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FormContent:
    """A form's answer in the schema's terms."""

    content: dict[str, JsonContent]
    problems: tuple[str, ...] = ()
    """What had to be left out, and why."""
    missing: tuple[str, ...] = ()
    """Required properties left without a valid value: the answer cannot be accepted."""


def plan_elicitation(request: JsonObject, schema_key: str) -> tuple[FormPlan, JsonObject] | str:
    """An MCP form elicitation as another agent relays it (its `mode`, its `message` and its
    schema under `schema_key`: Claude Code's Elicitation hook, Copilot's
    `elicitation.requested`), planned (`plan_form`), with its schema; a string says why it
    cannot be presented (a URL elicitation, a schema the bridge does not take)."""
    from acp.schema import ElicitationSchema
    from pydantic import ValidationError

    mode = request.get("mode", "form")
    if mode != "form":
        return f"a {mode!r} elicitation is not a form"
    schema = request.get(schema_key)
    message = request.get("message")
    if not is_object(schema) or not isinstance(message, str):
        return f"the form has no {schema_key} or message"
    try:
        parsed = ElicitationSchema.model_validate(schema)
    except ValidationError as exc:
        return f"the form's schema is not one the bridge can present ({exc.error_count()} problems)"
    plan = plan_form(message, parsed)
    if isinstance(plan, str):
        return plan
    return plan, schema


def plan_form(message: str, schema: ElicitationSchema) -> FormPlan | str:
    """Map a form elicitation into a typed Ask; a string says why it cannot be presented.

    A choice's free-text companion (companions.py) is folded into the choice's question:
    its free text is ACCEPTED and written to the companion; a choice without one, and a
    boolean, REFUSE free text (the agent could not receive it); a text or number property
    is answered by free text alone.
    """
    properties = schema.properties or {}
    if not properties:
        return "the form has no properties"
    companions = find_companions(properties)
    keys = [key for key in properties if key not in companions.folded]
    if len(keys) > MAX_QUESTIONS_PER_ASK:
        return f"the form has {len(keys)} questions; at most {MAX_QUESTIONS_PER_ASK}"
    required = set(schema.required or ())
    ask = comms_pb2.Ask()
    fields: list[FormField] = []
    uses_message = False
    for key in keys:
        prop = properties[key]
        if not key or len(key) > MAX_ID_LENGTH or NUL in key:
            return f"property name {key[:40]!r} cannot be a question id"
        text, header = _wording(
            key,
            getattr(prop, "title", None) or "",
            getattr(prop, "description", None) or "",
            message if len(keys) == 1 else "",
        )
        uses_message |= text == message
        question = comms_pb2.AskQuestion(question_id=key, question=text, header=header)
        planned = _plan_field(
            key,
            prop,
            question,
            required=key in required,
            companion=companions.text_of.get(key, ""),
            other=companions.other_of.get(key, ""),
        )
        if isinstance(planned, str):
            return planned
        # A required property cannot reach the agent unanswered: Compass refuses the skip.
        question.answer_required = planned.required
        if len(question.options) > MAX_OPTIONS_PER_QUESTION:
            return f"property {key!r} offers more than {MAX_OPTIONS_PER_QUESTION} choices"
        if any(NUL in s for s in _texts(question)):
            return f"property {key!r} holds a NUL character"
        ask.questions.append(question)
        fields.append(planned)
    intro = "" if uses_message or NUL in message else message
    return FormPlan(ask=ask, fields=tuple(fields), intro=intro)


def _headerlike(text: str) -> bool:
    return 0 < len(text) <= _HEADER_MAX and "\n" not in text


def _wording(key: str, title: str, description: str, message: str) -> tuple[str, str]:
    """(question, header) of a property: of a title and a description, a short one is the
    header and the other the question (Claude Code: header + question; Codex: question +
    header); a lone short title or description heads the form's message when the form asks
    one question; otherwise the longer text is the question, the property name at worst."""
    if title and description:
        short, long = sorted((title, description), key=len)
        if _headerlike(short) and short != long:
            return long, short
        return f"{title}\n\n{description}", ""
    alone = title or description
    if message and alone != message and _headerlike(alone):
        return message, alone
    if alone:
        return alone, ""
    return message or key, ""


def _plan_field(
    key: str,
    prop: object,
    question: comms_pb2.AskQuestion,
    *,
    required: bool,
    companion: str,
    other: str,
) -> FormField | str:
    choice_text = comms_pb2.FREE_TEXT_ACCEPTED if companion else comms_pb2.FREE_TEXT_REFUSED
    if isinstance(prop, ElicitationBooleanPropertySchema):
        question.options.add(id="0", label=YES)
        question.options.add(id="1", label=NO)
        question.free_text = comms_pb2.FREE_TEXT_REFUSED
        if prop.default is not None:
            question.recommended = 0 if prop.default else 1
        return FormField(key=key, kind="boolean", values=("true", "false"), required=required)
    if isinstance(prop, ElicitationStringPropertySchema):
        entries = _string_entries(prop)
        if entries is None:
            question.free_text = comms_pb2.FREE_TEXT_ACCEPTED
            return FormField(
                key=key,
                kind="text",
                required=required,
                min_length=prop.min_length,
                max_length=prop.max_length,
                pattern=prop.pattern,
            )
        values = _add_options(question, entries, hide=other)
        question.free_text = choice_text
        if prop.default is not None and prop.default in values:
            question.recommended = values.index(prop.default)
        return FormField(
            key=key,
            kind="choice",
            values=values,
            required=required,
            companion=companion,
            other=other,
        )
    if isinstance(prop, ElicitationMultiSelectPropertySchema):
        items = prop.items
        if isinstance(items, TitledMultiSelectItems):
            entries = [_entry(e) for e in items.any_of]
        else:
            enum: object = getattr(items, "enum", None)
            if not is_array(enum):
                return f"property {key!r} is an array without a list of choices"
            entries = [(str(v), str(v), "", "") for v in enum]
        values = _add_options(question, entries, hide=other)
        question.allow_multiple = True
        question.free_text = choice_text
        return FormField(
            key=key,
            kind="choices",
            values=values,
            required=required,
            min_items=prop.min_items,
            max_items=prop.max_items,
            companion=companion,
            other=other,
        )
    if isinstance(prop, ElicitationIntegerPropertySchema | ElicitationNumberPropertySchema):
        kind: FieldKind = (
            "integer" if isinstance(prop, ElicitationIntegerPropertySchema) else "number"
        )
        question.free_text = comms_pb2.FREE_TEXT_ACCEPTED
        return FormField(
            key=key, kind=kind, required=required, minimum=prop.minimum, maximum=prop.maximum
        )
    return f"property {key!r} has a type the bridge cannot present"


Entry = tuple[str, str, str, str]
"""(value, label, description, preview) of a choice's option."""


def _entry(option: EnumOption) -> Entry:
    return (option.const, option.title, option.description or "", option_preview(option))


def _string_entries(prop: ElicitationStringPropertySchema) -> list[Entry] | None:
    if prop.one_of:
        return [_entry(e) for e in prop.one_of]
    if prop.enum:
        return [(v, v, "", "") for v in prop.enum]
    return None


def _add_options(
    question: comms_pb2.AskQuestion, entries: list[Entry], *, hide: str
) -> tuple[str, ...]:
    """The entries as options (ids "0", "1", ... in order), but for the value `hide` (the
    agent's own "other" choice, which Compass's "Other" stands for); their values by id."""
    shown = [entry for entry in entries if not hide or entry[0] != hide]
    for index, (_value, title, description, preview) in enumerate(shown):
        question.options.add(id=str(index), label=title, description=description, preview=preview)
    return tuple(entry[0] for entry in shown)


def _texts(question: comms_pb2.AskQuestion) -> list[str]:
    texts = [question.question, question.header]
    for option in question.options:
        texts += [option.label, option.description]
    return texts


# -- answers -----------------------------------------------------------------------------


@dataclass(slots=True)
class _Reader:
    problems: list[str] = field(default_factory=list)

    def chosen_values(self, question: comms_pb2.AskQuestion, spec: FormField) -> list[str]:
        values: list[str] = []
        for option_id in question.chosen_option_ids:
            index = int(option_id) if option_id.isdecimal() and option_id.isascii() else -1
            if 0 <= index < len(spec.values):
                values.append(spec.values[index])
            else:
                self.problems.append(f"{spec.key}: chosen id {option_id!r} is not offered")
        return values

    def free_text_value(self, spec: FormField, text: str) -> JsonContent | None:
        """The free text as a value of `spec`'s type, or None (with the problem noted)."""
        if spec.kind in {"choice", "choices"}:
            if text in spec.values:
                return text if spec.kind == "choice" else [text]
            self.problems.append(f"{spec.key}: free text is not one of the schema's values")
            return None
        if spec.kind == "boolean":
            word = text.strip().lower()
            if word in {"yes", "true", "y"}:
                return True
            if word in {"no", "false", "n"}:
                return False
            self.problems.append(f"{spec.key}: free text is neither yes nor no")
            return None
        if spec.kind in {"number", "integer"}:
            return self._number(spec, text.strip())
        return self._string(spec, text)

    def _number(self, spec: FormField, text: str) -> int | float | None:
        try:
            number: int | float = int(text) if spec.kind == "integer" else float(text)
        except ValueError:
            self.problems.append(
                f"{spec.key}: {text[:40]!r} is not a{'n integer' if spec.kind == 'integer' else ' number'}"
            )
            return None
        if isinstance(number, float) and not math.isfinite(number):
            self.problems.append(f"{spec.key}: the number is not finite")
            return None
        if (spec.minimum is not None and number < spec.minimum) or (
            spec.maximum is not None and number > spec.maximum
        ):
            self.problems.append(f"{spec.key}: {number} is out of the schema's bounds")
            return None
        return number

    def _string(self, spec: FormField, text: str) -> str | None:
        if spec.min_length is not None and len(text) < spec.min_length:
            self.problems.append(f"{spec.key}: shorter than {spec.min_length} characters")
            return None
        if spec.max_length is not None and len(text) > spec.max_length:
            self.problems.append(f"{spec.key}: longer than {spec.max_length} characters")
            return None
        if spec.pattern is not None:
            try:
                matches = re.search(spec.pattern, text) is not None
            except re.error:
                matches = True  # a pattern Python cannot compile is not ours to enforce
            if not matches:
                self.problems.append(f"{spec.key}: does not match the schema's pattern")
                return None
        return text


def form_content(plan: FormPlan, answered: comms_pb2.Ask) -> FormContent:
    """The answered Ask of `plan` as the form's content, validated against the schema."""
    by_id = {question.question_id: question for question in answered.questions}
    reader = _Reader()
    content: dict[str, JsonContent] = {}
    for spec in plan.fields:
        question = by_id.get(spec.key)
        if question is None:
            continue
        if spec.companion:
            _companion_value(reader, spec, question, content)
            continue
        value = _field_value(reader, spec, question)
        if value is not None:
            content[spec.key] = value
    missing = tuple(spec.key for spec in plan.fields if spec.required and spec.key not in content)
    return FormContent(content=content, problems=tuple(reader.problems), missing=missing)


def _companion_value(
    reader: _Reader,
    spec: FormField,
    question: comms_pb2.AskQuestion,
    content: dict[str, JsonContent],
) -> None:
    """A choice with a free-text companion: the picks under its key, the free text under
    the companion's; with text and no pick, the agent's own "other" value when it has one."""
    chosen = list(dict.fromkeys(reader.chosen_values(question, spec)))
    text = question.custom_text
    if spec.kind == "choices":
        if chosen:
            content[spec.key] = chosen
        elif text and spec.required:
            content[spec.key] = [spec.other] if spec.other else []
    elif chosen:
        content[spec.key] = chosen[0]
    elif text and spec.other:
        content[spec.key] = spec.other
    if text:
        content[spec.companion] = text


def _field_value(
    reader: _Reader, spec: FormField, question: comms_pb2.AskQuestion
) -> JsonContent | None:
    chosen = reader.chosen_values(question, spec)
    text = question.custom_text
    if spec.kind == "choices":
        picked = list(dict.fromkeys(chosen))
        if text:
            extra = reader.free_text_value(spec, text)
            if isinstance(extra, list) and extra[0] not in picked:
                picked += extra
        if not picked and not question.chosen_option_ids and not text:
            return None  # skipped
        low, high = spec.min_items, spec.max_items
        if (low is not None and len(picked) < low) or (high is not None and len(picked) > high):
            reader.problems.append(
                f"{spec.key}: {len(picked)} choices, outside the schema's bounds"
            )
            return None
        return picked
    if chosen:
        if spec.kind == "boolean":
            return chosen[0] == "true"
        return chosen[0]
    if text:
        return reader.free_text_value(spec, text)
    return None


# -- the ask tool's own form -------------------------------------------------------------


def _question_key(index: int) -> str:
    return f"q{index}"


_ASK_FORM_KEY: Final = re.compile(r"q(0|[1-9][0-9]*)(__other)?")


def could_be_ask_form(schema: ElicitationSchema) -> bool:
    """Whether `schema` has the shape of oh-my-pi's ask form (every key `q<i>` or
    `q<i>__other`): only such a form is worth holding for an ask call that has not arrived."""
    properties = schema.properties or {}
    return bool(properties) and all(_ASK_FORM_KEY.fullmatch(key) for key in properties)


def matches_ask_form(schema: ElicitationSchema, ask: comms_pb2.Ask) -> bool:
    """Whether `schema` is oh-my-pi's form for `ask` (the Ask mapped from the tool call)."""
    properties = schema.properties or {}
    expected: set[str] = set()
    for index, question in enumerate(ask.questions):
        key = _question_key(index)
        expected.add(key + OTHER_SUFFIX)
        if not question.options:
            continue
        expected.add(key)
        prop = properties.get(key)
        labels = [option.label for option in question.options]
        if isinstance(prop, ElicitationStringPropertySchema):
            offered = [e.const for e in prop.one_of or ()] or list(prop.enum or ())
            if question.allow_multiple:
                return False
        elif isinstance(prop, ElicitationMultiSelectPropertySchema):
            items = prop.items
            offered = (
                [e.const for e in items.any_of] if isinstance(items, TitledMultiSelectItems) else []
            )
            if not question.allow_multiple:
                return False
        else:
            return False
        if offered != labels or (prop.title is not None and prop.title != question.question):
            return False
    return set(properties) == expected


def ask_form_content(answered: comms_pb2.Ask) -> tuple[dict[str, JsonContent], tuple[str, ...]]:
    """The answered Ask as oh-my-pi's ask form content, and what had to be left out.

    Per question `i`: `q<i>` = the chosen label (single-select; absent when skipped or
    answered with free text only) or the list of chosen labels (multi-select, `[]` when
    none), and `q<i>__other` = the free text when there is some. A question without options
    has only the free text.
    """
    runtime = build_answers(answered)
    content: dict[str, JsonContent] = {}
    for index, (question, answer) in enumerate(
        zip(answered.questions, runtime.answers, strict=True)
    ):
        key = _question_key(index)
        labels = answer["selectedOptions"]
        picked = [x for x in labels if isinstance(x, str)] if is_array(labels) else []
        if question.options:
            if question.allow_multiple:
                content[key] = picked
            elif picked:
                content[key] = picked[0]
        if question.custom_text:
            content[key + OTHER_SUFFIX] = question.custom_text
    return content, runtime.problems


def ask_form_changes(ask: comms_pb2.Ask) -> list[str]:
    """What oh-my-pi's own handling of its delivered ask form changes in the answer, in
    words (the receipt's detail)."""
    changes: list[str] = []
    if len(ask.questions) == 1:
        (question,) = ask.questions
        if (
            question.options
            and not question.allow_multiple
            and not question.chosen_option_ids
            and not question.custom_text
        ):
            changes.append(
                f"question {question.question_id!r} was skipped; oh-my-pi takes an empty "
                "answer to a one-question ask as a cancel and stops the agent's turn"
            )
    changes.extend(
        f"question {question.question_id!r}: picks and free text delivered, but the agent's "
        "summary for the model shows only the text"
        for question in ask.questions
        if question.free_text == comms_pb2.FREE_TEXT_INSTEAD_OF_PICKS
        and question.chosen_option_ids
        and question.custom_text
    )
    return changes
