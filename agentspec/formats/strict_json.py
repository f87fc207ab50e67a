"""Strict JSON for tool calls: standard, finite numbers of sane size, precise errors.

NaN, ±Infinity, a float that overflows and an integer of more than
:data:`MAX_INT_DIGITS` digits are parse errors in every format (Python's
``json`` accepts the first three and chokes on the last). A ``\\u`` escape of half
a character (``"\\ud800"``, a lone UTF-16 surrogate) decodes to U+FFFD: Python's
``json`` would hand on a string no tool, tokenizer or wire can encode.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from agentspec.core.json_value import LONE_SURROGATE
from agentspec.formats.base import FormatError, ToolCall

__all__ = [
    "MAX_INT_DIGITS",
    "NonStandardNumber",
    "decode_one",
    "decode_prefix",
    "json_type",
    "parse_call_object",
    "skip_whitespace",
    "strict_json_loads",
    "valid_text",
]

MAX_INT_DIGITS = 4000
"""Longest integer literal accepted in a call's JSON (Python refuses > 4,300 digits)."""


class NonStandardNumber(ValueError):
    """A JSON number the runtime refuses: NaN, ±Infinity, an overflowing float, a huge int."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def _reject_constant(name: str) -> Any:
    raise NonStandardNumber(
        f"{name} is not a JSON number (use a finite number or a string)", "non_finite_number"
    )


def _strict_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise NonStandardNumber(f"the number {text[:40]!r} is too large", "non_finite_number")
    return value


def _strict_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise NonStandardNumber(
            f"an integer of {digits} digits is too long (at most {MAX_INT_DIGITS})",
            "number_too_long",
        )
    return int(text)


_STRICT_JSON = json.JSONDecoder(
    parse_constant=_reject_constant, parse_float=_strict_float, parse_int=_strict_int
)
_JSON_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def skip_whitespace(text: str, pos: int) -> int:
    """The first index at or after ``pos`` that is not JSON whitespace."""
    match = _JSON_WHITESPACE.match(text, pos)
    return match.end() if match else pos


def decode_prefix(text: str, pos: int = 0) -> tuple[Any, int]:
    """The JSON value starting at ``pos`` (after whitespace) and the index after it.

    Raises :class:`json.JSONDecodeError`, :class:`RecursionError` or
    :class:`NonStandardNumber`.
    """
    value, end = _STRICT_JSON.raw_decode(text, skip_whitespace(text, pos))
    segment = text[pos:end]
    if _SURROGATE_ESCAPE.search(segment) or LONE_SURROGATE.search(segment):
        value = valid_text(value)
    return value, end


def valid_text(value: Any) -> Any:
    """Decoded JSON ``value`` with every lone surrogate in its strings and keys replaced
    by U+FFFD (in place for containers; iterative, as deep as the decoder went)."""
    if isinstance(value, str):
        return LONE_SURROGATE.sub("\ufffd", value)
    pending = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str):
                    node[i] = LONE_SURROGATE.sub("\ufffd", item)
                elif isinstance(item, (list, dict)):
                    pending.append(item)
        elif isinstance(node, dict):
            items = list(node.items())
            node.clear()
            for key, item in items:
                if isinstance(item, str):
                    item = LONE_SURROGATE.sub("\ufffd", item)
                elif isinstance(item, (list, dict)):
                    pending.append(item)
                node[LONE_SURROGATE.sub("\ufffd", key)] = item
    return value


def strict_json_loads(text: str) -> Any:
    """``json.loads`` that accepts only standard, finite JSON numbers of sane size.

    Raises :class:`json.JSONDecodeError`, :class:`RecursionError` or a
    ``ValueError`` whose ``code`` attribute says which number was refused.
    """
    value, end = decode_prefix(text)
    end = skip_whitespace(text, end)
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


def decode_one(body: str, where: str, index: int) -> tuple[Any, FormatError | None]:
    """Decode exactly one JSON value from ``body``; say precisely what is wrong otherwise."""
    stripped = body.strip()
    if not stripped:
        return None, FormatError(f"{where}: empty call", "empty_call", index)
    try:
        value, end = decode_prefix(stripped)
    except NonStandardNumber as exc:
        return None, FormatError(f"{where}: invalid JSON: {exc}", exc.code, index)
    except json.JSONDecodeError as exc:
        return None, FormatError(
            f"{where}: invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            "invalid_json",
            index,
        )
    except RecursionError:
        return None, FormatError(f"{where}: JSON nested too deeply", "invalid_json", index)
    rest = stripped[end:].strip()
    if rest:
        return None, trailing_error(rest, end, where, index)
    return value, None


def trailing_error(rest: str, end: int, where: str, index: int) -> FormatError:
    """What to say about ``rest``, found after a call's JSON value."""
    if rest.startswith(("{", "[")):
        return FormatError(
            f"{where}: extra data after the JSON value at column {end + 1}; write one call per block",
            "extra_data",
            index,
        )
    return FormatError(
        f"{where}: unexpected text after the JSON value: {rest[:40]!r}", "extra_text", index
    )


def parse_call_object(obj: Any, index: int, raw: str) -> tuple[ToolCall | None, FormatError | None]:
    """Check ``{"name": str, "arguments": object}`` (``arguments`` may be a JSON string)."""
    where = f"call {index + 1}"
    if not isinstance(obj, dict):
        return None, FormatError(
            f"{where}: expected a JSON object with 'name' and 'arguments', got {json_type(obj)}",
            "not_an_object",
            index,
        )
    if "name" not in obj:
        return None, FormatError(f"{where}: missing 'name'", "missing_name", index)
    name = obj["name"]
    if not isinstance(name, str) or not name.strip():
        return None, FormatError(
            f"{where}: 'name' must be a non-empty string, got "
            + ("a blank one" if isinstance(name, str) else json_type(name)),
            "bad_name",
            index,
        )
    extra = sorted(set(obj) - {"name", "arguments"})
    if extra:
        return None, FormatError(
            f"{where}: unexpected key {extra[0]!r} (only 'name' and 'arguments' are allowed)",
            "unexpected_key",
            index,
        )
    args, error = arguments_object(obj.get("arguments", {}), where, index)
    if error is not None:
        return None, error
    return ToolCall(name=name, arguments=args, raw=raw), None


def arguments_object(args: Any, where: str, index: int) -> tuple[dict, FormatError | None]:
    """A call's arguments as an object; a JSON string holding the object is decoded."""
    if isinstance(args, str):
        try:
            args = strict_json_loads(args)
        except RecursionError:
            return {}, FormatError(f"{where}: 'arguments' nested too deeply", "invalid_json", index)
        except NonStandardNumber as exc:
            return {}, FormatError(f"{where}: 'arguments': {exc}", exc.code, index)
        except json.JSONDecodeError as exc:
            return {}, FormatError(
                f"{where}: 'arguments' is a string that is not valid JSON ({exc.msg} at column {exc.colno})",
                "invalid_json",
                index,
            )
    if not isinstance(args, dict):
        return {}, FormatError(
            f"{where}: 'arguments' must be a JSON object, got {json_type(args)}",
            "arguments_not_object",
            index,
        )
    return args, None


def json_type(value: Any) -> str:
    """``a number``, ``a list``, … for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    for kind, words in ((int, "a number"), (float, "a number"), (str, "a string")):
        if isinstance(value, kind):
            return words
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
