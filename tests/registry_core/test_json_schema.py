from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from registry_core import (
    JsonSchemaError,
    assert_object_schema,
    assert_supported,
    is_valid,
    snapshot,
    validate,
)


def test_assert_supported_lists_every_problem_with_its_path() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "pattern": "x+"},
            "b": {"type": "array", "items": {"type": "strin"}},
            "c": {"anyOf": [{"type": "string"}]},
        },
        "required": ["a", "missing"],
        "additionalProperties": {"type": "string"},
    }
    with pytest.raises(JsonSchemaError) as info:
        assert_supported(schema)
    paths = {p.path for p in info.value.problems}
    assert paths == {
        "/properties/a/pattern",
        "/properties/b/items/type",
        "/properties/c/anyOf",
        "/required",
        "/additionalProperties",
    }


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": "string", "properties": {}}, "/properties"),
        ({"type": "string", "items": {}}, "/items"),
        ({"type": "integer", "enum": [1, "a"]}, "/enum/1"),
        ({"type": "array", "enum": [1]}, "/enum"),
        ({"oneOf": [{"type": "string"}]}, "/oneOf"),
        ({"oneOf": [{}, {}], "type": "string"}, ""),
        ({"const": [1, 2]}, "/const"),
        ({"default": float("nan")}, "/default"),
        ({"examples": {1: 2}}, "/examples"),
        ({"description": 3}, "/description"),
        ("not a node", ""),
    ],
)
def test_malformed_nodes_are_rejected_at_their_path(schema: Any, where: str) -> None:
    with pytest.raises(JsonSchemaError) as info:
        assert_supported(schema)
    assert where in {p.path for p in info.value.problems}


def test_empty_node_accepts_any_json() -> None:
    assert_supported({})
    for value in (None, 1, "x", [1, {"a": None}], {"k": [True]}):
        assert is_valid({}, value)


def test_object_root_is_required_for_parameters() -> None:
    with pytest.raises(JsonSchemaError):
        assert_object_schema({"type": "string"})
    assert_object_schema({"type": "object"})


def test_validate_reports_every_violation_with_its_path() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
            "mode": {"const": "fast"},
        },
        "required": ["name", "count"],
        "additionalProperties": False,
    }
    violations = validate(schema, {"name": 1, "tags": ["a", "z", 3], "mode": "slow", "extra": 1})
    by_path = {v.path: v.message for v in violations}
    assert set(by_path) == {"/count", "/name", "/tags/1", "/tags/2", "/mode", "/extra"}
    assert "expected string" in by_path["/name"]
    assert "required" in by_path["/count"]
    assert "not allowed" in by_path["/extra"]


def test_one_of_needs_exactly_one_branch() -> None:
    schema = {"oneOf": [{"type": "number"}, {"type": "integer"}]}
    assert not is_valid(schema, 3)  # both branches match
    assert is_valid(schema, 3.5)
    assert not is_valid(schema, "x")


def test_an_optional_object_takes_null_or_a_valid_object_only() -> None:
    # A branch of another type is passed over on its type test alone; its verdict must not change.
    image = {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]}
    schema = {"oneOf": [image, {"type": "null"}]}
    assert is_valid(schema, None) and is_valid(schema, {"size": 3})
    assert [v.path for v in validate(schema, {"size": "3"})] == [""]
    assert [v.message for v in validate(schema, "x")] == ["expected one of object | null, got string 'x'"]
    # Two object branches: an object that fits both matches twice, one that fits neither none.
    both = {"oneOf": [{"type": "object"}, image, {"type": "array"}]}
    assert "matched 2" in validate(both, {"size": 1})[0].message
    assert is_valid(both, {"other": 1}) and is_valid(both, [1])


def test_booleans_are_not_numbers_and_integral_floats_are_integers() -> None:
    assert not is_valid({"type": "integer"}, True)
    assert not is_valid({"type": "number"}, False)
    assert is_valid({"type": "integer"}, 2.0)
    assert not is_valid({"enum": [1]}, True)
    assert is_valid({"enum": [1]}, 1.0)


# --- the subset validator agrees with the jsonschema library on schemas inside the subset ------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=5),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-5, max_value=5),
    st.sampled_from(["", "a", "b", "ab"]),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3),
    ),
    max_leaves=8,
)

TYPE_NAMES = ["object", "array", "string", "number", "integer", "boolean", "null"]
SCALAR_FOR = {
    "string": st.sampled_from(["", "a", "b"]),
    "number": st.sampled_from([0, 1.5, -2]),
    "integer": st.sampled_from([0, 1, -2]),
    "boolean": st.booleans(),
    "null": st.none(),
}


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    typed = st.sampled_from(TYPE_NAMES).map(lambda t: {"type": t})
    enums = st.sampled_from(list(SCALAR_FOR)).flatmap(
        lambda t: st.lists(SCALAR_FOR[t], min_size=1, max_size=3, unique_by=repr).map(
            lambda vs, t=t: {"type": t, "enum": vs}
        )
    )
    consts = st.sampled_from(list(SCALAR_FOR)).flatmap(
        lambda t: SCALAR_FOR[t].map(lambda v, t=t: {"type": t, "const": v})
    )
    return st.one_of(st.just({}), typed, enums, consts)


def _extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    objects = st.tuples(
        st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3),
        st.data(),
        st.one_of(st.none(), st.booleans()),
    ).map(_object_schema)
    arrays = children.map(lambda item: {"type": "array", "items": item})
    one_of = st.lists(children, min_size=2, max_size=3).map(lambda bs: {"oneOf": bs})
    return st.one_of(objects, arrays, one_of)


def _object_schema(parts: tuple[dict[str, Any], Any, bool | None]) -> dict[str, Any]:
    props, data, additional = parts
    node: dict[str, Any] = {"type": "object", "properties": props}
    if props:
        required = data.draw(st.lists(st.sampled_from(sorted(props)), unique=True, max_size=len(props)))
        if required:
            node["required"] = required
    if additional is not None:
        node["additionalProperties"] = additional
    return node


schemas = st.recursive(_leaf(), _extend, max_leaves=6)


@settings(max_examples=400, deadline=None)
@given(schema=schemas, value=json_values)
def test_subset_validator_agrees_with_jsonschema(schema: dict[str, Any], value: Any) -> None:
    assert_supported(schema)
    expected = Draft202012Validator(schema).is_valid(value)
    assert is_valid(schema, value) == expected, (schema, value)
    # Frozen, as the pipeline validates (FrozenDict, tuples: the validator's exact-type fast paths), the
    # same violations at the same paths (a message quoting the value spells a tuple as one).
    frozen, plain = validate(schema, snapshot(value)), validate(schema, value)
    assert [v.path for v in frozen] == [v.path for v in plain], (schema, value)


@settings(max_examples=200, deadline=None)
@given(value=json_values)
def test_every_value_satisfies_the_empty_schema_and_its_own_const_when_scalar(value: Any) -> None:
    assert is_valid({}, value)
    if (
        value is None
        or isinstance(value, (str, bool, int))
        or (isinstance(value, float) and math.isfinite(value))
    ):
        assert is_valid({"const": value}, value)
