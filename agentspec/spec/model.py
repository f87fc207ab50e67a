"""The data model of the spec language (version 1).

One pydantic model per section of DESIGN.md §2. Models are strict: unknown
keys are errors, so a typo never silently turns into a default. Every field
has a description: they become the JSON Schema's documentation (`agentspec
schema`) and the language reference.

Expressions, effect statements and templates are plain strings here; the
compiler parses and checks them with positions from the source map. The
building blocks live in :mod:`.base`, the `training` and `tests` sections in
:mod:`.training` and :mod:`.testing`; every model is importable from here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from agentspec.core.contexts import CONTEXT_POLICIES
from agentspec.spec.base import (
    DOTTED_NAME,
    LANGUAGE_VERSION,
    Algorithm,
    ContextPolicyName,
    Expression,
    GuardStepText,
    Identifier,
    ImportPath,
    Section,
    Statement,
    Template,
    ToolFormat,
    TypeName,
)
from agentspec.spec.mcp import McpServerSpec, McpToolSpec
from agentspec.spec.testing import (
    Ending,
    ExploreGateSpec,
    OracleGateSpec,
    SpecTest,
    SpecTestExpect,
    TestsSpec,
    TextMatch,
)
from agentspec.spec.training import TrainingSpec
from agentspec.spec.user import UserSpec

__all__ = [
    "LANGUAGE_VERSION",
    "Algorithm",
    "ContextPolicyName",
    "ContextSpec",
    "DataSpec",
    "Ending",
    "EnvironmentSpec",
    "EpisodeSpec",
    "ExploreGateSpec",
    "Expression",
    "FunctionSpec",
    "Guard",
    "GuardSpec",
    "GuardStep",
    "GuardStepText",
    "Identifier",
    "ImportPath",
    "McpServerSpec",
    "McpToolSpec",
    "OracleEach",
    "OracleGateSpec",
    "OracleHook",
    "OracleStep",
    "PromptSpec",
    "RewardEvent",
    "RewardSpec",
    "Section",
    "SpecTest",
    "SpecTestExpect",
    "StateVar",
    "Statement",
    "TaskSpec",
    "Template",
    "TestsSpec",
    "TextMatch",
    "ToolFormat",
    "ToolSpec",
    "TrainingSpec",
    "TypeName",
]

MAX_NAME_LENGTH = 100
"""Longest task name: it names files (the generated module, run folders, packages),
and a file name has at most 255 bytes."""


MAX_TOKENS = 1 << 20
"""The most tokens a turn or a prompt may be given: past any model's context, and a
bound on what one step may generate (10**12 hung training's first evaluation)."""


class DataSpec(Section):
    """Where samples come from and what fields each sample has."""

    source: str = Field(
        description="`jsonl:PATH`, `parquet:PATH`, `hf:DATASET_ID` (a config goes in `params: {name: …}`), or `generator:NAME` for a procedural source. Paths may use `${AGENTSPEC_DATA}`.",
        pattern=r"^(jsonl|parquet|hf|generator):\S+$",
    )
    split: str = Field(
        "train",
        description="Split to train on, for `hf:` sources and generators (a `jsonl:` or `parquet:` file has no splits, E210).",
    )
    eval_split: str | None = Field(
        None,
        description="Split held out for evaluation (`hf:` sources and generators). Without one, a generator's `test` split is held out, and other data's last `training.eval_samples` samples, which training then leaves out.",
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description="Parameters passed to a generator or loader."
    )
    fields: dict[Identifier, TypeName] = Field(
        default_factory=dict,
        description="The typed fields of one sample, readable as `sample.NAME`. Every row must have them, with values of these types (an int is a float; a boolean is not an int): `validate` checks the first row of a data file (E907; the types in JSONL), loading the samples checks every row it reads.",
    )
    derived: dict[Identifier, Expression] = Field(
        default_factory=dict,
        description="Fields computed from each sample by an expression over `sample`.",
    )
    limit: int | None = Field(
        None, ge=1, description="Use at most this many samples (of every split: the first ones)."
    )
    public: list[Identifier] = Field(
        default_factory=list,
        description="Fields a served spec (`agentspec serve`, the generated packages) gives its clients in each task besides those the agent's templates read (the prompt, `observe`, guard messages, `context.summary`), which are served anyway. Every other field is the grader's (an answer, an expected result) and is never served. See docs/openenv.md.",
    )


class PromptSpec(Section):
    """The first prompt of an episode, rendered from the sample."""

    system: Template = Field("", description="System message template over `sample`.")
    user: Template = Field(description="First user message template over `sample`.")


class StateVar(Section):
    """One typed variable of the episode state."""

    type: TypeName = Field(description="Type of the variable.")
    initial: Any = Field(
        None,
        description="Initial value at the start of each episode; defaults to the type's empty value ('' , 0, 0.0, false, [], {}), or null for optional types. A string is an expression over `sample` and `constants` (e.g. `sample.start`), evaluated when each episode starts, and the value is copied, so state never aliases the sample; except that for a `str` or `any` variable, a string that reads neither `sample` nor `constants` is the text itself (`initial: search`).",
    )
    description: str = Field("", description="What the variable means.")
    public: bool = Field(
        False,
        description="Serve the variable in a served spec's `state` reply although no template the agent sees (`observe`, guard messages, `context.summary`) reads it; those a template reads are served anyway. Every other variable is the grader's and is never served. See docs/openenv.md.",
    )


class FunctionSpec(Section):
    """A Python function the expressions may call, declared with its signature."""

    impl: str = Field(
        description="`module.path:attribute` of the user's code, or `stdlib:NAME` for agentspec's library.",
        pattern=rf"^({DOTTED_NAME}:{DOTTED_NAME}|stdlib:[A-Za-z_]\w*)$",
    )
    params: list[TypeName] | None = Field(
        None, description="Parameter types, in order; omit to accept any arguments."
    )
    returns: TypeName = Field("any", description="Return type.")
    config: dict[str, Any] = Field(
        default_factory=dict,
        description="Makes `impl` a factory: called once, as `impl(**config)`, it returns the function the expressions call (with `params`). A relative file path among the values is read from the spec's folder. `validate` checks the shape from the source of a plain `def` or `class` without running it (E902), and imported with `--import`.",
    )
    description: str = Field("", description="What the function does.")


class GuardSpec(Section):
    """A guard with the message the model sees when it fails."""

    condition: Expression = Field(
        alias="if",
        description="The call may run only when this is true; may read `args`, `state`, `sample`, `step`, `constants`.",
    )
    message: Template = Field(
        description="Template of the refusal the model sees, verbatim (over `args`, `state`, `sample`, `step`, `constants`)."
    )


GuardStep = Annotated[
    GuardStepText | GuardSpec,
    Field(
        description="A condition, `{if: COND, message: TEMPLATE}`, `let NAME = EXPR`, or the name of a guard of `guards:`."
    ),
]
Guard = Annotated[
    GuardStepText | GuardSpec | list[GuardStep],
    Field(
        description="A condition, a guard with a message, the name of a named guard, or a list of those and `let` bindings, checked in order."
    ),
]


class ToolSpec(Section):
    """A tool the agent may call."""

    description: str = Field(description="What the tool does, shown to the model.")
    parameters: dict[Identifier, dict[str, Any]] = Field(
        default_factory=dict,
        description="JSON Schema of each argument (the `properties` of an object schema); readable as `args.NAME`. An argument the model leaves out is its schema's `default` where it has one, else none.",
    )
    required: list[Identifier] | None = Field(
        None, description="Required arguments; by default every parameter is required."
    )
    when: GuardStepText | bool | GuardSpec | list[GuardStep] | None = Field(
        None,
        description="Guard: the tool is available only when this holds; calling it otherwise is a tool error (event `guard_failed`). A condition, `{if: COND, message: TEMPLATE}`, the name of a guard of `guards:` — or a list of those and `let NAME = EXPR` bindings, checked in order, the first that fails giving the refusal.",
    )
    returns: Expression | None = Field(
        None, description="Expression whose value is the tool's result (`result`)."
    )
    effect: list[Statement] = Field(
        default_factory=list,
        description="Statements run in order after `returns`, updating `state`.",
    )
    observe: Template | None = Field(
        None,
        description="Template of what the model sees after the call (over `args`, `state`, `result`, `sample`); defaults to the result.",
    )
    terminal: bool = Field(False, description="Calling this tool ends the episode.")
    timeout: float = Field(
        30.0,
        gt=0,
        description="Seconds before the call is abandoned (finite: there is no unlimited timeout).",
    )


class EnvironmentSpec(Section):
    """An external environment adapter, instead of or beside tools."""

    adapter: str = Field(
        description="`textworld`, `alfworld`, `openenv` (a running OpenEnv server: docs/openenv.md), or `module.path:attribute` (your own `EnvironmentAdapter` class).",
        pattern=rf"^(textworld|alfworld|openenv|{DOTTED_NAME}:{DOTTED_NAME})$",
    )
    config: dict[str, Any] = Field(default_factory=dict, description="Adapter configuration.")
    admissible_commands: bool = Field(
        False, description="Show the environment's admissible commands in each observation."
    )


class ReasoningSpec(Section):
    """Reasoning models: what becomes of a turn's reasoning (`<think>…</think>`, harmony's analysis channel) in later prompts."""

    keep_in_history: bool | None = Field(
        None,
        description="Past turns' reasoning in later prompts: `null` as the model's chat template does, `true` kept (append-only: packed rows, even where the template would drop it), `false` dropped (each step's prompt re-rendered: per-step rows). Reasoning is always kept in the trajectory and trained like any response token.",
    )


class EpisodeSpec(Section):
    """How an episode runs and ends."""

    max_steps: int = Field(
        8, ge=1, le=1000, description="Agent turns before the episode is cut off."
    )
    tool_format: ToolFormat = Field("hermes", description="How the model writes tool calls.")
    done_when: Expression | bool | None = Field(
        None, description="The episode ends when this becomes true (checked after each step)."
    )
    success: Expression | bool | None = Field(
        None,
        description="Whether a finished episode succeeded (over `state`, `sample`, `reward`, `action`); used for metrics and evaluation.",
    )
    anchor: Expression | None = Field(
        None,
        description="Key of the environment state before each step; steps with equal anchors in one prompt group form GiGPO's step groups.",
    )
    max_response_tokens: int = Field(
        256, ge=1, le=MAX_TOKENS, description="Token limit of one model turn."
    )
    max_parse_errors: int | None = Field(
        None, ge=1, description="End the episode after this many malformed turns."
    )
    final_answer: Literal["end", "continue"] = Field(
        "end",
        description="What a turn without a tool call does: `end` the episode (it is the final answer) or `continue`.",
    )
    reasoning: ReasoningSpec | None = Field(
        None, description="Reasoning models: past turns' reasoning in later prompts."
    )


class ContextSpec(Section):
    """The context policy: what the model sees at each step."""

    policy: ContextPolicyName = Field(
        "full_history", description="How the prompt is built each step."
    )
    window: int | None = Field(
        None, ge=1, description="`sliding_window`: number of most recent steps kept."
    )
    max_prompt_tokens: int = Field(
        2048, ge=16, le=MAX_TOKENS, description="Token budget of one prompt."
    )
    overflow: Literal["truncate", "end", "error"] = Field(
        "end",
        description="When the prompt exceeds the budget: `truncate` the oldest steps, `end` the episode (reason context_overflow), or `error`: the episode ends as `env_error` naming the overflow (a failure `agentspec test` reports; other episodes and the run go on).",
    )
    summary: Template | None = Field(
        None,
        description="`state_summary`: the template rendered as the user message of each step's prompt (after the system prompt). It reads `state`, `sample`, `constants`, `step` (prints as the step's index; `.index`, `.max_steps`), `task` (the first user message), `last_observation` (what the last step's tool calls returned, `\"\"` before the first), `steps` (the steps so far, each with `.action_text` and `.observation`) and `env` (an environment adapter's facts).",
    )
    custom: ImportPath | None = Field(
        None,
        description="`custom`: a `ContextPolicy` subclass (built with `max_prompt_tokens` and `overflow`), or a function `fn(view)` returning the prompt as token ids or as chat messages (`[{role, content}]`). A target of another shape, or a result of another shape, ends each episode at its prompt with an error naming `context.custom` and its line (`env_error`).",
    )

    @model_validator(mode="after")
    def _policy_settings(self) -> ContextSpec:
        key = CONTEXT_POLICIES.get(self.policy).spec_setting
        if key is not None and getattr(self, key) is None:
            raise ValueError(f"context policy '{self.policy}' needs `{key}`")
        return self


RewardEvent = Annotated[
    str,
    Field(
        pattern=r"^(step|final|parse_error|truncated|(tool|tool_error|guard_failed):[A-Za-z_][A-Za-z0-9_]*|tool_error|guard_failed)$",
        description="When the component is evaluated: `step`, `final`, `tool:NAME`, `parse_error`, `tool_error`, `tool_error:NAME`, `guard_failed`, `guard_failed:NAME` or `truncated`.",
    ),
]


class RewardSpec(Section):
    """One named reward component; each is logged on its own."""

    on: RewardEvent = Field(
        description="When the component is evaluated: `step`, `final`, `tool:NAME` (a successful call), `tool_error` / `tool_error:NAME` (a failed call, any reason), `guard_failed` / `guard_failed:NAME` (a call refused by its guard), `parse_error` or `truncated`; see docs/episodes.md."
    )
    value: Expression | float = Field(description="A number or an expression giving one.")
    weight: float = Field(
        1.0,
        description="Multiplier of this component in the step's reward (what training optimises, `expect.reward`); its own value (`reward.NAME`, `expect.rewards`, the logged `reward/NAME`) is before the weight.",
    )
    when: Expression | None = Field(None, description="Only counts when this is true.")


class OracleEach(Section):
    """A variable-length part of an oracle: one action per item of a list."""

    each: Expression = Field(
        description="A list expression over `sample` and `constants`; one action per item."
    )
    action: Template = Field(
        description="Template of the action for one item (`item`, its position `index`, `sample`, `constants`)."
    )


OracleStep = Annotated[
    Template | OracleEach,
    Field(
        description="An action template, or `{each: LIST, action: TEMPLATE}` for one action per item."
    ),
]


class OracleHook(Section):
    """An expert implemented in Python, or the environment's walkthrough."""

    hook: ImportPath | None = Field(
        None,
        description="A callable `(sample) -> list of action texts`: the expert's turns for a sample. After the last one the oracle answers with nothing (an empty final answer), as after the last entry of an `oracle:` list.",
    )
    walkthrough: bool = Field(False, description="Replay the environment adapter's walkthrough.")

    @model_validator(mode="after")
    def _one_kind(self) -> OracleHook:
        if (self.hook is None) == (not self.walkthrough):
            raise ValueError("an oracle needs exactly one of `hook` or `walkthrough: true`")
        return self


class TaskSpec(Section):
    """An agent task: tools, state, context policy, rewards and training. It needs at
    least one of `tools`, `mcp`, `environment` or `rewards`, or the model has nothing
    to act with and nothing to be rewarded for (E209)."""

    agentspec: Literal[1] = Field(description="Version of the spec language.")
    name: str = Field(
        description="Identifier of the task: a letter, then letters, digits, `_` or `-` (e.g. `my_task`), at most 100 characters (it names the generated module and run folders).",
        pattern=r"^[A-Za-z][A-Za-z0-9_-]*$",
        max_length=MAX_NAME_LENGTH,
    )
    description: str = Field("", description="What the task is.")
    data: DataSpec | None = Field(None, description="Where samples come from.")
    prompt: PromptSpec = Field(description="The first prompt.")
    constants: dict[Identifier, Any] = Field(
        default_factory=dict,
        description="Named values (their type is the value's), readable as `constants.NAME` in every expression and template.",
    )
    state: dict[Identifier, StateVar] = Field(
        default_factory=dict, description="Typed episode state, readable as `state.NAME`."
    )
    functions: dict[Identifier, FunctionSpec] = Field(
        default_factory=dict,
        description="Python functions the expressions may call (templates cannot: compute the"
        " value in an expression, such as the tool's `returns:`, and show `result`).",
    )
    guards: dict[Identifier, Guard] = Field(
        default_factory=dict,
        description="Named guards that tools share: a tool's `when` names one (`when: signed_in`, or an entry of its list). Each is a condition, `{if: COND, message: TEMPLATE}`, or a list of those, `let NAME = EXPR` bindings and other named guards; it may read `args` of every tool that uses it.",
    )
    tools: dict[Identifier, ToolSpec] = Field(
        default_factory=dict, description="The agent's tools."
    )
    mcp: dict[Identifier, McpServerSpec] = Field(
        default_factory=dict,
        description="MCP servers whose (pinned) tools the agent may call beside `tools`.",
    )
    environment: EnvironmentSpec | None = Field(None, description="External environment adapter.")
    episode: EpisodeSpec = Field(default_factory=EpisodeSpec, description="Episode rules.")
    context: ContextSpec = Field(default_factory=ContextSpec, description="The context policy.")
    rewards: dict[Identifier, RewardSpec] = Field(
        default_factory=dict, description="Named reward components."
    )
    oracle: list[OracleStep] | OracleHook | None = Field(
        None,
        description="An expert: a list of action templates over `sample` (one per step; an entry `{each: LIST, action: TEMPLATE}` gives one step per item), a Python hook, or the environment's walkthrough. Actions are rendered lazily, one per step; an action that renders empty ends the script.",
    )
    user: UserSpec | None = Field(
        None, description="A simulated user the agent talks with (docs/users.md)."
    )
    training: TrainingSpec = Field(default_factory=TrainingSpec, description="Training settings.")
    tests: TestsSpec = Field(
        default_factory=TestsSpec,
        description="Scripted episodes and the oracle gate, run by `agentspec test`.",
    )
