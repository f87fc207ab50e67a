"""``bracket``: WebShop-style ``name[argument]`` alone on the last line, one call per response.

Rules (the docs page lists them with examples):

- the action is the last non-empty line, optionally after ``Action:``, and
  may be wrapped in backticks or be the only line of a code fence; the
  lines before it are the ``content``;
- the argument is everything between the first ``[`` and the last ``]``,
  stripped, passed as text to the tool's only parameter: the format serves
  tools with exactly one parameter (``agentspec validate`` reports others
  as E912; at run time they are ``not_one_parameter``), and that parameter
  must take text (an ``integer`` one would refuse ``guess[3]``'s ``"3"``:
  E912 too; declare ``string`` and convert with ``int(args.n)``);
- one action per response: two on the last line, or a second whole-line
  action above it, are ``multiple_calls`` (never silently the last one);
- a last line with text around ``word[...]`` is an action gone wrong
  (``extra_text`` / ``unclosed_tag``) only when ``word`` names a tool, so
  prose such as ``stored in arr[0].`` is a final answer;
- results come back as ``Observation: ...``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from agentspec.formats.base import (
    FormatResult,
    FormatTool,
    ParsedResponse,
    ToolCall,
    ToolCallFormat,
    one_error,
    register_format,
)

__all__ = ["BracketFormat"]

_ACTION = re.compile(r"^(?:Action:\s*)?([A-Za-z_][\w-]*)\[(.*)\]$", re.DOTALL)
_OPENER = re.compile(r"(?:^|\s|`)([A-Za-z_][\w-]*)\[")
_SECOND_ACTION = re.compile(r"\]\s*[A-Za-z_][\w-]*\[")


@register_format("bracket")
class BracketFormat(ToolCallFormat):
    def usage(self) -> str:
        return "Act by writing TOOL[ARGUMENT] (e.g. search[red shoes]) alone on the last line."

    def render_result(self, result: FormatResult) -> str:
        return f"Observation: {result.text if result.ok else self.error_body(result)}"

    def parse_answer(
        self, text: str, tools: Mapping[str, FormatTool] | None = None
    ) -> ParsedResponse:
        lines = _unfenced_last_line([ln.strip() for ln in text.strip().splitlines() if ln.strip()])
        if not lines:
            return ParsedResponse(final_answer="", content="")
        last, content = _unticked(lines[-1]), "\n".join(lines[:-1]).strip()
        action = _ACTION.match(last)
        earlier_action = any(_ACTION.match(_unticked(ln)) for ln in lines[:-1])
        if action is None:
            if _names_a_tool(last, tools):
                return _malformed(last, content)
            if earlier_action:
                return one_error(
                    "call 1: the action must be on the last line", "extra_text", 0, content
                )
            answer = text.strip()
            return ParsedResponse(final_answer=answer, content=answer)
        if earlier_action or _SECOND_ACTION.search(action.group(2)):
            return one_error("call 2: one action per response", "multiple_calls", 1, content)
        parsed = _call(action.group(1), action.group(2).strip(), last, tools)
        parsed.content = content
        return parsed


def _call(name: str, arg: str, raw: str, tools: Mapping[str, FormatTool] | None) -> ParsedResponse:
    if not arg:
        return one_error(f"call 1: {name}[] has an empty argument", "empty_argument")
    tool = (tools or {}).get(name)
    if tool is None:  # the environment reports the unknown tool
        return ParsedResponse(calls=[ToolCall(name, {"argument": arg}, raw)])
    params = tool.parameter_names
    if len(params) != 1:
        return one_error(
            f"call 1: tool {name!r} takes {len(params)} parameters; the bracket format passes exactly one",
            "not_one_parameter",
        )
    return ParsedResponse(calls=[ToolCall(name, {params[0]: arg}, raw)])


def _malformed(last: str, content: str) -> ParsedResponse:
    """A last line that tries to act but is not only ``TOOL[ARGUMENT]``."""
    if last.count("[") > last.count("]"):
        return one_error(
            "call 1: '[' is not closed by ']' (was the response cut off?)",
            "unclosed_tag",
            0,
            content,
        )
    return one_error(
        f"call 1: the last line must be only TOOL[ARGUMENT], got {last[:60]!r}",
        "extra_text",
        0,
        content,
    )


def _names_a_tool(line: str, tools: Mapping[str, FormatTool] | None) -> bool:
    """Whether ``line`` holds ``word[`` with ``word`` a tool (any word when tools are unknown)."""
    names = (m.group(1) for m in _OPENER.finditer(line))
    return any(tools is None or name in tools for name in names)


def _unticked(line: str) -> str:
    """``line`` without backticks around all of it."""
    if len(line) > 2 and line[0] == "`" and line[-1] == "`":
        return line.strip("`").strip()
    return line


def _unfenced_last_line(lines: list[str]) -> list[str]:
    """The lines with a code fence around only the last line removed."""
    if (
        len(lines) >= 3
        and lines[-1] == "```"
        and lines[-3].startswith("```")
        and "`" not in lines[-3][3:]
    ):
        return [*lines[:-3], lines[-2]]
    return lines
