"""Any Python value as strict JSON: the one sanitiser for what leaves the process
(trajectory files, served sessions, trainer rows).

Strict JSON (``allow_nan=False``) and UTF-8 cannot hold everything an episode can
produce: a tool's NaN, a model's lone surrogate escape, a 50,000-digit integer, a
state holding a set or a dataclass, or a structure nested thousands deep. Every
writer goes through :func:`json_value`, so the same value is spelled the same way
wherever it is read back (a NaN is ``"NaN"`` in a trace and in a served state alike).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["LONE_SURROGATE", "MAX_DEPTH", "json_value"]

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""Half of a UTF-16 pair: decodable from a JSON escape (`"\\ud800"`), not encodable as UTF-8."""

MAX_DEPTH = 200
"""Deeper containers are cut (their text says so): a writer never recurses without bound."""

_MAX_INT_BITS = 13_000  # beyond what int -> str converts (Python's 4,300-digit limit)


def json_value(value: Any, depth: int = 0) -> Any:
    """``value`` as plain, strict JSON: mappings and dataclasses as objects (keys as text),
    lists, tuples and sets as arrays (sets sorted), non-finite floats as ``"NaN"``,
    ``"Infinity"``, ``"-Infinity"``, lone surrogates as U+FFFD, an integer too long to
    print as a note of its size, and anything else as its text."""
    if isinstance(value, str):
        return LONE_SURROGATE.sub("\ufffd", value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int):
        if value.bit_length() > _MAX_INT_BITS:
            return f"<integer of {value.bit_length()} bits>"
        return int(value)  # an IntEnum or a bool subclass as its number
    if depth >= MAX_DEPTH:
        return "<nested too deeply>"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: json_value(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)
        }
    if isinstance(value, Mapping):
        return {json_value(str(k)): json_value(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return [json_value(v, depth + 1) for v in sorted(value, key=repr)]
    if isinstance(value, (list, tuple)):
        return [json_value(v, depth + 1) for v in value]
    try:
        return LONE_SURROGATE.sub("\ufffd", str(value))
    except Exception:  # a __str__ that raises: the type is all that can be said
        return f"<unprintable {type(value).__name__}>"
