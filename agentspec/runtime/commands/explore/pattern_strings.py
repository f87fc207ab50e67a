"""Strings a JSON Schema string admits: padded to its length bounds, and drawn at
random so that its `pattern` matches (explore's action space draws them)."""

from __future__ import annotations

import random
from typing import Any

from agentspec.stdlib.text import pattern_problem, regex_match

__all__ = ["MAX_DRAWN_SIZE", "string_for_pattern"]

MAX_DRAWN_SIZE = 1_000
"""The most items (or characters) a drawn array (or string) gets: a schema's `minItems` of
10**12 is drawn short, an invalid call, instead of filling the memory."""


def _padded(value: str, low: int, high: int | None, rng: random.Random) -> str:
    """`value` cut or padded with letters to a length between `low` and `high`."""
    if high is not None:
        value = value[:high]
    while len(value) < low:
        value += rng.choice("abcdefghijklmnopqrstuvwxyz")
    return value


MAX_REPEAT_DRAWN = 3  # extra repetitions a `*`, `+` or `{n,}` draws beyond its minimum
_CATEGORY_CHARS = {
    "CATEGORY_DIGIT": "0123456789",
    "CATEGORY_NOT_DIGIT": "abcXYZ_-",
    "CATEGORY_SPACE": " ",
    "CATEGORY_NOT_SPACE": "abc123XYZ",
    "CATEGORY_WORD": "abcxyzABC0129_",
    "CATEGORY_NOT_WORD": " -.,",
}
_PRINTABLE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_.,"


def string_for_pattern(
    pattern: str, rng: random.Random, low: int = 0, high: int | None = None
) -> str | None:
    """A random string that `pattern` matches (JSON Schema's `pattern`, searched
    anywhere), or None where the pattern uses what the generator cannot write
    (lookarounds, back references it cannot honour): the caller checks the result."""
    import re._parser as sre_parse  # the `re` module's parser: patterns JSON Schema allows

    try:
        parsed = sre_parse.parse(pattern)
    except Exception:
        return None
    try:
        out = _generate(list(parsed), rng, {}, [0])
    except _CannotWrite:
        return None
    if high is not None and len(out) > high:
        return None
    return _padded(out, low, high, rng) if len(out) < low and not _anchored_end(pattern) else out


class _CannotWrite(Exception):
    pass


def _anchored_end(pattern: str) -> bool:
    return pattern.endswith("$") or pattern.endswith("\\Z")


def _generate(
    items: list[Any], rng: random.Random, groups: dict[int, str], budget: list[int]
) -> str:
    import re._constants as c

    budget[0] += 1
    if budget[0] > 10_000:
        raise _CannotWrite
    out: list[str] = []
    for op, arg in items:
        if op == c.LITERAL:
            out.append(chr(arg))
        elif op == c.NOT_LITERAL:
            out.append(next(ch for ch in _PRINTABLE if ord(ch) != arg))
        elif op == c.ANY:
            out.append(rng.choice("abcxyz0129"))
        elif op == c.IN:
            out.append(_from_set(arg, rng))
        elif op == c.BRANCH:
            out.append(_generate(list(rng.choice(arg[1])), rng, groups, budget))
        elif op == c.SUBPATTERN:
            group, _add, _del, sub = arg
            text = _generate(list(sub), rng, groups, budget)
            if group is not None:
                groups[group] = text
            out.append(text)
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
            lo, hi, sub = arg
            hi = lo + MAX_REPEAT_DRAWN if hi == c.MAXREPEAT else min(hi, lo + MAX_REPEAT_DRAWN)
            count = rng.randint(lo, max(lo, hi))
            if count > MAX_DRAWN_SIZE:
                raise _CannotWrite
            out.extend(_generate(list(sub), rng, groups, budget) for _ in range(count))
        elif op == c.GROUPREF:
            if arg not in groups:
                raise _CannotWrite
            out.append(groups[arg])
        elif op == c.AT:
            continue  # anchors: the string is written whole, start to end
        elif op == getattr(c, "ATOMIC_GROUP", None):
            out.append(_generate(list(arg), rng, groups, budget))
        else:  # lookarounds, conditionals: written as if absent, checked by the caller
            continue
    return "".join(out)


def _from_set(items: list[Any], rng: random.Random) -> str:
    import re._constants as c

    allowed: list[str] = []
    negate = False
    for op, arg in items:
        if op == c.NEGATE:
            negate = True
        elif op == c.LITERAL:
            allowed.append(chr(arg))
        elif op == c.RANGE:
            lo, hi = arg
            allowed += [chr(x) for x in range(lo, min(hi, lo + 200) + 1)]
        elif op == c.CATEGORY:
            allowed += list(_CATEGORY_CHARS.get(str(arg), ""))
    if negate:
        banned = set(allowed)
        choices = [ch for ch in _PRINTABLE if ch not in banned]
    else:
        choices = allowed
    if not choices:
        raise _CannotWrite
    return rng.choice(choices)


def _matches(pattern: str, value: str) -> bool:
    if pattern_problem(pattern) is not None:
        return True  # validate reports the pattern (E701); any value will do here
    try:
        return regex_match(value, pattern)
    except TimeoutError:
        return False
