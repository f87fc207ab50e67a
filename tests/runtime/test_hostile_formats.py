"""Hostile model output against the tool-call formats: parsing never raises,
refuses non-standard JSON numbers, stays linear and caps its error observation."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentspec.formats import (
    MAX_INT_DIGITS,
    MAX_LISTED_ERRORS,
    HermesFormat,
    available_formats,
    get_format,
    strict_json_loads,
)
from agentspec.runtime.episode.tools import MAX_ERROR_CHARS, ToolResult, cap_error

from .helpers import CalculatorTool

TOOLS = {"calculator": CalculatorTool()}
HUGE = "9" * 5000


def _call(fmt: str, arguments: str) -> str:
    """A response calling the calculator with ``arguments`` (raw JSON) in format ``fmt``."""
    return {
        "hermes": f'<tool_call>{{"name": "calculator", "arguments": {arguments}}}</tool_call>',
        "json": f'{{"name": "calculator", "arguments": {arguments}}}',
        "react": f"Action: calculator\nAction Input: {arguments}",
        "harmony": f"<|channel|>commentary to=functions.calculator <|constrain|>json<|message|>{arguments}<|call|>",
    }[fmt]


@pytest.mark.parametrize("fmt", ["hermes", "json", "react", "harmony"])
@pytest.mark.parametrize(
    ("number", "code"),
    [
        (HUGE, "number_too_long"),
        ("-" + HUGE, "number_too_long"),
        ("NaN", "non_finite_number"),
        ("Infinity", "non_finite_number"),
        ("-Infinity", "non_finite_number"),
        ("1e999", "non_finite_number"),
    ],
)
def test_non_standard_numbers_are_parse_errors(fmt: str, number: str, code: str) -> None:
    parsed = get_format(fmt).parse(_call(fmt, f'{{"expression": {number}}}'), TOOLS)
    assert not parsed.calls
    assert [e.code for e in parsed.errors] == [code]
    assert len(get_format(fmt).render_errors(parsed.errors)) < 1000


LONE_SURROGATE_ARGUMENTS = [
    r'{"expression": "1+\ud800"}',  # an escape of half a character
    r'{"expression": "1+\udfff", "\ud800": 1}',  # in a key too
]


@pytest.mark.parametrize(
    ("fmt", "arguments"),
    [
        *((f, a) for f in ("hermes", "json", "react", "harmony") for a in LONE_SURROGATE_ARGUMENTS),
        ("hermes", r'"{\"expression\": \"1+\\ud800\"}"'),  # arguments as a JSON string
    ],
)
def test_an_escaped_lone_surrogate_reads_as_the_replacement_character(
    fmt: str, arguments: str
) -> None:
    """A string no tool, tokenizer, server or wire can encode never leaves the parser
    (a model's `"\\ud800"` once closed a shared MCP server's connection)."""
    parsed = get_format(fmt).parse(_call(fmt, arguments), TOOLS)
    assert len(parsed.calls) == 1, parsed.errors
    args = parsed.calls[0].arguments
    assert args["expression"] == "1+\ufffd"
    assert set(args) <= {"expression", "\ufffd"}
    json.dumps(args, ensure_ascii=False).encode("utf-8")  # encodable


def test_an_escaped_surrogate_pair_stays_one_character() -> None:
    parsed = get_format("hermes").parse(_call("hermes", r'{"expression": "\ud83d\ude00"}'), TOOLS)
    assert parsed.calls[0].arguments == {"expression": "\U0001f600"}


def test_arguments_given_as_a_json_string_are_strict_too() -> None:
    text = _call("hermes", json.dumps('{"expression": NaN}'))
    parsed = HermesFormat().parse(text, TOOLS)
    assert [e.code for e in parsed.errors] == ["non_finite_number"]


def test_react_bare_value_with_a_non_standard_number_is_a_parse_error() -> None:
    # A bare value for a non-string parameter is JSON-decoded; numbers JSON refuses
    # (a huge integer, NaN, Infinity) are parse errors there too, as in every format.
    class Counter(CalculatorTool):
        name = "count"
        parameters: ClassVar[dict[str, Any]] = {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
        }

    fmt, tools = get_format("react"), {"count": Counter()}
    for value, code in (
        (HUGE, "number_too_long"),
        ("NaN", "non_finite_number"),
        ("-Infinity", "non_finite_number"),
    ):
        parsed = fmt.parse(f"Action: count\nAction Input: {value}", tools)
        assert [e.code for e in parsed.errors] == [code]
    assert fmt.parse("Action: count\nAction Input: twelve", tools).calls[0].arguments == {
        "n": "twelve"
    }


def test_integers_up_to_the_limit_are_kept() -> None:
    digits = "7" * MAX_INT_DIGITS
    parsed = HermesFormat().parse(_call("hermes", f'{{"expression": {digits}}}'), TOOLS)
    assert parsed.calls[0].arguments == {"expression": int(digits)}


def test_strict_json_loads() -> None:
    assert strict_json_loads(' {"a": [1, 2.5, "x"]} ') == {"a": [1, 2.5, "x"]}
    for bad in ("NaN", "[Infinity]", "1e400", HUGE, "{} {}"):
        with pytest.raises(ValueError):
            strict_json_loads(bad)


def test_close_tag_spam_gives_a_short_error_list() -> None:
    text = "</tool_call>" * 40_000  # 480k characters
    parsed = HermesFormat().parse(text, TOOLS)
    assert len(parsed.errors) == MAX_LISTED_ERRORS + 1
    assert parsed.errors[-1].code == "too_many_errors"
    observation = HermesFormat().render_errors(parsed.errors)
    assert len(observation) < MAX_ERROR_CHARS + 500


def test_hermes_tag_walk_matches_the_documented_errors() -> None:
    fmt = HermesFormat()
    call = '<tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call>'
    assert [e.code for e in fmt.parse(f"x</tool_call>{call}", TOOLS).errors] == ["unopened_tag"]
    assert [e.code for e in fmt.parse(f"<tool_call>{call}", TOOLS).errors] == ["nested_tag"]
    assert [e.code for e in fmt.parse(f"{call}<tool_call>", TOOLS).errors] == ["unclosed_tag"]
    ok = fmt.parse(f"think {call} more {call}", TOOLS)
    assert len(ok.calls) == 2 and ok.content == "think  more"


def test_error_messages_are_capped_with_a_visible_note() -> None:
    text = "x" * 500_000
    capped = cap_error(text)
    assert len(capped) <= MAX_ERROR_CHARS
    assert capped.endswith(f"[truncated {500_000 - MAX_ERROR_CHARS + 48} characters]")
    assert cap_error(capped) == capped  # capped again (the step's cap after the tool's): unchanged
    for name in available_formats():
        rendered = get_format(name).render_result(
            ToolResult("calculator", text, ok=False, code="x")
        )
        assert "[truncated" in rendered and len(rendered) < MAX_ERROR_CHARS + 200
        # A successful result is the tool's own text: not cut.
        assert text in get_format(name).render_result(ToolResult("calculator", text, ok=True))


def test_unknown_huge_tool_name_in_react_is_capped() -> None:
    fmt = get_format("react")
    parsed = fmt.parse("Action: " + "a b" * 100_000 + "\nAction Input: {}", TOOLS)
    assert parsed.errors and len(fmt.render_errors(parsed.errors)) < MAX_ERROR_CHARS + 500


_PIECES = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "{",
        "}",
        "[",
        "]",
        '"name"',
        '"arguments"',
        ":",
        ",",
        '"calculator"',
        "NaN",
        "Infinity",
        "-Infinity",
        "1e999",
        HUGE,
        "Action:",
        "Action Input:",
        "Final Answer:",
        "Observation:",
        "\n",
        " ",
        "```json",
        "```",
        "calculator[",
        "\\ud800",
        '"\\ud800"',
        "<|im_start|>",
        "<|start|>",
        "<|channel|>",
        "<|message|>",
        "<|call|>",
        "<|end|>",
        "analysis",
        "commentary to=functions.calculator",
        "final",
        "<think>",
        "</think>",
        "null",
        "true",
        "0",
        "-",
        ".",
        "e",
    ]
)
_HOSTILE_TEXT = st.one_of(
    st.text(max_size=300),
    st.lists(_PIECES, max_size=60).map("".join),
    st.lists(st.one_of(_PIECES, st.text(max_size=5)), max_size=40).map("".join),
)


@pytest.mark.parametrize("fmt", ["hermes", "json", "react", "bracket", "harmony"])
@settings(
    max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(text=_HOSTILE_TEXT)
def test_parse_never_raises(fmt: str, text: str) -> None:
    parsed = get_format(fmt).parse(text, TOOLS)
    assert parsed.ok or parsed.errors
    if parsed.errors:
        get_format(fmt).render_errors(parsed.errors)
    for call in parsed.calls:  # whatever was accepted is strict JSON
        json.dumps(call.arguments, allow_nan=False)
