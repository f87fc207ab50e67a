"""Lowering: the checked IR → the `ModuleModel` the module template renders.

Expressions are written as Python by `expr_writer.ExpressionWriter`; the
models are in `module_model.py`; the sections issue 14 added (guards with
messages, oracle steps, locations) in `lower_sections.py`.
"""

from __future__ import annotations

import shlex
from typing import Any

from agentspec.compiler.expr_writer import ExpressionWriter, empty_value, python_type
from agentspec.compiler.ir import CheckResult
from agentspec.compiler.literals import py_literal
from agentspec.compiler.lower_sections import (
    expression_locations,
    guard_models,
    location,
    oracle_models,
)
from agentspec.compiler.mcp import McpTool, mcp_tools, optional_arguments
from agentspec.compiler.module_model import (
    FunctionModel,
    ModuleModel,
    RewardModel,
    StateField,
    ToolModel,
)
from agentspec.compiler.names import MODULE_NAMES, class_name, state_attribute, unique_names
from agentspec.compiler.tool_cost import inline_reason
from agentspec.compiler.user_lower import user_model
from agentspec.compiler.visibility import agent_view
from agentspec.core.row_layout import row_layout
from agentspec.spec.model import McpServerSpec, TaskSpec, ToolSpec

__all__ = ["ModuleModel", "lower"]


def _condition_or_constant(
    checked: CheckResult, path: tuple[Any, ...], value: Any, writer: ExpressionWriter
) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return writer.write(checked.expressions[path].node)
    return py_literal(value)


def lower(checked: CheckResult, *, spec_file: str, spec_sha256: str, version: str) -> ModuleModel:
    """The checked spec as a `ModuleModel` for the emitter."""
    spec = checked.spec
    plain = ExpressionWriter(repetitions=checked.repetitions)
    state_fields, initial_exprs = _state(checked, plain)
    tools, env_class, flow_class = _classes(checked, spec_file)
    context = spec.context
    episode = spec.episode
    return ModuleModel(
        mcp_servers={_server_variable(n): _connection(n, server) for n, server in spec.mcp.items()},
        spec_name=spec.name,
        spec_file=spec_file,
        spec_sha256=spec_sha256,
        description=spec.description,
        version=version,
        env_class=env_class,
        flow_class=flow_class,
        env_base="SpecAdapterEnv" if spec.environment is not None else "SpecToolEnv",
        layout=row_layout(context.policy),
        state_fields=state_fields,
        initial_exprs=initial_exprs,
        locations=expression_locations(checked, spec_file),
        constants=dict(spec.constants),
        tools=tools,
        rewards=_rewards(checked),
        functions=[FunctionModel(n, f.impl, f.config) for n, f in spec.functions.items()],
        system_prompt=spec.prompt.system,
        user_prompt=spec.prompt.user,
        tool_format=episode.tool_format,
        final_answer=episode.final_answer,
        keep_reasoning=episode.reasoning.keep_in_history if episode.reasoning else None,
        max_steps=episode.max_steps,
        max_response_tokens=episode.max_response_tokens,
        max_parse_errors=episode.max_parse_errors,
        context_policy=context.policy,
        context_args=_context_args(spec),
        context_custom=(
            (context.custom, location(checked, ("context", "custom"), spec_file))
            if context.policy == "custom" and context.custom is not None
            else None
        ),
        success=_condition_or_constant(checked, ("episode", "success"), episode.success, plain),
        done_when=_condition_or_constant(
            checked, ("episode", "done_when"), episode.done_when, plain
        ),
        anchor=_condition_or_constant(checked, ("episode", "anchor"), episode.anchor, plain),
        **_data(checked, plain),
        **_oracle(checked, plain, spec_file),
        adapter=spec.environment.adapter if spec.environment else None,
        adapter_config=_adapter_config(spec),
        training=spec.training.model_dump(),
        user=user_model(checked, plain, spec_file),
        **_public(spec),
    )


