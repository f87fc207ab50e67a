"""Build a tiny causal language model and its tokenizer on this machine.

No model hub is needed: a byte-level BPE is trained with ``tokenizers`` on the
task's own text, wrapped in ``PreTrainedTokenizerFast`` with a ChatML chat
template, and a small random-initialised Qwen2 (or Llama) model is built for its
vocabulary. The same seed and texts give the same tokenizer and weights. This is
the default model of the local trainer and of the tests.

Imports torch and transformers (lazily, inside the functions): keep it out of
``agentspec.runtime``'s import path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentspec.runtime.text.tokenizer import ChatTemplate

__all__ = [
    "SPECIAL_TOKENS",
    "TinyModelConfig",
    "build_tiny",
    "build_tiny_model",
    "build_tiny_tokenizer",
    "load_tiny",
    "train_tiny_bpe",
]

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
"""Special tokens of the tiny tokenizer: padding, and ChatML turn start/end (end = EOS)."""
TINY_EOS, TINY_PAD = "<|im_end|>", "<|endoftext|>"


QWEN2_PRETOKENIZE_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


@dataclass(frozen=True)
class TinyModelConfig:
    """Shape of the tiny model.

    Attributes:
        arch: ``"qwen2"`` or ``"llama"``.
        hidden_size: model width.
        num_layers: transformer blocks.
        num_heads: attention heads.
        num_kv_heads: key/value heads (grouped-query attention).
        intermediate_size: MLP width.
        max_position_embeddings: longest sequence (prompt + response).
        tie_word_embeddings: share input and output embeddings.
    """

    arch: str = "qwen2"
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 2
    intermediate_size: int = 256
    max_position_embeddings: int = 4096
    tie_word_embeddings: bool = True


def train_tiny_bpe(texts: Iterable[str], vocab_size: int = 2048) -> Any:
    """Train the built-in byte-level BPE on ``texts``: a bare ``tokenizers.Tokenizer``.

    Normalisation and pre-tokenisation are Qwen2's (NFC; digits one by one).
    The special tokens are :data:`SPECIAL_TOKENS`. Deterministic for the same
    texts. Needs only ``tokenizers`` (no torch, no transformers), so a plain
    install can run a spec's oracle with the tokenizer training will use.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    # Qwen2's normaliser and pre-tokeniser (digits one by one): transformers'
    # Qwen2Tokenizer, which AutoTokenizer picks for a qwen2 checkpoint and which
    # rebuilds these from its own defaults, then encodes exactly like tokenizer.json.
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([_broken_runs(text) for text in texts], trainer=trainer)
    return tok


_LONG_RUN = re.compile(r"\S{256,}")


def _broken_runs(text: str) -> str:
    """`text` with every run of 256 or more non-space characters cut into pieces of 64
    (a base64 blob, a hash, `'a' * 99999` in a prompt): BPE training time grows with
    the square of a word's length, and such a run has nothing a tokenizer should learn."""
    if len(text) < 256 or _LONG_RUN.search(text) is None:
        return text
    return _LONG_RUN.sub(lambda m: " ".join(_pieces(m.group(), 64)), text)


def _pieces(run: str, size: int) -> list[str]:
    return [run[i : i + size] for i in range(0, len(run), size)]


def build_tiny_tokenizer(
    texts: Iterable[str],
    vocab_size: int = 2048,
    chat_template: ChatTemplate | None = None,
) -> Any:
    """:func:`train_tiny_bpe` wrapped as a ``PreTrainedTokenizerFast`` with a chat template.

    ``<|im_end|>`` is EOS and ``<|endoftext|>`` pads.
    """
    from transformers import PreTrainedTokenizerFast

    chat = chat_template or ChatTemplate()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=train_tiny_bpe(texts, vocab_size),
        bos_token=None,
        eos_token=TINY_EOS,
        pad_token=TINY_PAD,
        unk_token=None,
    )
    fast.chat_template = chat.jinja()
    return fast


def build_tiny_model(tokenizer: Any, config: TinyModelConfig | None = None, seed: int = 0) -> Any:
    """A random-initialised causal LM sized for ``tokenizer``'s vocabulary (fp32, eval mode)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    cfg = config or TinyModelConfig()
    common: dict[str, Any] = {
        "vocab_size": len(tokenizer),
        "hidden_size": cfg.hidden_size,
        "num_hidden_layers": cfg.num_layers,
        "num_attention_heads": cfg.num_heads,
        "num_key_value_heads": cfg.num_kv_heads,
        "intermediate_size": cfg.intermediate_size,
        "max_position_embeddings": cfg.max_position_embeddings,
        "tie_word_embeddings": cfg.tie_word_embeddings,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": None,
    }
    model_cls: Any
    if cfg.arch == "qwen2":
        hf_config: Any = Qwen2Config(**common)
        model_cls = Qwen2ForCausalLM
    elif cfg.arch == "llama":
        hf_config = LlamaConfig(**common)
        model_cls = LlamaForCausalLM
    else:
        raise ValueError(f"unknown arch {cfg.arch!r}; expected 'qwen2' or 'llama'")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = model_cls(hf_config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model.float().eval()


def build_tiny(
    texts: Iterable[str],
    directory: str | os.PathLike[str] | None = None,
    *,
    vocab_size: int = 2048,
    config: TinyModelConfig | None = None,
    seed: int = 0,
) -> tuple[Any, Any]:
    """Build (model, tokenizer); if ``directory`` is given, save both there (``load_tiny`` reads it)."""
    tokenizer = build_tiny_tokenizer(texts, vocab_size=vocab_size)
    model = build_tiny_model(tokenizer, config, seed=seed)
    if directory is not None:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # a bar for one small shard is noise
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
        (path / "agentspec_tiny.json").write_text(
            __import__("json").dumps(asdict(config or TinyModelConfig()), indent=2)
        )
    return model, tokenizer


def load_tiny(directory: str | os.PathLike[str]) -> tuple[Any, Any]:
    """Load a model + tokenizer saved by :func:`build_tiny` (or any local HF checkpoint)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

    if (Path(directory) / "agentspec_tiny.json").exists():
        # AutoTokenizer would rebuild a Qwen2/Llama tokenizer from config.json's model
        # type (other pre-tokenizer, other ids); load the trained tokenizer.json as is.
        tokenizer = PreTrainedTokenizerFast.from_pretrained(str(directory))
    else:
        tokenizer = AutoTokenizer.from_pretrained(str(directory))
    model = AutoModelForCausalLM.from_pretrained(str(directory), dtype="float32")
    return model.eval(), tokenizer
