"""Reasoning in a response: a leading ``<think>…</think>`` block, or harmony's analysis channel.

Used to hand a past response to a chat template as the assistant message it
expects (the reasoning under ``reasoning_content`` for Qwen3-style templates,
``thinking`` for gpt-oss), so the template can keep or drop it as it does.
"""

from __future__ import annotations

from typing import Any

from agentspec.formats.harmony import HarmonyMessage, split_messages
from agentspec.formats.reasoning import DEFAULT_REASONING_TAGS
from agentspec.formats.reasoning import split_reasoning as split_blocks

__all__ = ["assistant_message", "split_reasoning"]


def split_reasoning(text: str) -> tuple[str, str]:
    """(reasoning, the rest) of a response, split by the tool-call formats' own rules:
    ``<think>…</think>`` blocks, or harmony's ``analysis`` channel. A block left open
    (the response was cut off) is not split: the template gets the text as written."""
    if "<|channel|>" in text:
        messages = [m for m in split_messages(text) if isinstance(m, HarmonyMessage)]
        if messages:
            thinking = "".join(m.content for m in messages if m.channel == "analysis")
            rest = "".join(m.content for m in messages if m.channel != "analysis")
            return thinking, rest
    split = split_blocks(text, DEFAULT_REASONING_TAGS)
    if split.reasoning is None or split.unclosed:
        return "", text
    return split.reasoning, split.answer.lstrip()


def assistant_message(text: str) -> dict[str, Any]:
    """A response as the assistant message templates read: the reasoning under the keys
    Qwen3 (``reasoning_content``) and gpt-oss (``thinking``) templates use."""
    reasoning, content = split_reasoning(text)
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning:
        message["reasoning_content"] = message["thinking"] = reasoning
    return message
