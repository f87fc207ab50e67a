"""``react``: ``Action: NAME`` + ``Action Input: {json}`` (one call), or ``Final Answer: ...``.

Rules (the docs page lists them with examples):

- markers start a line (``Action Input``, ``Action``, ``Final Answer``,
  ``Observation``, followed by ``:``); the text before the first is the
  ``content`` (the ``Thought``); a response without a marker is ``no_action``;
- one Action per response; an Action and a Final Answer together are
  ``mixed_final``; the model must not write ``Observation:`` itself (a
  trailing empty ``Observation:`` is ignored);
- the Action Input is a JSON object; a code fence around it (any label) is
  removed first. For a tool with exactly one parameter a bare value is
  accepted: a quoted one (``"red shoes"``, ``'red shoes'``, `` `red shoes` ``)
  is unquoted, and for a non-string parameter it is decoded as JSON when it
  is JSON (NaN, Infinity and too-long integers are parse errors, as everywhere);
- results come back as ``Observation: ...``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentspec.formats.base import (
    FormatResult,
    FormatTool,
    ParsedResponse,
    ToolCall,
    ToolCallFormat,
    one_error,
    register_format,
)
from agentspec.formats.strict_json import (
    NonStandardNumber,
    decode_one,
    json_type,
    strict_json_loads,
)

__all__ = ["ReactFormat"]

_MARKER = re.compile(r"^[ \t]*(Action Input|Action|Final Answer|Observation)[ \t]*:[ \t]?", re.M)
_TOOL_NAME = re.compile(r"[A-Za-z_][\w.-]*")
_FENCED = re.compile(r"```[^\n`]*\n(.*)\n[ \t]*```", re.DOTALL)


@dataclass(frozen=True)
class _Marker:
    kind: str
    start: int
    end: int


class _Markers:
    """The marker lines of a response and the text each one introduces."""

    def __init__(self, text: str) -> None:
        marks = [_Marker(m.group(1), m.start(), m.end()) for m in _MARKER.finditer(text)]
        # A trailing, empty "Observation:" (the model started to write the result) is ignored.
        if marks and marks[-1].kind == "Observation" and not text[marks[-1].end :].strip():
            text = text[: marks[-1].start]
            marks.pop()
        self.text = text
        self.marks = marks
        self.kinds = [m.kind for m in marks]
        self.content = text[: marks[0].start].strip() if marks else text.strip()

    def count(self, kind: str) -> int:
        return self.kinds.count(kind)

    def value(self, kind: str) -> str:
        """The text after the first ``kind`` marker, up to the next marker."""
        i = self.kinds.index(kind)
        end = self.marks[i + 1].start if i + 1 < len(self.marks) else len(self.text)
        return self.text[self.marks[i].end : end].strip()

    def raw_action(self) -> str:
        return self.text[self.marks[self.kinds.index("Action")].start :].strip()


@register_format("react")
class ReactFormat(ToolCallFormat):
    def usage(self) -> str:
        return (
            "Write 'Action: TOOL' and on the next line 'Action Input: {JSON arguments}', "
            "or 'Final Answer: ANSWER'."
        )

    def render_result(self, result: FormatResult) -> str:
        return f"Observation: {result.text if result.ok else self.error_body(result)}"

    def parse_answer(
        self, text: str, tools: Mapping[str, FormatTool] | None = None
    ) -> ParsedResponse:
        marks = _Markers(text)
        problem = _shape_problem(marks)
        if problem is not None:
            message, code, index = problem
            return one_error(message, code, index, marks.content)
        if "Final Answer" in marks.kinds:
            return ParsedResponse(final_answer=marks.value("Final Answer"), content=marks.content)
        parsed = _action(marks, tools or {})
        parsed.content = marks.content
        return parsed


def _shape_problem(marks: _Markers) -> tuple[str, str, int | None] | None:
    """What is wrong with the markers' order and number (message, code, call index), if anything."""
    if "Observation" in marks.kinds:
        return "do not write 'Observation:' yourself; stop after 'Action Input'", "extra_text", 0
    if not marks.marks:
        return "no 'Action:' or 'Final Answer:' found", "no_action", None
    actions, inputs = marks.count("Action"), marks.count("Action Input")
    if "Final Answer" in marks.kinds:
        if actions or inputs:
            return "write either an Action or a Final Answer, not both", "mixed_final", 0
        if marks.count("Final Answer") > 1:
            return "more than one 'Final Answer:'", "multiple_calls", None
        return None
    if actions > 1 or inputs > 1:
        return f"one Action per response, found {max(actions, inputs)}", "multiple_calls", 1
    if actions == 0:
        return "call 1: 'Action Input:' without 'Action:'", "missing_action", 0
    if inputs == 0:
        return "call 1: 'Action:' without 'Action Input:'", "missing_input", 0
    if marks.kinds.index("Action Input") < marks.kinds.index("Action"):
        return "call 1: 'Action Input:' comes before 'Action:'", "missing_action", 0
    return None


def _action(marks: _Markers, tools: Mapping[str, FormatTool]) -> ParsedResponse:
    """The one call of a well-shaped response."""
    name = marks.value("Action")
    if not name or not _TOOL_NAME.fullmatch(name):
        return one_error(f"call 1: {name!r} is not a tool name", "bad_name")
    raw_input = _unfenced(marks.value("Action Input"))
    raw = marks.raw_action()
    tool = tools.get(name)
    if not raw_input.startswith(("{", "[")) and tool is not None and len(tool.parameter_names) == 1:
        return _bare_value_call(name, tool, raw_input, raw)
    parsed, error = decode_one(raw_input, "call 1: Action Input", 0)
    if error is not None:
        return ParsedResponse(errors=[error])
    if not isinstance(parsed, dict):
        return one_error(
            f"call 1: Action Input must be a JSON object, got {json_type(parsed)}",
            "arguments_not_object",
        )
    return ParsedResponse(calls=[ToolCall(name, parsed, raw)])


def _bare_value_call(name: str, tool: FormatTool, value: str, raw: str) -> ParsedResponse:
    """A bare value fills the tool's only parameter."""
    param = tool.parameter_names[0]
    is_string = tool.parameters["properties"][param].get("type") == "string"
    arg: Any = _unquoted(value)
    if not is_string and arg == value:
        try:
            arg = strict_json_loads(value)
        except NonStandardNumber as exc:
            return one_error(f"call 1: Action Input: {exc}", exc.code)
        except (json.JSONDecodeError, RecursionError):
            arg = value  # not JSON: the tool's schema check says what is wrong
    return ParsedResponse(calls=[ToolCall(name, {param: arg}, raw)])


def _unfenced(value: str) -> str:
    """``value`` without a code fence around all of it."""
    fenced = _FENCED.fullmatch(value)
    return fenced.group(1).strip() if fenced else value


def _unquoted(value: str) -> str:
    """A quoted bare value without its quotes (a double-quoted one read as a JSON string)."""
    if len(value) < 2 or value[0] != value[-1] or value[0] not in "\"'`":
        return value
    if value[0] == '"':
        try:
            decoded = strict_json_loads(value)
        except (ValueError, RecursionError):
            return value[1:-1]
        return decoded if isinstance(decoded, str) else value
    return value[1:-1]
