"""The model of one generated module: everything `templates/module.py.j2`
renders, already in Python spelling (built by `lower.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentspec.compiler.literals import py_literal
from agentspec.compiler.lower_sections import GuardCheckModel, OracleStepModel


@dataclass
class StateField:
    name: str  # Python name
    spec_name: str
    annotation: str
    default: Any

    @property
    def mutable(self) -> bool:
        return isinstance(self.default, (list, dict))

    @property
    def factory(self) -> str:
        """`default_factory` for a list or dict default: `list`, `dict`, or a lambda."""
        if not self.default:
            return type(self.default).__name__
        return f"lambda: {py_literal(self.default)}"


@dataclass
class ToolModel:
    spec_name: str
    class_name: str
    description: str
    parameters: dict[str, Any]
    timeout: float
    terminal: bool
    guard: str | None = None
    guard_text: str = ""
    returns: str | None = None
    effects: list[str] = field(default_factory=list)
    observe: str | None = None
    mcp_server: str | None = None
    """For a tool of an MCP server: the module variable holding the server."""
    guards: list[GuardCheckModel] = field(default_factory=list)  # `failed_guard`'s steps
    location: str = ""  # spec file:line of the tool, for errors in its expressions
    inline_reason: str | None = None
    """Why the tool's code may run on the event loop (`tool_cost.inline_reason`); None: a worker."""

    @property
    def rules(self) -> str:
        """The `ToolRules(...)` arguments: the methods this tool defines."""
        defined = {
            "available": self.guard is not None,
            "failed_guard": bool(self.guards),
            "returns": self.returns is not None,
            "effects": bool(self.effects),
        }
        return ", ".join(f"{name}={name}" for name, present in defined.items() if present)


@dataclass
class RewardModel:
    name: str
    on: str
    weight: float
    value: str
    when: str | None
    source: str


@dataclass
class FunctionModel:
    name: str
    impl: str
    config: dict[str, Any]


@dataclass
class ModuleModel:
    """Everything the module template needs, already in Python spelling."""

    spec_name: str
    spec_file: str  # the spec's file name: no directory, so output is the same from anywhere
    spec_sha256: str
    description: str
    version: str
    env_class: str
    flow_class: str
    env_base: str  # SpecToolEnv | SpecAdapterEnv
    layout: str  # packed | per_step
    state_fields: list[StateField]
    initial_exprs: list[tuple[str, str]]  # (Python field name, expression) set at reset
    locations: dict[str, str]  # dotted path of an env expression → spec file:line
    constants: dict[str, Any]
    tools: list[ToolModel]
    rewards: list[RewardModel]
    functions: list[FunctionModel]
    system_prompt: str
    user_prompt: str
    tool_format: str
    final_answer: str
    max_steps: int
    max_response_tokens: int
    max_parse_errors: int | None
    context_policy: str
    context_args: dict[str, Any]
    success: str | None
    done_when: str | None
    anchor: str | None
    data_source: str | None
    data_split: str
    data_eval_split: str | None
    data_params: dict[str, Any]
    data_fields: dict[str, str]
    data_limit: int | None
    derived: list[tuple[str, str]]
    oracle: list[OracleStepModel] | None
    oracle_hook: str | None
    oracle_walkthrough: bool
    adapter: str | None
    adapter_config: dict[str, Any]
    training: dict[str, Any]
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Module variable → how to reach one MCP server (command or url, env, timeout)."""
    keep_reasoning: bool | None = None
    """`episode.reasoning.keep_in_history` (None: as the model's chat template does)."""
    context_custom: tuple[str, str] | None = None
    """`context.custom`: the user's target and its spec file:line."""
    oracle_hook_location: str = ""
    """Spec file:line of `oracle.hook`, for the hook's errors."""
    public_fields: tuple[str, ...] | None = ()
    """The sample fields a served spec gives its clients (None: all): `visibility.py`."""
    public_state: tuple[str, ...] | None = ()
    """The `State` fields a served spec's `state` reply holds (None: all)."""
    user: Any = None
    """The `user:` section (`user_lower.UserModel`), or None."""

    @property
    def episode_rules(self) -> str:
        """The `EpisodeRules(...)` arguments: the methods the environment defines."""
        defined = {
            "initial_values": "initial_values" if self.initial_exprs else None,
            "success": "is_success" if self.success else None,
            "done_when": "is_done" if self.done_when else None,
            "anchor": "anchor_key" if self.anchor else None,
        }
        return ", ".join(f"{rule}={method}" for rule, method in defined.items() if method)
