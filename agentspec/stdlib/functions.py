"""Implementations of the expression language's built-in functions.

`BUILTIN_FUNCTIONS` maps each name of `agentspec.compiler.builtins.BUILTINS`
to its Python implementation; generated code calls them through the
namespace `fn` (`fn.calc(...)`, `fn.number(...)`). A test keeps the two
tables in step.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from agentspec.stdlib.calculator import calc
from agentspec.stdlib.metrics import exact_match, f1, normalize_answer
from agentspec.stdlib.text import contains, extract, extract_all, join, number, regex_match, split


def _to_int(value: Any) -> int:
    if isinstance(value, str):
        return int(float(value.replace(",", "").strip()))
    return int(value)


def _to_float(value: Any) -> float:
    if isinstance(value, str):
        return float(value.replace(",", "").strip())
    return float(value)


def _min(*values: Any) -> Any:
    return builtins.min(values[0]) if len(values) == 1 else builtins.min(values)


def _max(*values: Any) -> Any:
    return builtins.max(values[0]) if len(values) == 1 else builtins.max(values)


def _round(value: float, digits: int = 0) -> float:
    return float(builtins.round(value, digits))


def _clip(value: float, low: float, high: float) -> float:
    return float(builtins.min(builtins.max(value, low), high))


def _get(container: Any, key: Any, default: Any = None) -> Any:
    """A dict's item by key, a list's by index, else `default`: negative or
    out-of-range indices are absent (they do not wrap)."""
    if isinstance(container, (list, str)):
        if isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(container):
            return container[key]
        return default
    try:
        return container[key]
    except (KeyError, IndexError, TypeError):
        return default


def _sorted(values: Any) -> list[Any]:
    return builtins.sorted(values)


def _takes_text(name: str, function: Callable[..., Any], count: int) -> Callable[..., Any]:
    """`function`, refusing none in its first `count` (text) arguments by name: Python
    says `descriptor 'lower' for 'str' objects doesn't apply to a 'NoneType' object`."""

    def call(*args: Any) -> Any:
        for i, arg in enumerate(args[:count]):
            if arg is None:
                raise TypeError(
                    f"{name}(): argument {i + 1} is none, not text (a value that may be"
                    " missing, such as action.answer: test it with `x is not None` first)"
                )
        return function(*args)

    call.__name__ = call.__qualname__ = name
    return call


BUILTIN_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len,
    "str": str,
    "int": _to_int,
    "float": _to_float,
    "bool": bool,
    "lower": _takes_text("lower", str.lower, 1),
    "upper": _takes_text("upper", str.upper, 1),
    "strip": _takes_text("strip", str.strip, 1),
    "contains": contains,
    "startswith": _takes_text("startswith", str.startswith, 2),
    "endswith": _takes_text("endswith", str.endswith, 2),
    "replace": _takes_text("replace", str.replace, 3),
    "split": _takes_text("split", split, 1),
    "join": join,
    "regex_match": _takes_text("regex_match", regex_match, 2),
    "extract": _takes_text("extract", extract, 2),
    "extract_all": _takes_text("extract_all", extract_all, 2),
    "number": number,
    "normalize_answer": normalize_answer,
    "exact_match": exact_match,
    "f1": f1,
    "min": _min,
    "max": _max,
    "sum": sum,
    "abs": abs,
    "round": _round,
    "clip": _clip,
    "calc": calc,
    "keys": lambda d: list(d),
    "values": lambda d: list(d.values()),
    "items": lambda d: [[k, v] for k, v in d.items()],
    "get": _get,
    "any": builtins.any,
    "all": builtins.all,
    "sorted": _sorted,
}

MAX_REPEATED_SIZE = 1_000_000


class ValueTooLarge(ValueError):
    """An expression asked for a value past the size limit (an expression error)."""


def repeat(value: Any, count: Any) -> Any:
    """The `*` operator where it may repeat a string or list, bounded in size."""
    for sequence, times in ((value, count), (count, value)):
        if isinstance(sequence, (str, list)) and isinstance(times, int):
            size = len(sequence) * max(times, 0)
            if size > MAX_REPEATED_SIZE:
                raise ValueTooLarge(
                    f"repeating would build {size:,} items (the limit is {MAX_REPEATED_SIZE:,})"
                )
    return value * count


fn = SimpleNamespace(**BUILTIN_FUNCTIONS, repeat=repeat)
"""The built-ins as attributes, for generated code: `fn.extract(text, pattern)`;
`fn.repeat` is the size-checked `*` on strings and lists."""
