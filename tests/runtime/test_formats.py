"""The malformed-output corpus: every case yields the intended observation and event."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentspec.runtime import (
    Action,
    BaseTool,
    EventKind,
    ToolContext,
    available_formats,
    get_format,
)

from .helpers import CalculatorEnv

TC = '<tool_call>{"name": "calculator", "arguments": {"expression": "3+4"}}</tool_call>'


@dataclass(frozen=True)
class Case:
    text: str
    events: tuple[str, ...]
    """Event keys the environment reports, in order."""
    code: str = ""
    """The error code of the first error event (parse_error / tool_error)."""
    observation: str | None = ""
    """A substring of the observation shown to the model (None: the episode ends)."""


PARSE = (EventKind.PARSE_ERROR,)
ANALYSIS = "<|channel|>analysis<|message|>I need the calculator.<|end|><|start|>assistant"


def HC(arguments: str) -> str:
    """A harmony call of the calculator with ``arguments`` (raw JSON)."""
    return f"<|channel|>commentary to=functions.calculator <|constrain|>json<|message|>{arguments}<|call|>"


TOOL_ERR = (EventKind.TOOL_ERROR,)
OK = ("tool:calculator",)

CORPUS: dict[str, list[Case]] = {
    "hermes": [
        Case(TC, OK, "", "<tool_response>\n7\n</tool_response>"),
        Case(
            TC + "\n" + TC.replace("3+4", "2*5"),
            OK * 2,
            "",
            "<tool_response>\n10\n</tool_response>",
        ),
        Case("Let me compute.\n" + TC + "\nDone.", OK, "", "7"),
        Case("The answer is <answer>7</answer>", ("final",), "", None),
        Case(
            '<tool_call>{"name": "calculator", "arguments": {"expression": "3+4}}</tool_call>',
            PARSE,
            "invalid_json",
            "call 1: invalid JSON",
        ),
        Case(
            '<tool_call>{"arguments": {"expression": "3+4"}}</tool_call>',
            PARSE,
            "missing_name",
            "call 1: missing 'name'",
        ),
        Case(
            '<tool_call>{"name": 7, "arguments": {}}</tool_call>',
            PARSE,
            "bad_name",
            "'name' must be a non-empty string, got a number",
        ),
        Case(
            '<tool_call>{"name": "calculator", "arguments": ["3+4"]}</tool_call>',
            PARSE,
            "arguments_not_object",
            "'arguments' must be a JSON object, got a list",
        ),
        Case(
            '<tool_call>{"name": "calculator", "arguments": "{\\"expression\\": \\"3+4\\"}"}</tool_call>',
            OK,
            "",
            "7",
        ),
        Case(
            '<tool_call>{"name": "calculator", "arguments": "3+4"}</tool_call>',
            PARSE,
            "invalid_json",
            "'arguments' is a string that is not valid JSON",
        ),
        Case(
            '<tool_call>{"name": "calculator", "arguments": {"expression": "1"}}{"name": "calculator", "arguments": {"expression": "2"}}</tool_call>',
            PARSE,
            "extra_data",
            "write one call per block",
        ),
        Case(
            '<tool_call>{"name": "calculator", "argu',
            PARSE,
            "unclosed_tag",
            "<tool_call> is not closed by </tool_call>",
        ),
        Case(
            '{"name": "calculator"}</tool_call>',
            PARSE,
            "unopened_tag",
            "</tool_call> without a matching <tool_call>",
        ),
        Case(
            '<tool_call>{"name": "calculator"' + TC, PARSE, "nested_tag", "a new <tool_call> opens"
        ),
        Case(
            '<tool_call>{"name": "search", "arguments": {"q": "x"}}</tool_call>',
            TOOL_ERR,
            "unknown_tool",
            "unknown tool 'search'; available tools: calculator, sleepy",
        ),
        Case(
            '<tool_call>{"name": "calculator", "arguments": {"expression": 34}}</tool_call>',
            TOOL_ERR,
            "invalid_arguments",
            "expression: 34 is not of type 'string'",
        ),
        Case(
            '<tool_call>{"name": "calculator", "arguments": {"expression": "1", "x": 2}}</tool_call>',
            TOOL_ERR,
            "invalid_arguments",
            "Additional properties are not allowed ('x' was unexpected)",
        ),
        Case(
            '<tool_call>{"name": "calculator", "arguments": {}}</tool_call>',
            TOOL_ERR,
            "invalid_arguments",
            "'expression' is a required property",
        ),
        Case(
            '<tool_call>{"name": "calculator", "arguments": {"expression": "３+４"}}</tool_call>',
            TOOL_ERR,
            "exception",
            "calculator failed: SyntaxError",
        ),
        Case("答案是 <answer>7</answer> ✓", ("final",), "", None),
        Case("<tool_call>  </tool_call>", PARSE, "empty_call", "call 1: empty call"),
        Case(
            '<tool_call>[{"name": "calculator"}]</tool_call>', PARSE, "not_an_object", "got a list"
        ),
        Case(
            '<tool_call>{"name": "calculator", "arguments": {}, "id": 1}</tool_call>',
            PARSE,
            "unexpected_key",
            "unexpected key 'id'",
        ),
        Case(
            '<tool_call>{"name": "calculator", "arguments": {"expression": "1//0"}}</tool_call>',
            TOOL_ERR,
            "exception",
            "ZeroDivisionError",
        ),
        Case(
            '<tool_call>{"name": "sleepy", "arguments": {"seconds": 5}}</tool_call>',
            TOOL_ERR,
            "timeout",
            "sleepy timed out after 0.05 s",
        ),
        Case(
            TC + '<tool_call>{"name": "calculator", "arguments": {"expression": 1+2}}</tool_call>',
            PARSE,
            "invalid_json",
            "call 2: invalid JSON",
        ),
        Case(
            TC + '<tool_call>{"name": "nope", "arguments": {}}</tool_call>',
            (*OK, EventKind.TOOL_ERROR),
            "unknown_tool",
            "unknown tool 'nope'",
        ),
        Case(
            "<tool_call>" + "[" * 20000 + "</tool_call>",
            PARSE,
            "invalid_json",
            "call 1: JSON nested too deeply",
        ),
    ],
    "json": [
        Case(
            '{"name": "calculator", "arguments": {"expression": "3+4"}}',
            OK,
            "",
            '{"name": "calculator", "result": "7"}',
        ),
        Case(
            '[{"name": "calculator", "arguments": {"expression": "3+4"}}, {"name": "calculator", "arguments": {"expression": "1+1"}}]',
            OK * 2,
            "",
            '"result": "2"',
        ),
        Case(
            '```json\n{"name": "calculator", "arguments": {"expression": "3+4"}}\n```',
            OK,
            "",
            '"result": "7"',
        ),
        Case("The answer is 7.", ("final",), "", None),
        Case(
            '{"name": "calculator", "arguments": {"expression": "3+4"}',
            PARSE,
            "invalid_json",
            "invalid JSON: Expecting ',' delimiter",
        ),
        Case(
            '{"arguments": {"expression": "3+4"}}', PARSE, "missing_name", "call 1: missing 'name'"
        ),
        Case('{"name": ["calculator"], "arguments": {}}', PARSE, "bad_name", "got a list"),
        Case(
            '{"name": "calculator", "arguments": 5}',
            PARSE,
            "arguments_not_object",
            "'arguments' must be a JSON object, got a number",
        ),
        Case(
            '{"name": "calculator", "arguments": {}}{"name": "calculator", "arguments": {}}',
            PARSE,
            "extra_data",
            "extra data after the JSON value",
        ),
        Case(
            '{"name": "calculator", "arguments": {"expression": "1"}} and then I answer',
            PARSE,
            "extra_text",
            "unexpected text after the JSON value: 'and then I answer'",
        ),
        Case(
            'Sure! {"name": "calculator", "arguments": {"expression": "1"}}',
            PARSE,
            "extra_text",
            "text before the JSON tool call ('Sure!')",
        ),
        Case(
            '[{"name": "calculator", "arguments": {"expression": "1"}}, "calculator"]',
            PARSE,
            "not_an_object",
            "call 2: expected a JSON object",
        ),
        Case("[]", PARSE, "empty_call", "empty list of calls"),
        Case(
            '{"name": "search", "arguments": {"q": "x"}}',
            TOOL_ERR,
            "unknown_tool",
            '"error": "unknown tool \'search\'',
        ),
        Case(
            '{"name": "calculator", "arguments": {"expression": false}}',
            TOOL_ERR,
            "invalid_arguments",
            "False is not of type 'string'",
        ),
        Case(
            '{"name": "calculator", "arguments": {"exp": "1"}}',
            TOOL_ERR,
            "invalid_arguments",
            "'expression' is a required property",
        ),
        Case("こんにちは、答えは7です", ("final",), "", None),
        Case(
            '{"name": "calculator", "arguments": {"expression": "１+１"}}',
            TOOL_ERR,
            "exception",
            "SyntaxError",
        ),
        Case('{"name": "calculator", "argu', PARSE, "invalid_json", "Unterminated string"),
        Case("42", ("final",), "", None),
        Case("[", PARSE, "invalid_json", "invalid JSON"),
        Case(
            '{"name": "calculator", "arguments": "{\\"expression\\": \\"2*3\\"}"}',
            OK,
            "",
            '"result": "6"',
        ),
        Case(
            '{"name": "calculator", "arguments": {}, "why": "because"}',
            PARSE,
            "unexpected_key",
            "unexpected key 'why'",
        ),
        Case('{"name": "sleepy", "arguments": {"seconds": 3}}', TOOL_ERR, "timeout", "timed out"),
        Case("[" * 20000, PARSE, "invalid_json", "response: JSON nested too deeply"),
    ],
    "react": [
        Case('Action: calculator\nAction Input: {"expression": "3+4"}', OK, "", "Observation: 7"),
        Case(
            'Thought: I should compute.\nAction: calculator\nAction Input: {"expression": "3+4"}',
            OK,
            "",
            "Observation: 7",
        ),
        Case("Action: calculator\nAction Input: 3+4", OK, "", "Observation: 7"),
        Case("Thought: easy.\nFinal Answer: 7", ("final",), "", None),
        Case(
            "Action: calculator",
            PARSE,
            "missing_input",
            "call 1: 'Action:' without 'Action Input:'",
        ),
        Case(
            'Action Input: {"expression": "3+4"}',
            PARSE,
            "missing_action",
            "'Action Input:' without 'Action:'",
        ),
        Case(
            'Action: calculator\nAction Input: {"expression": 3+4}',
            PARSE,
            "invalid_json",
            "call 1: Action Input: invalid JSON",
        ),
        Case(
            'Action: calculator\nAction Input: ["3+4"]',
            PARSE,
            "arguments_not_object",
            "Action Input must be a JSON object, got a list",
        ),
        Case(
            'Action: calculator\nAction Input: {"expression": "1"}\nAction: calculator\nAction Input: {"expression": "2"}',
            PARSE,
            "multiple_calls",
            "one Action per response, found 2",
        ),
        Case(
            'Action: calculator\nAction Input: {"expression": "1"}\nFinal Answer: 1',
            PARSE,
            "mixed_final",
            "either an Action or a Final Answer",
        ),
        Case(
            "I think the answer is seven.",
            PARSE,
            "no_action",
            "no 'Action:' or 'Final Answer:' found",
        ),
        Case(
            'Action: calculator\nAction Input: {"expression": "1"}\nObservation: 1\nFinal Answer: 1',
            PARSE,
            "extra_text",
            "do not write 'Observation:' yourself",
        ),
        Case(
            'Action: calculator\nAction Input: {"expression": "1"}\nObservation: 1',
            PARSE,
            "extra_text",
            "do not write 'Observation:' yourself",
        ),
        Case(
            'Action: calculator\nAction Input: {"expression": "5*5"}\nObservation:',
            OK,
            "",
            "Observation: 25",
        ),
        Case(
            'Action: search\nAction Input: {"q": "x"}',
            TOOL_ERR,
            "unknown_tool",
            "Observation: Error: unknown tool 'search'",
        ),
        Case(
            'Action: calculator\nAction Input: {"expression": 5}',
            TOOL_ERR,
            "invalid_arguments",
            "5 is not of type 'string'",
        ),
        Case(
            'Action: do the math\nAction Input: {"expression": "1"}',
            PARSE,
            "bad_name",
            "'do the math' is not a tool name",
        ),
        Case(
            'Action: calculator\nAction Input: {"expression": "3+',
            PARSE,
            "invalid_json",
            "Unterminated string",
        ),
        Case("Final Answer: 七 (seven) ✓", ("final",), "", None),
        Case(
            'Action: calculator\nAction Input: {"expression": "1+2"} thanks!',
            PARSE,
            "extra_text",
            "unexpected text after the JSON value: 'thanks!'",
        ),
        Case(
            "Final Answer: 1\nFinal Answer: 2",
            PARSE,
            "multiple_calls",
            "more than one 'Final Answer:'",
        ),
        Case(
            'Action Input: {"expression": "1"}\nAction: calculator',
            PARSE,
            "missing_action",
            "'Action Input:' comes before 'Action:'",
        ),
        Case("action: calculator\naction input: 1+1", PARSE, "no_action", "no 'Action:'"),
        Case("Action: sleepy\nAction Input: 9", TOOL_ERR, "timeout", "timed out"),
        Case(
            "Action: calculator\nAction Input: " + '{"a":' * 20000,
            PARSE,
            "invalid_json",
            "nested too deeply",
        ),
    ],
    "bracket": [
        Case("calculator[3+4]", OK, "", "Observation: 7"),
        Case("Action: calculator[3+4]", OK, "", "Observation: 7"),
        Case("Thought: I need to add.\ncalculator[3+4]", OK, "", "Observation: 7"),
        Case("I am done here.", ("final",), "", None),
        Case("calculator[3+4", PARSE, "unclosed_tag", "'[' is not closed by ']'"),
        Case("calculator[]", PARSE, "empty_argument", "calculator[] has an empty argument"),
        Case("calculator[1+1]calculator[2+2]", PARSE, "multiple_calls", "one action per response"),
        Case(
            "calculator[1+1]\nand that is my action",
            PARSE,
            "extra_text",
            "the action must be on the last line",
        ),
        Case(
            "calculator[1+1] please",
            PARSE,
            "extra_text",
            "the last line must be only TOOL[ARGUMENT]",
        ),
        Case(
            "search[red shoes]",
            TOOL_ERR,
            "unknown_tool",
            "Observation: Error: unknown tool 'search'",
        ),
        Case("calculator[1//0]", TOOL_ERR, "exception", "ZeroDivisionError"),
        Case("calculator[３+４]", TOOL_ERR, "exception", "SyntaxError"),
        Case("calculator[[1]]", TOOL_ERR, "exception", "unsupported expression"),
        Case("sleepy[abc]", TOOL_ERR, "invalid_arguments", "'abc' is not of type 'number'"),
        Case("Je vais chercher ça, très bien.", ("final",), "", None),
        Case("", ("final",), "", None),
        Case("calculator[   ]", PARSE, "empty_argument", "empty argument"),
        Case("I will use calculator[1+1]", PARSE, "extra_text", "the last line must be only"),
        Case("done]", ("final",), "", None),
        Case("calc-ulator[1]", TOOL_ERR, "unknown_tool", "unknown tool 'calc-ulator'"),
        Case("Action: calculator[2*3]\n\n\n", OK, "", "Observation: 6"),
        Case("calculator[10-4]  ", OK, "", "Observation: 6"),
        Case("Action: calculator[2*(3+4)", PARSE, "unclosed_tag", "not closed"),
    ],
    "harmony": [
        Case(
            HC('{"expression": "3+4"}'),
            OK,
            "",
            "<|start|>functions.calculator to=assistant<|channel|>commentary<|message|>7<|end|>",
        ),
        Case(ANALYSIS + HC('{"expression": "3+4"}'), OK, "", "<|message|>7<|end|>"),
        Case(HC('{"expression": "3+4"}').removesuffix("<|call|>"), OK, "", "<|message|>7<|end|>"),
        Case(
            HC('{"expression": "1+1"}') + "<|start|>assistant" + HC('{"expression": "2*5"}'),
            OK * 2,
            "",
            "<|message|>10<|end|>",
        ),
        Case("<|channel|>final<|message|>7<|return|>", ("final",), "", None),
        Case(ANALYSIS + "<|channel|>final<|message|>7<|return|>", ("final",), "", None),
        Case("The answer is 7.", ("final",), "", None),
        Case(
            "<|channel|>analysis<|message|>Let me think about",
            PARSE,
            "unclosed_reasoning",
            "was the response cut off?",
        ),
        Case(
            ANALYSIS.removesuffix("<|start|>assistant"),
            PARSE,
            "no_action",
            "no final message and no tool call",
        ),
        Case(HC('{"expression": "3+4"'), PARSE, "invalid_json", "call 1: invalid JSON"),
        Case(HC('["3+4"]'), PARSE, "arguments_not_object", "must be a JSON object, got a list"),
        Case(
            HC("{}").replace("functions.calculator", "python"),
            PARSE,
            "bad_recipient",
            "'python' is not functions.TOOL",
        ),
        Case(
            HC("{}").replace("functions.calculator", "functions."),
            PARSE,
            "bad_name",
            "no tool name",
        ),
        Case("<|channel|>chat<|message|>7<|end|>", PARSE, "bad_channel", "channel 'chat'"),
        Case(
            "<|channel|>commentary to=functions.calculator json",
            PARSE,
            "missing_message",
            "without <|message|>",
        ),
        Case(
            HC('{"expression": "1"}') + "<|start|>assistant<|channel|>final<|message|>1<|return|>",
            PARSE,
            "mixed_final",
            "not both",
        ),
        Case(
            HC('{"expression": "1"}')
            + "<|start|>functions.calculator to=assistant<|channel|>commentary<|message|>1<|end|>",
            PARSE,
            "extra_text",
            "do not write the 'functions.calculator' message yourself",
        ),
        Case(HC('{"expression": NaN}'), PARSE, "non_finite_number", "NaN is not a JSON number"),
        Case(
            HC('{"q": "x"}').replace("calculator", "search"),
            TOOL_ERR,
            "unknown_tool",
            "Error: unknown tool 'search'",
        ),
        Case(HC('{"expression": 5}'), TOOL_ERR, "invalid_arguments", "5 is not of type 'string'"),
        Case(
            "<|channel|>commentary<|message|>Computing now.<|end|><|start|>assistant"
            + HC('{"expression": "6*7"}'),
            OK,
            "",
            "<|message|>42<|end|>",
        ),
        Case(
            '<|start|>assistant to=functions.calculator<|channel|>commentary <|constrain|>json<|message|>{"expression": "2+2"}<|call|>',
            OK,
            "",
            "<|message|>4<|end|>",
        ),
    ],
}


def _step(fmt: str, text: str):
    async def go():
        env = CalculatorEnv(fmt)
        await env.reset({"question": "What is 3+4?", "answer": 7})
        return await env.step(Action(text, [], "stop"))

    return asyncio.run(go())


@pytest.mark.parametrize("fmt", sorted(CORPUS))
def test_corpus_has_at_least_20_cases_per_format(fmt: str) -> None:
    assert len(CORPUS[fmt]) >= 20
    assert set(CORPUS) == set(available_formats())


@pytest.mark.parametrize(
    ("fmt", "case"),
    [(fmt, case) for fmt, cases in CORPUS.items() for case in cases],
    ids=[f"{fmt}-{i}" for fmt, cases in CORPUS.items() for i in range(len(cases))],
)
def test_corpus_case(fmt: str, case: Case) -> None:
    result = _step(fmt, case.text)
    assert tuple(e.key for e in result.events) == case.events
    errors = [e for e in result.events if e.kind in (EventKind.PARSE_ERROR, EventKind.TOOL_ERROR)]
    if case.code:
        assert errors and errors[0].code == case.code
        assert errors[0].message  # the precise reason travels with the event
    else:
        assert not errors
    if case.observation is None:
        assert result.done and result.observation is None
    else:
        assert not result.done and result.observation is not None
        assert case.observation in result.observation.text, result.observation.text
    if EventKind.PARSE_ERROR in case.events:
        assert result.tool_calls == []  # a malformed response runs no call


def test_parse_error_observation_teaches_the_syntax() -> None:
    result = _step("hermes", "<tool_call>{oops}</tool_call>")
    assert result.observation is not None
    text = result.observation.text
    assert text.startswith(
        "<tool_response>\nError: your response could not be parsed; no tool was called."
    )
    assert '<tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>' in text


def test_bracket_rejects_multi_parameter_tools() -> None:
    class Two(BaseTool):
        name = "move"
        parameters: ClassVar[dict[str, Any]] = {
            "type": "object",
            "properties": {"x": {"type": "string"}, "y": {"type": "string"}},
        }

        async def execute(self, args: dict, context: ToolContext) -> str:
            return "ok"

    parsed = get_format("bracket").parse("move[3]", {"move": Two()})
    assert [e.code for e in parsed.errors] == ["not_one_parameter"]
    assert "takes 2 parameters" in parsed.errors[0].message


def test_unknown_format_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="bracket, harmony, hermes, json, react"):
        get_format("xml")


_fragments = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "{",
        "}",
        "[",
        "]",
        '"name"',
        ":",
        '"calculator"',
        '"arguments"',
        "Action:",
        "Action Input:",
        "Final Answer:",
        "Observation:",
        "\n",
        "calculator[",
        "1+2",
        ",",
        "\\",
        "é",
        "\x00",
    ]
)
_texts = st.lists(st.one_of(_fragments, st.text(max_size=8)), max_size=20).map("".join)


@settings(max_examples=150, deadline=None)
@given(text=_texts, fmt=st.sampled_from(sorted(CORPUS)))
def test_no_model_output_crashes_a_step(text: str, fmt: str) -> None:
    parsed = get_format(fmt).parse(text)
    assert (parsed.final_answer is not None) + bool(parsed.calls) + bool(parsed.errors) == 1
    result = _step(fmt, text)
    assert result.done or result.observation is not None
