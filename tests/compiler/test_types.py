from __future__ import annotations

import pytest

from agentspec.compiler.types import (
    ANY,
    BOOL,
    DICT,
    FLOAT,
    INT,
    NONE,
    STR,
    ListOf,
    Optional,
    TypeSyntaxError,
    assignable,
    join,
    json_schema_spelling_fixed,
    json_schema_type,
    parse_type,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("str", STR),
        ("int", INT),
        ("float?", Optional(FLOAT)),
        ("list[list[int]]", ListOf(ListOf(INT))),
        ("list[str]?", Optional(ListOf(STR))),
        ("dict", DICT),
        ("any?", ANY),
        ("list", ListOf(ANY)),
    ],
)
def test_parse_type(text: str, expected: object) -> None:
    assert parse_type(text) == expected
    assert parse_type(str(expected)) == expected  # round-trips


@pytest.mark.parametrize("text", ["strng", "list[", "list[foo]", "tuple[int]", ""])
def test_parse_type_rejects(text: str) -> None:
    with pytest.raises(TypeSyntaxError):
        parse_type(text)


@pytest.mark.parametrize(
    ("text", "meant"),
    [
        ("string", "str"),
        ("integer", "int"),
        ("number", "float"),
        ("boolean", "bool"),
        ("object", "dict"),
        ("array", "list[any]"),
        ("list[integer]?", "list[int]?"),
    ],
)
def test_json_schema_names_are_not_types(text: str, meant: str) -> None:
    """A tool parameter's JSON Schema names, written as a type elsewhere: an error
    (E507) whose hint is the spec's spelling, never a silent alias."""
    with pytest.raises(TypeSyntaxError):
        parse_type(text)
    assert json_schema_spelling_fixed(text) == meant
    assert json_schema_spelling_fixed("strng") is None


def test_assignable() -> None:
    assert assignable(INT, FLOAT)
    assert not assignable(FLOAT, INT)
    assert assignable(NONE, Optional(STR))
    assert not assignable(NONE, STR)
    assert assignable(ListOf(INT), ListOf(FLOAT))
    assert not assignable(ListOf(STR), ListOf(INT))
    assert assignable(ANY, ListOf(INT)) and assignable(STR, ANY)


def test_join() -> None:
    assert join(INT, FLOAT) == FLOAT
    assert join(NONE, STR) == Optional(STR)
    assert join(STR, INT) == ANY
    assert join(BOOL, BOOL) == BOOL


def test_json_schema_type() -> None:
    assert json_schema_type({"type": "array", "items": {"type": "integer"}}) == ListOf(INT)
    assert json_schema_type({"type": ["string", "null"]}) == Optional(STR)
    assert json_schema_type({"enum": ["a", "b"]}) == STR
    assert json_schema_type({}) == ANY


@pytest.mark.parametrize(
    "spelled", ["dict[str, int]", "Dict[str, list[int]]?", "mapping[str, str]"]
)
def test_a_parametrised_dict_is_refused_with_the_spelling_that_works(spelled: str) -> None:
    from agentspec.compiler.check_declarations import _type_hint

    with pytest.raises(TypeSyntaxError):
        parse_type(spelled)
    hint = _type_hint(spelled) or ""
    optional = "?" if spelled.endswith("?") else ""
    assert hint.startswith(f"write 'dict{optional}'") and "any" in hint
