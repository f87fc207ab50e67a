"""Python literals for spec values: the only way user data enters generated code.

`repr` alone is not enough: it spells an infinite float `inf` and a NaN
`nan` (bare names that do not exist at run time) and would spell any other
object (a date, bytes) with a constructor the module never imports. The
front end admits only None, bools, ints, floats, strings, lists and dicts
(`agentspec.spec.scalars` rejects the rest); anything else reaching the
emitter is a bug in agentspec and fails loudly instead of emitting a module
that breaks at run time.
"""

from __future__ import annotations

import math
from typing import Any

INF = 'float("inf")'
NAN = 'float("nan")'


def py_literal(value: Any) -> str:
    """Python source that evaluates to `value` (recursively for lists and dicts)."""
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return NAN
        if math.isinf(value):
            return INF if value > 0 else f"-{INF}"
        return repr(value)
    if isinstance(value, (list, tuple)):
        items = ", ".join(py_literal(item) for item in value)
        return (
            f"[{items}]"
            if isinstance(value, list)
            else f"({items}{',' if len(value) == 1 else ''})"
        )
    if isinstance(value, dict):
        pairs = ", ".join(f"{py_literal(k)}: {py_literal(v)}" for k, v in value.items())
        return "{" + pairs + "}"
    raise TypeError(f"no Python literal for a {type(value).__name__} (a bug in agentspec)")
