"""Narrowing decoded JSON: `object` in, a typed value out, or a MappingError naming the path.

Every helper takes `object` (what `json.loads` gives, or anything else a caller passes) and
checks it with `isinstance`, so the type checker only ever sees values that were checked.
An absent key is passed as MISSING (`obj.get(key, MISSING)`), which the helpers report as
"<path> is missing".

The one set of JSON-narrowing helpers of the project: the mapper uses the raising ones, the
bridge and the server (the store's jsonb codec, change events, webhook rows) the TypeGuards
`is_object` / `is_array`, so no JSON value is `cast`.
"""

from __future__ import annotations

from typing import Final, TypeAlias, TypeGuard

JsonObject: TypeAlias = "dict[str, object]"
"""A decoded JSON object. Its values stay `object`: every read narrows again."""
JsonArray: TypeAlias = "list[object]"
"""A decoded JSON array. Its items stay `object`: every read narrows again."""


class MappingError(Exception):
    """A decoded JSON value is not of the shape the mapper needs.

    Internal to compass_core: `EventMapper.map` turns it into an UnmappedEvent whose reason
    is `str(error)`, e.g. `questions[1].id is empty`.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path} {problem}")
        self.path: Final = path
        """Where, e.g. `questions[1].options[0].label`."""
        self.problem: Final = problem
        """What is wrong there, e.g. `is not a string (got number)`."""

    @property
    def reason(self) -> str:
        """`<path> <problem>`: the UnmappedEvent reason."""
        return str(self)


class Missing:
    """Sentinel for an absent key: `dict.get(key, MISSING)`, one lookup, and unlike None it
    cannot be confused with an explicit JSON null."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = Missing()


def is_object(value: object) -> TypeGuard[JsonObject]:
    """`isinstance(value, dict)`, typed for decoded JSON.

    `json.loads` makes only str keys; the values stay `object`, so nothing below the object
    itself is taken on trust.
    """
    return isinstance(value, dict)


def is_array(value: object) -> TypeGuard[JsonArray]:
    """`isinstance(value, list)`, typed for decoded JSON (items stay `object`)."""
    return isinstance(value, list)


def as_object(value: object, path: str) -> JsonObject:
    """`value` as a JSON object.

    Raises:
        MappingError: `value` is missing or not an object.
    """
    if not is_object(value):
        raise _wrong_type(value, path, "an object")
    return value


def as_array(value: object, path: str) -> JsonArray:
    """`value` as a JSON array.

    Raises:
        MappingError: `value` is missing or not an array.
    """
    if not is_array(value):
        raise _wrong_type(value, path, "an array")
    return value


def as_str(value: object, path: str) -> str:
    """`value` as a string.

    Raises:
        MappingError: `value` is missing or not a string.
    """
    if not isinstance(value, str):
        raise _wrong_type(value, path, "a string")
    return value


def optional_str(value: object, path: str) -> str | None:
    """`value` as a string, None when it is MISSING (an explicit null is not absent).

    Raises:
        MappingError: `value` is present but not a string.
    """
    if value is MISSING:
        return None
    return as_str(value, path)


def optional_bool(value: object, path: str) -> bool | None:
    """`value` as a boolean, None when it is MISSING.

    Raises:
        MappingError: `value` is present but not a boolean (0 and 1 are numbers, not booleans).
    """
    if value is MISSING:
        return None
    if not isinstance(value, bool):
        raise _wrong_type(value, path, "a boolean")
    return value


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


def _wrong_type(value: object, path: str, expected: str) -> MappingError:
    if value is MISSING:
        return MappingError(path, "is missing")
    return MappingError(path, f"is not {expected} (got {json_type(value)})")
