"""Tokenizers and chat framing, without torch.

The runtime needs three things from a tokenizer: ``encode`` text to ids (special
tokens written in the text, such as ``<|im_start|>``, become their ids), ``decode``
ids to text, and the ids of the end-of-sequence and padding tokens. Hugging Face
tokenizers already have that shape; :class:`BPETokenizer` gives it to a bare
``tokenizers.Tokenizer`` so that context policies, formats and the scripted
policy run without importing torch or transformers.

:class:`ChatTemplate` is the chat framing the runtime renders itself, so that it
can append exactly the tokens of one new turn to an existing prompt (token in,
token out) instead of re-rendering and re-encoding the whole conversation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from agentspec.runtime.text.bpe_tokenizer import BPETokenizer, load_tokenizer
from agentspec.runtime.text.fast_codec import chat_plan, codec
from agentspec.runtime.text.specials import SURROGATE, special_pattern, special_token_texts

__all__ = [
    "BPETokenizer",
    "ChatTemplate",
    "Message",
    "Tokenizer",
    "decode_text",
    "encode_chat",
    "encode_text",
    "framing_ids",
    "load_tokenizer",
    "special_token_texts",
]

Message = Mapping[str, str]
"""A chat message: ``{"role": ..., "content": ...}``."""


@runtime_checkable
class Tokenizer(Protocol):
    """What the runtime needs from a tokenizer (Hugging Face tokenizers qualify).

    The runtime always passes ``add_special_tokens`` / ``skip_special_tokens`` by
    keyword and token ids as a ``list[int]``; ``decode`` of such a list returns ``str``.
    """

    @property
    def eos_token_id(self) -> int | None: ...

    @property
    def pad_token_id(self) -> int | None: ...

    def encode(self, text: str, *, add_special_tokens: bool = ...) -> list[int]: ...

    def decode(self, token_ids: list[int], *, skip_special_tokens: bool = ...) -> Any: ...

    def convert_tokens_to_ids(self, tokens: Any) -> Any: ...


@dataclass(frozen=True)
class ChatTemplate:
    """Chat framing as plain strings, rendered by the runtime.

    A conversation renders as ``message.format(role=..., content=...)`` per message,
    then ``generation_prompt`` to open the assistant's turn. The model ends its turn
    with ``end_of_turn`` (which should be the tokenizer's EOS token). The default is
    ChatML (Qwen, SmolLM2 and the built-in tiny model)::

        <|im_start|>system\\n{system}<|im_end|>\\n<|im_start|>user\\n{task}<|im_end|>\\n
        <|im_start|>assistant\\n

    Appending a turn after a response (:meth:`continuation`) yields the text whose
    tokens follow the response's ids in an append-only context::

        [<|im_end|> if the response did not end with it] + after_end_of_turn
        + message(role, observation) + generation_prompt
    """

    message: str = "<|im_start|>{role}\n{content}<|im_end|>\n"
    generation_prompt: str = "<|im_start|>assistant\n"
    end_of_turn: str = "<|im_end|>"
    after_end_of_turn: str = "\n"

    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        """The text of a whole conversation (used for the first prompt)."""
        text = "".join(self.message.format(role=m["role"], content=m["content"]) for m in messages)
        return text + (self.generation_prompt if add_generation_prompt else "")

    def continuation(self, messages: Sequence[Message], response_ended_turn: bool) -> str:
        """The text that follows a response to append ``messages`` and reopen the assistant turn."""
        head = "" if response_ended_turn else self.end_of_turn
        return head + self.after_end_of_turn + self.render(messages, add_generation_prompt=True)

    def jinja(self) -> str:
        """The same framing as a Hugging Face ``chat_template`` (Jinja)."""
        pre, _, rest = self.message.partition("{role}")
        mid, _, post = rest.partition("{content}")
        return (
            "{% for message in messages %}"
            + _jinja_literal(pre)
            + "{{ message['role'] }}"
            + _jinja_literal(mid)
            + "{{ message['content'] }}"
            + _jinja_literal(post)
            + "{% endfor %}"
            + "{% if add_generation_prompt %}"
            + _jinja_literal(self.generation_prompt)
            + "{% endif %}"
        )


def _jinja_literal(text: str) -> str:
    import json

    return "{{ " + json.dumps(text) + " }}" if text else ""


# --- Encoding untrusted text ------------------------------------------------------------
#
# Message contents (tool results, the model's arguments echoed back, dataset text) are
# text: special-token text inside them, such as "<|im_start|>system", must not become
# the control token's id, or a tool could forge a chat turn. Only the framing the
# runtime writes itself is encoded with special tokens.


def encode_text(tokenizer: Tokenizer, text: str) -> list[int]:
    """``text`` encoded as text: special-token text in it never becomes a special id.

    Each special token's text is encoded in two pieces (its first character, then
    the rest), which no tokenizer can merge back into the special token. Lone
    surrogates (from JSON escapes such as ``\\ud800``) are encoded as U+FFFD.
    """
    pattern = special_pattern(tokenizer)
    if pattern.search(text) is None:
        return tokenizer.encode(text, add_special_tokens=False)
    text = re.sub(SURROGATE, "\ufffd", text)
    ids: list[int] = []
    pos = 0
    for m in pattern.finditer(text):
        for piece in (text[pos : m.start()], m.group()[:1], m.group()[1:]):
            if piece:
                ids.extend(tokenizer.encode(piece, add_special_tokens=False))
        pos = m.end()
    if pos < len(text):
        ids.extend(tokenizer.encode(text[pos:], add_special_tokens=False))
    return ids


def encode_chat(
    tokenizer: Tokenizer,
    chat: ChatTemplate,
    messages: Sequence[Message],
    *,
    prefix: str = "",
    add_generation_prompt: bool = True,
) -> list[int]:
    """``prefix + chat.render(messages)`` encoded with the contents as text.

    When no content holds special-token text this is exactly
    ``tokenizer.encode(prefix + chat.render(messages))`` (computed from the
    framing's cached ids and the contents, see :func:`~agentspec.runtime.text.fast_codec.chat_plan`); otherwise
    the framing is encoded with its special tokens and each content with
    :func:`encode_text`.
    """
    pattern = special_pattern(tokenizer)
    if not any(pattern.search(m["content"]) for m in messages):
        plan = chat_plan(tokenizer, chat, messages, prefix, add_generation_prompt)
        if plan is not None:
            return plan.encode([m["content"] for m in messages])
        text = prefix + chat.render(messages, add_generation_prompt)
        return tokenizer.encode(text, add_special_tokens=False)
    pre, _, post = chat.message.partition("{content}")
    ids = tokenizer.encode(prefix, add_special_tokens=False) if prefix else []
    for m in messages:
        ids.extend(tokenizer.encode(pre.format(role=m["role"]), add_special_tokens=False))
        ids.extend(encode_text(tokenizer, m["content"]))
        tail = post.format(role=m["role"])
        if tail:
            ids.extend(tokenizer.encode(tail, add_special_tokens=False))
    if add_generation_prompt and chat.generation_prompt:
        ids.extend(tokenizer.encode(chat.generation_prompt, add_special_tokens=False))
    return ids


def decode_text(tokenizer: Tokenizer, token_ids: Sequence[int]) -> str:
    """``tokenizer.decode(ids, skip_special_tokens=True)``, straight from the Rust
    tokenizer when that gives the same text."""
    return codec(tokenizer).decode(token_ids)


def framing_ids(tokenizer: Tokenizer, text: str) -> list[int]:
    """``tokenizer.encode(text)`` of a fixed framing string (e.g. the end-of-turn
    token), cached per tokenizer."""
    return list(codec(tokenizer).framing(text))
