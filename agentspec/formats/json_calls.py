"""``json``: the whole response is one call ``{"name", "arguments"}`` or a list of calls.

Rules (the docs page lists them with examples):

- the response (reasoning, a leading byte-order mark and surrounding
  whitespace removed) may be fenced as a code block labelled ``json``,
  ``jsonc`` (any case) or not labelled;
- it is a call when it is a JSON object, or a JSON list holding at least one
  object, in it or in a list inside it (``[]`` is ``empty_call``); every item
  must then be a call, so ``[[{...}]]`` is ``not_an_object``: the calls are
  one flat list;
- it is a call attempt with an error when it starts like JSON but does not
  parse and either mentions a call (``{"name":``), starts with ``{``, or is
  cut off (the JSON error is at its end); text before a call is ``extra_text``;
- everything else is a final answer: prose, numbers, ``[1] Paris is …``,
  ``[1, 2, 3]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from agentspec.formats.base import (
    FormatError,
    FormatResult,
    FormatTool,
    ParsedResponse,
    ToolCall,
    ToolCallFormat,
    one_error,
    register_format,
)
from agentspec.formats.caps import cap_error
from agentspec.formats.strict_json import (
    NonStandardNumber,
    decode_one,
    decode_prefix,
    parse_call_object,
)

__all__ = ["JsonFormat", "unfence"]

_CALL_LIKE = re.compile(r'[\[{]\s*"name"\s*:')


def unfence(body: str) -> str:
    """``body`` without a code fence around all of it (labelled json / jsonc / nothing)."""
    if len(body) < 6 or not body.startswith("```") or not body.endswith("```"):
        return body
    inner = body[3:-3]
    label, newline, rest = inner.partition("\n")
    if not newline:  # one line: ```{...}```
        return inner.strip()
    return rest.strip() if label.strip().lower() in _FENCE_LABELS else body


_FENCE_LABELS = ("", "json", "jsonc")


@register_format("json")
class JsonFormat(ToolCallFormat):
    def usage(self) -> str:
        return (
            'Call a tool by answering with only the JSON {"name": "TOOL", "arguments": {...}} '
            "(or a JSON list of such objects)."
        )

    def render_result(self, result: FormatResult) -> str:
        if result.ok:
            return json.dumps({"name": result.name, "result": result.text}, ensure_ascii=False)
        return json.dumps(
            {"name": result.name, "error": cap_error(result.text)}, ensure_ascii=False
        )

    def parse_answer(
        self, text: str, tools: Mapping[str, FormatTool] | None = None
    ) -> ParsedResponse:
        answer = text.strip()
        body = unfence(answer)
        final = ParsedResponse(final_answer=answer, content=answer)
        if not body.startswith(("{", "[")):
            match = _CALL_LIKE.search(body)
            if match is None:
                return final
            before = body[: match.start()].strip()[:40]
            return one_error(
                f"call 1: text before the JSON tool call ({before!r}); the response must be only the JSON",
                "extra_text",
            )
        try:
            value, _ = decode_prefix(body)
        except (json.JSONDecodeError, NonStandardNumber, RecursionError) as exc:
            if not _looks_like_a_call(body, exc):
                return final
        else:
            if not _is_call_shaped(value):
                return final
        value, error = decode_one(body, "response", 0)
        if error is not None:
            return ParsedResponse(errors=[error])
        return _calls(value if isinstance(value, list) else [value])


def _is_call_shaped(value: Any) -> bool:
    """An object, or a list with an object in it or in a list inside it (or
    empty: an empty list of calls). `[[{...}]]` is a call written wrong, not prose."""
    if isinstance(value, dict):
        return True
    if not isinstance(value, list):
        return False
    pending: list[Any] = list(value)
    while pending:  # iterative: the depth is the model's to choose
        item = pending.pop()
        if isinstance(item, dict):
            return True
        if isinstance(item, list):
            pending.extend(item)
    return not value


def _looks_like_a_call(body: str, exc: Exception) -> bool:
    """Whether JSON that does not parse was meant as a call (else it is prose)."""
    if not isinstance(exc, json.JSONDecodeError):
        return True  # too deep, or a refused number: JSON all the same
    cut_off = exc.pos >= len(body)
    return cut_off or body.startswith("{") or _CALL_LIKE.search(body) is not None


def _calls(items: list[Any]) -> ParsedResponse:
    if not items:
        return ParsedResponse(errors=[FormatError("response: empty list of calls", "empty_call")])
    calls: list[ToolCall] = []
    errors: list[FormatError] = []
    for i, item in enumerate(items):
        if isinstance(item, list):
            message = f"call {i + 1}: a list inside the list of calls; write one flat list [{{...}}, {{...}}]"
            errors.append(FormatError(message, "not_an_object", i))
            continue
        call, error = parse_call_object(item, i, json.dumps(item, ensure_ascii=False))
        if error is not None:
            errors.append(error)
        elif call is not None:
            calls.append(call)
    return ParsedResponse(errors=errors) if errors else ParsedResponse(calls=calls)
