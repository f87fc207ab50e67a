"""Text helpers for expressions: answer extraction, regexes, number parsing."""

from __future__ import annotations

import functools
import re
from typing import Any

import regex

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")


REGEX_TIMEOUT = 1.0
"""Seconds one regex call may take (patterns and texts may come from the model)."""


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` is not a regular expression the run-time engine (`regex`) takes, else
    None: a syntax error (a repeat count past its limit too), nesting past the parser's
    depth."""
    try:
        regex.compile(pattern, regex.DOTALL)
    except regex.error as exc:
        return str(exc)  # "… at position N"
    except RecursionError:
        return "groups are nested too deeply"
    return None


def regex_match(text: str, pattern: str) -> bool:
    """Whether `pattern` matches anywhere in `text` (TimeoutError past `REGEX_TIMEOUT`)."""
    return _search(pattern, text) is not None


def extract(text: str, pattern: str) -> str | None:
    """The first capture group of the first match (or the whole match), else None."""
    pair = _tag_pair(pattern)
    if pair is not None:
        return _between(text, *pair)
    match = _search(pattern, text)
    if match is None:
        return None
    return match.group(1) if match.groups() else match.group(0)


def extract_all(text: str, pattern: str) -> list[str]:
    """Every match of `pattern` (its first group when it has one)."""
    matches = regex.finditer(pattern, text, regex.DOTALL, timeout=REGEX_TIMEOUT)
    return [m.group(1) if m.groups() else m.group(0) for m in matches]


def _search(pattern: str, text: str) -> Any:
    # `regex` (not `re`): it takes a time limit, and releases the GIL while matching,
    # so a catastrophic pattern fails as an expression error instead of hanging the run.
    return regex.search(pattern, text, regex.DOTALL, timeout=REGEX_TIMEOUT)


_LITERAL = r"(?:[^\\.^$*+?{}\[\]|()]|\\[^A-Za-z0-9])+"
_TAG_PAIR = re.compile(rf"({_LITERAL})\(\.\*\?\)({_LITERAL})")


@functools.lru_cache(maxsize=256)
def _tag_pair(pattern: str) -> tuple[str, str] | None:
    """`OPEN(.*?)CLOSE` with literal OPEN and CLOSE (e.g. `<answer>(.*?)</answer>`), else None."""
    m = _TAG_PAIR.fullmatch(pattern)
    if m is None:
        return None
    return re.sub(r"\\(.)", r"\1", m.group(1)), re.sub(r"\\(.)", r"\1", m.group(2))


def _between(text: str, open_tag: str, close_tag: str) -> str | None:
    """What `OPEN(.*?)CLOSE` captures, in linear time.

    The leftmost match starts at the first OPEN: if no CLOSE follows it, none
    follows a later OPEN either. (A backtracking search retries from every
    OPEN, which is quadratic on a response full of unclosed tags.)
    """
    start = text.find(open_tag)
    if start == -1:
        return None
    start += len(open_tag)
    end = text.find(close_tag, start)
    return None if end == -1 else text[start:end]


def number(value: Any) -> float | None:
    """The number a value denotes, else None.

    Numbers pass through. In text, a GSM8K-style `#### N` answer wins;
    otherwise the whole text as a number (`"1,234"`, `"$5"`, `"42."`);
    otherwise the last number in it — the usual convention for reading a
    model's final answer. A whole number beyond float's exact range (2**53)
    stays an integer, so an exact answer still compares equal to its reference.
    """
    if value is None or isinstance(value, bool):
        return None if value is None else float(value)
    if isinstance(value, (int, float)):
        return _exact(value)
    text = str(value)
    if "####" in text:
        text = text.rsplit("####", 1)[1]
    cleaned = text.strip().replace(",", "").replace("$", "").rstrip(".").strip()
    parsed = _parse_number(cleaned)
    if parsed is not None:
        return parsed
    matches = _NUMBER.findall(text)
    return _parse_number(matches[-1].replace(",", "")) if matches else None


_FLOAT_EXACT = 2**53


def _exact(value: int | float) -> float:
    if isinstance(value, int) and abs(value) > _FLOAT_EXACT:
        return value  # an int is a number too; float() would round it
    return float(value)


def _parse_number(text: str) -> float | None:
    if re.fullmatch(r"[+-]?\d+", text):
        try:
            return _exact(int(text))
        except ValueError:  # more digits than Python converts (4,300): as a float, inf
            pass
    try:
        return float(text)
    except ValueError:
        return None


def contains(container: Any, item: Any) -> bool:
    """`item in container` for strings, lists and dicts; False for anything else."""
    if isinstance(container, str):
        return str(item) in container
    if isinstance(container, (list, tuple, dict, set)):
        return item in container
    return False


def split(text: str, separator: str | None = None) -> list[str]:
    return text.split(separator)


def join(items: list[Any], separator: str = "") -> str:
    return separator.join(str(item) for item in items)
