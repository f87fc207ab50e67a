"""Tool-call formats: parse a response into calls or a final answer; render observations.

Four formats, registered by name (:func:`get_format`):

``hermes``
    ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, any number per
    response, with free text around them; results come back in
    ``<tool_response>...</tool_response>``.
``json``
    The whole response is one JSON object ``{"name", "arguments"}`` or a list of
    them (a fenced ```json block is accepted); anything else is a final answer.
``react``
    ``Action: NAME`` then ``Action Input: {json}`` (one call per response), or
    ``Final Answer: ...``; results come back as ``Observation: ...``.
``bracket``
    WebShop style ``name[argument]`` on the last line (optionally after
    ``Action:``), one call per response; the argument fills the tool's only
    parameter.

Parsing never raises on model output: a malformed response yields a
:class:`ParsedResponse` whose ``errors`` say which call is wrong and how; the
environment shows :meth:`ToolCallFormat.render_errors` to the model. A response
with any error runs none of its calls.

Hostile output is bounded: JSON is strict (NaN, ±Infinity, a float that
overflows and an integer of more than :data:`MAX_INT_DIGITS` digits are parse
errors), every parser runs in linear time in the response's length
(``benchmarks/parse_worst_case.py``), at most :data:`MAX_LISTED_ERRORS`
problems are listed, and error observations are capped with a visible
``… [truncated N characters]`` note.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentspec.runtime.caps import cap_error
from agentspec.runtime.trajectory import ToolCall

if TYPE_CHECKING:  # annotations only: parsing stays light enough for `validate`
    from agentspec.runtime.tools import BaseTool, ToolResult

__all__ = [
    "BracketFormat",
    "FormatError",
    "HermesFormat",
    "JsonFormat",
    "ParsedResponse",
    "ReactFormat",
    "ToolCallFormat",
    "available_formats",
    "get_format",
    "register_format",
    "strict_json_loads",
]


@dataclass(frozen=True)
class FormatError:
    """One problem in a response.

    Attributes:
        message: what is wrong, for the model (names the call: ``call 2: ...``).
        code: short reason: ``invalid_json``, ``not_an_object``, ``missing_name``,
            ``bad_name``, ``bad_arguments``, ``unexpected_key``, ``unclosed_tag``,
            ``unopened_tag``, ``nested_tag``, ``extra_data``, ``extra_text``,
            ``empty_call``, ``missing_input``, ``missing_action``, ``multiple_calls``,
            ``mixed_final``, ``no_action``, ``bad_argument``, ``non_finite_number``
            (NaN, Infinity, a float that overflows), ``number_too_long`` (an integer
            of more than :data:`MAX_INT_DIGITS` digits), ``too_many_errors``.
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
    """Text outside the calls (reasoning), stripped."""

    @property
    def ok(self) -> bool:
        return not self.errors


MAX_ERROR_LINE_CHARS = 300
"""Longest single problem line in a parse-error observation."""

_FORMATS: dict[str, type[ToolCallFormat]] = {}


def register_format(name: str) -> Callable[[type[ToolCallFormat]], type[ToolCallFormat]]:
    """Class decorator adding a format to the registry (duplicate names are rejected)."""

    def deco(cls: type[ToolCallFormat]) -> type[ToolCallFormat]:
        if name in _FORMATS:
            raise ValueError(f"tool-call format {name!r} is already registered")
        cls.name = name
        _FORMATS[name] = cls
        return cls

    return deco


def available_formats() -> list[str]:
    return sorted(_FORMATS)


def get_format(name: str | ToolCallFormat) -> ToolCallFormat:
    """A format instance by name; an unknown name lists the valid ones."""
    if isinstance(name, ToolCallFormat):
        return name
    try:
        return _FORMATS[name]()
    except KeyError:
        raise ValueError(
            f"unknown tool-call format {name!r}; expected one of {', '.join(available_formats())}"
        ) from None


