"""Start-up checks of a model's chat template: whether it only ever appends to a
conversation (prefix-stable), whether it refuses a system turn, and whether it
writes a tool call in a text the spec's format parses back."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentspec.runtime.text.chat_reasoning import assistant_message
from agentspec.runtime.text.jinja_chat import ChatTemplateError
from agentspec.runtime.text.tokenizer import Tokenizer

if TYPE_CHECKING:
    from agentspec.runtime.text.chat_templates import ModelTemplate

__all__ = ["Stability", "probe", "writes_calls_in"]

_HOLE = "AGENTSPECHOLE{}X"
"""A placeholder for a content: letters and digits only, so no template trims or escapes it."""


@dataclass(frozen=True)
class Stability:
    """Whether a template only ever appends to a conversation, and if not, where it rewrote it."""

    prefix_stable: bool
    reason: str = ""


_PROBE: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a careful assistant."},
    {"role": "user", "content": "What is two plus two?"},
    assistant_message("<think>Two plus two is four.</think>I will check with the tool."),
    {"role": "user", "content": "The tool says 4."},
    assistant_message("<think>The tool agrees.</think>The answer is 4."),
    {"role": "user", "content": "Thank you."},
]


def _stability(
    template: ModelTemplate, tokenizer: Tokenizer | None, keep_reasoning: bool | None
) -> Stability:
    """The probe's verdict under the spec's ``episode.reasoning.keep_in_history``."""
    if keep_reasoning is False:
        return Stability(
            False, "episode.reasoning.keep_in_history is false: past reasoning is dropped"
        )
    if keep_reasoning is None:
        return probe(template, tokenizer)
    # kept: the responses stay as the model wrote them, so only the framing must be stable
    found = probe(template, tokenizer, with_reasoning=False)
    if found.prefix_stable:
        return found
    return Stability(False, f"keep_in_history cannot hold: {found.reason}")


def probe(
    template: ModelTemplate, tokenizer: Tokenizer | None = None, with_reasoning: bool = True
) -> Stability:
    """Render a probe conversation one turn at a time: each rendering (and its tokens)
    must extend the previous one, and a response's placeholder must come right after
    the generation prompt. ``with_reasoning=False``: the assistant turns carry no reasoning."""
    conversation = [
        m
        if with_reasoning or m["role"] != "assistant"
        else {"role": "assistant", "content": m["content"]}
        for m in _PROBE
    ]
    renders = []
    try:
        for n in range(2, len(conversation) + 1):
            generation = conversation[n - 1]["role"] != "assistant"
            renders.append((n, template.render(conversation[:n], None, generation)))
        hole = _HOLE.format(0)
        start = template.render(_PROBE[:2], None, True)
        placed = template.render([*_PROBE[:2], {"role": "assistant", "content": hole}], None, False)
    except ChatTemplateError as exc:
        return Stability(False, str(exc))
    if not placed.startswith(start) or hole not in placed[len(start) :]:
        return Stability(False, "a response does not follow the generation prompt")
    for (_, before), (n, after) in itertools.pairwise(renders):
        if not after.startswith(before):
            role = _PROBE[n - 1]["role"]
            return Stability(False, f"adding a {role} turn rewrites an earlier turn")
        if tokenizer is not None:
            head = tokenizer.encode(before, add_special_tokens=False)
            if tokenizer.encode(after, add_special_tokens=False)[: len(head)] != head:
                return Stability(
                    False,
                    f"the tokens of a {_PROBE[n - 1]['role']} turn merge with the previous turn",
                )
    return Stability(True)


def _refuses_system(template: ModelTemplate) -> bool:
    """Whether the template refuses a system turn but renders the same conversation without it."""
    user = [{"role": "user", "content": "Hello."}]
    try:
        template.render(user, None, True)
    except ChatTemplateError:
        return False
    try:
        template.render([{"role": "system", "content": "Be brief."}, *user], None, True)
    except ChatTemplateError:
        return True
    return False


def writes_calls_in(template: ModelTemplate, fmt: Any) -> bool:
    """Whether the template writes an assistant's tool call in a text ``fmt`` parses back."""
    schema = {
        "type": "function",
        "function": {
            "name": "probe_tool",
            "description": "A probe.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    }
    call = {
        "id": "call_0",
        "type": "function",
        "function": {"name": "probe_tool", "arguments": {"query": "probe"}},
    }
    asked = [{"role": "user", "content": "Probe."}]
    try:
        before = template.render(asked, [schema], True)
        after = template.render(
            [*asked, {"role": "assistant", "content": "", "tool_calls": [call]}], [schema], False
        )
    except ChatTemplateError:
        return False
    if not after.startswith(before):
        return False
    parsed = fmt.parse(after[len(before) :])
    return [(c.name, c.arguments) for c in parsed.calls] == [("probe_tool", {"query": "probe"})]