def _public(spec: TaskSpec) -> dict[str, Any]:
    """What a served spec may give its clients: the fields and state its agent sees."""
    view = agent_view(spec)
    return {
        "public_fields": view.fields,
        "public_state": None
        if view.state is None
        else tuple(state_attribute(name) for name in view.state),
    }


def _data(checked: CheckResult, plain: ExpressionWriter) -> dict[str, Any]:
    """The `data` section's fields of the module model."""
    data = checked.spec.data
    return {
        "data_source": data.source if data else None,
        "data_split": data.split if data else "train",
        "data_eval_split": data.eval_split if data else None,
        "data_params": dict(data.params) if data else {},
        "data_fields": dict(data.fields) if data else {},
        "data_limit": data.limit if data else None,
        "derived": [
            (name, plain.write(checked.expressions[("data", "derived", name)].node))
            for name in (data.derived if data is not None else ())
        ],
    }


def _oracle(checked: CheckResult, plain: ExpressionWriter, spec_file: str) -> dict[str, Any]:
    """The oracle's fields: scripted turns, or a hook (and whether it walks through)."""
    oracle = checked.spec.oracle
    if isinstance(oracle, list):
        return {
            "oracle": oracle_models(checked, plain, spec_file),
            "oracle_hook": None,
            "oracle_walkthrough": False,
        }
    hook = oracle.hook if oracle is not None else None
    return {
        "oracle": None,
        "oracle_hook": hook,
        "oracle_hook_location": location(checked, ("oracle", "hook"), spec_file) if hook else "",
        "oracle_walkthrough": bool(oracle is not None and oracle.walkthrough),
    }


def _state(
    checked: CheckResult, plain: ExpressionWriter
) -> tuple[list[StateField], list[tuple[str, str]]]:
    """The `State` fields, and the initial values computed from the sample."""
    state_fields, initial_exprs = [], []
    for name, var in checked.spec.state.items():
        t = checked.state_types[name]
        path = ("state", name, "initial")
        if path in checked.expressions:
            code = plain.write(checked.expressions[path].node)
            initial_exprs.append((state_attribute(name), f"s.own({code})"))
        default = (
            var.initial
            if var.initial is not None and path not in checked.expressions
            else empty_value(t)
        )
        state_fields.append(StateField(state_attribute(name), name, python_type(t), default))
    return state_fields, initial_exprs


def _classes(checked: CheckResult, spec_file: str) -> tuple[list[ToolModel], str, str]:
    """The tool classes (spec tools, then MCP tools) and the env and flow class names."""
    spec = checked.spec
    # Generated classes never take a name the module already binds (`SpecTool`
    # for a tool named `spec`, `SpecToolEnv` for a spec named `spec_tool`).
    taken = set(MODULE_NAMES)
    served = list(mcp_tools(spec))
    class_names = unique_names(
        [class_name(n, "Tool") for n in [*spec.tools, *(t.name for t in served)]], taken
    )
    env_class, flow_class = unique_names(
        [class_name(spec.name, "Env"), class_name(spec.name, "Flow")], taken
    )
    tools = []
    for (name, tool), cls in zip(spec.tools.items(), class_names, strict=False):
        model = _tool_model(checked, name, tool, cls)
        writer = ExpressionWriter(_optional_args(tool), checked.repetitions)
        model.guards = guard_models(checked, name, tool, writer)
        model.location = location(checked, ("tools", name), spec_file)
        steps = [step.code for step in model.guards]
        code = [model.guard or "", *steps, model.returns or "", "\n".join(model.effects)]
        model.inline_reason = inline_reason(code)
        tools.append(model)
    for served_tool, cls in zip(served, class_names[len(spec.tools) :], strict=True):
        tools.append(_mcp_tool_model(served_tool, cls))
    return tools, env_class, flow_class


