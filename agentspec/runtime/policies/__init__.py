"""Policies: what generates actions. ``HFPolicy`` (torch) lives in ``policies.hf``."""

from agentspec.runtime.episode.policy import (
    BatchingPolicy,
    ConversationPolicy,
    Generation,
    Policy,
    SamplingParams,
)
from agentspec.runtime.policies.chat import ChatPolicy
from agentspec.runtime.policies.openai import OpenAIPolicy
from agentspec.runtime.policies.scripted import ScriptedPolicy

__all__ = [
    "BatchingPolicy",
    "ChatPolicy",
    "ConversationPolicy",
    "Generation",
    "OpenAIPolicy",
    "Policy",
    "SamplingParams",
    "ScriptedPolicy",
]
