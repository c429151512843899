"""Small helpers for talking about decoded JSON values in reasons."""

from __future__ import annotations

from typing import Final, TypeAlias

JsonValue: TypeAlias = "dict[str, JsonValue] | list[JsonValue] | str | int | float | bool | None"
"""What `json.loads` produces. The mapper casts a decoded event to JsonObject once, after an
`isinstance(event, dict)` check, instead of casting every nested dict and list: each use
still narrows with `isinstance` first (the type is a union, so the checker insists), so a
value that is not JSON after all simply fails a check."""
JsonObject: TypeAlias = "dict[str, JsonValue]"


class Missing:
    """Sentinel for an absent key: `dict.get(key, MISSING)`, one lookup, and unlike None it
    cannot be confused with an explicit JSON null."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = Missing()


def json_type(value: object) -> str:
    """The JSON name of `value`'s type ("missing" for MISSING), for error reasons.

    Never the value itself: reasons must stay short and must not echo agent text.
    """
    # bool before int: True is an int in Python but a boolean in JSON.
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    if value is MISSING:
        return "missing"
    return type(value).__name__