class ToolCallFormat(ABC):
    """How calls are written by the model and how results are shown back."""

    name: str = ""

    @abstractmethod
    def parse(self, text: str, tools: Mapping[str, BaseTool] | None = None) -> ParsedResponse:
        """Split a response into calls / a final answer / errors. Never raises."""

    @abstractmethod
    def render_result(self, result: ToolResult) -> str:
        """One tool's result (or error) as the model sees it."""

    @abstractmethod
    def usage(self) -> str:
        """One line showing the correct syntax (appended to error messages)."""

    def render_results(self, results: Sequence[ToolResult]) -> str:
        return "\n".join(self.render_result(r) for r in results)

    def render_errors(self, errors: Sequence[FormatError]) -> str:
        """The observation for an unparsable response (capped: it goes back into the context)."""
        lines = "\n".join(f"- {cap_error(e.message, MAX_ERROR_LINE_CHARS)}" for e in errors)
        lines = cap_error(lines)
        return f"Error: your response could not be parsed; no tool was called.\n{lines}\n{self.usage()}"

    def error_body(self, result: ToolResult) -> str:
        """``Error: MESSAGE`` for a failed call, the message capped."""
        return f"Error: {cap_error(result.text)}"

    def instructions(self, tools: Sequence[BaseTool]) -> str:
        """A system-prompt paragraph describing the tools and this format."""
        specs = "\n".join(json.dumps(t.schema()["function"], ensure_ascii=False) for t in tools)
        return f"You can call these tools:\n{specs}\n{self.usage()}"


MAX_INT_DIGITS = 4000
"""Longest integer literal accepted in a call's JSON (Python refuses > 4,300 digits)."""

MAX_LISTED_ERRORS = 10
"""Problems listed per response; parsing stops after this many (the rest are counted)."""


