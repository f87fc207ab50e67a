"""The harmony (gpt-oss) format against the published examples of its guide.

The guide (openai-cookbook, articles/openai-harmony.md) shows a full
function-calling conversation: system and developer messages with a
``namespace functions`` declaration, the model's analysis and call, and the
tool's reply. ``data/harmony_guide.txt`` holds that text; the renderer must
produce it byte for byte and the parser must read the model's part of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from agentspec.formats import get_format
from agentspec.formats.harmony_render import (
    developer_message,
    functions_namespace,
    message,
    system_message,
    tool_message,
    typescript_type,
)
from agentspec.runtime.episode.tools import BaseTool, ToolContext, ToolResult

GUIDE = Path(__file__).parent / "data" / "harmony_guide.txt"
FORMAT = {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}


def _tool(tool_name: str, text: str, schema: dict[str, Any] | None = None) -> BaseTool:
    class Tool(BaseTool):
        name = tool_name
        description = text
        parameters: ClassVar[dict[str, Any]] = schema or {"type": "object", "properties": {}}

        async def execute(self, args: dict, context: ToolContext) -> str:
            return "ok"

    return Tool()


GUIDE_TOOLS = [
    _tool("get_location", "Gets the location of the user."),
    _tool(
        "get_current_weather",
        "Gets the current weather in the provided location.",
        {
            "type": "object",
            "properties": {
                "location": {
                    "type": "string",
                    "description": "The city and state, e.g. San Francisco, CA",
                },
                "format": FORMAT,
            },
            "required": ["location"],
        },
    ),
    _tool(
        "get_multiple_weathers",
        "Gets the current weather in the provided list of locations.",
        {
            "type": "object",
            "properties": {
                "locations": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": 'List of city and state, e.g. ["San Francisco, CA", "New York, NY"]',
                },
                "format": FORMAT,
            },
            "required": ["locations"],
        },
    ),
]

MODEL_OUTPUT = (
    "<|channel|>analysis<|message|>Need to use function get_weather.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"location":"San Francisco"}<|call|>'
)


def _guide_conversation() -> str:
    """The file without its comment header (the conversation's first line starts ``<|start|>``)."""
    lines = GUIDE.read_text(encoding="utf-8").splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("<|start|>"))
    return "\n".join(lines[first:])


def test_the_guide_conversation_is_rendered_byte_for_byte() -> None:
    fmt = get_format("harmony")
    parsed = fmt.parse(MODEL_OUTPUT, {t.name: t for t in GUIDE_TOOLS})
    assert parsed.ok and [(c.name, c.arguments) for c in parsed.calls] == [
        ("get_weather", {"location": "San Francisco"})
    ]
    assert parsed.reasoning == "Need to use function get_weather."
    result = ToolResult("get_weather", '{"sunny": true, "temperature": 20}', True)
    rendered = (
        system_message(current_date="2025-06-28", reasoning="high")
        + developer_message("Use a friendly tone.", GUIDE_TOOLS)
        + message("user", "What is the weather like in SF?")
        + "<|start|>assistant"
        + MODEL_OUTPUT
        + fmt.render_results([result])
        + "<|start|>assistant"
    )
    assert rendered == _guide_conversation()


def test_the_guide_comment_lines_are_not_the_conversation() -> None:
    text = _guide_conversation()
    assert text.startswith("<|start|>system<|message|>")
    assert "# Valid channels" in text and "# Tools" in text and "openai-cookbook" not in text


def test_the_guide_tool_message() -> None:
    assert tool_message("get_weather", '{"sunny": true, "temperature": 20}') == (
        "<|start|>functions.get_weather to=assistant<|channel|>commentary"
        '<|message|>{"sunny": true, "temperature": 20}<|end|>'
    )


def test_a_developer_message_without_tools() -> None:
    assert developer_message("Always respond in riddles") == (
        "<|start|>developer<|message|># Instructions\n\nAlways respond in riddles<|end|>"
    )


def test_the_format_declares_tools_as_the_namespace() -> None:
    section = get_format("harmony").instructions(GUIDE_TOOLS)
    assert section == functions_namespace(GUIDE_TOOLS)
    assert section.startswith("# Tools\n\n## functions\n\nnamespace functions {\n\n")
    assert section.endswith("}) => any;\n\n} // namespace functions")


def test_the_guide_reasoning_example() -> None:
    output = (
        '<|channel|>analysis<|message|>User asks: "What is 2 + 2?" Simple arithmetic. '
        "Provide answer.<|end|>\n<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|return|>"
    )
    parsed = get_format("harmony").parse(output)
    assert parsed.final_answer == "2 + 2 = 4."
    assert parsed.reasoning == 'User asks: "What is 2 + 2?" Simple arithmetic. Provide answer.'


def test_the_guide_preamble_example() -> None:
    preamble = (
        "**Action plan**:\n1. Generate an HTML file\n2. Generate a JavaScript for the Node.js "
        "server\n3. Start the server\n---\nWill start executing the plan step by step"
    )
    output = (
        "<|channel|>analysis<|message|>{long chain of thought}<|end|>"
        f"<|start|>assistant<|channel|>commentary<|message|>{preamble}<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.generate_file<|constrain|>json"
        '<|message|>{"template": "basic_html", "path": "index.html"}<|call|>'
    )
    parsed = get_format("harmony").parse(output)
    assert [(c.name, c.arguments) for c in parsed.calls] == [
        ("generate_file", {"template": "basic_html", "path": "index.html"})
    ]
    assert parsed.content == preamble
    assert parsed.reasoning == "{long chain of thought}"


def test_typescript_types_of_json_schemas() -> None:
    assert typescript_type({"type": "integer"}) == "number"
    assert typescript_type({"type": ["string", "null"]}) == "string | null"
    assert typescript_type({"anyOf": [{"type": "number"}, {"type": "string"}]}) == "number | string"
    assert typescript_type({"type": "array", "items": {"type": ["number", "string"]}}) == (
        "(number | string)[]"
    )
    assert typescript_type({"const": "on"}) == '"on"'
    assert typescript_type({"type": "object"}) == "object"
    assert typescript_type({}) == "any"
    nested = {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
    assert typescript_type(nested) == "{\nx: number,\n}"


def test_results_errors_and_parse_errors_are_whole_messages() -> None:
    fmt = get_format("harmony")
    failed = fmt.render_result(ToolResult("search", "no such page", False))
    assert failed == (
        "<|start|>functions.search to=assistant<|channel|>commentary"
        "<|message|>Error: no such page<|end|>"
    )
    parsed = fmt.parse("<|channel|>chat<|message|>hi<|end|>")
    observation = fmt.render_errors(parsed.errors)
    assert observation.startswith(
        "<|start|>user<|message|>Error: your response could not be parsed"
    )
    assert observation.endswith("<|end|>") and "functions.TOOL" in observation
    assert getattr(fmt, "frames_observations", False)
