"""Reasoning text in a response: found first, never parsed for tool calls.

Thinking models (Qwen3, DeepSeek-R1, QwQ, …) write ``<think>…</think>`` before
acting. Every format except harmony (whose reasoning is its ``analysis``
channel) splits these blocks off before its own rules run. OPEN and CLOSE are
``<think>`` and ``</think>`` unless the format is made with other tags
(``get_format(name)`` uses the default; ``HermesFormat(reasoning_tags=("<reasoning>",
"</reasoning>"))`` uses others, ``reasoning_tags=None`` turns the split off):

- every ``OPEN…CLOSE`` block is reasoning, wherever it is; the blocks are
  joined by a blank line on :attr:`ParsedResponse.reasoning`;
- a ``CLOSE`` before any ``OPEN`` closes a block the prompt opened (templates
  that end the generation prompt with ``<think>``): the text before it is
  reasoning;
- an ``OPEN`` never closed (the model ran out of tokens while thinking) makes
  the rest of the response reasoning and the response an ``unclosed_reasoning``
  parse error: nothing runs and the model is told to close its reasoning;
- an ``OPEN`` inside a block is reasoning text; a ``CLOSE`` after the first
  block and outside any block is left in the answer, where the format's rules
  see it.

One left-to-right scan with ``str.find``: linear in the response's length.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_REASONING_TAGS", "ReasoningSplit", "split_reasoning"]

DEFAULT_REASONING_TAGS = ("<think>", "</think>")


@dataclass(frozen=True)
class ReasoningSplit:
    answer: str
    """The response without its reasoning blocks (what the format parses)."""
    reasoning: str | None
    """The reasoning blocks' text, stripped and joined by a blank line; None if none."""
    unclosed: bool = False
    """The last block was opened and never closed."""


def split_reasoning(text: str, tags: tuple[str, str] | None) -> ReasoningSplit:
    """Separate ``text`` into answer and reasoning at the ``tags`` (open, close)."""
    if tags is None:
        return ReasoningSplit(text, None)
    open_tag, close_tag = tags
    first_open, first_close = text.find(open_tag), text.find(close_tag)
    if first_open == -1 and first_close == -1:
        return ReasoningSplit(text, None)
    blocks: list[str] = []
    answer: list[str] = []
    pos = 0
    if first_close != -1 and (first_open == -1 or first_close < first_open):
        blocks.append(text[:first_close])  # the prompt opened this block
        pos = first_close + len(close_tag)
    while True:
        start = text.find(open_tag, pos)
        if start == -1:
            answer.append(text[pos:])
            return ReasoningSplit("".join(answer), _joined(blocks))
        answer.append(text[pos:start])
        body = start + len(open_tag)
        end = text.find(close_tag, body)
        if end == -1:
            blocks.append(text[body:])
            return ReasoningSplit("".join(answer), _joined(blocks), unclosed=True)
        blocks.append(text[body:end])
        pos = end + len(close_tag)


def _joined(blocks: list[str]) -> str:
    return "\n\n".join(b.strip() for b in blocks if b.strip())
