"""The harmony prompt side: system and developer messages, tool declarations, tool messages.

Written from the harmony response format guide (gpt-oss): functions are
declared in the developer message's ``# Tools`` section as TypeScript-like
types inside ``namespace functions { ... }``; a function without parameters is
``type NAME = () => any;``, one with parameters takes one argument ``_`` whose
object type is written inline, one field per line, a description as a ``//``
comment on the line above, ``?`` on optional fields and ``// default: X``
after a field with a default; an empty line follows every function. A tool's
result comes back as a message from ``functions.NAME`` to the assistant on the
``commentary`` channel.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentspec.formats.base import FormatTool

__all__ = [
    "assistant_turn",
    "developer_message",
    "functions_namespace",
    "message",
    "system_message",
    "tool_message",
    "typescript_type",
]

START, END, MESSAGE, CHANNEL = "<|start|>", "<|end|>", "<|message|>", "<|channel|>"


def message(header: str, content: str) -> str:
    """``<|start|>HEADER<|message|>CONTENT<|end|>``."""
    return f"{START}{header}{MESSAGE}{content}{END}"


def tool_message(tool_name: str, content: str) -> str:
    """A tool's output as the model reads it (from ``functions.NAME`` to the assistant)."""
    return message(f"functions.{tool_name} to=assistant{CHANNEL}commentary", content)


def assistant_turn(content: str, calls: Sequence[tuple[str, str]]) -> str:
    """What the model writes after the prompt's ``<|start|>assistant``: a preamble, then calls.

    ``calls`` are (tool name, arguments as JSON text); the text is written as
    given, so arguments that are not a JSON object stay a parse error.
    """
    messages = [f"{CHANNEL}commentary{MESSAGE}{content}{END}"] if content else []
    messages += [
        f"{CHANNEL}commentary to=functions.{name} <|constrain|>json{MESSAGE}{arguments}<|call|>"
        for name, arguments in calls
    ]
    return f"{START}assistant".join(messages)


def system_message(
    *,
    identity: str = "You are ChatGPT, a large language model trained by OpenAI.",
    knowledge_cutoff: str = "2024-06",
    current_date: str | None = None,
    reasoning: str = "medium",
    functions: bool = True,
) -> str:
    """The system message: identity, dates, reasoning effort, channels."""
    lines = [identity, f"Knowledge cutoff: {knowledge_cutoff}"]
    if current_date:
        lines.append(f"Current date: {current_date}")
    lines += ["", f"Reasoning: {reasoning}", ""]
    lines.append(
        "# Valid channels: analysis, commentary, final. Channel must be included for every message."
    )
    if functions:
        lines.append("Calls to these tools must go to the commentary channel: 'functions'.")
    return message("system", "\n".join(lines))


def developer_message(instructions: str, tools: Sequence[FormatTool] = ()) -> str:
    """The developer message: ``# Instructions`` then, with tools, ``# Tools``."""
    parts = [f"# Instructions\n\n{instructions}"]
    if tools:
        parts.append(functions_namespace(tools))
    return message("developer", "\n\n".join(parts))


def functions_namespace(tools: Sequence[FormatTool]) -> str:
    """The ``# Tools`` section declaring ``tools`` in ``namespace functions``."""
    lines = ["# Tools", "", "## functions", "", "namespace functions {", ""]
    for tool in tools:
        lines += _declaration(tool.name, tool.description, tool.parameters)
        lines.append("")
    lines.append("} // namespace functions")
    return "\n".join(lines)


def _declaration(name: str, description: str, parameters: Mapping[str, Any]) -> list[str]:
    lines = _comment(description)
    if not parameters.get("properties"):
        return [*lines, f"type {name} = () => any;"]
    return [*lines, f"type {name} = (_: {{", *_fields(parameters), "}) => any;"]


def _fields(schema: Mapping[str, Any]) -> list[str]:
    """One line per property (plus its description comment), in the schema's order."""
    required = set(schema.get("required", ()))
    lines: list[str] = []
    for key, prop in schema.get("properties", {}).items():
        lines += _comment(prop.get("description", ""))
        optional = "" if key in required else "?"
        line = f"{key}{optional}: {typescript_type(prop)},"
        if "default" in prop:
            line += f" // default: {_literal(prop['default'])}"
        lines.append(line)
    return lines


def typescript_type(schema: Mapping[str, Any]) -> str:
    """A JSON schema as the TypeScript-like type the harmony declarations use."""
    if "enum" in schema:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return " | ".join(typescript_type(s) for s in schema[key])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(typescript_type({**schema, "type": k}) for k in kind)
    if kind == "array":
        item = typescript_type(schema.get("items", {}))
        return f"({item})[]" if " | " in item else f"{item}[]"
    if kind == "object":
        if not schema.get("properties"):
            return "object"
        return "{\n" + "\n".join(_fields(schema)) + "\n}"
    return _SCALARS.get(kind, "any") if isinstance(kind, str) else "any"


_SCALARS = {
    "string": "string",
    "integer": "number",
    "number": "number",
    "boolean": "boolean",
    "null": "null",
}


def _comment(text: str) -> list[str]:
    return [f"// {line}".rstrip() for line in text.strip().splitlines()] if text.strip() else []


def _literal(value: Any) -> str:
    """A default as the guide writes it: strings bare, everything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
