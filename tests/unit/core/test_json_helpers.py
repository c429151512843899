"""The narrowing helpers of compass_core.jsonvalues: any value either narrows to exactly the
type asked for, or raises MappingError naming the path, never another exception."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, strategies as st

from compass_core.jsonvalues import (
    MISSING,
    MappingError,
    as_array,
    as_object,
    as_str,
    is_array,
    is_object,
    json_type,
    optional_bool,
    optional_str,
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(st.characters(exclude_categories=()), max_size=6)  # includes lone surrogates
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=10,
)
anything = json_values | st.just(MISSING) | st.builds(object) | st.tuples(st.integers())
paths = st.sampled_from(["args", "questions", "questions[0].id", "message.content[2].text"])

NARROWERS = {
    "as_object": (as_object, dict, "is not an object"),
    "as_array": (as_array, list, "is not an array"),
    "as_str": (as_str, str, "is not a string"),
}


@pytest.mark.parametrize("name", NARROWERS)
@given(value=anything, path=paths)
def test_required_narrowers_narrow_or_name_the_path(name: str, value: object, path: str) -> None:
    narrow, expected, problem = NARROWERS[name]
    if isinstance(value, expected):
        assert narrow(value, path) is value
        return
    with pytest.raises(MappingError) as caught:  # any other exception fails the test
        narrow(value, path)
    assert caught.value.path == path
    assert caught.value.reason == str(caught.value) == f"{path} {caught.value.problem}"
    if value is MISSING:
        assert caught.value.problem == "is missing"
    else:
        assert caught.value.problem == f"{problem} (got {json_type(value)})"


@given(value=anything, path=paths)
def test_optional_str_is_none_only_when_missing(value: object, path: str) -> None:
    if value is MISSING or isinstance(value, str):
        assert optional_str(value, path) is (None if value is MISSING else value)
        return
    with pytest.raises(MappingError) as caught:
        optional_str(value, path)
    assert caught.value.path == path
    assert caught.value.problem == f"is not a string (got {json_type(value)})"


@given(value=anything, path=paths)
def test_optional_bool_takes_only_booleans(value: object, path: str) -> None:
    if value is MISSING or isinstance(value, bool):
        assert optional_bool(value, path) is (None if value is MISSING else value)
        return
    with pytest.raises(MappingError) as caught:  # 0 and 1 are numbers, not booleans
        optional_bool(value, path)
    assert caught.value.path == path
    assert caught.value.problem == f"is not a boolean (got {json_type(value)})"


@given(value=anything)
def test_guards_agree_with_isinstance(value: object) -> None:
    assert is_object(value) == isinstance(value, dict)
    assert is_array(value) == isinstance(value, list)


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (True, "boolean"),
        (0, "number"),
        (1.5, "number"),
        (math.nan, "number"),
        ("", "string"),
        (None, "null"),
        ([], "array"),
        ({}, "object"),
        (MISSING, "missing"),
        ((), "tuple"),
    ],
)
def test_json_type_names_the_json_type_never_the_value(value: object, name: str) -> None:
    assert json_type(value) == name
