"""Signatures of the functions every spec may call without declaring them.

The checker uses these for arity and argument types; the code generator
binds each name to its implementation in `agentspec.stdlib`. `doc` is the
one-line description shown in the language reference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentspec.compiler.types import (
    ANY,
    BOOL,
    DICT,
    FLOAT,
    INT,
    NONE,
    SIZED,
    STR,
    ListOf,
    Optional,
    Type,
    join,
    strip_optional,
)

ReturnRule = Type | Callable[[Sequence[Type]], Type]


@dataclass(frozen=True)
class Signature:
    """Parameters (the last `optional` of them may be omitted), an optional
    variadic tail, and the return type (fixed, or computed from the argument
    types)."""

    params: tuple[Type, ...]
    returns: ReturnRule
    doc: str
    optional: int = 0
    variadic: Type | None = None

    @property
    def min_args(self) -> int:
        return len(self.params) - self.optional

    @property
    def max_args(self) -> int | None:
        return None if self.variadic is not None else len(self.params)

    def return_type(self, args: Sequence[Type]) -> Type:
        return self.returns(args) if callable(self.returns) else self.returns

    def spelled(self, name: str) -> str:
        parts = [str(p) for p in self.params[: self.min_args]]
        parts += [f"{p} = …" for p in self.params[self.min_args :]]
        if self.variadic is not None:
            parts.append(f"*{self.variadic}")
        ret = self.returns if isinstance(self.returns, Type) else "(depends on arguments)"
        return f"{name}({', '.join(parts)}) -> {ret}"


NUMBER = FLOAT  # parameters typed FLOAT accept int and bool too (see types.assignable)


def _numeric_join(args: Sequence[Type]) -> Type:
    result: Type | None = None
    for arg in args:
        arg = strip_optional(arg)
        if isinstance(arg, ListOf):
            arg = arg.item
        result = arg if result is None else join(result, arg)
    if result in (INT, FLOAT, STR, ANY):
        return result
    return FLOAT


def _same_as_first(args: Sequence[Type]) -> Type:
    return strip_optional(args[0]) if args else ANY


def _list_of_first(args: Sequence[Type]) -> Type:
    """`sorted(xs)`: the same list type; a dict or str sorts into a list of str."""
    first = strip_optional(args[0]) if args else ANY
    if isinstance(first, ListOf):
        return first
    return ListOf(STR) if first in (DICT, STR) else ListOf(ANY)


def _default_or_any(args: Sequence[Type]) -> Type:
    """`get(xs, i, default)` on a `list[T]`: T joined with the default's type
    (none when there is no default)."""
    container = strip_optional(args[0]) if args else ANY
    if not isinstance(container, ListOf):
        return ANY
    return join(container.item, args[2]) if len(args) == 3 else join(container.item, NONE)


BUILTINS: dict[str, Signature] = {
    "len": Signature((SIZED,), INT, "Length of a string, list or dict."),
    "str": Signature((ANY,), STR, "Text of a value."),
    "int": Signature((ANY,), INT, "Integer value of a number or numeric string."),
    "float": Signature((ANY,), FLOAT, "Float value of a number or numeric string."),
    "bool": Signature((ANY,), BOOL, "Truth value."),
    "lower": Signature((STR,), STR, "Lower-cased text."),
    "upper": Signature((STR,), STR, "Upper-cased text."),
    "strip": Signature((STR,), STR, "Text without surrounding whitespace."),
    "contains": Signature(
        (SIZED, ANY),
        BOOL,
        "Whether a string contains a substring, a list an item, or a dict a key.",
    ),
    "startswith": Signature((STR, STR), BOOL, "Whether the text starts with a prefix."),
    "endswith": Signature((STR, STR), BOOL, "Whether the text ends with a suffix."),
    "replace": Signature(
        (STR, STR, STR), STR, "Text with every occurrence of `old` replaced by `new`."
    ),
    "split": Signature(
        (STR, STR), ListOf(STR), "Text split on a separator (whitespace by default).", optional=1
    ),
    "join": Signature(
        (ListOf(ANY), STR), STR, "Items joined with a separator ('' by default).", optional=1
    ),
    "regex_match": Signature(
        (STR, STR), BOOL, "Whether the regular expression matches anywhere in the text."
    ),
    "extract": Signature(
        (STR, STR),
        Optional(STR),
        "First capture group (or whole match) of a regex in the text, else none.",
    ),
    "extract_all": Signature((STR, STR), ListOf(STR), "Every match of a regex in the text."),
    "number": Signature(
        (ANY,),
        Optional(FLOAT),
        "The number a text gives as its answer: a '#### N' answer (the first number after"
        " the last '####'), else the whole text ('1,234', '$5', '1e-3'), else its last number"
        " (a '-' or '−' is its sign only where it starts a word: 'pages 10-20' gives 20);"
        " else none.",
    ),
    "normalize_answer": Signature(
        (STR,), STR, "SQuAD answer normalisation: lower, no punctuation or articles."
    ),
    "exact_match": Signature(
        (ANY, ANY), FLOAT, "1.0 if two answers are equal after normalisation, else 0.0."
    ),
    "f1": Signature(
        (ANY, ANY),
        FLOAT,
        "Token F1 of two answers after normalisation (SQuAD's; 1.0 when both are empty).",
    ),
    "min": Signature(
        (ANY,), _numeric_join, "Smallest of the arguments, or of one list.", variadic=ANY
    ),
    "max": Signature(
        (ANY,), _numeric_join, "Largest of the arguments, or of one list.", variadic=ANY
    ),
    "sum": Signature((ListOf(FLOAT),), _numeric_join, "Sum of a list of numbers."),
    "abs": Signature((NUMBER,), _same_as_first, "Absolute value."),
    "round": Signature(
        (NUMBER, INT), FLOAT, "Number rounded to n digits (0 by default).", optional=1
    ),
    "clip": Signature((NUMBER, NUMBER, NUMBER), FLOAT, "Value clipped to [low, high]."),
    "calc": Signature(
        (STR,),
        STR,
        "The value of an arithmetic expression, computed exactly (fractions) and written"
        " as an integer or with 10 significant digits; or an error message.",
    ),
    "keys": Signature((DICT,), ListOf(STR), "Keys of a dict, in order."),
    "values": Signature((DICT,), ListOf(ANY), "Values of a dict, in key order."),
    "items": Signature(
        (DICT,), ListOf(ListOf(ANY)), "[key, value] pairs of a dict: `for k, v in items(d)`."
    ),
    "get": Signature(
        (ANY, ANY, ANY),
        _default_or_any,
        "Item of a dict (by key) or list (by index), or the default (none) when absent.",
        optional=1,
    ),
    "any": Signature((ListOf(ANY),), BOOL, "Whether any item of a list is true."),
    "all": Signature((ListOf(ANY),), BOOL, "Whether every item of a list is true (true if empty)."),
    "sorted": Signature(
        (ANY,), _list_of_first, "Items of a list (or keys of a dict) in ascending order."
    ),
}

# Calls that are statements, not values: they end the episode.
EFFECT_CALLS: dict[str, Signature] = {
    "done": Signature(
        (),
        ANY,
        "End the episode (normally) after this call; the effect's later statements still run.",
    ),
    "fail": Signature(
        (STR,), ANY, "End the tool call with an error message the model sees.", optional=1
    ),
}
