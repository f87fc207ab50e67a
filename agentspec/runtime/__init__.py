"""The runtime generated code stands on: five layers, step-level trajectories, policies.

Layers (DESIGN.md §4): :class:`BaseTool` → :class:`ToolEnv` / :class:`AgentEnv`
→ :class:`AgentEnvLoop` / :class:`AgentFlowBase`. Importing this package does not
import torch or transformers; ``agentspec.runtime.policies.hf.HFPolicy`` and
``agentspec.runtime.models`` do.

How a task plugs in (what generated code subclasses and overrides):

- a tool: subclass :class:`BaseTool`; set ``name``, ``description``,
  ``parameters`` (JSON Schema, validated before ``execute``), ``timeout``;
  implement ``async execute(args, context) -> str | ToolOutput`` (``context.env``
  is the environment: ``.state``, ``.sample``); a ``when`` guard is
  ``guard(args, context) -> reason | None``. Failures become ``tool_error`` events.
- tools + a final answer: subclass :class:`ToolEnv` (``super().__init__(tools,
  tool_format)``), override ``initial_messages(sample)`` for the prompt and
  ``on_final(answer, action)`` for what a final answer does.
- a state machine: subclass :class:`AgentEnv`; ``async reset(sample) ->
  Observation(messages=...)``, ``async step(action) -> StepResult``.
- rewards: override ``AgentEnv.rewards(step) -> {name: value}``. It is called once
  per step after the loop has added its own events, so ``step.events`` holds
  every event key a spec reward can be ``on``: ``step``, ``final``,
  ``tool:NAME``, ``tool_error``, ``parse_error``, ``truncated``,
  ``response_truncated``; ``StepResult.rewards`` are merged in too. Also
  ``success(steps, results)`` and ``anchor()`` (state key before each step).
- the episode: ``AgentEnvLoop(env_factory, policy, tokenizer, context=...,
  config=LoopConfig(...))`` and ``await run_episodes(loop, samples, group_size)``
  → :class:`Trajectory` s → :func:`training_rows` for the trainer.
"""

from agentspec.runtime.context import (
    ContextOverflowError,
    ContextPolicy,
    ContextView,
    CustomContext,
    FullHistory,
    Overflow,
    Prompt,
    SlidingWindow,
    StateSummary,
    TokenBudget,
    available_context_policies,
    make_context_policy,
    register_context_policy,
)
from agentspec.runtime.envs import AgentEnv, StepResult, ToolEnv
from agentspec.runtime.formats import (
    FormatError,
    ParsedResponse,
    ToolCallFormat,
    available_formats,
    get_format,
    register_format,
)
from agentspec.runtime.loop import AgentEnvLoop, AgentFlowBase, LoopConfig, run_episodes
from agentspec.runtime.policies import (
    BatchingPolicy,
    Generation,
    OpenAIPolicy,
    Policy,
    SamplingParams,
    ScriptedPolicy,
)
from agentspec.runtime.tokenizer import BPETokenizer, ChatTemplate, Tokenizer, load_tokenizer
from agentspec.runtime.tools import BaseTool, ToolContext, ToolOutput, ToolResult
from agentspec.runtime.trajectory import (
    FORMAT_VERSION,
    Action,
    Event,
    EventKind,
    Observation,
    Step,
    TerminationReason,
    ToolCall,
    TrainingRow,
    Trajectory,
    read_jsonl,
    training_rows,
    write_jsonl,
)

__all__ = [
    "FORMAT_VERSION",
    "Action",
    "AgentEnv",
    "AgentEnvLoop",
    "AgentFlowBase",
    "BPETokenizer",
    "BaseTool",
    "BatchingPolicy",
    "ChatTemplate",
    "ContextOverflowError",
    "ContextPolicy",
    "ContextView",
    "CustomContext",
    "Event",
    "EventKind",
    "FormatError",
    "FullHistory",
    "Generation",
    "LoopConfig",
    "Observation",
    "OpenAIPolicy",
    "Overflow",
    "ParsedResponse",
    "Policy",
    "Prompt",
    "SamplingParams",
    "ScriptedPolicy",
    "SlidingWindow",
    "StateSummary",
    "Step",
    "StepResult",
    "TerminationReason",
    "TokenBudget",
    "Tokenizer",
    "ToolCall",
    "ToolCallFormat",
    "ToolContext",
    "ToolEnv",
    "ToolOutput",
    "ToolResult",
    "TrainingRow",
    "Trajectory",
    "available_context_policies",
    "available_formats",
    "get_format",
    "load_tokenizer",
    "make_context_policy",
    "read_jsonl",
    "register_context_policy",
    "register_format",
    "run_episodes",
    "training_rows",
    "write_jsonl",
]
