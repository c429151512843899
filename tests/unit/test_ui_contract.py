"""The browser UI's copy of the contract, held to the proto: the JSDoc shapes the UI reads
(compass_server/static/*.js typedefs) name only real Connect-JSON fields, and its enum tables
(names by number, for enums Connect-JSON may send as numbers) are the proto's.

The UI has no build step and no generated code, so these copies are hand-written: this fails
when one drifts (a renamed field would otherwise read as absent, silently)."""

from __future__ import annotations

import re
from typing import Final

import pytest

from gen.compass.v1 import comms_pb2
from tests.unit._node import STATIC, import_line, node_json

# Each typedef that mirrors a wire message (compass.v1), by module and name.
WIRE: Final[dict[tuple[str, str], str]] = {
    ("ask.js", "Option"): "AskOption",
    ("ask.js", "Question"): "AskQuestion",
    ("ask.js", "AskDelivery"): "AskDelivery",
    ("ask.js", "Ask"): "Ask",
    ("ask.js", "Answer"): "AskQuestionAnswer",
    ("page.js", "Block"): "MessageBlock",
    ("page.js", "Message"): "Message",
    ("page.js", "Channel"): "Channel",
    ("page.js", "PendingAsk"): "PendingAsk",
    ("connect.js", "Violation"): "InvalidField",
}
# Typedefs of the UI's own (not on the wire), named so that a new typedef must be classified.
LOCAL: Final = {
    ("ask.js", "QuestionDraft"),
    ("ask.js", "UnsentAnswer"),
    ("ask.js", "SendError"),
    ("delivery.js", "Receipt"),
    ("form.js", "QuestionEntry"),
    ("dom.js", "Props"),
}

_OBJECT_TYPEDEF = re.compile(r"@typedef \{object\} (\w+)")
_PROPERTY = re.compile(r"^\s*\*\s*@property \{[^}]*(?:\}[^}]*)*?\} \[?(\w+)\]?")
_INLINE_TYPEDEF = re.compile(r"@typedef \{\{(.*?)\}\} (\w+)", re.DOTALL)


def _top_level_keys(body: str) -> set[str]:
    """The keys of an inline object type `a?: T, b: {c: U}` (nested braces skipped)."""
    keys: set[str] = set()
    depth = 0
    for match in re.finditer(r"[{}]|(\w+)\??:", body):
        token = match.group(0)
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
        elif depth == 0 and match.group(1):
            keys.add(match.group(1))
    return keys


def typedefs(source: str) -> dict[str, set[str]]:
    """Every object typedef of a module's JSDoc: its name and the property names it lists."""
    found: dict[str, set[str]] = {}
    for match in _INLINE_TYPEDEF.finditer(source):
        found[match.group(2)] = _top_level_keys(match.group(1))
    current: str | None = None
    for line in source.splitlines():
        opened = _OBJECT_TYPEDEF.search(line)
        if opened:
            current = str(opened.group(1))
            found[current] = set()
            continue
        if current is None:
            continue
        prop = _PROPERTY.match(line)
        if prop:
            found[current].add(prop.group(1))
        elif "@typedef" in line or "*/" in line:
            current = None
    return found


def _ui_typedefs() -> dict[tuple[str, str], set[str]]:
    return {
        (path.name, name): props
        for path in sorted(STATIC.glob("*.js"))
        for name, props in typedefs(path.read_text(encoding="utf-8")).items()
        if props  # `@typedef {import(...)} X` aliases list nothing
    }


def test_the_parser_reads_both_typedef_forms() -> None:
    source = """
/**
 * @typedef {{id?: string, nested?: {inner?: string}, ok: boolean}} Inline
 * @typedef {object} Listed
 * @property {string | number} [state] DeliveryState
 * @property {{a: string}} plain
 * @typedef {import("./x.js").Y} Alias
 */"""
    assert typedefs(source) == {
        "Inline": {"id", "nested", "ok"},
        "Listed": {"state", "plain"},
    }


def test_every_typedef_is_classified() -> None:
    assert set(_ui_typedefs()) == set(WIRE) | LOCAL


@pytest.mark.parametrize(
    ("where", "message"),
    [pytest.param(where, m, id=f"{where[0]}:{where[1]}") for where, m in WIRE.items()],
)
def test_a_wire_shape_names_only_fields_of_its_message(
    where: tuple[str, str], message: str
) -> None:
    props = _ui_typedefs()[where]
    fields = {f.json_name for f in comms_pb2.DESCRIPTOR.message_types_by_name[message].fields}
    assert props <= fields, f"{where} reads fields compass.v1.{message} lacks: {props - fields}"


def test_the_delivery_fields_are_read() -> None:
    """The contract's per-question free text and the receipt (issue 22) are in the shapes."""
    shapes = _ui_typedefs()
    assert "freeText" in shapes["ask.js", "Question"]
    assert "delivery" in shapes["ask.js", "Ask"]
    assert shapes["ask.js", "AskDelivery"] == {
        field.json_name for field in comms_pb2.AskDelivery.DESCRIPTOR.fields
    }
    assert "customText" in shapes["ask.js", "Answer"]


def _enum_names(enum: str) -> list[str]:
    values = comms_pb2.DESCRIPTOR.enum_types_by_name[enum].values
    assert [v.number for v in values] == list(range(len(values))), "a dense enum"
    return [v.name for v in values]


def test_the_ui_enum_tables_are_the_protos() -> None:
    script = (
        import_line("ask", "ask.js")
        + import_line("delivery", "delivery.js")
        + "process.stdout.write(JSON.stringify({\n"
        "  status: ask.ASK_STATUS_NAMES, freeText: ask.FREE_TEXT_NAMES,\n"
        "  freeTextByKey: ask.FREE_TEXT, delivery: delivery.DELIVERY_STATE_NAMES,\n"
        "  deliveryByKey: delivery.DELIVERY, statusByKey: ask.STATUS,\n"
        "}));\n"
    )
    ui = node_json(script)
    assert isinstance(ui, dict)
    assert ui["status"] == _enum_names("AskStatus")
    assert ui["freeText"] == _enum_names("FreeText")
    assert ui["delivery"] == _enum_names("DeliveryState")
    # The named constants are names of the enum, each under its own short key.
    for table, enum, prefix in (
        ("statusByKey", "AskStatus", "ASK_STATUS_"),
        ("freeTextByKey", "FreeText", "FREE_TEXT_"),
        ("deliveryByKey", "DeliveryState", "DELIVERY_STATE_"),
    ):
        for key, name in ui[table].items():
            assert name == prefix + key
            assert name in _enum_names(enum)
