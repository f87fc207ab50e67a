"""Regenerate docs/formats.md: every tool-call format's syntax, rules and edge cases, from the code.

The rules are the format modules' own docstrings; the worked examples and the
edge cases are parsed by the runtime's parsers while the page is written (a
worked example that does not parse stops the generator), and the results shown
are those parsers' and renderers' output. The edge cases are the format corpus
(tests/runtime/format_corpus/*.yaml), whose decided results a test checks.
A test checks that the committed page is current.

    python docs/gen_formats.py
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentspec.formats import (  # noqa: E402
    ERROR_CODES,
    ParsedResponse,
    available_formats,
    get_format,
)
from agentspec.formats import reasoning as reasoning_module  # noqa: E402
from agentspec.formats import strict_json as strict_json_module  # noqa: E402
from agentspec.formats.harmony_render import functions_namespace  # noqa: E402
from agentspec.runtime.episode.tools import ToolResult  # noqa: E402

OUTPUT = ROOT / "docs" / "formats.md"
CORPUS = ROOT / "tests" / "runtime" / "format_corpus"


class _Tool:
    """What the parsers and the harmony declaration read of a tool."""

    def __init__(self, name: str, description: str, **properties: dict[str, Any]) -> None:
        self.name = name
        self.description = description
        self.parameters = {"type": "object", "properties": properties, "required": list(properties)}

    @property
    def parameter_names(self) -> list[str]:
        return list(self.parameters["properties"])


TOOLS = {
    t.name: t
    for t in (
        _Tool("search", "Search the catalogue.", query={"type": "string"}),
        _Tool(
            "lookup",
            "Read one section of a page.",
            title={"type": "string"},
            section={"type": "integer", "description": "1-based section number"},
        ),
        _Tool("count", "Count to n.", n={"type": "integer"}),
        _Tool("move", "Move from x to y.", x={"type": "string"}, y={"type": "string"}),
    )
}

# One worked example per format: the model's response and the tool's result text.
EXAMPLES: dict[str, tuple[str, str]] = {
    "hermes": (
        "<think>The user wants the museum's second section.</think>\nI will look it up.\n"
        '<tool_call>{"name": "lookup", "arguments": {"title": "Louvre", "section": 2}}</tool_call>',
        "The Louvre is in Paris.",
    ),
    "json": (
        "<think>One lookup is enough.</think>\n"
        '{"name": "lookup", "arguments": {"title": "Louvre", "section": 2}}',
        "The Louvre is in Paris.",
    ),
    "react": (
        'Thought: I need the museum.\nAction: lookup\nAction Input: {"title": "Louvre", "section": 2}',
        "The Louvre is in Paris.",
    ),
    "bracket": ("The search page is open.\nsearch[red running shoes]", "[Results] 3 products"),
    "harmony": (
        "<|channel|>analysis<|message|>Need the second section.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.lookup <|constrain|>json"
        '<|message|>{"title": "Louvre", "section": 2}<|call|>',
        "The Louvre is in Paris.",
    ),
}

# Each decided edge case, by the name of its corpus case in each format where it applies.
SAME_CASE: list[tuple[str, dict[str, str]]] = [
    (
        "reasoning before the call",
        {
            "hermes": "a think block before the call is reasoning",
            "json": "a think block before the call is reasoning",
            "react": "a think block before the action is reasoning",
            "bracket": "a think block before the action is reasoning",
            "harmony": "analysis then a call (the guide's shape)",
        },
    ),
    (
        "a call drafted inside the reasoning",
        {
            "hermes": "a call drafted inside think does not run",
            "json": "a call drafted inside think is not run; the answer is final",
            "react": "an action drafted inside think is not a second action",
            "bracket": "an action drafted inside think is not a second action",
            "harmony": "a call drafted in analysis does not run",
        },
    ),
    (
        "reasoning cut off (out of tokens)",
        {
            "hermes": "an unclosed think (out of tokens) is unclosed_reasoning",
            "json": "an unclosed think is unclosed_reasoning",
            "react": "an unclosed think is unclosed_reasoning",
            "bracket": "an unclosed think is unclosed_reasoning",
            "harmony": "analysis cut off is unclosed_reasoning",
        },
    ),
    (
        "`</think>` with `<think>` in the prompt",
        {
            "hermes": "a think block opened by the prompt",
            "json": "a think block opened by the prompt",
            "react": "a think block opened by the prompt",
            "bracket": "a think block opened by the prompt",
        },
    ),
    (
        "text only",
        {
            "hermes": "no call is a final answer",
            "json": "prose is a final answer",
            "react": "no marker at all is no_action",
            "bracket": "a plain final answer",
            "harmony": "plain text without harmony tokens is a final answer",
        },
    ),
    (
        "brackets in prose",
        {
            "json": "a citation in brackets before prose is a final answer",
            "bracket": "prose with brackets is a final answer",
        },
    ),
    (
        "two calls",
        {
            "hermes": "two calls",
            "json": "a list of two calls",
            "react": "two actions",
            "bracket": "two actions on two lines",
            "harmony": "two calls in one response",
        },
    ),
    (
        "a call cut off",
        {
            "hermes": "incomplete JSON without a closing tag",
            "json": "cut off in the middle of the JSON",
            "react": "an input cut off",
            "bracket": "an action cut off before the closing bracket",
            "harmony": "arguments cut off",
        },
    ),
    (
        "a complete call without its end marker",
        {
            "hermes": "complete JSON without a closing tag at the end is accepted (as vLLM does)",
            "harmony": "a call whose stop token the decoder dropped",
        },
    ),
    (
        "the end marker inside a string argument",
        {
            "hermes": "a closing tag inside a JSON string argument",
        },
    ),
    (
        "a fenced call",
        {
            "json": "a fence labelled JSON in capitals",
            "react": "a fenced JSON input",
            "bracket": "an action as the only line of a code fence",
        },
    ),
    (
        "a quoted argument",
        {
            "react": "a double-quoted bare value is unquoted",
            "bracket": "an action in backticks",
        },
    ),
    (
        "NaN as a number",
        {
            "hermes": "NaN is not JSON",
            "json": "NaN is not JSON",
            "react": "NaN inside a JSON input",
            "bracket": "NaN is text here, not a JSON number",
            "harmony": "NaN is not JSON",
        },
    ),
    (
        "a float that overflows",
        {
            "hermes": "a float that overflows",
            "json": "a float that overflows",
            "react": "a float that overflows",
            "harmony": "a float that overflows",
        },
    ),
    (
        "arguments that are not an object",
        {
            "hermes": "arguments that are a list",
            "json": "arguments that are a list",
            "react": "a JSON list as input",
            "harmony": "arguments that are a list",
        },
    ),
    ("a leading byte-order mark", {f: "a leading byte-order mark" for f in available_formats()}),
    (
        "an unknown tool",
        {f: "an unknown tool parses (the environment reports it)" for f in available_formats()},
    ),
]


def markdown(docstring: str) -> str:
    """A docstring's reStructuredText markup as Markdown (inline code and roles)."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", docstring)
    return re.sub(r"``(?! )([^`]+?)``", r"`\1`", text)


