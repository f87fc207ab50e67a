"""Reasoning in a response: a leading ``<think>…</think>`` block, or harmony's analysis channel.

Used to hand a past response to a chat template as the assistant message it
expects (the reasoning under ``reasoning_content`` for Qwen3-style templates,
``thinking`` for gpt-oss), so the template can keep or drop it as it does.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["assistant_message", "split_reasoning"]


_THINK = re.compile(r"\s*<think>(.*?)</think>\s*", re.DOTALL)
_HARMONY = re.compile(
    r"(?:<\|start\|>assistant)?<\|channel\|>(\w+)[^<]*(?:<\|constrain\|>[^<]*)?<\|message\|>"
    r"(.*?)(?:<\|end\|>|<\|call\|>|<\|return\|>|(?=<\|start\|>)|$)",
    re.DOTALL,
)


def split_reasoning(text: str) -> tuple[str, str]:
    """(reasoning, the rest) of a response: a leading ``<think>…</think>`` block, or
    harmony's ``analysis`` channel. The reasoning is never parsed for tool calls."""
    if "<|channel|>" in text:
        parts = _HARMONY.findall(text)
        if parts:
            thinking = "".join(body for channel, body in parts if channel == "analysis")
            rest = "".join(body for channel, body in parts if channel != "analysis")
            return thinking, rest
    match = _THINK.match(text)
    if match:
        return match.group(1).strip(), text[match.end() :]
    return "", text


def assistant_message(text: str) -> dict[str, Any]:
    """A response as the assistant message templates read: the reasoning under the keys
    Qwen3 (``reasoning_content``) and gpt-oss (``thinking``) templates use."""
    reasoning, content = split_reasoning(text)
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning:
        message["reasoning_content"] = message["thinking"] = reasoning
    return message
