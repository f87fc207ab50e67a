"""The language's types: str, int, float, bool, list[T], dict, any, optional T?.

Types are small frozen values. `parse_type` reads the spelling users write in
YAML (`"list[str]"`, `"int?"`, `list` for `list[any]`); `assignable` and `join`
are the two relations the checker needs. JSON Schema's names (`integer`,
`string`, ...) are a tool's `parameters`' (`json_schema_type`), not types of
the language: written as one, they are an error whose hint gives the spelling
(`json_schema_spelling_fixed`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Type:
    """Base of all types."""

    def __str__(self) -> str:  # pragma: no cover - every subclass overrides
        raise NotImplementedError


@dataclass(frozen=True)
class Prim(Type):
    name: str  # "str" | "int" | "float" | "bool" | "none" | "any" | "dict"

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class ListOf(Type):
    item: Type

    def __str__(self) -> str:
        return f"list[{self.item}]"


@dataclass(frozen=True)
class Optional(Type):
    inner: Type

    def __str__(self) -> str:
        return f"{self.inner}?"


STR = Prim("str")
INT = Prim("int")
FLOAT = Prim("float")
BOOL = Prim("bool")
NONE = Prim("none")
ANY = Prim("any")
DICT = Prim("dict")
SIZED = Prim("str|list|dict")
"""A parameter's type only: what has a length and members (`len`, `contains`)."""

_NAMED = {
    "str": STR,
    "int": INT,
    "float": FLOAT,
    "bool": BOOL,
    "any": ANY,
    "dict": DICT,
    "list": ListOf(ANY),
}
_LIST = re.compile(r"^list\[(.*)\]$")
TYPE_NAMES = "str, int, float, bool, dict, any, list[T] (list alone: list[any]) and T?"
"""The types, as the checker's messages and the reference list them."""

JSON_SCHEMA_NAMES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "object": "dict",
    "array": "list[any]",
}
"""JSON Schema's type names (a tool's `parameters`) and the spec's own for them. A
type elsewhere (`state`, `data.fields`, `functions`) is spelled the spec's way; one
spelled the JSON Schema way is an error whose hint gives this spelling."""
_JSON_SCHEMA_NAME = re.compile(r"\b(" + "|".join(JSON_SCHEMA_NAMES) + r")\b")


class TypeSyntaxError(ValueError):
    """A type spelling that is not part of the language."""


MAX_TYPE_DEPTH = 16  # lists inside lists: deeper is surely a mistake (and would recurse)


def parse_type(text: str, depth: int = 0) -> Type:
    """Parse `str`, `int`, `float`, `bool`, `dict`, `any`, `list[T]` (`list`: `list[any]`), `T?`."""
    spelled = text.strip()
    if depth > MAX_TYPE_DEPTH:
        raise TypeSyntaxError(f"type nested more than {MAX_TYPE_DEPTH} deep")
    if spelled.endswith("?"):
        if spelled[:-1].rstrip().endswith("?"):
            raise TypeSyntaxError(f"unknown type {text!r}: `?` makes a type optional once")
        inner = parse_type(spelled[:-1], depth + 1)
        return inner if isinstance(inner, Optional) or inner == ANY else Optional(inner)
    if spelled in _NAMED:
        return _NAMED[spelled]
    match = _LIST.match(spelled)
    if match:
        return ListOf(parse_type(match.group(1), depth + 1))
    raise TypeSyntaxError(f"unknown type {text!r}; the types are {TYPE_NAMES}")


def json_schema_spelling_fixed(text: str) -> str | None:
    """``text`` with JSON Schema's type names (``integer``, ``list[string]``) in the
    spec's spelling (``int``, ``list[str]``), if it has any and that is a type."""
    fixed = _JSON_SCHEMA_NAME.sub(lambda m: JSON_SCHEMA_NAMES[m.group(1)], text.strip())
    if fixed == text.strip():
        return None
    try:
        parse_type(fixed)
    except TypeSyntaxError:
        return None
    return fixed


def strip_optional(t: Type) -> Type:
    return t.inner if isinstance(t, Optional) else t


def is_numeric(t: Type) -> bool:
    return strip_optional(t) in (INT, FLOAT, BOOL, ANY)


def assignable(value: Type, target: Type, bool_is_number: bool = True) -> bool:
    """Can a value of type `value` be stored where `target` is expected?

    `any` goes both ways; int widens to float; none fits an optional; an
    optional value fits its inner type (optionality is a promise about
    initial values, not enforced on every read). A bool counts as a number (1 or
    0, as in Python) unless `bool_is_number` is False: what a state variable
    holds, where `true` in an `int` is a slip, not a count.
    """
    value, target_inner = strip_optional(value), strip_optional(target)
    if ANY in (value, target_inner):
        return True
    if value == NONE:
        return isinstance(target, Optional)
    if value == target_inner:
        return True
    if target_inner == SIZED:
        return value in (STR, DICT) or isinstance(value, ListOf)
    if target_inner == FLOAT and value == INT:
        return True
    if target_inner in (INT, FLOAT) and value == BOOL:
        return bool_is_number
    if isinstance(value, ListOf) and isinstance(target_inner, ListOf):
        return assignable(value.item, target_inner.item, bool_is_number)
    return False


def join(a: Type, b: Type) -> Type:
    """The least type both fit (for `x if c else y`, list literals, …)."""
    if a == b:
        return a
    if a == NONE:
        return b if isinstance(b, Optional) or b == ANY else Optional(b)
    if b == NONE:
        return join(b, a)
    if isinstance(a, Optional) or isinstance(b, Optional):
        inner = join(strip_optional(a), strip_optional(b))
        return inner if inner == ANY else Optional(inner)
    if {a, b} <= {INT, FLOAT, BOOL}:
        return FLOAT if FLOAT in (a, b) else INT
    if isinstance(a, ListOf) and isinstance(b, ListOf):
        return ListOf(join(a.item, b.item))
    return ANY


def python_value_type(value: object) -> Type:
    """The language type of a YAML/JSON value (for literals and initial values)."""
    if value is None:
        return NONE
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT
    if isinstance(value, float):
        return FLOAT
    if isinstance(value, str):
        return STR
    if isinstance(value, list):
        item: Type | None = None
        for element in value:
            t = python_value_type(element)
            item = t if item is None else join(item, t)
        return ListOf(item or ANY)
    if isinstance(value, dict):
        return DICT
    return ANY


def json_schema_type(schema: object) -> Type:
    """The type of `args.x` for a tool parameter declared with JSON Schema."""
    if not isinstance(schema, dict):
        return ANY
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        base = json_schema_type({**schema, "type": kinds[0]}) if len(kinds) == 1 else ANY
        return Optional(base) if "null" in kind and base != ANY else base
    if kind == "string":
        return STR
    if kind == "integer":
        return INT
    if kind == "number":
        return FLOAT
    if kind == "boolean":
        return BOOL
    if kind == "object":
        return DICT
    if kind == "array":
        return ListOf(json_schema_type(schema.get("items", {})))
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        # every member can arrive: `[1, 2, all]` is `any`, not the first member's `int`
        members = [python_value_type(v) for v in schema["enum"]]
        enum_type = members[0]
        for member in members[1:]:
            enum_type = join(enum_type, member)
        return enum_type
    return ANY
