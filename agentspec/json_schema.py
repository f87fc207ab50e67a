"""JSON Schema checks with a fast path for the common shapes (validate and tool calls).

Tool parameters are nearly always small schemas such as
``{type: string, description: …}``. Importing `jsonschema` and building a
validator costs more than checking every shipped spec, so a schema (or a
value) that is *provably* fine by a simple, exact rule skips it; anything
the rule cannot prove goes to `jsonschema`, which decides and writes the
message. The fast path only ever answers "no problem".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

JSON_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")

# Keywords whose every well-typed value is valid in the 2020-12 meta-schema,
# with the Python types that value may have. `format` is an annotation there.
_TEXT = {"description", "title", "format", "$comment", "pattern"}
_ANY = {"default", "const"}
_NUMBERS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
_COUNTS = {"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _simple_schema(schema: Any, depth: int = 0) -> bool:
    """Whether ``schema`` is certainly valid against the 2020-12 meta-schema."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or depth > 16:
        return False
    for key, value in schema.items():
        if key == "type":
            types = value if isinstance(value, list) else [value]
            if not types or any(t not in JSON_TYPES for t in types):
                return False
            if len(set(types)) != len(types):
                return False
        elif key in _TEXT:
            if not isinstance(value, str):
                return False
        elif key in _ANY:
            continue
        elif key in _NUMBERS:
            if not _is_number(value) or (key == "multipleOf" and value <= 0):
                return False
        elif key in _COUNTS:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                return False
        elif key in ("enum", "examples"):
            if not isinstance(value, list):
                return False
        elif key == "required":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                return False
            if len(set(value)) != len(value):
                return False
        elif key in ("items", "additionalProperties"):
            if not _simple_schema(value, depth + 1):
                return False
        elif key == "properties":
            if not isinstance(value, dict) or not all(
                _simple_schema(sub, depth + 1) for sub in value.values()
            ):
                return False
        else:
            return False
    return True


def schema_problems(schema: Any) -> Iterator[Any]:
    """`jsonschema` errors of ``schema`` against the meta-schema (none when provably valid)."""
    if _simple_schema(schema):
        return iter(())
    from jsonschema import Draft202012Validator

    return Draft202012Validator(Draft202012Validator.META_SCHEMA).iter_errors(schema)


JSON_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    # What each JSON Schema type accepts among decoded JSON values (bool is not a number).
    "string": lambda v: isinstance(v, str),
    "number": _is_number,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}
_ANNOTATIONS = {"description", "title", "default", "examples", "$comment", "format"}


_BOUNDS: dict[str, Any] = {
    "minLength": lambda v, n: not isinstance(v, str) or len(v) >= n,
    "maxLength": lambda v, n: not isinstance(v, str) or len(v) <= n,
    "minimum": lambda v, n: not _is_number(v) or v >= n,
    "maximum": lambda v, n: not _is_number(v) or v <= n,
}


def _certainly_valid(schema: Any, value: Any) -> bool:
    """Whether ``value`` certainly satisfies a flat ``schema`` (type, enum, bounds, annotations)."""
    if not isinstance(schema, dict) or not schema.keys() <= _ANNOTATIONS | _BOUNDS.keys() | {
        "type",
        "enum",
    }:
        return False
    for key, holds in _BOUNDS.items():
        if key in schema and not (_is_number(schema[key]) and holds(value, schema[key])):
            return False
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(t in JSON_TYPE_TESTS and JSON_TYPE_TESTS[t](value) for t in types):
            return False
    if "enum" in schema:
        options = schema["enum"]
        if not isinstance(options, list):
            return False
        return any(_json_equal(option, value) for option in options)
    return True


def _json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON Schema's ``enum`` means it: a boolean never equals a number (Python's
    ``False == 0`` does, also inside lists and objects), ``1`` equals ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _is_number(a) or _is_number(b):
        return _is_number(a) and _is_number(b) and a == b
    if isinstance(a, list) or isinstance(b, list):
        return (
            isinstance(a, list)
            and isinstance(b, list)
            and len(a) == len(b)
            and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict) or isinstance(b, dict):
        return (
            isinstance(a, dict)
            and isinstance(b, dict)
            and a.keys() == b.keys()
            and all(_json_equal(a[k], b[k]) for k in a)
        )
    return type(a) is type(b) and a == b


def value_problems(schema: Any, value: Any) -> list[str]:
    """Messages for ``value`` against ``schema`` (empty when it is valid); ``schema`` must be
    valid JSON Schema (:func:`schema_problems` finds nothing)."""
    if _certainly_valid(schema, value):
        return []
    from jsonschema import Draft202012Validator

    return [problem.message for problem in Draft202012Validator(schema).iter_errors(value)]
