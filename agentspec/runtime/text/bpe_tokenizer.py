"""agentspec's own tokenizer: a bare Rust ``tokenizers.Tokenizer`` with the interface
the runtime needs (no torch, no transformers)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["BPETokenizer", "load_tokenizer"]


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
