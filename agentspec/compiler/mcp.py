"""MCP tools in the compiler: the pinned tools of a spec's `mcp:` servers, checked.

A spec's `mcp:` section names servers; each server's `tools:` holds what
`agentspec mcp pin` read from it (description and input JSON Schema per tool).
The checker and the code generator only ever read these pins, so `validate`
and `compile` stay offline; the runtime talks to the server (see
:mod:`agentspec.runtime.mcp.tools`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentspec.compiler import check_names
from agentspec.compiler.types import STR, Type, json_schema_type
from agentspec.core.json_schema import schema_problems
from agentspec.spec.model import McpServerSpec, McpToolSpec, TaskSpec

if TYPE_CHECKING:
    from agentspec.compiler.check_state import CheckState

__all__ = ["McpTool", "check_mcp", "mcp_tools", "optional_arguments", "pinned_parameter_problems"]

# What every tool-call format accepts as a tool name (react's is the narrowest).
TOOL_NAME = re.compile(r"^[A-Za-z_][\w.-]*$")


@dataclass(frozen=True)
class McpTool:
    """One pinned tool the spec uses: its name, its server, and the pin."""

    name: str
    server_name: str
    server: McpServerSpec
    pin: McpToolSpec


def mcp_tools(spec: TaskSpec) -> Iterator[McpTool]:
    """The pinned tools of every server, restricted to `include`, in spec order."""
    for server_name, server in spec.mcp.items():
        for name, pin in (server.tools or {}).items():
            if server.include is None or name in server.include:
                yield McpTool(name, server_name, server, pin)


def optional_arguments(pin: McpToolSpec) -> frozenset[str]:
    properties = pin.parameters.get("properties") or {}
    required = pin.parameters.get("required") or []
    return frozenset(set(properties) - set(required))


def pinned_parameter_problems(schema: dict[str, Any]) -> list[str]:
    """Why a pinned tool's `parameters` are not a JSON Schema object (E704); empty if
    they are."""
    problems = [p.message for p in schema_problems(schema)]
    if schema.get("type") != "object":
        problems.append(f"its type is {schema.get('type')!r}, not 'object'")
    return problems


def check_mcp(checker: CheckState) -> None:
    """Diagnostics E702–E705 and the argument types of MCP tools (for `tool:NAME` rewards)."""
    spec, source_map = checker.spec, checker.map
    for server_name, server in spec.mcp.items():
        path = ("mcp", server_name)
        if server.tools is None:
            checker.error(
                "E702",
                f"MCP server '{server_name}' has no pinned tools",
                source_map.key_span(path),
                hint="run `agentspec mcp pin SPEC` to read them from the server into the spec",
            )
            continue
        for i, wanted in enumerate(server.include or []):
            if wanted not in server.tools:
                check_names.unknown(
                    checker,
                    "E705",
                    f"MCP server '{server_name}' has no pinned tool '{wanted}'",
                    source_map.value_span((*path, "include", i)),
                    wanted,
                    server.tools,
                )
        _check_reset_fields(checker, server_name, server)
    seen: dict[str, str] = {}
    for tool in mcp_tools(spec):
        where = ("mcp", tool.server_name, "tools", tool.name)
        clash = "a spec tool" if tool.name in spec.tools else seen.get(tool.name)
        if clash is not None or not TOOL_NAME.match(tool.name):
            problem = (
                f"clashes with {clash}" if clash else "is not a name every tool format can call"
            )
            checker.error(
                "E703",
                f"MCP tool '{tool.name}' of server '{tool.server_name}' {problem}",
                source_map.key_span(where),
                hint="use `include:` to leave one of them out"
                if clash
                else "leave it out with `include:`",
            )
        seen.setdefault(tool.name, f"the tool of MCP server '{tool.server_name}'")
        schema = tool.pin.parameters
        for message in pinned_parameter_problems(schema)[:1]:
            checker.error(
                "E704",
                f"parameters of MCP tool '{tool.name}' are not a JSON Schema object: {message}",
                source_map.value_span((*where, "parameters")),
                hint="re-pin the server with `agentspec mcp pin SPEC`",
            )
        checker.arg_types[tool.name] = _argument_types(schema)
        # `tool:NAME` rewards read `result`: the text the model sees of the call's result
        checker.result_types[tool.name] = STR


def _check_reset_fields(checker: CheckState, server_name: str, server: McpServerSpec) -> None:
    """An OpenEnv server's `reset_from_sample` names sample fields (E404)."""
    spec, known = checker.spec, set(checker.sample_types)
    known |= set(spec.data.derived) if spec.data is not None else set()
    for argument, field in server.reset_from_sample.items():
        if field not in known:
            check_names.unknown(
                checker,
                "E404",
                f"reset_from_sample.{argument}: the samples have no field '{field}'",
                checker.map.value_span(("mcp", server_name, "reset_from_sample", argument)),
                field,
                known,
            )


def _argument_types(schema: dict[str, Any]) -> dict[str, Type]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    return {
        name: json_schema_type(sub) for name, sub in properties.items() if isinstance(sub, dict)
    }
