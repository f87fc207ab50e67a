"""``hermes``: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks.

Rules (the docs page lists them with examples):

- any number of calls per response, free text around them (the ``content``);
  a response without a call is a final answer;
- a call's JSON is read by a JSON decoder, not cut at the next tag, so a
  ``</tool_call>`` inside a JSON string argument does not end the call;
- a call whose JSON is complete but whose ``</tool_call>`` is missing at the
  very end of the response is accepted (as vLLM's hermes parser does); an
  incomplete one is ``unclosed_tag``;
- results come back in ``<tool_response>...</tool_response>``.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Mapping, Sequence

from agentspec.formats.base import (
    MAX_LISTED_ERRORS,
    FormatError,
    FormatResult,
    FormatTool,
    ParsedResponse,
    ToolCall,
    ToolCallFormat,
    register_format,
    too_many_errors,
)
from agentspec.formats.strict_json import (
    NonStandardNumber,
    decode_one,
    decode_prefix,
    parse_call_object,
    skip_whitespace,
    trailing_error,
)

__all__ = ["HermesFormat"]

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
_TAGS = re.compile(re.escape(OPEN) + "|" + re.escape(CLOSE))

_Read = tuple[ToolCall | None, FormatError | None, int]
"""One call read from an opening tag: the call or the error, and where reading stopped."""


@register_format("hermes")
class HermesFormat(ToolCallFormat):
    open_tag = OPEN
    close_tag = CLOSE

    def usage(self) -> str:
        return 'Call a tool as <tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>.'

    def render_result(self, result: FormatResult) -> str:
        body = result.text if result.ok else self.error_body(result)
        return f"<tool_response>\n{body}\n</tool_response>"

    def render_errors(self, errors: Sequence[FormatError]) -> str:
        return f"<tool_response>\n{super().render_errors(errors)}\n</tool_response>"

    def parse_answer(
        self, text: str, tools: Mapping[str, FormatTool] | None = None
    ) -> ParsedResponse:
        # One regex pass finds the tags; each call then reads forward from its tag.
        # Tags inside a call's JSON are skipped, so the walk stays linear.
        walk = _TagWalk(text, [(m.start(), m.group()) for m in _TAGS.finditer(text)])
        calls, errors = walk.run()
        content = walk.content()
        if errors:
            return ParsedResponse(errors=errors, content=content)
        if calls:
            return ParsedResponse(calls=calls, content=content)
        return ParsedResponse(final_answer=content, content=content)


class _TagWalk:
    def __init__(self, text: str, tags: list[tuple[int, str]]) -> None:
        self.text = text
        self.tags = tags
        self.starts = [start for start, _ in tags]
        self.outside: list[str] = []

    def content(self) -> str:
        return "".join(self.outside).strip()

    def run(self) -> tuple[list[ToolCall], list[FormatError]]:
        calls: list[ToolCall] = []
        errors: list[FormatError] = []
        pos = t = index = 0
        while t < len(self.tags):
            if len(errors) >= MAX_LISTED_ERRORS:
                errors.append(too_many_errors(f"{len(self.tags) - t} more tags"))
                return calls, errors
            start, tag = self.tags[t]
            self.outside.append(self.text[pos:start])
            call, error, pos = (
                self.read_unopened(t, index) if tag == CLOSE else self.read_call(t, index)
            )
            if call is not None:
                calls.append(call)
            if error is not None:
                errors.append(error)
            index += 1
            t = max(t + 1, bisect.bisect_left(self.starts, pos))
        self.outside.append(self.text[pos:])
        return calls, errors

    def read_unopened(self, t: int, index: int) -> _Read:
        """A closing tag with no call open: an error, and reading goes on after it."""
        message = f"call {index + 1}: {CLOSE} without a matching {OPEN}"
        return None, FormatError(message, "unopened_tag", index), self.tags[t][0] + len(CLOSE)

    def read_call(self, t: int, index: int) -> _Read:
        """The call opened by tag ``t``, read as JSON up to its closing tag."""
        text, start = self.text, self.tags[t][0]
        body = start + len(OPEN)
        try:
            value, end = decode_prefix(text, body)
        except (json.JSONDecodeError, RecursionError, NonStandardNumber):
            return self.read_between_tags(t, index)
        after = skip_whitespace(text, end)
        if text.startswith(CLOSE, after):
            stop = after + len(CLOSE)
            call, error = parse_call_object(value, index, text[start:stop])
            return call, error, stop
        if after == len(text):  # complete JSON, no closing tag, end of output: accepted
            call, error = parse_call_object(value, index, text[start:].rstrip())
            return call, error, len(text)
        k = bisect.bisect_left(self.starts, after)
        if k == len(self.tags) or self.tags[k][1] != CLOSE:
            return self.read_between_tags(t, index)
        close = self.tags[k][0]
        rest = text[after:close].strip()
        return (
            None,
            trailing_error(rest, end - body, f"call {index + 1}", index),
            close + len(CLOSE),
        )

    def read_between_tags(self, t: int, index: int) -> _Read:
        """A call whose JSON does not parse: say what is wrong with the text up to the next tag."""
        where = f"call {index + 1}"
        start = self.tags[t][0]
        if t + 1 == len(self.tags):
            message = f"{where}: {OPEN} is not closed by {CLOSE} (was the response cut off?)"
            return None, FormatError(message, "unclosed_tag", index), len(self.text)
        end, next_tag = self.tags[t + 1]
        if next_tag == OPEN:
            message = f"{where}: a new {OPEN} opens before {CLOSE}"
            return None, FormatError(message, "nested_tag", index), end
        stop = end + len(CLOSE)
        value, error = decode_one(self.text[start + len(OPEN) : end], where, index)
        if error is not None:
            return None, error, stop
        call, error = parse_call_object(value, index, self.text[start:stop])
        return call, error, stop
