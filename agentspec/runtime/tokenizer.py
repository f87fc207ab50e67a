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

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

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


class BPETokenizer:
    """A ``tokenizers.Tokenizer`` with the :class:`Tokenizer` interface (no torch).

    Args:
        tokenizer: the Rust tokenizer (e.g. ``tokenizers.Tokenizer.from_file``).
        eos_token: the token that ends a turn / a generation.
        pad_token: the padding token (defaults to ``eos_token``).
    """

    def __init__(self, tokenizer: Any, eos_token: str, pad_token: str | None = None) -> None:
        self._tok = tokenizer
        self.eos_token = eos_token
        self.pad_token = pad_token or eos_token
        eos = tokenizer.token_to_id(eos_token)
        pad = tokenizer.token_to_id(self.pad_token)
        if eos is None or pad is None:
            raise ValueError(f"tokenizer has no token {eos_token!r} or {self.pad_token!r}")
        self.eos_token_id: int | None = int(eos)
        self.pad_token_id: int | None = int(pad)

    @property
    def vocab_size(self) -> int:
        return int(self._tok.get_vocab_size())

    def __len__(self) -> int:
        return self.vocab_size

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=add_special_tokens).ids)

    def decode(self, token_ids: Sequence[int], *, skip_special_tokens: bool = False) -> str:
        return str(self._tok.decode(list(token_ids), skip_special_tokens=skip_special_tokens))

    def convert_tokens_to_ids(self, tokens: Any) -> Any:
        if isinstance(tokens, str):
            return self._tok.token_to_id(tokens)
        return [self._tok.token_to_id(t) for t in tokens]


def load_tokenizer(directory: str | os.PathLike[str]) -> BPETokenizer:
    """Load ``tokenizer.json`` (+ ``tokenizer_config.json``) from a directory, without torch."""
    import json

    from tokenizers import Tokenizer as RustTokenizer

    path = Path(directory)
    rust = RustTokenizer.from_file(str(path / "tokenizer.json"))
    config: dict[str, Any] = {}
    if (path / "tokenizer_config.json").exists():
        config = json.loads((path / "tokenizer_config.json").read_text())

    def _name(value: Any) -> str | None:
        if isinstance(value, dict):
            return str(value.get("content"))
        return None if value is None else str(value)

    eos = _name(config.get("eos_token")) or "<|im_end|>"
    pad = _name(config.get("pad_token"))
    return BPETokenizer(rust, eos_token=eos, pad_token=pad)


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


def special_token_texts(tokenizer: Any) -> tuple[str, ...]:
    """The text of every special token of ``tokenizer`` (longest first; cached)."""
    key = id(tokenizer)
    cached = _SPECIALS.get(key)
    if cached is None or cached[0] is not tokenizer:
        cached = (tokenizer, _find_special_texts(tokenizer))
        _SPECIALS[key] = cached
    return cached[1]


_SPECIALS: dict[int, tuple[Any, tuple[str, ...]]] = {}


def _find_special_texts(tokenizer: Any) -> tuple[str, ...]:
    found: set[str] = set()
    inner = getattr(tokenizer, "_tok", None)  # BPETokenizer's Rust tokenizer
    decoders = [getattr(tokenizer, "added_tokens_decoder", None)]  # Hugging Face
    if inner is not None and hasattr(inner, "get_added_tokens_decoder"):
        decoders.append(inner.get_added_tokens_decoder())
    for decoder in decoders:
        if isinstance(decoder, Mapping):
            found.update(str(t.content) for t in decoder.values() if getattr(t, "special", False))
    found.update(getattr(tokenizer, "special_ids", {}))  # the byte tokenizer
    found.update(str(t) for t in getattr(tokenizer, "all_special_tokens", None) or ())
    return tuple(sorted((t for t in found if len(t) > 1), key=len, reverse=True))


def _special_pattern(tokenizer: Any) -> re.Pattern[str]:
    texts = special_token_texts(tokenizer)
    pattern = _PATTERNS.get(texts)
    if pattern is None:  # lone surrogates too: no tokenizer can encode them
        alternatives = [*(re.escape(t) for t in texts), _SURROGATE]
        pattern = _PATTERNS[texts] = re.compile("|".join(alternatives))
    return pattern


_SURROGATE = "[\ud800-\udfff]"


_PATTERNS: dict[tuple[str, ...], re.Pattern[str]] = {}


