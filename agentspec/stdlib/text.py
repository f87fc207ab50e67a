"""Text helpers for expressions: answer extraction, regexes, number parsing."""

from __future__ import annotations

import re
from typing import Any

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")


def regex_match(text: str, pattern: str) -> bool:
    """Whether `pattern` matches anywhere in `text`."""
    return re.search(pattern, text, flags=re.DOTALL) is not None


def extract(text: str, pattern: str) -> str | None:
    """The first capture group of the first match (or the whole match), else None."""
    match = re.search(pattern, text, flags=re.DOTALL)
    if match is None:
        return None
    return match.group(1) if match.groups() else match.group(0)


def extract_all(text: str, pattern: str) -> list[str]:
    """Every match of `pattern` (its first group when it has one)."""
    return [m.group(1) if m.groups() else m.group(0) for m in re.finditer(pattern, text, re.DOTALL)]


def number(value: Any) -> float | None:
    """The number a value denotes, else None.

    Numbers pass through. In text, a GSM8K-style `#### N` answer wins;
    otherwise the whole text as a number (`"1,234"`, `"$5"`, `"42."`);
    otherwise the last number in it — the usual convention for reading a
    model's final answer.
    """
    if value is None or isinstance(value, bool):
        return None if value is None else float(value)
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value)
    if "####" in text:
        text = text.rsplit("####", 1)[1]
    cleaned = text.strip().replace(",", "").replace("$", "").rstrip(".").strip()
    try:
        return float(cleaned)
    except ValueError:
        pass
    matches = _NUMBER.findall(text)
    if not matches:
        return None
    try:
        return float(matches[-1].replace(",", ""))
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