def _rewards(checked: CheckResult) -> list[RewardModel]:
    spec = checked.spec
    pins = {t.name: t.pin for t in mcp_tools(spec)}
    rewards = []
    for name, reward in spec.rewards.items():
        optional: frozenset[str] = frozenset()
        if reward.on.startswith("tool:"):
            tool_name = reward.on.removeprefix("tool:")
            optional = (
                _optional_args(spec.tools[tool_name])
                if tool_name in spec.tools
                else optional_arguments(pins[tool_name])
            )
        writer = ExpressionWriter(optional, checked.repetitions)
        base = ("rewards", name)
        value = (
            writer.write(checked.expressions[(*base, "value")].node)
            if isinstance(reward.value, str)
            else py_literal(float(reward.value))
        )
        when = writer.write(checked.expressions[(*base, "when")].node) if reward.when else None
        source = reward.value if isinstance(reward.value, str) else repr(reward.value)
        rewards.append(RewardModel(name, reward.on, reward.weight, value, when, source))
    return rewards


def _context_args(spec: TaskSpec) -> dict[str, Any]:
    """The keyword arguments of `make_context_policy` for the spec's policy."""
    context = spec.context
    args: dict[str, Any] = {
        "max_prompt_tokens": context.max_prompt_tokens,
        "overflow": context.overflow,
    }
    if context.policy == "sliding_window":
        args["k"] = context.window
    if context.policy == "state_summary":
        args["template"] = context.summary
    return args


def _adapter_config(spec: TaskSpec) -> dict[str, Any]:
    """The adapter's keyword arguments: its `config`, plus `admissible_commands` when asked for."""
    if spec.environment is None:
        return {}
    config = dict(spec.environment.config)
    if spec.environment.admissible_commands:
        config.setdefault("admissible_commands", True)
    return config


def _optional_args(tool: ToolSpec) -> frozenset[str]:
    required = set(tool.required) if tool.required is not None else set(tool.parameters)
    return frozenset(set(tool.parameters) - required)


def _tool_model(checked: CheckResult, name: str, tool: ToolSpec, cls: str) -> ToolModel:
    writer = ExpressionWriter(_optional_args(tool), checked.repetitions)
    base = ("tools", name)
    required = list(tool.required) if tool.required is not None else list(tool.parameters)
    parameters: dict[str, Any] = {"type": "object", "properties": dict(tool.parameters)}
    if required:
        parameters["required"] = required
    parameters["additionalProperties"] = False
    model = ToolModel(name, cls, tool.description, parameters, tool.timeout, tool.terminal)
    if isinstance(tool.when, str) and (*base, "when") in checked.expressions:  # one condition
        model.guard = writer.write(checked.expressions[(*base, "when")].node)
        model.guard_text = " ".join(tool.when.split())
    elif tool.when is False:
        model.guard, model.guard_text = "False", "false"
    if tool.returns is not None:
        model.returns = writer.write(checked.expressions[(*base, "returns")].node)
    for i in range(len(tool.effect)):
        path = (*base, "effect", i)
        model.effects += writer.statement(checked.statements[path], checked.value_types.get(path))
    model.observe = tool.observe
    return model


def _server_variable(name: str) -> str:
    # MCP_ + an identifier: never a keyword, never one of the module's own names
    return "MCP_" + name.upper()


def _connection(name: str, server: McpServerSpec) -> dict[str, Any]:
    command = server.command
    connection: dict[str, Any] = {
        "name": name,
        "command": shlex.split(command) if isinstance(command, str) else command,
        "url": server.url,
        "env": dict(server.env),
        "timeout": server.timeout,
        # the size limits only where the spec sets them: the runtime has the same defaults
        **{
            key: getattr(server, key)
            for key in ("max_result_bytes", "max_log_bytes")
            if key in server.model_fields_set
        },
        "sessions": "episode" if server.openenv else server.sessions,
        "openenv": server.openenv or None,
        "reset": dict(server.reset) or None,
        "reset_from_sample": dict(server.reset_from_sample) or None,
    }
    return {k: v for k, v in connection.items() if v is not None}


def _mcp_tool_model(tool: McpTool, cls: str) -> ToolModel:
    model = ToolModel(
        tool.name, cls, tool.pin.description, dict(tool.pin.parameters), tool.server.timeout, False
    )
    model.mcp_server = _server_variable(tool.server_name)
    return model