def doc_body(obj: Any) -> tuple[str, str]:
    """(first line, the rest) of an object's docstring, as Markdown."""
    first, _, rest = (inspect.getdoc(obj) or "").partition("\n")
    return markdown(first.strip()), markdown(rest.strip())


def load_corpus(name: str) -> list[dict[str, Any]]:
    data = yaml.safe_load((CORPUS / f"{name}.yaml").read_text(encoding="utf-8"))
    return data["cases"]


def parse(name: str, text: str) -> ParsedResponse:
    return get_format(name).parse(text, TOOLS)  # type: ignore[arg-type]


def code(text: str) -> str:
    """``text`` as an inline code span (tags such as ``<tool_call>`` would vanish as HTML)."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def as_json(value: Any) -> str:
    return code(json.dumps(value, ensure_ascii=False))


def outcome(parsed: ParsedResponse, short: bool = False) -> str:
    """What a response was parsed as, in one line."""
    if parsed.errors:
        first = parsed.errors[0]
        return f"error `{first.code}`" + ("" if short else f": {code(first.message)}")
    if parsed.calls:
        if short:
            return f"{len(parsed.calls)} calls" if len(parsed.calls) > 1 else "a call"
        return "; ".join(f"call `{c.name}` {as_json(c.arguments)}" for c in parsed.calls)
    return "final answer" if short else f"final answer {as_json(parsed.final_answer or '')}"


def cell(text: str) -> str:
    """Text for a table cell: a pipe (harmony's tokens have two) would end the cell."""
    return text.replace("|", "&#124;")


def block(text: str, language: str = "text") -> list[str]:
    """A fenced block that survives fences inside ``text``; a BOM is shown escaped."""
    fence = "````" if "```" in text else "```"
    return [f"{fence}{language}", text.replace("\ufeff", "\\ufeff"), fence]


def cross_table() -> list[str]:
    names = available_formats()
    lines = [
        "| case | " + " | ".join(f"[`{n}`](#{n})" for n in names) + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    for label, cases in SAME_CASE:
        cells = []
        for name in names:
            case_name = cases.get(name)
            if case_name is None:
                cells.append("—")
                continue
            (case,) = [c for c in load_corpus(name) if c["name"] == case_name]
            cells.append(outcome(parse(name, case["output"]), short=True))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def worked_example(name: str) -> list[str]:
    fmt = get_format(name)
    response, result_text = EXAMPLES[name]
    parsed = parse(name, response)
    if parsed.errors or not parsed.calls:
        raise SystemExit(f"the {name} example does not parse: {parsed.errors}")
    calls = [{"name": c.name, "arguments": c.arguments} for c in parsed.calls]
    observation = fmt.render_results([ToolResult(c.name, result_text, True) for c in parsed.calls])
    error = fmt.render_result(ToolResult(parsed.calls[0].name, "no such page", False))
    lines = ["A response:", "", *block(response), "", "is parsed as the call(s):", ""]
    lines += [*block(json.dumps(calls, ensure_ascii=False), "json"), ""]
    if parsed.reasoning is not None:
        lines += [f"with the reasoning {as_json(parsed.reasoning)} kept apart;", ""]
    lines += ["the model then sees the result:", "", *block(observation), ""]
    lines += ["or, when the tool fails:", "", *block(error), ""]
    return lines


def edge_cases(name: str) -> list[str]:
    lines = [f"### Edge cases of `{name}`", ""]
    for case in load_corpus(name):
        parsed = parse(name, case["output"])
        line = f"**{case['name']}** → {outcome(parsed)}"
        if parsed.reasoning is not None:
            line += f"; reasoning {as_json(parsed.reasoning)}"
        lines += [line, "", *block(case["output"]), ""]
    return lines


def format_section(name: str) -> list[str]:
    fmt = get_format(name)
    summary, rules = doc_body(sys.modules[type(fmt).__module__])
    lines = [
        f"## `{name}`",
        "",
        summary,
        "",
        rules,
        "",
        f"What the model is told: {fmt.usage()}",
        "",
    ]
    if name == "harmony":
        lines += [
            "The tools are declared as the guide writes them (the `# Tools` section of the "
            "developer message), here for the page's four tools:",
            "",
            *block(functions_namespace(list(TOOLS.values()))),  # type: ignore[arg-type]
            "",
        ]
    lines += [f"### Worked example of `{name}`", "", *worked_example(name), *edge_cases(name)]
    return lines


def render() -> str:
    _, reasoning_rules = doc_body(reasoning_module)
    _, strict_rules = doc_body(strict_json_module)
    lines = [
        "# Tool-call formats",
        "",
        "<!-- Generated by `python docs/gen_formats.py`; do not edit by hand. -->",
        "",
        "`episode.tool_format` names how the model writes tool calls and how results come "
        "back. This page is generated from the code: the rules are the format modules' own, "
        "and every example and edge case below was parsed by the runtime's parser when the "
        "page was written (the edge cases are the format corpus, "
        "`tests/runtime/format_corpus/`, whose decided results a test checks). A malformed "
        "response never runs a call and never ends an episode: the model sees what is wrong "
        "(event `parse_error`) and tries again.",
        "",
        "The examples use four tools: `search(query: string)`, "
        "`lookup(title: string, section: integer)`, `count(n: integer)` and "
        "`move(x: string, y: string)`.",
        "",
        "## Reasoning",
        "",
        reasoning_rules,
        "",
        "The reasoning text comes back on `ParsedResponse.reasoning`; it is kept in the "
        "trajectory like any response token. `harmony` has its own reasoning channel "
        "(`analysis`) and ignores `<think>` tags.",
        "",
        "## Strict JSON",
        "",
        strict_rules,
        "",
        "## The same case in every format",
        "",
        "Each cell is the corpus case's result in that format (— where the case does not "
        "apply); the sections below show the exact outputs and messages.",
        "",
        *cross_table(),
        "",
        "## Parse-error codes",
        "",
        "| code | meaning |",
        "|---|---|",
        *(f"| `{code}` | {cell(meaning)} |" for code, meaning in ERROR_CODES.items()),
        "",
    ]
    for name in available_formats():
        lines += format_section(name)
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    OUTPUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
