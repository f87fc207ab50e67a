"""The rollout's fast encode / decode path: exact ids, less work.

Used by :mod:`agentspec.runtime.text.tokenizer`'s ``encode_chat``, ``decode_text`` and
``framing_ids``; nothing else calls it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentspec.runtime.text.bpe_tokenizer import BPETokenizer
from agentspec.runtime.text.specials import special_pattern, special_token_texts

if TYPE_CHECKING:
    from agentspec.runtime.text.tokenizer import ChatTemplate, Message

__all__ = ["chat_plan", "codec"]


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
        self._special_texts: dict[int, str] = {}
        self._splits_checked: bool | None = None
        self._specials = re.compile("(?!)")  # the special tokens' texts, set by `_splits`

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

    def encode_rendered(self, text: str) -> list[int]:
        """``tokenizer.encode(text)`` of a rendered conversation, piece by piece between
        its special tokens (each piece remembered, see :meth:`segment`), where the
        tokenizer is checked to encode those pieces independently."""
        if not self._splits():
            return self.encode(text)
        ids: list[int] = []
        pos = 0
        for match in self._specials.finditer(text):
            if match.start() > pos:
                ids += self.segment(text[pos : match.start()])
            ids += self.framing(match.group())
            pos = match.end()
        if pos < len(text):
            ids += self.segment(text[pos:])
        return ids

    def _splits(self) -> bool:
        """Whether pieces between special tokens encode independently: asked of the
        tokenizer's added tokens, then shown on a probe text (once)."""
        if self._splits_checked is None:
            texts = special_token_texts(self.tokenizer)
            self._specials = re.compile("|".join(re.escape(t) for t in texts))
            probe = "".join(f"{t} a\n b{t}c " for t in texts[:8])
            self._splits_checked = (
                bool(texts)
                and _splits_at_special_tokens(self.tokenizer)
                and self._pieces(probe) == self.encode(probe)
            )
        return self._splits_checked

    def _pieces(self, text: str) -> list[int]:
        ids: list[int] = []
        pos = 0
        for match in self._specials.finditer(text):
            ids += self.encode(text[pos : match.start()]) if match.start() > pos else []
            ids += self.encode(match.group())
            pos = match.end()
        return ids + (self.encode(text[pos:]) if pos < len(text) else [])

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

    def special_text(self, token_id: int) -> str:
        """``tokenizer.decode([token_id], skip_special_tokens=False)`` where that text is
        a whole special token's (an end of turn), else ``""``; remembered per id."""
        text = self._special_texts.get(token_id)
        if text is None:
            if len(self._special_texts) >= _MAX_CACHED:
                self._special_texts.clear()
            decoded = self.tokenizer.decode([token_id], skip_special_tokens=False)
            special = bool(decoded) and special_pattern(self.tokenizer).fullmatch(decoded)
            text = self._special_texts[token_id] = decoded if special else ""
        return text

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


def codec(tokenizer: Any) -> _Codec:
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


def chat_plan(
    tokenizer: Any,
    chat: ChatTemplate,
    messages: Sequence[Message],
    prefix: str,
    add_generation_prompt: bool,
) -> _ChatPlan | None:
    """The cached plan for this framing, or ``None`` if it cannot be used."""
    fast = codec(tokenizer)
    try:
        shape = tuple(tuple((k, v) for k, v in m.items() if k != "content") for m in messages)
        key = (chat, shape, prefix, add_generation_prompt)
        hash(key)
    except TypeError:  # an unhashable template or message field: no cache
        return None
    cached = fast.plans.get(key, _UNPLANNED)
    if cached is not _UNPLANNED:
        return cached  # type: ignore[return-value]
    plan = _build_plan(fast, chat, messages, prefix, add_generation_prompt)
    if len(fast.plans) >= _MAX_CACHED:
        fast.plans.clear()
    fast.plans[key] = plan
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
    pattern = special_pattern(tokenizer)
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
    from agentspec.runtime.text.byte_tokenizer import ByteTokenizer

    if type(tokenizer) is ByteTokenizer:
        return True
    rust = codec(tokenizer).rust
    if rust is None or not hasattr(rust, "get_added_tokens_decoder"):
        return False
    return not any(
        t.lstrip or t.rstrip or t.single_word for t in rust.get_added_tokens_decoder().values()
    )
