"""The fast path of compiler/json_schema.py never disagrees with `jsonschema`.

It may only answer "valid"; whenever it does, `jsonschema` must agree, for
random schemas and values (including the near misses: bools as numbers,
1.0 as an integer, bounds, unknown keywords, enums of mixed types).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from agentspec.core.json_schema import (
    _certainly_valid,
    _simple_schema,
    schema_problems,
    value_problems,
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(-5, 5, allow_nan=False)
    | st.sampled_from([1.0, 0.0, "", "a", "abc"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
type_names = st.sampled_from(
    ["string", "number", "integer", "boolean", "object", "array", "null", "str", "int"]
)
keyword_values = {
    "type": type_names | st.lists(type_names, max_size=3),
    "description": st.text(max_size=5) | st.integers(),
    "enum": st.lists(json_values, max_size=4) | json_values,
    "minLength": st.integers(-1, 4) | st.floats(0, 3) | st.booleans(),
    "maxLength": st.integers(-1, 4),
    "minimum": st.integers(-3, 3) | st.floats(-3, 3, allow_nan=False) | st.text(max_size=2),
    "maximum": st.integers(-3, 3) | st.booleans(),
    "required": st.lists(st.sampled_from(["a", "b", 1]), max_size=3),
    "multipleOf": st.integers(-1, 3),
    "default": json_values,
    "pattern": st.sampled_from(["^a", 3]),
    "uniqueItems": st.booleans(),
    "$schema": st.just("https://json-schema.org/draft/2020-12/schema"),
}
flat_schemas = st.fixed_dictionaries(
    {}, optional={key: strategy for key, strategy in keyword_values.items()}
)
schemas = st.recursive(
    flat_schemas,
    lambda inner: st.fixed_dictionaries(
        {},
        optional={
            "type": type_names,
            "items": inner | st.booleans(),
            "properties": st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2),
            "additionalProperties": inner | st.booleans() | st.integers(),
        },
    ),
    max_leaves=4,
)


def _meta_errors(schema):
    return list(Draft202012Validator(Draft202012Validator.META_SCHEMA).iter_errors(schema))


@settings(max_examples=400, deadline=None)
@given(schemas)
def test_a_schema_the_fast_path_accepts_is_valid(schema):
    if _simple_schema(schema):
        assert _meta_errors(schema) == []
    assert [e.message for e in schema_problems(schema)] == [e.message for e in _meta_errors(schema)]


@settings(max_examples=600, deadline=None)
@given(flat_schemas, json_values)
def test_a_value_the_fast_path_accepts_is_valid(schema, value):
    if _meta_errors(schema):
        return  # the checker reports the schema itself first
    expected = [e.message for e in Draft202012Validator(schema).iter_errors(value)]
    if _certainly_valid(schema, value):
        assert expected == []
    assert value_problems(schema, value) == expected


def test_common_tool_parameters_take_the_fast_path():
    assert _simple_schema({"type": "string", "description": "a city", "minLength": 1})
    assert _simple_schema({"type": "array", "items": {"type": "integer"}, "maxItems": 3})
    assert _certainly_valid({"type": "string", "minLength": 1}, "Paris")
    assert _certainly_valid({"type": ["integer", "null"], "enum": [1, 2]}, 2)


def test_near_misses_go_to_jsonschema():
    assert not _certainly_valid({"type": "number"}, True)  # bool is not a number
    assert not _certainly_valid({"type": "integer"}, 1.0)  # jsonschema decides: valid
    assert value_problems({"type": "integer"}, 1.0) == []
    assert not _certainly_valid({"enum": [1]}, True)
    assert value_problems({"enum": [1]}, True) != []
    assert not _simple_schema({"type": "strng"})
    assert [e.message for e in schema_problems({"type": "strng"})]


def test_enum_equality_is_json_equality_not_python_equality():
    """Hypothesis found it: `[False, False, 0] == [False, False, False]` in Python, but a
    boolean is never a number in JSON Schema; 1 and 1.0 are the same number there."""
    for schema, value in (
        ({"enum": [[False, False, False]]}, [False, False, 0]),
        ({"enum": [{"a": True}]}, {"a": 1}),
        ({"enum": [0]}, False),
    ):
        assert value_problems(schema, value), (schema, value)
    assert value_problems({"enum": [1.0]}, 1) == []
    assert value_problems({"enum": [[1, {"b": None}]]}, [1.0, {"b": None}]) == []