class _NonStandardNumber(ValueError):
    """A JSON number the runtime refuses: NaN, ±Infinity, an overflowing float, a huge int."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def _reject_constant(name: str) -> Any:
    raise _NonStandardNumber(
        f"{name} is not a JSON number (use a finite number or a string)", "non_finite_number"
    )


def _strict_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _NonStandardNumber(f"the number {text[:40]!r} is too large", "non_finite_number")
    return value


def _strict_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _NonStandardNumber(
            f"an integer of {len(text.lstrip('-'))} digits is too long (at most {MAX_INT_DIGITS})",
            "number_too_long",
        )
    return int(text)


_STRICT_JSON = json.JSONDecoder(
    parse_constant=_reject_constant, parse_float=_strict_float, parse_int=_strict_int
)


def strict_json_loads(text: str) -> Any:
    """``json.loads`` that accepts only standard, finite JSON numbers of sane size.

    Raises :class:`json.JSONDecodeError`, :class:`RecursionError` or a
    ``ValueError`` whose ``code`` attribute says which number was refused.
    """
    value, end = _STRICT_JSON.raw_decode(text, _skip_whitespace(text, 0))
    end = _skip_whitespace(text, end)
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


def _skip_whitespace(text: str, pos: int) -> int:
    """The first index at or after ``pos`` that is not JSON whitespace."""
    match = _JSON_WHITESPACE.match(text, pos)
    return match.end() if match else pos


_JSON_WHITESPACE = re.compile(r"[ \t\n\r]*")


def _parse_call_object(
    obj: Any, index: int, raw: str
) -> tuple[ToolCall | None, FormatError | None]:
    """Check ``{"name": str, "arguments": object}`` (``arguments`` may be a JSON string)."""
    where = f"call {index + 1}"
    if not isinstance(obj, dict):
        return None, FormatError(
            f"{where}: expected a JSON object with 'name' and 'arguments', got {_json_type(obj)}",
            "not_an_object",
            index,
        )
    extra = sorted(set(obj) - {"name", "arguments"})
    if "name" not in obj:
        return None, FormatError(f"{where}: missing 'name'", "missing_name", index)
    name = obj["name"]
    if not isinstance(name, str) or not name.strip():
        return None, FormatError(
            f"{where}: 'name' must be a non-empty string, got {_json_type(name)}", "bad_name", index
        )
    if extra:
        return None, FormatError(
            f"{where}: unexpected key {extra[0]!r} (only 'name' and 'arguments' are allowed)",
            "unexpected_key",
            index,
        )
    args: Any = obj.get("arguments", {})
    if isinstance(args, str):
        try:
            args = strict_json_loads(args)
        except RecursionError:
            return None, FormatError(
                f"{where}: 'arguments' nested too deeply", "bad_arguments", index
            )
        except _NonStandardNumber as exc:
            return None, FormatError(f"{where}: 'arguments': {exc}", exc.code, index)
        except json.JSONDecodeError as exc:
            return None, FormatError(
                f"{where}: 'arguments' is a string that is not valid JSON ({exc.msg} at column {exc.colno})",
                "bad_arguments",
                index,
            )
    if not isinstance(args, dict):
        return None, FormatError(
            f"{where}: 'arguments' must be a JSON object, got {_json_type(args)}",
            "bad_arguments",
            index,
        )
    return ToolCall(name=name, arguments=args, raw=raw), None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _decode_one(body: str, where: str, index: int) -> tuple[Any, FormatError | None]:
    """Decode exactly one JSON value from ``body``; say precisely what is wrong otherwise."""
    stripped = body.strip()
    if not stripped:
        return None, FormatError(f"{where}: empty call", "empty_call", index)
    try:
        value, end = _STRICT_JSON.raw_decode(stripped)
    except _NonStandardNumber as exc:
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
        if rest.startswith(("{", "[")):
            return None, FormatError(
                f"{where}: extra data after the JSON value at column {end + 1}; "
                "write one call per block",
                "extra_data",
                index,
            )
        return None, FormatError(
            f"{where}: unexpected text after the JSON value: {rest[:40]!r}", "extra_text", index
        )
    return value, None


@register_format("hermes")
class HermesFormat(ToolCallFormat):
    open_tag = "<tool_call>"
    close_tag = "</tool_call>"

    def usage(self) -> str:
        return 'Call a tool as <tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>.'

    def render_result(self, result: ToolResult) -> str:
        body = result.text if result.ok else self.error_body(result)
        return f"<tool_response>\n{body}\n</tool_response>"

    def render_errors(self, errors: Sequence[FormatError]) -> str:
        return f"<tool_response>\n{super().render_errors(errors)}\n</tool_response>"

    def parse(self, text: str, tools: Mapping[str, BaseTool] | None = None) -> ParsedResponse:
        # One pass over the tags (linear time), then a walk over them.
        tags = [(m.start(), m.group()) for m in _HERMES_TAGS.finditer(text)]
        calls: list[ToolCall] = []
        errors: list[FormatError] = []
        outside: list[str] = []
        pos = 0
        index = 0
        t = 0
        while t < len(tags) and len(errors) < MAX_LISTED_ERRORS:
            start, tag = tags[t]
            outside.append(text[pos:start])
            if tag == self.close_tag:
                errors.append(
                    FormatError(
                        f"call {index + 1}: {self.close_tag} without a matching {self.open_tag}",
                        "unopened_tag",
                        index,
                    )
                )
                pos = start + len(tag)
                index += 1
                t += 1
                continue
            if t + 1 == len(tags):
                errors.append(
                    FormatError(
                        f"call {index + 1}: {self.open_tag} is not closed by {self.close_tag} "
                        "(was the response cut off?)",
                        "unclosed_tag",
                        index,
                    )
                )
                pos = len(text)
                break
            end, next_tag = tags[t + 1]
            if next_tag == self.open_tag:
                errors.append(
                    FormatError(
                        f"call {index + 1}: a new {self.open_tag} opens before {self.close_tag}",
                        "nested_tag",
                        index,
                    )
                )
                pos = end
                index += 1
                t += 1
                continue
            body = text[start + len(self.open_tag) : end]
            raw = text[start : end + len(self.close_tag)]
            value, err = _decode_one(body, f"call {index + 1}", index)
            if err is None:
                call, err = _parse_call_object(value, index, raw)
                if call is not None:
                    calls.append(call)
            if err is not None:
                errors.append(err)
            pos = end + len(self.close_tag)
            index += 1
            t += 2
        if t < len(tags) and len(errors) >= MAX_LISTED_ERRORS:
            errors.append(_too_many_errors(len(tags) - t))
            return ParsedResponse(errors=errors, content="".join(outside).strip())
        outside.append(text[pos:])
        content = "".join(outside).strip()
        if errors:
            return ParsedResponse(errors=errors, content=content)
        if calls:
            return ParsedResponse(calls=calls, content=content)
        return ParsedResponse(final_answer=content, content=content)


_HERMES_TAGS = re.compile(
    re.escape(HermesFormat.open_tag) + "|" + re.escape(HermesFormat.close_tag)
)


def _too_many_errors(unread_tags: int) -> FormatError:
    return FormatError(
        f"more problems follow ({unread_tags} more tags not checked); "
        f"only the first {MAX_LISTED_ERRORS} are listed",
        "too_many_errors",
    )


_FENCE = re.compile(r"^```(?:json)?\s*\n?(.*?)\n?```$", re.DOTALL)
_CALL_LIKE = re.compile(r'[\[{]\s*"name"\s*:')


@register_format("json")
class JsonFormat(ToolCallFormat):
    def usage(self) -> str:
        return (
            'Call a tool by answering with only the JSON {"name": "TOOL", "arguments": {...}} '
            "(or a JSON list of such objects)."
        )

    def render_result(self, result: ToolResult) -> str:
        if result.ok:
            return json.dumps({"name": result.name, "result": result.text}, ensure_ascii=False)
        return json.dumps(
            {"name": result.name, "error": cap_error(result.text)}, ensure_ascii=False
        )

    def parse(self, text: str, tools: Mapping[str, BaseTool] | None = None) -> ParsedResponse:
        body = text.strip()
        fence = _FENCE.match(body)
        if fence:
            body = fence.group(1).strip()
        if not body.startswith(("{", "[")):
            match = _CALL_LIKE.search(body)
            if match:
                return ParsedResponse(
                    errors=[
                        FormatError(
                            f"call 1: text before the JSON tool call ({body[: match.start()].strip()[:40]!r}); "
                            "the response must be only the JSON",
                            "extra_text",
                            0,
                        )
                    ]
                )
            return ParsedResponse(final_answer=text.strip(), content=text.strip())
        value, err = _decode_one(body, "response", 0)
        if err is not None:
            return ParsedResponse(errors=[FormatError(err.message, err.code, 0)])
        items = value if isinstance(value, list) else [value]
        if not items:
            return ParsedResponse(
                errors=[FormatError("response: empty list of calls", "empty_call")]
            )
        calls: list[ToolCall] = []
        errors: list[FormatError] = []
        for i, item in enumerate(items):
            call, cerr = _parse_call_object(item, i, json.dumps(item, ensure_ascii=False))
            if cerr is not None:
                errors.append(cerr)
            elif call is not None:
                calls.append(call)
        if errors:
            return ParsedResponse(errors=errors)
        return ParsedResponse(calls=calls)


_REACT_LINE = re.compile(
    r"^[ \t]*(Action Input|Action|Final Answer|Observation)[ \t]*:[ \t]?", re.M
)


@register_format("react")
class ReactFormat(ToolCallFormat):
    def usage(self) -> str:
        return (
            "Write 'Action: TOOL' and on the next line 'Action Input: {JSON arguments}', "
            "or 'Final Answer: ANSWER'."
        )

    def render_result(self, result: ToolResult) -> str:
        return f"Observation: {result.text if result.ok else self.error_body(result)}"

    def parse(self, text: str, tools: Mapping[str, BaseTool] | None = None) -> ParsedResponse:
        marks = [(m.group(1), m.start(), m.end()) for m in _REACT_LINE.finditer(text)]
        # A trailing, empty "Observation:" (the model started to write the result) is ignored.
        if marks and marks[-1][0] == "Observation" and not text[marks[-1][2] :].strip():
            text = text[: marks[-1][1]]
            marks = marks[:-1]
        if any(kind == "Observation" for kind, _, _ in marks):
            return ParsedResponse(
                errors=[
                    FormatError(
                        "do not write 'Observation:' yourself; stop after 'Action Input'",
                        "extra_text",
                        0,
                    )
                ]
            )
        content = text[: marks[0][1]].strip() if marks else text.strip()

        def value(i: int) -> str:
            end = marks[i + 1][1] if i + 1 < len(marks) else len(text)
            return text[marks[i][2] : end].strip()

        kinds = [k for k, _, _ in marks]
        if not marks:
            return ParsedResponse(
                errors=[FormatError("no 'Action:' or 'Final Answer:' found", "no_action", None)],
                content=content,
            )
        n_actions = kinds.count("Action")
        if "Final Answer" in kinds:
            if n_actions or "Action Input" in kinds:
                return ParsedResponse(
                    errors=[
                        FormatError(
                            "write either an Action or a Final Answer, not both", "mixed_final", 0
                        )
                    ],
                    content=content,
                )
            if kinds.count("Final Answer") > 1:
                return ParsedResponse(
                    errors=[FormatError("more than one 'Final Answer:'", "multiple_calls", None)],
                    content=content,
                )
            return ParsedResponse(final_answer=value(kinds.index("Final Answer")), content=content)
        if n_actions > 1 or kinds.count("Action Input") > 1:
            return ParsedResponse(
                errors=[
                    FormatError(
                        f"one Action per response, found {max(n_actions, kinds.count('Action Input'))}",
                        "multiple_calls",
                        1,
                    )
                ],
                content=content,
            )
        if n_actions == 0:
            return ParsedResponse(
                errors=[
                    FormatError("call 1: 'Action Input:' without 'Action:'", "missing_action", 0)
                ],
                content=content,
            )
        if "Action Input" not in kinds:
            return ParsedResponse(
                errors=[
                    FormatError("call 1: 'Action:' without 'Action Input:'", "missing_input", 0)
                ],
                content=content,
            )
        if kinds.index("Action Input") < kinds.index("Action"):
            return ParsedResponse(
                errors=[
                    FormatError(
                        "call 1: 'Action Input:' comes before 'Action:'", "missing_action", 0
                    )
                ],
                content=content,
            )
        name = value(kinds.index("Action"))
        if not name or not re.fullmatch(r"[A-Za-z_][\w.-]*", name):
            return ParsedResponse(
                errors=[FormatError(f"call 1: {name!r} is not a tool name", "bad_name", 0)],
                content=content,
            )
        raw_input = value(kinds.index("Action Input"))
        raw = text[marks[kinds.index("Action")][1] :].strip()
        tool = (tools or {}).get(name)
        if (
            not raw_input.startswith(("{", "["))
            and tool is not None
            and len(tool.parameter_names) == 1
        ):
            # A bare value fills the tool's only parameter (JSON-decoded unless it is a string).
            param = tool.parameter_names[0]
            arg: Any = raw_input
            if tool.parameters["properties"][param].get("type") != "string":
                with contextlib.suppress(ValueError, RecursionError):
                    arg = strict_json_loads(raw_input)
            return ParsedResponse(calls=[ToolCall(name, {param: arg}, raw)], content=content)
        parsed, err = _decode_one(raw_input, "call 1: Action Input", 0)
        if err is not None:
            return ParsedResponse(errors=[err], content=content)
        if not isinstance(parsed, dict):
            return ParsedResponse(
                errors=[
                    FormatError(
                        f"call 1: Action Input must be a JSON object, got {_json_type(parsed)}",
                        "bad_arguments",
                        0,
                    )
                ],
                content=content,
            )
        return ParsedResponse(calls=[ToolCall(name, parsed, raw)], content=content)


_BRACKET = re.compile(r"^(?:Action:\s*)?([A-Za-z_][\w-]*)\[(.*)\]$", re.DOTALL)
_BRACKET_OPEN = re.compile(r"(?:^|\s)([A-Za-z_][\w-]*)\[")


@register_format("bracket")
class BracketFormat(ToolCallFormat):
    def usage(self) -> str:
        return "Act by writing TOOL[ARGUMENT] (e.g. search[red shoes]) alone on the last line."

    def render_result(self, result: ToolResult) -> str:
        return f"Observation: {result.text if result.ok else self.error_body(result)}"

    def parse(self, text: str, tools: Mapping[str, BaseTool] | None = None) -> ParsedResponse:
        lines = [ln for ln in text.strip().splitlines() if ln.strip()]
        if not lines:
            return ParsedResponse(final_answer="", content="")
        last = lines[-1].strip()
        content = "\n".join(lines[:-1]).strip()
        m = _BRACKET.match(last)
        if m is None:
            if _BRACKET_OPEN.search(last):
                opened = last.count("[") - last.count("]")
                if opened > 0:
                    return ParsedResponse(
                        errors=[
                            FormatError(
                                "call 1: '[' is not closed by ']' (was the response cut off?)",
                                "unclosed_tag",
                                0,
                            )
                        ],
                        content=content,
                    )
                return ParsedResponse(
                    errors=[
                        FormatError(
                            f"call 1: the last line must be only TOOL[ARGUMENT], got {last[:60]!r}",
                            "extra_text",
                            0,
                        )
                    ],
                    content=content,
                )
            if any(_BRACKET.match(ln.strip()) for ln in lines[:-1]):
                return ParsedResponse(
                    errors=[
                        FormatError("call 1: the action must be on the last line", "extra_text", 0)
                    ],
                    content=content,
                )
            return ParsedResponse(final_answer=text.strip(), content=text.strip())
        name, arg = m.group(1), m.group(2)
        if re.search(r"\]\s*[A-Za-z_][\w-]*\[", arg):
            return ParsedResponse(
                errors=[FormatError("call 2: one action per response", "multiple_calls", 1)],
                content=content,
            )
        arg = arg.strip()
        if not arg:
            return ParsedResponse(
                errors=[FormatError(f"call 1: {name}[] has an empty argument", "bad_argument", 0)],
                content=content,
            )
        tool = (tools or {}).get(name)
        if tool is None:
            return ParsedResponse(calls=[ToolCall(name, {"argument": arg}, last)], content=content)
        params = tool.parameter_names
        if len(params) != 1:
            return ParsedResponse(
                errors=[
                    FormatError(
                        f"call 1: tool {name!r} takes {len(params)} parameters; "
                        "the bracket format passes exactly one",
                        "bad_arguments",
                        0,
                    )
                ],
                content=content,
            )
        return ParsedResponse(calls=[ToolCall(name, {params[0]: arg}, last)], content=content)
