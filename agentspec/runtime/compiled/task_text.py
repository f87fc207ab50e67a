"""The task's own text, and the tokenizer trained on it.

The default model (`builtin:tiny`) has a small BPE vocabulary learned from
what the task shows and expects: rendered first prompts, tool instructions,
oracle turns and the observations an oracle episode produces. `agentspec run`
uses the same tokenizer for policies that need no model (oracle, random,
scripted), so token limits mean what they will mean in training.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from agentspec.runtime.text.tokenizer import BPETokenizer, ChatTemplate, load_tokenizer

CORPUS_SAMPLES = 2000
"""A task tokenizer is trained on the first this-many training samples: every command
that builds one (train, run, test, explore, serve) reads the same ones and gets the
same ids, and none has to load a generator's whole split (100,000 samples) for it."""


def task_corpus(
    module: ModuleType, samples: Sequence[Mapping[str, Any]], chat: ChatTemplate | None = None
) -> list[str]:
    """Texts to train the task tokenizer on: first prompts and oracle turns."""
    chat = chat or ChatTemplate()
    env = module.ENV_CLASS()
    texts = []
    for sample in samples:
        try:
            messages = (
                env.initial_messages(dict(sample)) if hasattr(env, "initial_messages") else []
            )
        except Exception:  # a prompt that fails on this sample fails its episode, reported there
            messages = []
        texts.append(chat.render(messages))
        if hasattr(module, "oracle_actions"):
            texts.extend(_oracle_texts(module, sample))
    return texts


def _oracle_texts(module: ModuleType, sample: Mapping[str, Any]) -> list[str]:
    """The oracle's actions for a sample, as far as they render (an action that
    indexes past a short per-sample path is never reached in an episode either)."""
    from agentspec.runtime.compiled.oracle import OracleError

    texts: list[str] = []
    with contextlib.suppress(OracleError):
        texts.extend(module.oracle_actions(dict(sample)))
    return texts


def task_tokenizer(
    module: ModuleType,
    samples: Sequence[Mapping[str, Any]],
    directory: Path | None = None,
    vocab_size: int = 2048,
) -> Any:
    """The tiny BPE tokenizer of a task as a Hugging Face tokenizer (for training).

    Saved to / loaded from ``directory`` if given.
    """
    from transformers import AutoTokenizer

    from agentspec.runtime.text.tiny_model import build_tiny_tokenizer

    def build(folder: Path | None) -> Any:
        tokenizer = build_tiny_tokenizer(task_corpus(module, samples), vocab_size=vocab_size)
        if folder is not None:
            tokenizer.save_pretrained(folder)
        return tokenizer

    return _saved_or_built(directory, AutoTokenizer.from_pretrained, build)


def task_bpe_tokenizer(
    module: ModuleType,
    samples: Sequence[Mapping[str, Any]],
    directory: Path | None = None,
    vocab_size: int = 2048,
) -> BPETokenizer:
    """The same tokenizer as :func:`task_tokenizer` (same ids), without transformers.

    For `agentspec run` with policies that need no model, so a plain install
    (no `[train]` extra) rolls out with the token limits training will use.
    Reads a directory written by either function.
    """
    from agentspec.runtime.text.tiny_model import TINY_EOS, TINY_PAD, train_tiny_bpe

    def build(folder: Path | None) -> BPETokenizer:
        rust = train_tiny_bpe(task_corpus(module, samples), vocab_size=vocab_size)
        if folder is not None:
            rust.save(str(folder / "tokenizer.json"))
            config = {"eos_token": TINY_EOS, "pad_token": TINY_PAD}
            (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
        return BPETokenizer(rust, eos_token=TINY_EOS, pad_token=TINY_PAD)

    tokenizer: BPETokenizer = _saved_or_built(directory, load_tokenizer, build)
    return tokenizer


def cached_task_tokenizer(
    spec: str | Path, module: ModuleType, samples: Sequence[Mapping[str, Any]]
) -> tuple[BPETokenizer, Path]:
    """The task tokenizer of the spec at ``spec`` for policies without a model of their
    own (`run`, `test`, `serve`, `explore`, `prompt`): trained on its first
    ``CORPUS_SAMPLES`` samples once, kept beside the spec's compiled module; and that folder."""
    from agentspec.compiler.build import cache_dir, cache_key

    directory = cache_dir() / cache_key(Path(spec))[:16] / "tokenizer"
    return task_bpe_tokenizer(module, list(samples)[:CORPUS_SAMPLES], directory), directory


def _saved_or_built(
    directory: Path | None, load: Callable[[Path], Any], build: Callable[[Path | None], Any]
) -> Any:
    """The tokenizer saved in `directory`, else a new one, saved there.

    `build(folder)` writes into a fresh folder beside `directory`, renamed into place
    whole: a process that reads the cache while another writes it (two `agentspec
    test`s, two test workers) sees a complete tokenizer or none, never half of one."""
    if directory is None:
        return build(None)
    if (directory / "tokenizer.json").exists():
        return load(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
    try:
        built = build(staging)
        staging.chmod(0o755)  # mkdtemp's folder is the owner's alone; a cache is not
        for _ in range(2):
            try:
                staging.rename(directory)  # fails when another process's is in place
                break
            except OSError:
                if (directory / "tokenizer.json").exists():
                    break
                # a folder without a tokenizer: left by a process that died writing it
                shutil.rmtree(directory, ignore_errors=True)
        else:
            raise OSError(f"could not write the tokenizer cache {directory}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return built
