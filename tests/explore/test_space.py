"""The random-action policy's arguments satisfy their JSON Schema: open and closed
bounds, the tighter of `minimum` and `exclusiveMinimum`, and `multipleOf`."""

from __future__ import annotations

import itertools
import random
from typing import Any

import jsonschema
import pytest

from agentspec.runtime.commands.explore.pattern_strings import MAX_DRAWN_SIZE
from agentspec.runtime.commands.explore.space import (
    Vocabulary,
    draw_value,
    finite_values,
)

ENDS = [None, -1, 0, 0.5, 3, 7.5]
SCHEMAS = [
    {
        "type": kind,
        **({low_key: low} if low is not None else {}),
        **({high_key: high} if high is not None else {}),
        **({"multipleOf": step} if step else {}),
    }
    for kind, low_key, high_key, low, high, step in itertools.product(
        ("integer", "number"),
        ("minimum", "exclusiveMinimum"),
        ("maximum", "exclusiveMaximum"),
        ENDS,
        ENDS,
        (None, 0.5, 2),
    )
]


def satisfiable(schema: dict[str, Any]) -> bool:
    validator = jsonschema.Draft202012Validator(schema)
    grid = (x / 4 for x in range(-400, 400))
    return any(
        validator.is_valid(int(x) if schema["type"] == "integer" else x)
        for x in grid
        if schema["type"] == "number" or x == int(x)
    )


@pytest.mark.parametrize("schema", [s for s in SCHEMAS if satisfiable(s)], ids=str)
def test_drawn_numbers_satisfy_their_schema(schema: dict[str, Any]) -> None:
    rng = random.Random(0)
    vocab = Vocabulary(words=["7", "0", "2.5", "-3"])  # numbers a prompt showed
    validator = jsonschema.Draft202012Validator(schema)
    drawn = [draw_value(schema, rng, vocab) for _ in range(10)]
    assert all(validator.is_valid(v) for v in drawn), drawn
    tried = finite_values(schema, ["7", "2.5", "-3"])
    assert all(validator.is_valid(v) for v in tried), tried


def test_the_tighter_of_two_lower_bounds_holds() -> None:
    schema = {"type": "number", "minimum": 0, "exclusiveMinimum": 0}
    rng = random.Random(1)
    assert all(draw_value(schema, rng, Vocabulary(words=["0"])) > 0 for _ in range(20))


@pytest.mark.parametrize(
    "schema",
    [{"type": "array", "minItems": 10**12}, {"type": "string", "minLength": 10**12}],
)
def test_a_huge_minimum_is_drawn_short_not_filled(schema: dict[str, Any]) -> None:
    """No call can hold 10**12 items: the draw stays small (an invalid call) instead of
    hanging `explore`, `test` and the random policy."""
    value = draw_value(schema, random.Random(0), Vocabulary(words=[]))
    assert 0 < len(value) <= MAX_DRAWN_SIZE


@pytest.mark.parametrize(
    "pattern",
    [r"^[1-6]{4}$", r"^[A-Z]{2}\d{4}$", r"^(yes|no)$", r"\d+(\.\d)?", r"^[a-z]+@[a-z]+\.com$"],
)
def test_strings_are_drawn_from_their_pattern(pattern: str) -> None:
    """A vocabulary no value of which fits the pattern still gives fitting strings."""
    schema = {"type": "string", "pattern": pattern}
    validator = jsonschema.Draft202012Validator(schema)
    rng = random.Random(3)
    vocab = Vocabulary(words=["hello", "world", "7"])
    drawn = [draw_value(schema, rng, vocab) for _ in range(30)]
    assert all(validator.is_valid(v) for v in drawn), drawn
    assert all(validator.is_valid(v) for v in finite_values(schema, ["hello", "world"]))


def test_string_lengths_hold() -> None:
    schema = {"type": "string", "minLength": 5, "maxLength": 6}
    rng = random.Random(0)
    drawn = [
        draw_value(schema, rng, Vocabulary(words=["a", "toolongword", "abc"])) for _ in range(20)
    ]
    assert all(5 <= len(v) <= 6 for v in drawn), drawn
