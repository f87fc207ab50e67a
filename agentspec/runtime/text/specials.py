"""A tokenizer's special tokens as text, and the pattern that finds them in a string.

Its own module because both the tokenizer wrapper and the fast codec need it,
and neither may import the other's module first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["SURROGATE", "special_pattern", "special_token_texts"]


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


def special_pattern(tokenizer: Any) -> re.Pattern[str]:
    texts = special_token_texts(tokenizer)
    pattern = _PATTERNS.get(texts)
    if pattern is None:  # lone surrogates too: no tokenizer can encode them
        alternatives = [*(re.escape(t) for t in texts), SURROGATE]
        pattern = _PATTERNS[texts] = re.compile("|".join(alternatives))
    return pattern


SURROGATE = "[\ud800-\udfff]"


_PATTERNS: dict[tuple[str, ...], re.Pattern[str]] = {}