def encode_text(tokenizer: Tokenizer, text: str) -> list[int]:
    """``text`` encoded as text: special-token text in it never becomes a special id.

    Each special token's text is encoded in two pieces (its first character, then
    the rest), which no tokenizer can merge back into the special token. Lone
    surrogates (from JSON escapes such as ``\\ud800``) are encoded as U+FFFD.
    """
    pattern = _special_pattern(tokenizer)
    if pattern.search(text) is None:
        return tokenizer.encode(text, add_special_tokens=False)
    text = re.sub(_SURROGATE, "\ufffd", text)
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
    framing's cached ids and the contents, see :func:`_chat_plan`); otherwise
    the framing is encoded with its special tokens and each content with
    :func:`encode_text`.
    """
    pattern = _special_pattern(tokenizer)
    if not any(pattern.search(m["content"]) for m in messages):
        plan = _chat_plan(tokenizer, chat, messages, prefix, add_generation_prompt)
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
    return _codec(tokenizer).decode(token_ids)


def framing_ids(tokenizer: Tokenizer, text: str) -> list[int]:
    """``tokenizer.encode(text)`` of a fixed framing string (e.g. the end-of-turn
    token), cached per tokenizer."""
    return list(_codec(tokenizer).framing(text))


# --- The fast path ----------------------------------------------------------------------
#
# A rollout encodes the same framing around every turn and decodes every
# response. Two things make that cheap without changing a single id:
#
# * Calling the Rust tokenizer directly (agentspec's BPETokenizer, or a Hugging
#   Face fast tokenizer whose Python side adds nothing) instead of through the
#   Hugging Face wrapper's batch encoding.
# * Tokenizers split the text at special tokens before normalising,
#   pre-tokenising and merging, so a rendered conversation encodes as the
#   independent pieces between special tokens. The framing's pieces are encoded
#   once per (chat, roles, prefix); per call only the text around each content
#   (e.g. ``user\n`` + observation) is encoded. Whether a tokenizer splits that
#   way is not assumed but checked: on probe contents the plan must give exactly
#   the ids of encoding the whole text, or the whole text is encoded every time.


class _Codec:
    """The fast encode / decode of one tokenizer and its cached framing."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.rust = _rust_backend(tokenizer)
        self.hugging_face = self.rust is not None and not isinstance(tokenizer, BPETokenizer)
        self.bpe_model = self.rust is not None and type(self.rust.model).__name__ == "BPE"
        self.plans: dict[Any, _ChatPlan | None] = {}
        self._framing: dict[str, list[int]] = {}
        self._segments: dict[str, tuple[int, ...]] = {}

    def _direct(self) -> bool:
        """The Rust tokenizer encodes as ``tokenizer.encode`` would (no truncation,
        padding or split special tokens left set on it by another caller)."""
        rust = self.rust
        if rust is None:
            return False
        if not self.hugging_face:
            return True
        split = bool(getattr(self.tokenizer, "split_special_tokens", False))
        return (
            rust.truncation is None and rust.padding is None and rust.encode_special_tokens == split
        )

    def encode(self, text: str) -> list[int]:
        if self._direct():
            return self.rust.encode(text, add_special_tokens=False).ids  # type: ignore[union-attr]
        return self.tokenizer.encode(text, add_special_tokens=False)

    def segment(self, text: str) -> list[int] | tuple[int, ...]:
        """The ids of one piece of text between special tokens, remembered: the
        first messages repeat across episodes (the same system prompt for every
        sample), so most of a first prompt is encoded once."""
        ids = self._segments.get(text)
        if ids is None:
            if len(self._segments) >= _MAX_SEGMENTS:
                self._segments.clear()
            ids = self._segments[text] = tuple(self.encode(text))
        return ids

    def decode(self, token_ids: Sequence[int]) -> str:
        rust = self.rust
        if rust is None or (self.hugging_face and self._cleans_up()):
            return self.tokenizer.decode(list(token_ids), skip_special_tokens=True)
        return str(rust.decode(list(token_ids), skip_special_tokens=True))

    def _cleans_up(self) -> bool:
        """Whether the Hugging Face wrapper edits the decoded text (its
        ``clean_up_tokenization_spaces``; transformers 5 skips that for BPE models
        unless told otherwise)."""
        tokenizer = self.tokenizer
        if not getattr(tokenizer, "clean_up_tokenization_spaces", True):
            return False
        forced = getattr(
            tokenizer,
            "clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output",
            None,
        )
        return forced is None or bool(forced) or not self.bpe_model

    def framing(self, text: str) -> list[int]:
        ids = self._framing.get(text)
        if ids is None:
            if len(self._framing) >= _MAX_CACHED:
                self._framing.clear()
            ids = self._framing[text] = self.tokenizer.encode(text, add_special_tokens=False)
        return ids


_MAX_CACHED = 256
_MAX_SEGMENTS = 256
_CODECS: dict[int, _Codec] = {}


def _codec(tokenizer: Any) -> _Codec:
    codec = _CODECS.get(id(tokenizer))
    if codec is None or codec.tokenizer is not tokenizer:
        if len(_CODECS) >= _MAX_CACHED:
            _CODECS.clear()
        codec = _CODECS[id(tokenizer)] = _Codec(tokenizer)
    return codec


_HF_ENTRY_POINTS = ("encode", "_encode_plus", "_batch_encode_plus", "encode_plus", "tokenize")
_HF_DECODE_POINTS = ("decode", "_decode")


