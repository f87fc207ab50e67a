"""The first prompt, rendered for the data's first row before anything runs.

The checker types `prompt.system` and `prompt.user` against the declared
fields, but some failures depend on the values: an index past a list's end,
a key a `dict` field lacks, a filter given a value it cannot take. At run
time each of those fails every episode whose sample has it (`PromptError`).
When the first row is readable here (`data_check.first_data_row`), validate
renders both prompts with it in the runtime's sandbox, with the variables an
episode gives them, and reports a failure as E913 at the template.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path as FsPath
from typing import Any

from agentspec.compiler.data_check import first_data_row
from agentspec.compiler.ir import CheckResult
from agentspec.compiler.mcp import mcp_tools
from agentspec.compiler.oracle_check import object_schema, parsed_template, template_environment
from agentspec.core.diagnostics import Diagnostic
from agentspec.core.source import Span
from agentspec.spec.model import TaskSpec


def _tool_schemas(spec: TaskSpec) -> list[dict[str, Any]]:
    """`tools` as a prompt sees it: each tool's OpenAI-style function schema."""

    def function(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": parameters},
        }

    schemas = []
    for name, tool in spec.tools.items():
        schemas.append(function(name, tool.description, object_schema(tool)))
    for served in mcp_tools(spec):
        schemas.append(function(served.name, served.pin.description, served.pin.parameters))
    return schemas


def _inside(span: Span | None, within: Span) -> bool:
    if span is None or span.file != within.file:
        return False
    return (
        (within.line, within.column)
        <= (span.line, span.column)
        <= (
            within.end_line,
            within.end_column,
        )
    )


def check_prompts(
    checked: CheckResult, spec_dir: FsPath, found: Sequence[Diagnostic] = ()
) -> list[Diagnostic]:
    """E913 for a prompt template that fails to render for the first row. What was
    `found` before says when not to render: a template with an error in it (that
    error says why it fails), or a first row that lacks a declared field (E907)."""
    spec = checked.spec
    row = first_data_row(spec, spec_dir)
    if row is None or any(d.code == "E907" for d in found):
        return []
    errors = [d for d in found if d.is_error]
    variables: dict[str, Any] = {"sample": row, "constants": dict(spec.constants)}
    if spec.environment is None:
        variables["tools"] = _tool_schemas(spec)
    unpinned_tools = any(server.tools is None for server in spec.mcp.values())
    env = template_environment()
    found = []
    for part in ("system", "user"):
        template = getattr(spec.prompt, part)
        span = checked.loaded.source_map.value_span(("prompt", part))
        if not template or any(_inside(d.span, span) for d in errors):
            continue
        tree = parsed_template(template)
        if tree is None:
            continue
        if unpinned_tools and "tools" in template:
            continue  # the MCP servers' tools are known only once they run
        try:
            env.from_string(tree).render(**variables)
        except Exception as exc:
            found.append(
                Diagnostic(
                    "E913",
                    f"prompt.{part} fails to render for the first sample of the data:"
                    f" {type(exc).__name__}: {exc}",
                    span,
                    "every episode whose sample is like it would fail at its first prompt;"
                    " guard the value (`{% if … %}`, `| default(…)`) or fix the data",
                )
            )
    return found
