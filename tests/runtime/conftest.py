from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentspec.runtime import BPETokenizer, ChatTemplate, load_tokenizer

from .helpers import corpus_texts


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Qwen2 model + tokenizer built once per session (hidden 64, 2 layers, vocab 1024)."""
    from agentspec.runtime.text.tiny_model import build_tiny

    path = tmp_path_factory.mktemp("tiny")
    build_tiny(corpus_texts(), path, vocab_size=1024, seed=0)
    return path


@pytest.fixture(scope="session")
def tiny(tiny_dir: Path) -> tuple[Any, Any]:
    from agentspec.runtime.text.tiny_model import load_tiny

    return load_tiny(tiny_dir)


@pytest.fixture(scope="session")
def tok(tiny_dir: Path) -> BPETokenizer:
    """The tiny tokenizer without torch (same ids as the HF one)."""
    return load_tokenizer(tiny_dir)


@pytest.fixture(scope="session")
def chat() -> ChatTemplate:
    return ChatTemplate()