def _rust_backend(tokenizer: Any) -> Any | None:
    """The Rust tokenizer behind ``tokenizer`` if encoding and decoding with it
    directly is what ``tokenizer`` itself does, else ``None``."""
    if isinstance(tokenizer, BPETokenizer):
        return tokenizer._tok
    base = next(
        (
            cls
            for cls in type(tokenizer).__mro__
            if cls.__module__.startswith("transformers.")
            and cls.__name__ in ("TokenizersBackend", "PreTrainedTokenizerFast")
        ),
        None,
    )
    if base is None:
        return None
    overridden = any(
        getattr(type(tokenizer), name, None) is not getattr(base, name, None)
        for name in (*_HF_ENTRY_POINTS, *_HF_DECODE_POINTS)
    )
    return None if overridden else getattr(tokenizer, "backend_tokenizer", None)


@dataclass(frozen=True)
class _Literal:
    """One fixed piece of rendered framing between two contents.

    ``lead`` joins the preceding content's text, ``fixed`` (the ids from its
    first to its last special token) stands alone, ``trail`` joins the next
    content's text. A piece without a special token is all ``lead``.
    """

    lead: str
    fixed: tuple[int, ...] | None
    trail: str


@dataclass(frozen=True)
class _ChatPlan:
    codec: _Codec
    literals: tuple[_Literal, ...]

    def encode(self, contents: Sequence[str]) -> list[int]:
        codec, last = self.codec, len(contents) - 1
        ids: list[int] = []
        pending = ""
        for i, literal in enumerate(self.literals):
            pending += literal.lead
            if literal.fixed is not None:
                if pending:
                    # Text up to an earlier message's end (a system prompt) repeats
                    # across episodes: remembered; the last message's is not.
                    ids += codec.segment(pending) if i <= last else codec.encode(pending)
                ids += literal.fixed
                pending = literal.trail
            if i <= last:
                pending += contents[i]
        if pending:
            ids += codec.encode(pending)
        return ids


_UNPLANNED = object()
_SENTINEL = "\ue000{}\ue001"
_PROBES = ("x", " a b \n", "\n\n1 2.5\n ", "  Ünï\tcode  ")


def _chat_plan(
    tokenizer: Any,
    chat: ChatTemplate,
    messages: Sequence[Message],
    prefix: str,
    add_generation_prompt: bool,
) -> _ChatPlan | None:
    """The cached plan for this framing, or ``None`` if it cannot be used."""
    codec = _codec(tokenizer)
    try:
        shape = tuple(tuple((k, v) for k, v in m.items() if k != "content") for m in messages)
        key = (chat, shape, prefix, add_generation_prompt)
        hash(key)
    except TypeError:  # an unhashable template or message field: no cache
        return None
    cached = codec.plans.get(key, _UNPLANNED)
    if cached is not _UNPLANNED:
        return cached  # type: ignore[return-value]
    plan = _build_plan(codec, chat, messages, prefix, add_generation_prompt)
    if len(codec.plans) >= _MAX_CACHED:
        codec.plans.clear()
    codec.plans[key] = plan
    return plan


def _build_plan(
    codec: _Codec,
    chat: ChatTemplate,
    messages: Sequence[Message],
    prefix: str,
    add_generation_prompt: bool,
) -> _ChatPlan | None:
    tokenizer = codec.tokenizer
    if not _splits_at_special_tokens(tokenizer):
        return None

    def render(contents: Sequence[str]) -> str:
        filled = [{**m, "content": c} for m, c in zip(messages, contents, strict=True)]
        return prefix + chat.render(filled, add_generation_prompt)

    sentinels = [_SENTINEL.format(i) for i in range(len(messages))]
    pieces = re.split("|".join(map(re.escape, sentinels)), render(sentinels))
    if len(pieces) != len(messages) + 1:
        return None
    pattern = _special_pattern(tokenizer)
    literals = []
    for i, piece in enumerate(pieces):
        found = list(pattern.finditer(piece))
        if not found:
            literals.append(_Literal(piece, None, ""))
            continue
        start = 0 if i == 0 else found[0].start()  # the first piece joins no content before it
        end = len(piece) if i == len(pieces) - 1 else found[-1].end()
        fixed = tuple(tokenizer.encode(piece[start:end], add_special_tokens=False))
        literals.append(_Literal(piece[:start], fixed, piece[end:]))
    plan = _ChatPlan(codec, tuple(literals))
    for probe in _PROBES:
        contents = [probe] * len(messages)
        expected = tokenizer.encode(render(contents), add_special_tokens=False)
        if plan.encode(contents) != list(expected):
            return None
    return plan


def _splits_at_special_tokens(tokenizer: Any) -> bool:
    """Whether ``tokenizer`` encodes the text between special tokens independently:
    the byte tokenizer, or a Rust tokenizer whose added tokens strip no whitespace."""
    from agentspec.runtime.byte_tokenizer import ByteTokenizer

    if type(tokenizer) is ByteTokenizer:
        return True
    rust = _codec(tokenizer).rust
    if rust is None or not hasattr(rust, "get_added_tokens_decoder"):
        return False
    return not any(
        t.lstrip or t.rstrip or t.single_word for t in rust.get_added_tokens_decoder().values()
    )
