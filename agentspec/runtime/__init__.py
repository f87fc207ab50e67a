"""The runtime generated code stands on: five layers, step-level trajectories, policies.

Layers (DESIGN.md §4): :class:`BaseTool` → :class:`ToolEnv` / :class:`AgentEnv`
→ :class:`AgentEnvLoop` / :class:`AgentFlowBase`. Importing this package does not
import torch or transformers; ``agentspec.runtime.policies.hf.HFPolicy`` and
``agentspec.runtime.text.tiny_model`` do.

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
    from agentspec.formats import (
        FormatError,
        ParsedResponse,
        ToolCallFormat,
        available_formats,
        get_format,
        register_format,
    )
    from agentspec.runtime.episode.context import (
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
    from agentspec.runtime.episode.envs import AgentEnv, StepResult, ToolEnv
    from agentspec.runtime.episode.loop import AgentEnvLoop, AgentFlowBase, LoopConfig, run_episodes
    from agentspec.runtime.episode.rows import TrainingRow, training_rows
    from agentspec.runtime.episode.tools import BaseTool, ToolContext, ToolOutput, ToolResult
    from agentspec.runtime.episode.trajectory import (
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
    from agentspec.runtime.policies import (
        BatchingPolicy,
        Generation,
        OpenAIPolicy,
        Policy,
        SamplingParams,
        ScriptedPolicy,
    )
    from agentspec.runtime.text.tokenizer import (
        BPETokenizer,
        ChatTemplate,
        Tokenizer,
        load_tokenizer,
    )

# Names are imported on first use (PEP 562), so that `agentspec validate` can
# use one light module (the tool-call formats) without the whole runtime.
_LAZY: dict[str, str] = {
    "Action": "agentspec.runtime.episode.trajectory",
    "AgentEnv": "agentspec.runtime.episode.envs",
    "AgentEnvLoop": "agentspec.runtime.episode.loop",
    "AgentFlowBase": "agentspec.runtime.episode.loop",
    "BPETokenizer": "agentspec.runtime.text.tokenizer",
    "BaseTool": "agentspec.runtime.episode.tools",
    "BatchingPolicy": "agentspec.runtime.policies",
    "ChatTemplate": "agentspec.runtime.text.tokenizer",
    "ContextOverflowError": "agentspec.runtime.episode.context",
    "ContextPolicy": "agentspec.runtime.episode.context",
    "ContextView": "agentspec.runtime.episode.context",
    "CustomContext": "agentspec.runtime.episode.context",
    "Event": "agentspec.runtime.episode.trajectory",
    "EventKind": "agentspec.runtime.episode.trajectory",
    "FORMAT_VERSION": "agentspec.runtime.episode.trajectory",
    "FormatError": "agentspec.formats",
    "FullHistory": "agentspec.runtime.episode.context",
    "Generation": "agentspec.runtime.policies",
    "LoopConfig": "agentspec.runtime.episode.loop",
    "Observation": "agentspec.runtime.episode.trajectory",
    "OpenAIPolicy": "agentspec.runtime.policies",
    "Overflow": "agentspec.runtime.episode.context",
    "ParsedResponse": "agentspec.formats",
    "Policy": "agentspec.runtime.policies",
    "Prompt": "agentspec.runtime.episode.context",
    "SamplingParams": "agentspec.runtime.policies",
    "ScriptedPolicy": "agentspec.runtime.policies",
    "SlidingWindow": "agentspec.runtime.episode.context",
    "StateSummary": "agentspec.runtime.episode.context",
    "Step": "agentspec.runtime.episode.trajectory",
    "StepResult": "agentspec.runtime.episode.envs",
    "TerminationReason": "agentspec.runtime.episode.trajectory",
    "TokenBudget": "agentspec.runtime.episode.context",
    "Tokenizer": "agentspec.runtime.text.tokenizer",
    "ToolCall": "agentspec.runtime.episode.trajectory",
    "ToolCallFormat": "agentspec.formats",
    "ToolContext": "agentspec.runtime.episode.tools",
    "ToolEnv": "agentspec.runtime.episode.envs",
    "ToolOutput": "agentspec.runtime.episode.tools",
    "ToolResult": "agentspec.runtime.episode.tools",
    "TrainingRow": "agentspec.runtime.episode.rows",
    "Trajectory": "agentspec.runtime.episode.trajectory",
    "available_context_policies": "agentspec.runtime.episode.context",
    "available_formats": "agentspec.formats",
    "get_format": "agentspec.formats",
    "load_tokenizer": "agentspec.runtime.text.tokenizer",
    "make_context_policy": "agentspec.runtime.episode.context",
    "read_jsonl": "agentspec.runtime.episode.trajectory",
    "register_context_policy": "agentspec.runtime.episode.context",
    "register_format": "agentspec.formats",
    "run_episodes": "agentspec.runtime.episode.loop",
    "training_rows": "agentspec.runtime.episode.rows",
    "write_jsonl": "agentspec.runtime.episode.trajectory",
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
