"""What every tool-call format shares: the parse result, the format interface, the registry.

A format turns one model response into calls, a final answer, or errors
(:meth:`ToolCallFormat.parse`, which never raises on model output), and writes
tool results and parse errors back as the model sees them. Reasoning text
(a ``<think>…</think>`` block by default) is split off before the format's own
rules run: it is never parsed for calls and comes back on
:attr:`ParsedResponse.reasoning`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentspec.core.registry import Registry
from agentspec.formats.caps import cap_error
from agentspec.formats.reasoning import DEFAULT_REASONING_TAGS, split_reasoning


class FormatTool(Protocol):
    """What a format reads of a tool (the runtime's tools, the checker's views of them):
    its name, description and JSON Schema parameters."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> dict[str, Any]: ...

    @property
    def parameter_names(self) -> list[str]: ...

    def schema(self) -> dict[str, Any]: ...


class FormatResult(Protocol):
    """What a format writes of a tool call's outcome."""

    @property
    def name(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def ok(self) -> bool: ...


__all__ = [
    "BOM",
    "ERROR_CODES",
    "FORMATS",
    "MAX_ERROR_LINE_CHARS",
    "MAX_LISTED_ERRORS",
    "FormatError",
    "FormatResult",
    "FormatTool",
    "ParsedResponse",
    "ToolCallFormat",
    "available_formats",
    "get_format",
    "register_format",
]

MAX_ERROR_LINE_CHARS = 300
"""Longest single problem line in a parse-error observation."""

MAX_LISTED_ERRORS = 10
"""Problems listed per response; parsing stops after this many (the rest are counted)."""

BOM = "\ufeff"
"""A byte-order mark some models emit first; it is dropped before parsing."""

ERROR_CODES: dict[str, str] = {
    "invalid_json": "a call's JSON does not parse (or nests too deeply)",
    "non_finite_number": "NaN, Infinity or a float that overflows: not a JSON number",
    "number_too_long": "an integer of more than 4,000 digits",
    "not_an_object": "a call is not a JSON object with 'name' and 'arguments'",
    "missing_name": "a call has no 'name'",
    "bad_name": "a call's name is not a non-empty string / not a tool name",
    "unexpected_key": "a call object has a key other than 'name' and 'arguments'",
    "arguments_not_object": "a call's arguments are not a JSON object",
    "empty_call": "an empty call (empty tag, empty list)",
    "extra_data": "a second JSON value where one call belongs",
    "extra_text": "text where only the call belongs",
    "unclosed_tag": "a call opened but not closed",
    "unopened_tag": "a closing tag without its opening tag",
    "nested_tag": "a call opened inside another",
    "unclosed_reasoning": "a reasoning block opened but not closed (output cut off?)",
    "missing_action": "react: 'Action Input:' without 'Action:'",
    "missing_input": "react: 'Action:' without 'Action Input:'",
    "no_action": "neither a call nor a final answer where the format needs one",
    "multiple_calls": "more calls than the format allows in one response",
    "mixed_final": "a call and a final answer in one response",
    "empty_argument": "bracket: TOOL[] with nothing inside the brackets",
    "not_one_parameter": "bracket: the tool does not take exactly one parameter",
    "bad_channel": "harmony: a message on a channel other than analysis, commentary, final",
    "bad_recipient": "harmony: a message addressed to something other than functions.NAME",
    "missing_message": "harmony: a header without <|message|>",
    "too_many_errors": f"more than {MAX_LISTED_ERRORS} problems; the rest are counted",
}
"""Every parse-error code a format reports, with what it means (the docs list it)."""


@dataclass(frozen=True)
class ToolCall:
    """One parsed tool call: the tool's name and its arguments (not yet validated)."""

    name: str
    arguments: dict[str, Any]
    raw: str = ""
    """The span of the response the call was parsed from."""


@dataclass(frozen=True)
class FormatError:
    """One problem in a response.

    Attributes:
        message: what is wrong, for the model (names the call: ``call 2: ...``).
        code: short reason, one of :data:`ERROR_CODES`.
        call_index: 0-based call the problem belongs to, if any.
    """

    message: str
    code: str
    call_index: int | None = None


@dataclass
class ParsedResponse:
    """The outcome of parsing one response: calls, a final answer, or errors."""

    calls: list[ToolCall] = field(default_factory=list)
    final_answer: str | None = None
    errors: list[FormatError] = field(default_factory=list)
    content: str = ""
    """Text outside the calls and outside the reasoning, stripped."""
    reasoning: str | None = None
    """The reasoning text (blocks joined by a blank line); None when there was none."""

    @property
    def ok(self) -> bool:
        return not self.errors


class ToolCallFormat(ABC):
    """How calls are written by the model and how results are shown back.

    Args:
        reasoning_tags: the (open, close) delimiters of reasoning text, never parsed
            for calls; ``None`` turns reasoning detection off.
    """

    name: str = ""

    def __init__(self, reasoning_tags: tuple[str, str] | None = DEFAULT_REASONING_TAGS) -> None:
        self.reasoning_tags = reasoning_tags

    def parse(self, text: str, tools: Mapping[str, FormatTool] | None = None) -> ParsedResponse:
        """Split a response into calls / a final answer / errors. Never raises."""
        split = split_reasoning(text.removeprefix(BOM), self.reasoning_tags)
        if split.unclosed:
            open_tag, close_tag = self.reasoning_tags or ("", "")
            error = FormatError(
                f"{open_tag} is not closed by {close_tag} (was the response cut off?); "
                "close your reasoning, then act",
                "unclosed_reasoning",
            )
            return ParsedResponse(
                errors=[error], content=split.answer.strip(), reasoning=split.reasoning
            )
        parsed = self.parse_answer(split.answer, tools)
        if split.reasoning is not None:
            parsed.reasoning = split.reasoning
        return parsed

    @abstractmethod
    def parse_answer(
        self, text: str, tools: Mapping[str, FormatTool] | None = None
    ) -> ParsedResponse:
        """The format's own rules, on the response without its reasoning."""

    @abstractmethod
    def render_result(self, result: FormatResult) -> str:
        """One tool's result (or error) as the model sees it."""

    @abstractmethod
    def usage(self) -> str:
        """One line showing the correct syntax (appended to error messages)."""

    def render_results(self, results: Sequence[FormatResult]) -> str:
        return "\n".join(self.render_result(r) for r in results)

    def render_errors(self, errors: Sequence[FormatError]) -> str:
        """The observation for an unparsable response (capped: it goes back into the context)."""
        lines = "\n".join(f"- {cap_error(e.message, MAX_ERROR_LINE_CHARS)}" for e in errors)
        lines = cap_error(lines)
        return f"Error: your response could not be parsed; no tool was called.\n{lines}\n{self.usage()}"

    def error_body(self, result: FormatResult) -> str:
        """``Error: MESSAGE`` for a failed call, the message capped."""
        return f"Error: {cap_error(result.text)}"

    def instructions(self, tools: Sequence[FormatTool]) -> str:
        """A system-prompt paragraph describing the tools and this format."""
        specs = "\n".join(json.dumps(t.schema()["function"], ensure_ascii=False) for t in tools)
        return f"You can call these tools:\n{specs}\n{self.usage()}"


def one_error(
    message: str, code: str, call_index: int | None = 0, content: str = ""
) -> ParsedResponse:
    """A response rejected for one reason."""
    return ParsedResponse(errors=[FormatError(message, code, call_index)], content=content)


def too_many_errors(unread: str) -> FormatError:
    """The last entry of a list cut at :data:`MAX_LISTED_ERRORS`."""
    return FormatError(
        f"more problems follow ({unread} not checked); only the first {MAX_LISTED_ERRORS} are listed",
        "too_many_errors",
    )


FORMATS: Registry[type[ToolCallFormat]] = Registry("tool-call format")
"""Every tool-call format by name (the spec's ``episode.tool_format`` names one)."""


def register_format(name: str) -> Callable[[type[ToolCallFormat]], type[ToolCallFormat]]:
    """Class decorator adding a format to :data:`FORMATS` (duplicate names are rejected)."""
    return FORMATS.register_class(name)


def available_formats() -> list[str]:
    return list(FORMATS.names())


def get_format(name: str | ToolCallFormat) -> ToolCallFormat:
    """A format instance by name (default settings); an unknown name lists the valid ones."""
    if isinstance(name, ToolCallFormat):
        return name
    return FORMATS.get(name)()
