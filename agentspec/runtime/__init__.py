"""The runtime generated code stands on: five layers, step-level trajectories, policies.

Layers (DESIGN.md §4): :class:`BaseTool` → :class:`ToolEnv` / :class:`AgentEnv`
→ :class:`AgentEnvLoop` / :class:`AgentFlowBase`. Importing this package does not
import torch or transformers; ``agentspec.runtime.policies.hf.HFPolicy`` and
``agentspec.runtime.tiny_model`` do.

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

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from agentspec.runtime.rows import TrainingRow, training_rows
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
        Trajectory,
        read_jsonl,
        write_jsonl,
    )

# Names are imported on first use (PEP 562), so that `agentspec validate` can
# use one light module (the tool-call formats) without the whole runtime.
_LAZY: dict[str, str] = {
    "Action": "agentspec.runtime.trajectory",
    "AgentEnv": "agentspec.runtime.envs",
    "AgentEnvLoop": "agentspec.runtime.loop",
    "AgentFlowBase": "agentspec.runtime.loop",
    "BPETokenizer": "agentspec.runtime.tokenizer",
    "BaseTool": "agentspec.runtime.tools",
    "BatchingPolicy": "agentspec.runtime.policies",
    "ChatTemplate": "agentspec.runtime.tokenizer",
    "ContextOverflowError": "agentspec.runtime.context",
    "ContextPolicy": "agentspec.runtime.context",
    "ContextView": "agentspec.runtime.context",
    "CustomContext": "agentspec.runtime.context",
    "Event": "agentspec.runtime.trajectory",
    "EventKind": "agentspec.runtime.trajectory",
    "FORMAT_VERSION": "agentspec.runtime.trajectory",
    "FormatError": "agentspec.runtime.formats",
    "FullHistory": "agentspec.runtime.context",
    "Generation": "agentspec.runtime.policies",
    "LoopConfig": "agentspec.runtime.loop",
    "Observation": "agentspec.runtime.trajectory",
    "OpenAIPolicy": "agentspec.runtime.policies",
    "Overflow": "agentspec.runtime.context",
    "ParsedResponse": "agentspec.runtime.formats",
    "Policy": "agentspec.runtime.policies",
    "Prompt": "agentspec.runtime.context",
    "SamplingParams": "agentspec.runtime.policies",
    "ScriptedPolicy": "agentspec.runtime.policies",
    "SlidingWindow": "agentspec.runtime.context",
    "StateSummary": "agentspec.runtime.context",
    "Step": "agentspec.runtime.trajectory",
    "StepResult": "agentspec.runtime.envs",
    "TerminationReason": "agentspec.runtime.trajectory",
    "TokenBudget": "agentspec.runtime.context",
    "Tokenizer": "agentspec.runtime.tokenizer",
    "ToolCall": "agentspec.runtime.trajectory",
    "ToolCallFormat": "agentspec.runtime.formats",
    "ToolContext": "agentspec.runtime.tools",
    "ToolEnv": "agentspec.runtime.envs",
    "ToolOutput": "agentspec.runtime.tools",
    "ToolResult": "agentspec.runtime.tools",
    "TrainingRow": "agentspec.runtime.rows",
    "Trajectory": "agentspec.runtime.trajectory",
    "available_context_policies": "agentspec.runtime.context",
    "available_formats": "agentspec.runtime.formats",
    "get_format": "agentspec.runtime.formats",
    "load_tokenizer": "agentspec.runtime.tokenizer",
    "make_context_policy": "agentspec.runtime.context",
    "read_jsonl": "agentspec.runtime.trajectory",
    "register_context_policy": "agentspec.runtime.context",
    "register_format": "agentspec.runtime.formats",
    "run_episodes": "agentspec.runtime.loop",
    "training_rows": "agentspec.runtime.rows",
    "write_jsonl": "agentspec.runtime.trajectory",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
