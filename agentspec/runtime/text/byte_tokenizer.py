"""A byte-level tokenizer that needs no training and no dependencies.

Ids 0–255 are the bytes of the UTF-8 text; the ChatML special tokens follow.
It is what `agentspec run` uses for policies that need no model (oracle,
random, scripted): every text round-trips exactly, and special tokens written
in the text (`<|im_end|>`) become their single ids, as in a real tokenizer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")


class ByteTokenizer:
    """Bytes plus ChatML specials; EOS is `<|im_end|>`, padding `<|endoftext|>`."""

    def __init__(self) -> None:
        self.special_ids = {token: 256 + i for i, token in enumerate(SPECIAL)}
        self.id_to_special = {i: t for t, i in self.special_ids.items()}
        self.eos_token = "<|im_end|>"
        self.pad_token = "<|endoftext|>"
        self.eos_token_id: int | None = self.special_ids[self.eos_token]
        self.pad_token_id: int | None = self.special_ids[self.pad_token]
        self._split = re.compile("(" + "|".join(re.escape(t) for t in SPECIAL) + ")")

    @property
    def vocab_size(self) -> int:
        return 256 + len(SPECIAL)

    def __len__(self) -> int:
        return self.vocab_size

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        ids: list[int] = []
        for piece in self._split.split(text):
            if piece in self.special_ids:
                ids.append(self.special_ids[piece])
            elif piece:
                ids.extend(piece.encode("utf-8"))
        return ids

    def decode(self, token_ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        out: list[str] = []
        buffer = bytearray()
        for token in token_ids:
            if token < 256:
                buffer.append(token)
                continue
            out.append(buffer.decode("utf-8", errors="replace"))
            buffer.clear()
            if not skip_special_tokens:
                out.append(self.id_to_special[token])
        out.append(buffer.decode("utf-8", errors="replace"))
        return "".join(out)

    def convert_tokens_to_ids(self, tokens: Any) -> Any:
        if isinstance(tokens, str):
            return self.special_ids.get(tokens)
        return [self.special_ids.get(t) for t in tokens]
