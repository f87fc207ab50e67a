"""JSON Schema checks with a fast path for the common shapes (validate and tool calls).

Tool parameters are nearly always small schemas such as
``{type: string, description: …}``. Importing `jsonschema` and building a
validator costs more than checking every shipped spec, so a schema (or a
value) that is *provably* fine by a simple, exact rule skips it; anything
the rule cannot prove goes to `jsonschema`, which decides and writes the
message. The fast path only ever answers "no problem".
"""

from __future__ import annotations

import functools
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
    """What makes ``schema`` unusable, as `jsonschema` errors: its errors against the
    meta-schema (none when provably valid); else a regular expression that does not
    compile; else a schema that cannot check a value (a `$ref` that cannot be
    resolved, or refers to itself)."""
    simple = _simple_schema(schema)
    if not simple:
        from jsonschema import Draft202012Validator

        meta = Draft202012Validator(Draft202012Validator.META_SCHEMA)
        errors = list(meta.iter_errors(schema))
        if errors:
            return iter(errors)
    regexes = list(_regex_problems(schema, ()))
    if regexes or simple:
        return iter(regexes)
    return iter(_unusable(schema))


# Keywords whose values are data, not schemas: a "pattern" key inside is not a regex.
DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})


def _regex_problems(schema: Any, path: tuple[Any, ...]) -> Iterator[Any]:
    if isinstance(schema, list):
        for i, item in enumerate(schema):
            yield from _regex_problems(item, (*path, i))
        return
    if not isinstance(schema, dict):
        return
    found: list[tuple[tuple[str, ...], Any]] = []
    if isinstance(schema.get("pattern"), str):
        found.append((("pattern",), schema["pattern"]))
    keyed = schema.get("patternProperties")
    found += [(("patternProperties", k), k) for k in keyed] if isinstance(keyed, dict) else []
    for where, pattern in found:
        # Imported here, not above: most schemas have no pattern, and validate's start-up
        # is the budget (`regex` and `jsonschema` cost more than checking a whole spec).
        import regex
        from jsonschema import ValidationError

        try:
            regex.compile(pattern)
        except (regex.error, RecursionError, OverflowError, ValueError) as exc:
            yield ValidationError(
                f"{pattern!r} is not a valid regular expression ({exc})",
                path=(*path, *where),
                instance=pattern,
            )
    for key, value in schema.items():
        if key not in DATA_KEYWORDS:
            yield from _regex_problems(value, (*path, key))


def _unusable(schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    probes: tuple[Any, ...] = (None, 0, "", [], {})
    for probe in probes:
        try:
            validator_of(schema).is_valid(probe)
        except Exception as exc:
            yield ValidationError(
                f"this schema cannot check a value: {type(exc).__name__}: {str(exc)[:200]}",
                instance=schema,
            )
            return


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
    try:
        return [problem.message for problem in validator_of(schema).iter_errors(value)]
    except Exception as exc:  # a `$ref` that cannot be resolved, or refers to itself
        return [f"the schema cannot check it: {type(exc).__name__}: {str(exc)[:200]}"]


# ----------------------------------------------------------------------------
# regular expressions under a time limit
# ----------------------------------------------------------------------------
# `pattern`, `patternProperties` and the keys `additionalProperties` leaves to
# them are matched against what the model writes. jsonschema matches them with
# `re`, which has no time limit: `^(a+)+$` against forty a's and a `!` runs for
# hours. The validators below match them with `regex` under `PATTERN_SECONDS`;
# a value that cannot be matched in time is refused, as one that does not match.

PATTERN_SECONDS = 0.5


class _PatternTooSlow(Exception):
    pass


def _search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text`` (ECMA-262 patterns are not
    anchored); `_PatternTooSlow` past `PATTERN_SECONDS`."""
    import regex

    try:
        return regex.search(pattern, text, timeout=PATTERN_SECONDS) is not None
    except TimeoutError:
        raise _PatternTooSlow(
            f"matching {pattern!r} took more than {PATTERN_SECONDS:g} s: the value is refused"
        ) from None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "string"):
        return
    try:
        if not _search(pattern, instance):
            yield ValidationError(f"{instance!r} does not match {pattern!r}")
    except _PatternTooSlow as slow:
        yield ValidationError(str(slow))


def _matching_keys(instance: dict[str, Any], pattern: str) -> tuple[list[str], list[str]]:
    """The keys ``pattern`` matches, and the messages of keys it could not match in time."""
    matched, slow = [], []
    for key in instance:
        try:
            if _search(pattern, key):
                matched.append(key)
        except _PatternTooSlow as exc:
            slow.append(f"key {key[:60]!r}: {exc}")
    return matched, slow


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        matched, slow = _matching_keys(instance, pattern)
        for message in slow:
            yield ValidationError(message)
        for key in matched:
            yield from validator.descend(instance[key], subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    patterned: set[str] = set()
    for pattern in schema.get("patternProperties", {}):
        matched, _ = _matching_keys(instance, pattern)  # a slow key: patternProperties says so
        patterned.update(matched)
    extras = [k for k in instance if k not in declared and k not in patterned]
    if validator.is_type(additional, "object"):
        for key in extras:
            yield from validator.descend(instance[key], additional, path=key)
    elif additional is False and extras:
        listed = ", ".join(repr(k) for k in sorted(extras))
        one = len(extras) == 1
        if "patternProperties" in schema:
            patterns = ", ".join(repr(p) for p in sorted(schema["patternProperties"]))
            verb = "does" if one else "do"
            yield ValidationError(f"{listed} {verb} not match any of the regexes: {patterns}")
        else:
            verb = "was" if one else "were"
            yield ValidationError(
                f"Additional properties are not allowed ({listed} {verb} unexpected)"
            )


@functools.cache
def _bounded_class(base: Any) -> Any:
    from jsonschema import validators

    return validators.extend(
        base,
        {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
        },
    )


def validator_of(schema: Any) -> Any:
    """A jsonschema validator of ``schema`` (its `$schema`'s draft, else 2020-12) whose
    regular expressions run under `PATTERN_SECONDS`; ``schema`` must be valid."""
    from jsonschema import Draft202012Validator, validators

    base = validators.validator_for(schema, default=Draft202012Validator)
    return _bounded_class(base)(schema)
