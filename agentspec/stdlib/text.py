"""Text helpers for expressions: answer extraction, regexes, number parsing."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

import regex

# A number in running text, its sign read apart (see `_numbers`): `1,234`, `2.5`, `.5`, `1e-3`.
_UNSIGNED_NUMBER = re.compile(r"(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")
_MINUS_SIGNS = "-\u2212"  # ASCII hyphen-minus and the Unicode minus sign


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

    Numbers pass through. In text, a GSM8K-style `#### N` answer wins (the
    first number after the last `####`, whatever follows it); otherwise the
    whole text as a number (`"1,234"`, `"$5"`, `"42."`, `"1e-3"`, `"−5"`);
    otherwise the last number in it — the usual convention for reading a
    model's final answer. A minus sign (`-` or `−`) belongs to a number only
    where it starts a word: the last number of `pages 10-20` is 20. A whole number beyond float's exact range (2**53)
    stays an integer, so an exact answer still compares equal to its reference.
    """
    if value is None or isinstance(value, bool):
        return None if value is None else float(value)
    if isinstance(value, (int, float)):
        return _exact(value)
    text = str(value)
    if "####" in text:  # the answer is the number right after the last marker
        return next(_numbers(text.rsplit("####", 1)[1]), None)
    cleaned = text.strip().replace(",", "").replace("$", "").replace("\u2212", "-")
    parsed = _parse_number(cleaned.rstrip(".").strip())
    if parsed is not None:
        return parsed
    last = None
    for last in _numbers(text):  # noqa: B007 (the last one is the answer)
        pass
    return last


def _numbers(text: str) -> Iterator[float]:
    """The numbers of running text, in order. A minus sign counts only where it starts a
    word: `10-20` and `2024-01-01` are ranges and dates, not negative numbers."""
    for match in _UNSIGNED_NUMBER.finditer(text):
        start = match.start()
        signed = (
            start > 0
            and text[start - 1] in _MINUS_SIGNS
            and (start == 1 or not (text[start - 2].isalnum() or text[start - 2] in "._"))
        )
        parsed = _parse_number(("-" if signed else "") + match.group().replace(",", ""))
        if parsed is not None:
            yield parsed


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
